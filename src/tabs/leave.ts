/**
 * How a zaris/tabs lock leaves its key once its gate is let go,
 * as a full client's gated release does (core/hold/hand-on.ts): when another
 * tab holds or waits for the gate, that tab's take overwrites this entry in
 * its own commit, so a delete of ours would only queue in the store ahead of
 * that take. So: delete only when nobody is there, or when nothing shows
 * within {@link HAND_ON_WAIT} (the waiter gave up meanwhile).
 *
 * @module
 */
import type { WebLockGate } from '../adapters/indexeddb/gate'
import type { TermStore } from '../elect/store'

/** How long a release that left its key to the next in line waits to see it taken, in ms, before deleting its entry itself. */
export const HAND_ON_WAIT = 1_000

/** Leaves `key`, held with `token` and last written at `revision`, after `gate` (if any) was let go. */
export async function leave(store: TermStore, key: string, token: number, revision: number, gate: WebLockGate | undefined): Promise<void> {
  if (gate && (await gate.taken()) && (await takenOver(store, key, token, revision))) return
  await store.commit([{ key, created: token }], [{ type: 'delete', key }])
}

/** Resolves true once `key` shows a change of life after `revision`, false after {@link HAND_ON_WAIT}. */
function takenOver(store: TermStore, key: string, token: number, revision: number): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(false), HAND_ON_WAIT)
    const unlisten = store.listen((records) => {
      for (const r of records) {
        if (r.revision <= revision) continue
        for (const ev of r.events) if (ev.key === key && (ev.type !== 'put' || ev.created !== token)) return done(true)
      }
    })
    function done(seen: boolean) {
      clearTimeout(timer)
      unlisten()
      resolve(seen)
    }
  })
}
