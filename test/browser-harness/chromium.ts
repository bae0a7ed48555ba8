/**
 * How the tests launch Chromium: the one `ZARIS_CHROMIUM` names, else
 * `chromium` on PATH (Debian's `/usr/bin/chromium`), else Playwright's own
 * browser where one was installed. Shared by the vitest browser project, the
 * multi-tab tests and the prerequisite check (test/setup/prereqs.ts), so all
 * run the same browser the same way.
 */
import { execFileSync } from 'node:child_process'
import { accessSync, constants, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { delimiter, join } from 'node:path'
import type { LaunchOptions } from 'playwright'

/** Flags that keep a headless Chromium quiet and offline. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** Where Debian puts Chromium: the path named in messages when none is found. */
export const DEBIAN_CHROMIUM = '/usr/bin/chromium'

/** True for an existing regular file this user may execute. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** The first executable called `name` in the directories of `path` (a PATH value). */
export function onPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (dir === '') continue
    const candidate = join(dir, name)
    if (isExecutable(candidate)) return candidate
  }
  return undefined
}

/** Playwright's own Chromium, if `npx playwright install chromium` put one on this machine. */
export function playwrightChromium(): string | undefined {
  try {
    const { chromium } = createRequire(import.meta.url)('playwright') as typeof import('playwright')
    const path = chromium.executablePath()
    return path && isExecutable(path) ? path : undefined
  } catch {
    return undefined
  }
}

/**
 * The Chromium the tests use, or `undefined` when there is none
 * (`ZARIS_CHROMIUM` set to something that is not an executable counts as none).
 */
export function findChromium(env: Record<string, string | undefined> = process.env): string | undefined {
  if (env.ZARIS_CHROMIUM) return isExecutable(env.ZARIS_CHROMIUM) ? env.ZARIS_CHROMIUM : undefined
  return onPath('chromium', env.PATH) ?? playwrightChromium()
}

/** The Chromium to launch: the one found, else Debian's path (whose absence the prerequisite check reports first). */
export function chromiumPath(): string {
  return findChromium() ?? process.env.ZARIS_CHROMIUM ?? DEBIAN_CHROMIUM
}

/** Launch options for Chromium, with extra flags or default flags to drop (throttling tests drop Playwright's). */
export function chromiumLaunchOptions(extra: { args?: string[]; ignoreDefaultArgs?: string[] } = {}): LaunchOptions {
  return {
    executablePath: chromiumPath(),
    args: [...CHROMIUM_ARGS, ...(extra.args ?? [])],
    ...(extra.ignoreDefaultArgs ? { ignoreDefaultArgs: extra.ignoreDefaultArgs } : {}),
  }
}

/**
 * A free loopback port, found synchronously (config files cannot await): the
 * browser project's page server listens on it with `strictPort`, so the node
 * its global setup starts can name the page's exact origin in `--cors` even
 * when another vitest run holds the default port.
 */
export function freePortSync(): number {
  const script = "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})"
  return Number(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }))
}
