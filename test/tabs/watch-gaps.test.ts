/**
 * The order of a zaris/tabs watch when messages cross while it fills a gap,
 * on a fake store (a hand-driven `listen` and log read, in the harness page):
 * the interleaving a real store gives only by chance. A record heard while a
 * fill is under way, itself past the next revision, must be delivered once
 * that fill ends, not at the next message.
 */
import { expect, it } from 'vitest'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'

const { withContext } = useRecordedTabs()

it('a record heard while a gap is being filled, past it, is delivered when the fill ends (fake store: the log read held by the test)', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const delivered = await tab.evaluate(async () => {
      type Rec = { revision: number; events: Array<{ type: 'put'; key: string; revision: number; value: number }> }
      const rec = (n: number): Rec => ({ revision: n, events: [{ type: 'put', key: 'k', revision: n, value: n }] })
      const log = [10, 11, 12, 13].map(rec)
      let listener: (records: Rec[]) => void = () => {}
      const reads: Array<() => void> = []
      const completes: Array<() => void> = []
      const fake = {
        listen: (fn: (records: Rec[]) => void) => ((listener = fn), () => {}),
        // readLog(db, after) through `run`: answered when the test lets the read go.
        run: (fn: (db: unknown) => unknown) =>
          new Promise((resolve) => {
            const fakeDb = {
              transaction: () => {
                const tx = {
                  objectStore: () => ({
                    getAll: (range: IDBKeyRange) => {
                      const req: { result?: Rec[]; onsuccess?: () => void } = {}
                      reads.push(() => (req.result = log.filter((r) => range.includes(r.revision))))
                      return req
                    },
                    openKeyCursor: () => {
                      const req: { result: { key: number } | null; onsuccess?: () => void } = { result: null }
                      reads.push(() => ((req.result = { key: log.at(-1)!.revision }), req.onsuccess?.()))
                      return req
                    },
                    getAllKeys: () => ({}),
                    // The earliest deadline: none.
                    index: () => ({
                      openKeyCursor: () => {
                        const req: { result: null; onsuccess?: () => void } = { result: null }
                        reads.push(() => req.onsuccess?.())
                        return req
                      },
                    }),
                  }),
                  oncomplete: undefined as undefined | (() => void),
                }
                completes.push(() => tx.oncomplete?.())
                return tx
              },
            }
            resolve(fn(fakeDb))
          }),
      }
      // Answers every read asked so far, then completes their transactions.
      const release = async () => {
        for (const r of reads.splice(0)) r()
        for (const c of completes.splice(0)) c()
        await new Promise((r) => setTimeout(r, 0))
      }
      const { TabWatch } = window.zarisTabs as unknown as { TabWatch: new (...args: unknown[]) => AsyncIterator<{ revision: number }> & { ready: Promise<void> } }
      log.length = 1 // the store is at revision 10 when the watch starts
      const w = new TabWatch(fake, 'k', false, undefined, undefined, () => {})
      for (let i = 0; i < 5; i++) await release()
      await w.ready
      const seen: number[] = []
      void (async () => {
        for (let ev = await w.next(); !ev.done; ev = await w.next()) seen.push(ev.value.revision)
      })()
      log.push(rec(11), rec(12), rec(13))
      listener([rec(12)]) // 11's message has not come: a gap, a fill begins (its read held)
      await new Promise((r) => setTimeout(r, 0))
      log.length = 3 // the fill's read sees 11 and 12 only
      const [firstReads, firstCompletes] = [reads.splice(0), completes.splice(0)]
      for (const r of firstReads) r()
      log.push(rec(13))
      listener([rec(13)]) // heard while the fill is under way: past 11, so a gap too
      for (const c of firstCompletes) c()
      for (let i = 0; i < 5; i++) await release()
      return seen
    })
    expect(delivered).toEqual([11, 12, 13])
  })
}, 60_000)
