/**
 * The multi-tab harness page: exposes the library on `window` so Playwright
 * can drive several tabs of one origin, and a place to keep objects
 * (clients, locks) between `page.evaluate` calls.
 */
import * as zaris from 'zaris'
import * as indexeddb from 'zaris/indexeddb'
import * as elect from 'zaris/elect'
import * as tabsEntry from 'zaris/tabs'
import { recordElections } from '../elect/record'
import type { HistoryEvent } from '../lincheck/history'
import { recordingAdapter, streamSink } from '../lincheck/recorder'

declare global {
  interface Window {
    zaris: typeof zaris
    zarisIndexedDb: typeof indexeddb
    zarisElect: typeof elect
    zarisTabs: typeof tabsEntry
    /** Makes this page's zaris/elect commits recorded as client `id` through the `zarisOp` binding (test/elect/record.ts). */
    zarisRecordElect(id: string): void
    /** Whatever a test keeps between evaluate calls. */
    kept: Record<string, unknown>
    harnessReady: boolean
    /**
     * A client of the IndexedDB store `namespace` (what `connect('zaris://idb/<namespace>')`
     * opens) whose store operations are recorded (test/lincheck/recorder.ts) through the
     * `zarisOp` binding, if the test exposed one. With `node` (`zaris://host:port`), a client
     * of that node's namespace `namespace` instead.
     */
    zarisRecorded(namespace: string, id: string, node?: string): Promise<zaris.Client>
    zarisOp?(event: HistoryEvent): Promise<void>
    /** Now on the machine's monotonic clock, which every tab and the test process share (test/browser-harness/tab-clock.ts): time what tabs record on it. Throws until the test process has calibrated the tab. */
    zarisNow(): number
    /** Set by the test process (`calibrateTabClock`): the machine's monotonic clock at this tab's `performance.now()` origin. */
    zarisSetClockOffset(offset: number): void
  }
}

let clockOffset: number | undefined
window.zarisSetClockOffset = (offset) => void (clockOffset = offset)
window.zarisNow = () => {
  if (clockOffset === undefined) throw new Error("this tab's clock was never calibrated (calibrateTabClock, test/browser-harness/tab-clock.ts)")
  return clockOffset + performance.now()
}
window.zaris = zaris
window.zarisIndexedDb = indexeddb
window.zarisElect = elect
window.zarisTabs = tabsEntry
window.zarisRecordElect = (id) => recordElections(id, (e) => window.zarisOp?.(e).catch(() => {}) ?? Promise.resolve(), window.zarisNow)
window.kept = {}
window.zarisRecorded = async (namespace, id, node) => {
  const now = window.zarisNow
  // Process numbers of its own: tabs number theirs apart at random (2^20 blocks of 1000).
  const sink = streamSink((e) => window.zarisOp?.(e).catch(() => {}), now, (1 + Math.floor(Math.random() * 2 ** 20)) * 1000)
  const store = node ? (await zaris.connect(`${node}/${namespace}`, { id: `${id}-inner` })).adapter : await indexeddb.openIndexedDb({ namespace })
  return new zaris.Client(recordingAdapter(store, sink, id), { id })
}
window.harnessReady = true
