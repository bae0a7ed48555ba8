/**
 * Which IndexedDB transactions run while a holder's (or leader's) tab is
 * closed and the waiting tab takes over: every transaction either tab opens
 * (the closing tab's, with the stack that opened it, relayed over a
 * BroadcastChannel while it can still post) and when it completes, on one
 * clock from `page.close()`, with when the waiter held. How bench/FINDINGS.md
 * §18 found the closing tab's transaction that held every write back.
 *
 *   npx tsx bench/tools/closed-trace.ts [zaris|zaris-election] [trials=4]
 *
 * @module
 */
import { startBrowser } from '../browser/driver'
import { absNow } from '../lib/measure'

const what = (process.argv[2] ?? 'zaris') as 'zaris' | 'zaris-election'
const n = Number(process.argv[3] ?? 4)
const b = await startBrowser({ minify: false })
// In every tab: stamps of zaris's trace points and of IndexedDB transactions (begun, done); a holder's go to the waiter over a channel.
const instrument = (who: string) => {
  const g = globalThis as unknown as { __zlog: Array<[number, string]>; __zt: (s: string) => void; __who: string }
  g.__zlog = []
  g.__who = who
  const ch = new BroadcastChannel('ztrace')
  if (who === 'W') ch.onmessage = (e) => g.__zlog.push(e.data as [number, string])
  g.__zt = (s) => {
    const rec: [number, string] = [performance.timeOrigin + performance.now(), `${who} ${s}`]
    if (who === 'W') g.__zlog.push(rec)
    else ch.postMessage(rec)
  }
  const tx = IDBDatabase.prototype.transaction
  let n = 0
  IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<IDBDatabase['transaction']>) {
    const t = tx.apply(this, args)
    const id = ++n
    const names = ([] as string[]).concat(args[0] as string[]).join('+')
    g.__zt?.(`tx${id} ${args[1] ?? 'readonly'} ${names} open` + (who === 'H' ? ' ' + (new Error().stack ?? '').split('\n').slice(2, 9).map((l) => l.trim().replace(/\(http[^)]*\)/, '')).join(' < ') : ''))
    t.addEventListener('complete', () => g.__zt?.(`tx${id} complete`))
    t.addEventListener('abort', () => g.__zt?.(`tx${id} abort`))
    return t
  } as typeof tx
}
try {
  const ns = 'ct'
  const w = await b.tab()
  await w.page.evaluate(instrument, 'W')
  await w.page.evaluate((ns) => window.bench.ready(ns), ns)
  for (let i = 0; i < n; i++) {
    const key = `k${i}`
    const h = await b.tab()
    await h.page.evaluate(instrument, 'H')
    await h.page.evaluate(([ns, key, what]) => window.bench.hold(what as never, ns, key), [ns, key, what] as const)
    await w.page.evaluate(([ns, key, what]) => window.bench.wait(what as never, ns, key, 30), [ns, key, what] as const)
    await w.page.evaluate(() => { (globalThis as unknown as { __zlog: unknown[] }).__zlog = [] })
    const t0 = absNow()
    await h.close()
    const t1 = await w.page.evaluate(() => window.bench.waited())
    const log = await w.page.evaluate(() => (globalThis as unknown as { __zlog: Array<[number, string]> }).__zlog)
    await w.page.evaluate(() => window.bench.release())
    console.log(`--- trial ${i}: held at ${(t1 - w.offset - t0).toFixed(1)} ms`)
    for (const [t, s] of log.sort((a, b) => a[0] - b[0])) console.log(`${(t - w.offset - t0).toFixed(1).padStart(7)} ${s}`)
  }
} finally {
  await b.close()
}
