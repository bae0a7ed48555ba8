/**
 * What a web app's tabs really load: the package as `npm pack` ships it,
 * installed into an app of its own, built by Vite with the app's defaults
 * (production, its own chunking), served on loopback and opened in real
 * Chromium tabs. Every JavaScript file any tab fetches is counted once,
 * gzipped (-9) as a server would send it.
 *
 * Used by the bench's bundle scenario (bench/scenarios/bundle.ts) and
 * test/package/size.test.ts's page budgets.
 *
 * @module
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { extname, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { gzipSync } from 'node:zlib'
import { chromium, type Browser, type Page } from 'playwright'
import { build } from 'vite'
import { ensureBuilt } from '../../test/package/built'
import { chromiumLaunchOptions } from '../../test/browser-harness/chromium'

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '../..')

/** One JavaScript file a page loaded. */
export interface LoadedFile {
  name: string
  bytes: number
  gzip: number
}

/** What the tabs of an app loaded: every JS file once. */
export interface PageLoad {
  files: LoadedFile[]
  gzip: number
  min: number
}

/** A folder with the packed zaris (and broadcast-channel, for the peer) installed, as after `npm install`. */
export interface AppFolder {
  dir: string
  /** Builds `main` (the app's one module) with Vite's defaults; resolves the folder it was built into. */
  build(name: string, main: string): Promise<string>
  close(): void
}

