/**
 * Serves the harness page with Vite (the library from source, as the tests
 * see it) on a free loopback port, and launches Chromium for multi-tab tests.
 */
import { fileURLToPath } from 'node:url'
import { chromium, type Browser, type BrowserContext, type LaunchOptions, type Page } from 'playwright'
import { createServer, type Plugin, type ViteDevServer } from 'vite'
import { chromiumLaunchOptions } from './chromium'
import { calibrateTabClock } from './tab-clock'

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))

export interface Harness {
  url: string
  browser: Browser
  close(): Promise<void>
}

/** Starts a browser some other way than `chromium.launch` (see real-tabs.ts); `close` stops it. */
export type BrowserLauncher = () => Promise<{ browser: Browser; close(): Promise<void> }>

/**
 * Vite puts its client in every page it serves, even with `ws: false`; the
 * client then tries a WebSocket the server does not answer and prints errors
 * into the page's console, where the tests look for the page's own errors
 * (the later on a loaded machine, the likelier inside a test's window).
 */
const withoutViteClient: Plugin = {
  name: 'zaris-harness-without-vite-client',
  transformIndexHtml: {
    order: 'post',
    handler: (html) => html.replace(/<script type="module" src="\/@vite\/client"><\/script>\s*/, ''),
  },
}

/**
 * Under a mutation run of page code (test/mutation/tabs.stryker.config.mjs:
 * Stryker mutates src/ in place and runs the tests once per mutant, naming
 * it in `__STRYKER_ACTIVE_MUTANT__`), the page must know which mutant is on
 * before any module runs; the variable lives in this process, not the page.
 */
function activeMutant(id: string | undefined): Plugin {
  return {
    name: 'zaris-harness-active-mutant',
    transformIndexHtml: (html) => (id ? html.replace('<head>', `<head><script>globalThis.__stryker__ = { activeMutant: ${JSON.stringify(id)} }</script>`) : html),
  }
}

/** Starts the dev server and a browser; `close` stops both. */
export async function startHarness(launch: LaunchOptions | BrowserLauncher = chromiumLaunchOptions()): Promise<Harness> {
  const server: ViteDevServer = await createServer({
    configFile: false,
    root: here('.'),
    logLevel: 'error',
    resolve: {
      alias: {
        'zaris/indexeddb': here('../../src/adapters/indexeddb/index.ts'),
        'zaris/memory': here('../../src/adapters/memory.ts'),
        'zaris/web-locks': here('../../src/web-locks/index.ts'),
        'zaris/elect': here('../../src/elect/index.ts'),
        'zaris/tabs': here('../../src/tabs/index.ts'),
        zaris: here('../../src/index.ts'),
      },
    },
    // Pre-bundling would reload the page mid-test when it discovers `idb`; idb is plain ESM anyway.
    optimizeDeps: { noDiscovery: true, include: [] },
    server: { host: '127.0.0.1', port: 0, strictPort: false, hmr: false, ws: false, watch: null, fs: { allow: [here('../..')] } },
    plugins: [withoutViteClient, activeMutant(process.env.__STRYKER_ACTIVE_MUTANT__)],
  })
  await server.listen()
  const address = server.httpServer?.address()
  if (!address || typeof address === 'string') throw new Error('the harness server has no port')
  let launched: Awaited<ReturnType<BrowserLauncher>>
  try {
    if (typeof launch === 'function') {
      launched = await launch()
    } else {
      const browser = await chromium.launch(launch)
      launched = { browser, close: () => browser.close() }
    }
  } catch (err) {
    await server.close()
    throw err
  }
  return {
    url: `http://127.0.0.1:${address.port}/`,
    browser: launched.browser,
    async close() {
      await launched.close().catch(() => {})
      await server.close()
    },
  }
}

/**
 * A new tab of the harness page in `ctx`, once its script has set
 * `window.harnessReady`, its clock calibrated (./tab-clock.ts). Page errors are printed (a test that fails for them
 * says why). `before` runs between the tab's creation and its load (a route
 * that holds back or fails a chunk). Polled, not per animation frame: a tab
 * that is not in front gets no frames.
 */
export async function openHarnessTab(
  ctx: BrowserContext,
  url: string,
  before?: (page: Page) => Promise<unknown>,
): Promise<Page> {
  const page = await ctx.newPage()
  page.on('pageerror', (err) => console.error('page error:', err))
  if (before) await before(page)
  await page.goto(url)
  await page.waitForFunction(() => (window as unknown as { harnessReady?: boolean }).harnessReady === true, undefined, { polling: 50 })
  await calibrateTabClock(page)
  return page
}
