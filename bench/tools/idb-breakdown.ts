/**
 * Where an IndexedDB acquire + release goes, step by step, in one tab of
 * Chromium, taking turns like the bench: a bare single-store put, a bare
 * transaction shaped like a zaris commit (3 stores, reads then writes),
 * `adapter.commit` alone (no core), and the full acquire + release; plus a
 * CPU profile of the full loop (written to /tmp/zaris-idb.cpuprofile).
 *
 *   npx tsx bench/tools/idb-breakdown.ts
 *
 * @module
 */
import { writeFileSync } from 'node:fs'
import { startBrowser } from '../browser/driver'
import { alternate } from '../lib/compare'
import { fmtMs, fmtOps } from '../lib/report'
import { summarise } from './cpuprofile'

const b = await startBrowser({ minify: false })
try {
  const tab = await b.tab()
  await tab.page.evaluate(() => window.bench.ready('bd'))
  await tab.page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const req = indexedDB.open('bench-shape', 1)
      req.onupgradeneeded = () => {
        const d = req.result
        d.createObjectStore('entries', { keyPath: 'key' }).createIndex('expiresAt', 'expiresAt')
        d.createObjectStore('meta')
        d.createObjectStore('log', { keyPath: 'revision' })
      }
      req.onsuccess = () => resolve(req.result)
      req.onerror = () => reject(req.error)
    })
    let rev = 0
    const req = <T>(r: IDBRequest<T>) => new Promise<T>((res, rej) => ((r.onsuccess = () => res(r.result)), (r.onerror = () => rej(r.error))))
    ;(window as unknown as { shaped: () => Promise<void> }).shaped = async () => {
      const tx = db.transaction(['entries', 'meta', 'log'], 'readwrite')
      const done = new Promise<void>((res, rej) => ((tx.oncomplete = () => res()), (tx.onerror = () => rej(tx.error))))
      const entries = tx.objectStore('entries')
      await Promise.all([req(tx.objectStore('meta').get('revision')), req(entries.index('expiresAt').getAll(IDBKeyRange.upperBound(Date.now()))), req(entries.get('k'))])
      rev++
      entries.put({ key: 'k', value: null, revision: rev, created: rev, expiresAt: Date.now() + 30_000 })
      tx.objectStore('log').put({ revision: rev, events: [] })
      tx.objectStore('meta').put(rev, 'revision')
      await done
    }
    // The same single-store put, but after one read in the transaction: what the read round trip costs.
    ;(window as unknown as { readThenPut: () => Promise<void> }).readThenPut = async () => {
      const tx = db.transaction(['entries'], 'readwrite')
      const done = new Promise<void>((res, rej) => ((tx.oncomplete = () => res()), (tx.onerror = () => rej(tx.error))))
      const entries = tx.objectStore('entries')
      await req(entries.get('k'))
      rev++
      entries.put({ key: 'k', value: null, revision: rev, created: rev })
      await done
    }
  })
  const timed = (name: string) => (d: number) =>
    tab.page.evaluate(
      async ([name, d]) => {
        const f = (window as unknown as Record<string, () => Promise<void>>)[name]!
        const lat: number[] = []
        const s = performance.now()
        let n = 0
        while (performance.now() - s < d) {
          const t = performance.now()
          await f()
          lat.push(performance.now() - t)
          n++
        }
        return { ops: n, ms: performance.now() - s, lat }
      },
      [name, d] as const,
    )
  const d = 500
  const rows = await alternate(
    [
      { label: 'bare put tx (1 store)', zaris: false, trial: () => tab.page.evaluate((d) => window.bench.loop('raw', 'bd', d), d).then((t) => ({ ...t, ops: t.ops * 2, lat: t.lat.map((l) => l / 2) })) },
      { label: 'bare read-then-put tx (1 store)', zaris: false, trial: () => timed('readThenPut')(d) },
      { label: 'bare tx shaped like a commit', zaris: false, trial: () => timed('shaped')(d) },
      {
        label: 'adapter.commit (acquire-shaped)',
        zaris: true,
        trial: () =>
          tab.page.evaluate(async (d) => {
            const a = (await window.bench.client('bd')).adapter
            const lat: number[] = []
            const s = performance.now()
            let n = 0
            while (performance.now() - s < d) {
              const t = performance.now()
              const r = await a.commit([{ key: 'c', revision: null }], [{ type: 'set', key: 'c', value: null, ttl: 30_000, owner: 'me' }])
              if (r.ok) await a.commit([{ key: 'c', created: r.entries[0]!.created }], [{ type: 'delete', key: 'c' }])
              lat.push((performance.now() - t) / 2)
              n += 2
            }
            return { ops: n, ms: performance.now() - s, lat }
          }, d),
      },
      { label: 'acquire + release (÷2)', zaris: true, trial: () => tab.page.evaluate((d) => window.bench.loop('zaris', 'bd', d), d).then((t) => ({ ...t, ops: t.ops * 2, lat: t.lat.map((l) => l / 2) })) },
    ],
    5,
  )
  for (const r of rows) console.log(`${r.contender.padEnd(34)} ${fmtOps(r.opsPerSec).padStart(6)} tx/s  p50 ${fmtMs(r.p50).padStart(8)}  p99 ${fmtMs(r.p99).padStart(8)}`)
  const cdp = await b.context.newCDPSession(tab.page)
  await cdp.send('Profiler.enable')
  await cdp.send('Profiler.setSamplingInterval', { interval: 200 })
  await cdp.send('Profiler.start')
  await tab.page.evaluate(() => window.bench.loop('zaris', 'bd', 3000))
  const { profile } = await cdp.send('Profiler.stop')
  writeFileSync('/tmp/zaris-idb.cpuprofile', JSON.stringify(profile))
  console.log(summarise(profile as never, 25))
} finally {
  await b.close()
}