/** Packs this checkout (building it first if dist/ is stale) and installs the tarball into a fresh app folder. */
export async function appFolder(): Promise<AppFolder> {
  await ensureBuilt(root)
  const dir = mkdtempSync(join(tmpdir(), 'zaris-packed-app-'))
  try {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }
    await run('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], { cwd: root })
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'zaris-page-app', private: true, type: 'module' }))
    // zaris's dependency comes from this checkout, so nothing is fetched; the peer is linked as installed here.
    await run('npm', ['install', join(dir, `zaris-${version}.tgz`), join(root, 'node_modules/zod'), '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: dir })
    symlinkSync(join(root, 'node_modules/broadcast-channel'), join(dir, 'node_modules/broadcast-channel'), 'dir')
  } catch (err) {
    rmSync(dir, { recursive: true, force: true })
    throw err
  }
  return {
    dir,
    async build(name, main) {
      const app = join(dir, name.replace(/\W+/g, '-'))
      mkdirSync(app, { recursive: true })
      writeFileSync(join(app, 'index.html'), '<!doctype html><html><head><meta charset="utf-8"><title>app</title></head><body><script type="module" src="./main.js"></script></body></html>\n')
      writeFileSync(join(app, 'main.js'), main)
      // The app's defaults: no config file, production build, Vite's own chunking and module preload.
      await build({ configFile: false, logLevel: 'silent', root: app, build: { outDir: join(app, 'dist'), emptyOutDir: true } })
      return join(app, 'dist')
    },
    close() {
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

const TYPES: Record<string, string> = { '.js': 'text/javascript', '.html': 'text/html', '.css': 'text/css' }

/** Serves `folder` on a loopback port. */
export function serveFolder(folder: string): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!
    try {
      const body = readFileSync(join(folder, path === '/' ? 'index.html' : path))
      res.writeHead(200, { 'content-type': TYPES[extname(path)] ?? 'text/html', 'cache-control': 'no-store' }).end(body)
    } catch {
      res.writeHead(404).end()
    }
  })
  return new Promise((done) => server.listen(0, '127.0.0.1', () => done({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/` })))
}

/** The tabs of one app in one browser context, and every JS file they fetched. */
export interface AppTabs {
  open(): Promise<Page>
  loaded(): PageLoad
  close(): Promise<void>
}

/** Opens tabs of the app built in `folder` (one origin, one context) and records what they load. */
export async function appTabs(browser: Browser, folder: string): Promise<AppTabs> {
  const { server, url } = await serveFolder(folder)
  const context = await browser.newContext()
  const files = new Map<string, LoadedFile>()
  const pending: Array<Promise<void>> = []
  context.on('response', (response) => {
    const name = new URL(response.url()).pathname
    if (!name.endsWith('.js') || files.has(name)) return
    pending.push(
      response.body().then((body) => {
        files.set(name, { name, bytes: body.length, gzip: gzipSync(body, { level: 9 }).length })
      }, () => {}),
    )
  })
  return {
    async open() {
      const page = await context.newPage()
      await page.goto(url)
      return page
    },
    loaded() {
      const list = [...files.values()].sort((a, b) => b.gzip - a.gzip)
      return { files: list, gzip: list.reduce((t, f) => t + f.gzip, 0), min: list.reduce((t, f) => t + f.bytes, 0) }
    },
    async close() {
      await Promise.all(pending)
      await context.close()
      await new Promise((r) => server.close(r))
    },
  }
}

/** Chromium as the bench and tests launch it. */
export function launch(): Promise<Browser> {
  return chromium.launch(chromiumLaunchOptions())
}

/**
 * The apps the issue names, each the one module a page runs, in several
 * tabs; set up in a function (a module with top-level `await` makes Vite
 * split every module it shares with a lazy chunk into a file of its own).
 * `window.app` resolves once the tab is set up; `window.led` once it leads.
 */
export const APPS = {
  election: `import { connect } from 'zaris'
async function main() {
  const client = await connect('zaris://idb/app')
  const election = client.election('leader:app', { ttl: 10_000 })
  window.led = election.campaign()
}
window.app = main()
`,
  /** The election-only entry (zaris/elect): the same election, on the same store, without the client. */
  'election-only': `import { election } from 'zaris/elect'
async function main() {
  const e = election('leader:app', { namespace: 'app', ttl: 10_000 })
  window.led = e.campaign()
}
window.app = main()
`,
  family: `import { connect } from 'zaris'
async function main() {
  const client = await connect('zaris://idb/app')
  const lock = await client.locks.acquire('lock:app', { ttl: 10_000, wait: 10_000 })
  await lock.release()
  const watch = client.watch('status:', { prefix: true })
  await watch.ready
  void (async () => { for await (const ev of watch) window.seen = ev })()
  await client.put('status:' + Math.random(), 'up')
  const election = client.election('leader:app', { ttl: 10_000 })
  window.led = election.campaign()
}
window.app = main()
`,
  /** The same family through the tabs entry (zaris/tabs): locks, election and watch on the same store, without the client. */
  'family, zaris/tabs': `import { tabs } from 'zaris/tabs'
async function main() {
  const app = tabs('app', { ttl: 10_000 })
  const lock = await app.locks.acquire('lock:app', { wait: 10_000 })
  await lock.release()
  const watch = app.watch('status:', { prefix: true })
  await watch.ready
  void (async () => { for await (const ev of watch) window.seen = ev })()
  await app.put('status:' + Math.random(), 'up')
  const election = app.election('leader:app')
  window.led = election.campaign()
}
window.app = main()
`,
  /** The election app with top-level `await`, as many are written: Vite then keeps what the entry shares with the store's chunk in a file of its own. */
  'election, top-level await': `import { connect } from 'zaris'
const client = await connect('zaris://idb/app')
const election = client.election('leader:app', { ttl: 10_000 })
window.led = election.campaign()
window.app = Promise.resolve()
`,
  'broadcast-channel': `import { BroadcastChannel, createLeaderElection } from 'broadcast-channel'
async function main() {
  const channel = new BroadcastChannel('app')
  const elector = createLeaderElection(channel)
  window.led = elector.awaitLeadership()
}
window.app = main()
`,
} as const

/**
 * Builds app `name`, opens three tabs of it, waits until one leads, closes
 * that one and waits until another leads: resolves every JS file the tabs loaded.
 */
export async function loadApp(folder: AppFolder, browser: Browser, name: keyof typeof APPS): Promise<PageLoad> {
  const built = await folder.build(name, APPS[name])
  const tabs = await appTabs(browser, built)
  try {
    const pages = [await tabs.open(), await tabs.open(), await tabs.open()]
    for (const p of pages) await p.evaluate(() => (window as unknown as { app: Promise<void> }).app)
    const leads = (p: Page) => p.evaluate(() => Promise.race([(window as unknown as { led: Promise<unknown> }).led.then(() => true), new Promise((r) => setTimeout(() => r(false), 100))]))
    let leader: Page | undefined
    for (let i = 0; i < 200 && !leader; i++) for (const p of pages) if (!leader && (await leads(p))) leader = p
    if (!leader) throw new Error(`${name}: no tab led`)
    await leader.close()
    const rest = pages.filter((p) => p !== leader)
    let next: Page | undefined
    for (let i = 0; i < 200 && !next; i++) for (const p of rest) if (!next && (await leads(p))) next = p
    if (!next) throw new Error(`${name}: no tab led after the leader's tab closed`)
  } finally {
    await tabs.close()
  }
  return tabs.loaded()
}
