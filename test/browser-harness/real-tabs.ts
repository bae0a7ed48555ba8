/**
 * Chromium whose tabs really go hidden, get throttled and freeze, for the
 * lifecycle tests.
 *
 * Pages that Playwright creates or attaches to get focus emulation
 * (`Emulation.setFocusEmulationEnabled`), which Chromium implements by
 * counting the page as being captured. A captured page counts as visible
 * whatever happens: it never goes hidden, its timers are never throttled, and
 * `Page.setWebLifecycleState` frozen does nothing. That holds headless and
 * headful alike (measured: a headful Chromium under Xvfb, launched by
 * Playwright, behaves exactly like a headless one). Playwright skips that
 * override only for the default context of a browser it reaches with
 * `connectOverCDP(..., { noDefaults: true })`, so this module starts Chromium
 * itself and attaches that way, and tests open their tabs in that default
 * context. Playwright's launch flags are not used at all here, so the
 * throttling switches it adds (`--disable-background-timer-throttling` and
 * co.) are absent.
 *
 * Headless by default. `ZARIS_TABS_HEADFUL=1` runs it headful on a private
 * Xvfb display instead (Debian package `xvfb`); without Xvfb that mode fails
 * with a message saying so, it never falls back.
 *
 * Chromium started here is not Playwright's, so nothing ends it when the test
 * process dies without closing it (a `kill -9`, a killed run, a crash): it
 * and Xvfb are started by ../setup/watched. Without that, every killed run
 * left 10-25 Chromium processes behind.
 */
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser, type BrowserContext } from 'playwright'
import { spawnWatched } from '../setup/watched'
import { CHROMIUM_ARGS, chromiumPath } from './chromium'

/**
 * Flags that keep hidden tabs' timers and renderers at full speed, as
 * Playwright's own launch does, for tests that want real freezing but not
 * background throttling: `Page.setWebLifecycleState` still freezes a tab.
 */
export const UNTHROTTLED_ARGS = ['--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows']

export interface RealTabsBrowser {
  browser: Browser
  /** The default context: the only one whose pages Playwright leaves unemulated. Open tabs here. */
  context: BrowserContext
  /** True when running headful under Xvfb. */
  headful: boolean
  /** Chromium's process id (the leader of its process group). */
  pid: number
  /** Disconnects, stops Chromium (and Xvfb) and removes the profile. */
  close(): Promise<void>
}

/**
 * Starts Chromium with real tab lifecycles. `args` are extra Chromium flags,
 * e.g. `--enable-features=IntensiveWakeUpThrottling:grace_period_seconds/3`.
 */
export async function launchRealTabs(options: { args?: string[]; headful?: boolean } = {}): Promise<RealTabsBrowser> {
  const headful = options.headful ?? process.env.ZARIS_TABS_HEADFUL === '1'
  const profile = mkdtempSync(join(tmpdir(), 'zaris-tabs-'))
  const started: ChildProcess[] = []
  const stopAll = async () => {
    for (const proc of started.reverse()) await stop(proc)
    rmSync(profile, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
  }
  try {
    const env = { ...process.env }
    if (headful) {
      const { proc, display } = await startXvfb()
      started.push(proc)
      env.DISPLAY = display
    }
    const proc = spawnWatched(
      chromiumPath(),
      [
        ...CHROMIUM_ARGS,
        ...(headful ? [] : ['--headless']),
        `--user-data-dir=${profile}`,
        '--remote-debugging-port=0',
        '--no-default-browser-check',
        '--password-store=basic',
        ...(options.args ?? []),
        'about:blank',
      ],
      { env, stdio: ['ignore', 'ignore', 'pipe'] },
    )
    started.push(proc)
    const endpoint = await readLine(proc, /DevTools listening on (ws:\S+)/, 'Chromium')
    const browser = await chromium.connectOverCDP(endpoint, { noDefaults: true, isLocal: true })
    const context = browser.contexts()[0]
    if (!context) throw new Error('Chromium started without a default context')
    return {
      browser,
      context,
      headful,
      pid: proc.pid!,
      async close() {
        await browser.close().catch(() => {})
        await stopAll()
      },
    }
  } catch (err) {
    await stopAll()
    throw err
  }
}

/** Xvfb on a display it picks itself (`-displayfd`), so parallel runs do not collide. */
async function startXvfb(): Promise<{ proc: ChildProcess; display: string }> {
  const proc = spawnWatched('Xvfb', ['-displayfd', '3', '-screen', '0', '1280x800x24', '-nolisten', 'tcp'], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
  })
  const missing = new Promise<never>((_, reject) =>
    proc.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'ENOENT'
          ? new Error('ZARIS_TABS_HEADFUL=1 needs Xvfb, which is not on PATH: install it (apt-get install xvfb) or unset ZARIS_TABS_HEADFUL to run headless')
          : err,
      ),
    ),
  )
  const number = new Promise<string>((resolve, reject) => {
    let out = ''
    proc.stdio[3]!.on('data', (d: Buffer) => {
      out += d.toString()
      if (out.includes('\n')) resolve(out.trim())
    })
    proc.once('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it reported a display`)))
  })
  try {
    return { proc, display: `:${await withTimeout(Promise.race([number, missing]), 10_000, 'Xvfb')}` }
  } catch (err) {
    await stop(proc)
    throw err
  }
}

/** Resolves with the first capture of `pattern` in the process's stderr. */
function readLine(proc: ChildProcess, pattern: RegExp, what: string): Promise<string> {
  const found = new Promise<string>((resolve, reject) => {
    let text = ''
    const onData = (d: Buffer) => {
      text += d.toString()
      const m = pattern.exec(text)
      if (m) {
        proc.stderr!.off('data', onData)
        proc.stderr!.resume() // keep draining so Chromium never blocks on a full pipe
        resolve(m[1]!)
      }
    }
    proc.stderr!.on('data', onData)
    proc.once('error', reject)
    proc.once('exit', (code) => reject(new Error(`${what} exited (${code}) before it was ready:\n${text.slice(-2000)}`)))
  })
  return withTimeout(found, 30_000, what)
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not start within ${ms} ms`)), ms)
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}

/** SIGTERM, then SIGKILL if the process has not exited after 5 s. */
async function stop(proc: ChildProcess): Promise<void> {
  if (proc.pid === undefined || proc.exitCode !== null || proc.signalCode !== null) return
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  proc.kill('SIGTERM')
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000)
  await exited
  clearTimeout(timer)
}
