/**
 * What the shape of a zaris commit costs in bare IndexedDB, in one tab of
 * the bench's Chromium (an off-the-record context, IndexedDB in memory, as
 * the bench's rows run), taking turns: a blind put; a read then a put; the
 * zaris shape (read the entry and the log's last keys, then put the entry
 * and a log record: two object stores); the same shape in one object store
 * (log records under number keys, which sort before every string); the
 * shape with explicit `commit()`; and the shape plus a BroadcastChannel post.
 *
 *   npx tsx bench/tools/idb-shapes.ts [trials]
 *
 * @module
 */
import { startBrowser } from '../browser/driver'
import { alternate, type Contender } from '../lib/compare'
import { fmtMs, fmtOps } from '../lib/report'

const trials = Number(process.argv[2] ?? 5)
const b = await startBrowser({ minify: false })
try {
  const tab = await b.tab()
  await tab.page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const req = indexedDB.open('bench-shapes', 1)
      req.onupgradeneeded = () => {
        req.result.createObjectStore('entries', { keyPath: 'key' }).createIndex('expiresAt', 'expiresAt')
        req.result.createObjectStore('log', { keyPath: 'revision' })
        req.result.createObjectStore('one', { keyPath: 'key' }).createIndex('expiresAt', 'expiresAt')
      }
      req.onsuccess = () => resolve(req.result)
      req.onerror = () => reject(req.error)
    })
    const channel = new BroadcastChannel('bench-shapes')
    let rev = 0
    const tx = (stores: string[], body: (tx: IDBTransaction) => void) =>
      new Promise<void>((resolve, reject) => {
        const t = db.transaction(stores, 'readwrite')
        t.oncomplete = () => resolve()
        t.onabort = () => reject(t.error)
        body(t)
      })
    const entry = () => ({ key: 'k', value: null, revision: rev, created: rev, owner: 'me', expiresAt: Date.now() + 30_000, ttl: 30_000 })
    const shapes: Record<string, () => Promise<void>> = {
      blind: () => tx(['entries'], (t) => t.objectStore('entries').put(entry())),
      readPut: () =>
        tx(['entries'], (t) => {
          const g = t.objectStore('entries').get('k')
          g.onsuccess = () => t.objectStore('entries').put(entry())
        }),
      zaris: (commit = false, post = false) =>
        tx(['entries', 'log'], (t) => {
          const e = t.objectStore('entries')
          const log = t.objectStore('log')
          let n = 2
          const go = () => {
            if (--n > 0) return
            rev++
            e.put(entry())
            const record = { revision: rev, events: [{ type: 'put', key: 'k', revision: rev, value: null }] }
            log.put(record)
            if (commit) t.commit()
            if (post) t.addEventListener('complete', () => channel.postMessage({ records: [record] }))
          }
          e.get('k').onsuccess = go
          log.getAllKeys(IDBKeyRange.lowerBound(rev), 32).onsuccess = go
        }),
      oneStore: () =>
        tx(['one'], (t) => {
          const s = t.objectStore('one')
          let n = 2
          const go = () => {
            if (--n > 0) return
            rev++
            s.put(entry())
            s.put({ key: rev, events: [{ type: 'put', key: 'k', revision: rev, value: null }] })
          }
          s.get('k').onsuccess = go
          s.getAllKeys(IDBKeyRange.lowerBound(rev), 32).onsuccess = go
        }),
    } as never
    const g = window as unknown as Record<string, unknown>
    g.shape = async (name: string, ms: number) => {
      const f = name === 'commit' ? () => (shapes.zaris as Function)(true) : name === 'post' ? () => (shapes.zaris as Function)(false, true) : shapes[name]!
      const lat: number[] = []
      const s = performance.now()
      while (performance.now() - s < ms) {
        const t = performance.now()
        await f()
        lat.push(performance.now() - t)
      }
      return { ops: lat.length, ms: performance.now() - s, lat }
    }
  })
  const row = (label: string, name: string): Contender => ({
    label,
    zaris: false,
    trial: () => tab.page.evaluate(([n]) => (window as unknown as { shape: Function }).shape(n, 500), [name] as const) as never,
  })
  const rows = await alternate(
    [
      row('blind put', 'blind'),
      row('read, then put', 'readPut'),
      row('zaris shape (2 stores)', 'zaris'),
      row('zaris shape, one store', 'oneStore'),
      row('zaris shape, commit()', 'commit'),
      row('zaris shape + post', 'post'),
    ],
    trials,
  )
  for (const r of rows) console.log(`${r.contender.padEnd(26)} ${fmtOps(r.opsPerSec).padStart(6)} tx/s  p50 ${fmtMs(r.p50).padStart(8)}  p99 ${fmtMs(r.p99).padStart(8)}`)
} finally {
  await b.close()
}
