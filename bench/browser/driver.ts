/**
 * Builds the bench page (Vite, minified, as an app would ship it), serves it
 * from memory on a loopback port, and opens tabs of it in one Chromium
 * context (one origin: shared IndexedDB, BroadcastChannel and Web Locks).
 *
 * @module
 */
import { createServer, type Server } from 'node:http'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright'
import { build, type Rollup } from 'vite'
import { chromiumLaunchOptions } from '../../test/browser-harness/chromium'
import { absNow } from '../lib/measure'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export interface BenchBrowser {
  browser: Browser
  context: BrowserContext
  url: string
  /** Opens a tab on the bench page; resolves once `window.bench` is there. */
  tab(): Promise<Tab>
  close(): Promise<void>
}

export interface Tab {
  page: Page
  /** This tab's absolute clock minus Node's, in ms (measured over the smallest CDP round trip). */
  offset: number
  close(): Promise<void>
}

/** What a page is built from: its folder (with index.html) and the import aliases besides zaris's own. */
export interface PageSource {
  root: string
  alias?: Record<string, string>
}

async function buildPage(minify: boolean, source: PageSource): Promise<Map<string, string>> {
  const result = (await build({
    configFile: false,
    logLevel: 'silent',
    root: source.root,
    resolve: {
      alias: {
        ...source.alias,
        'zaris/indexeddb': here('../../src/adapters/indexeddb/index.ts'),
        'zaris/elect': here('../../src/elect/index.ts'),
        'zaris/tabs': here('../../src/tabs/index.ts'),
        zaris: here('../../src/index.ts'),
      },
    },
    build: { write: false, minify, target: 'es2022', modulePreload: false, rollupOptions: { input: `${source.root}/index.html` } },
  })) as Rollup.RollupOutput | Rollup.RollupOutput[]
  const files = new Map<string, string>()
  for (const out of (Array.isArray(result) ? result : [result]).flatMap((r) => r.output)) {
    files.set('/' + out.fileName, out.type === 'chunk' ? out.code : String(out.source))
  }
  return files
}

function serve(files: Map<string, string>): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = req.url === '/' ? '/index.html' : (req.url ?? '').split('?')[0]!
    const body = files.get(path)
    if (body === undefined) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': path.endsWith('.js') ? 'text/javascript' : 'text/html', 'cache-control': 'no-store' }).end(body)
  })
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      resolve({ server, url: `http://127.0.0.1:${port}/` })
    })
  })
}

/**
 * Builds and serves the page (the bench page, or `page`: a tool's own) and
 * launches Chromium. `minify: false` keeps names readable in profiles.
 */
export async function startBrowser(options: { minify?: boolean; page?: PageSource } = {}): Promise<BenchBrowser> {
  const files = await buildPage(options.minify ?? true, options.page ?? { root: here('.') })
  const { server, url } = await serve(files)
  let browser: Browser
  try {
    browser = await chromium.launch(chromiumLaunchOptions())
  } catch (err) {
    server.close()
    throw err
  }
  const context = await browser.newContext()
  return {
    browser,
    context,
    url,
    async tab() {
      const page = await context.newPage()
      await page.goto(url)
      await page.waitForFunction(() => window.benchReady === true)
      let best = { rtt: Infinity, offset: 0 }
      for (let i = 0; i < 15; i++) {
        const before = absNow()
        const pageNow = await page.evaluate(() => window.bench.absNow())
        const after = absNow()
        if (after - before < best.rtt) best = { rtt: after - before, offset: pageNow - (before + after) / 2 }
      }
      return { page, offset: best.offset, close: () => page.close() }
    },
    async close() {
      await browser.close().catch(() => {})
      await new Promise((r) => server.close(r))
    },
  }
}
