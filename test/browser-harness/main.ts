/**
 * The multi-tab harness page: exposes the library on `window` so Playwright
 * can drive several tabs of one origin, and a place to keep objects
 * (clients, locks) between `page.evaluate` calls.
 */
import * as zaris from 'zaris'
import * as indexeddb from 'zaris/indexeddb'

declare global {
  interface Window {
    zaris: typeof zaris
    zarisIndexedDb: typeof indexeddb
    /** Whatever a test keeps between evaluate calls. */
    kept: Record<string, unknown>
    harnessReady: boolean
  }
}

window.zaris = zaris
window.zarisIndexedDb = indexeddb
window.kept = {}
window.harnessReady = true
