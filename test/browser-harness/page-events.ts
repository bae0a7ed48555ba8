/**
 * The page lifecycle's `freeze` and `resume`, dispatched by a test on its
 * own page: a store's listeners run as for a real freeze, but IndexedDB
 * holds nothing back (real frozen tabs: test/indexeddb/frozen.test.ts,
 * test/elect/frozen.test.ts).
 */
import type { Database } from '../../src/adapters/indexeddb/schema'

export const freeze = (): boolean => document.dispatchEvent(new Event('freeze'))
export const resume = (): boolean => document.dispatchEvent(new Event('resume'))

/**
 * Runs through `run` a readwrite transaction that puts entry `key`, freezes
 * the page once it has begun, waits, and resumes: how many times it had run
 * at the freeze and in all (1 and 2 when the freeze aborted it and `run` ran
 * it again).
 */
export async function freezeMidTransaction(run: (fn: (db: Database) => Promise<number>) => Promise<number>, key: string): Promise<{ atFreeze: number; ran: number }> {
  let ran = 0
  const running = run((db) => {
    ran++
    return new Promise<number>((resolve, reject) => {
      const tx = db.transaction(['entries'], 'readwrite')
      tx.objectStore('entries').put({ key, value: ran, revision: 1, created: 1 })
      tx.oncomplete = () => resolve(ran)
      tx.onabort = () => reject(tx.error ?? new DOMException('aborted', 'AbortError'))
    })
  })
  // `run` begins the transaction at once on an open database: two microtasks later it is open.
  await Promise.resolve()
  await Promise.resolve()
  freeze()
  await new Promise((r) => setTimeout(r, 30))
  const atFreeze = ran
  resume()
  return { atFreeze, ran: await running }
}
