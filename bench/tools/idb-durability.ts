/**
 * What IndexedDB durability costs per commit in this Chromium: bare
 * readwrite transactions (one put; a read then two puts in two stores, the
 * shape of a zaris commit) with `durability` left to the browser's default,
 * `'relaxed'` and `'strict'`, taking turns in one tab; and what the default
 * reports (`IDBTransaction.durability`). The profile directory is the
 * a temporary directory on disk (`DURABILITY_DIR` picks where): the bench's
 * tabs run in an off-the-record context, whose IndexedDB lives in memory.
 *
 *   npx tsx bench/tools/idb-durability.ts [trials]
 *
 * @module
 */
import { createServer } from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright'
import { chromiumLaunchOptions } from '../../test/browser-harness/chromium'
import { alternate, type Contender } from '../lib/compare'
import { fmtMs, fmtOps } from '../lib/report'

const trials = Number(process.argv[2] ?? 5)
// A profile on disk: a context from `launch()` is off the record, and keeps IndexedDB in memory (as the bench's tabs do).
const dir = mkdtempSync(join(process.env.DURABILITY_DIR ?? tmpdir(), 'zaris-durability-'))
const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>d</title>'))
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
const context = await chromium.launchPersistentContext(dir, chromiumLaunchOptions())
try {
  const tab = { page: await context.newPage() }
  await tab.page.goto(`http://127.0.0.1:${(server.address() as { port: number }).port}/`)
  // tsx compiles the callbacks below with keepNames, which calls __name.
  await tab.page.evaluate('globalThis.__name = (f) => f')
  const reported = await tab.page.evaluate(async () => {
    const db = await new Promise<IDBDatabase>((resolve, reject) => {
      const req = indexedDB.open('bench-durability', 1)
      req.onupgradeneeded = () => {
        req.result.createObjectStore('entries', { keyPath: 'key' })
        req.result.createObjectStore('log', { keyPath: 'revision' })
      }
      req.onsuccess = () => resolve(req.result)
      req.onerror = () => reject(req.error)
    })
    let rev = 0
    const g = window as unknown as Record<string, unknown>
    const run = (durability: IDBTransactionDurability | undefined, shaped: boolean) => () =>
      new Promise<void>((resolve, reject) => {
        const tx = durability ? db.transaction(['entries', 'log'], 'readwrite', { durability }) : db.transaction(['entries', 'log'], 'readwrite')
        tx.oncomplete = () => resolve()
        tx.onabort = () => reject(tx.error)
        const entries = tx.objectStore('entries')
        if (!shaped) {
          entries.put({ key: 'k', at: Date.now() })
          return
        }
        const get = entries.get('k')
        get.onsuccess = () => {
          rev++
          entries.put({ key: 'k', revision: rev, created: rev })
          tx.objectStore('log').put({ revision: rev, events: [] })
        }
      })
    g.durabilityLoop = async (durability: IDBTransactionDurability | undefined, shaped: boolean, ms: number) => {
      const f = run(durability, shaped)
      const lat: number[] = []
      const s = performance.now()
      while (performance.now() - s < ms) {
        const t = performance.now()
        await f()
        lat.push(performance.now() - t)
      }
      return { ops: lat.length, ms: performance.now() - s, lat }
    }
    return db.transaction('entries', 'readwrite').durability
  })
  console.log(`a readwrite transaction opened without a durability option reports durability ${JSON.stringify(reported)}`)
  const row = (label: string, durability: IDBTransactionDurability | undefined, shaped: boolean): Contender => ({
    label,
    zaris: false,
    trial: () =>
      tab.page.evaluate(([d, s]) => (window as unknown as { durabilityLoop: Function }).durabilityLoop(d ?? undefined, s, 500), [durability ?? null, shaped] as const) as never,
  })
  const rows = await alternate(
    [
      row('put, default', undefined, false),
      row('put, relaxed', 'relaxed', false),
      row('put, strict', 'strict', false),
      row('read + 2 puts, default', undefined, true),
      row('read + 2 puts, relaxed', 'relaxed', true),
      row('read + 2 puts, strict', 'strict', true),
    ],
    trials,
  )
  for (const r of rows) console.log(`${r.contender.padEnd(26)} ${fmtOps(r.opsPerSec).padStart(6)} tx/s  p50 ${fmtMs(r.p50).padStart(8)}  p99 ${fmtMs(r.p99).padStart(8)}`)
} finally {
  await context.close()
  server.close()
  rmSync(dir, { recursive: true, force: true })
}
