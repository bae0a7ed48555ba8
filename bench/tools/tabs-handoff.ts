/**
 * Where a zaris/tabs handoff between two tabs goes, on one clock: the
 * holder's release call, the waiting tab's Web Lock grant (its gate), the
 * waiter's take transaction (created, completed), and the waiter's hold.
 * The waiting page's `navigator.locks.request` and `IDBDatabase.transaction`
 * are wrapped to stamp those moments (a profiling tool: the bench itself
 * runs unwrapped).
 *
 *   npx tsx bench/tools/tabs-handoff.ts [rounds]
 *   FORCE_DURABILITY=default npx tsx bench/tools/tabs-handoff.ts   the waiter's transactions at another durability
 *
 * @module
 */
import { startBrowser } from '../browser/driver'
import { median } from '../lib/measure'

const rounds = Number(process.argv[2] ?? 30)
const b = await startBrowser()
try {
  const [a, w] = [await b.tab(), await b.tab()]
  const ns = 'th'
  for (const t of [a, w]) await t.page.evaluate((ns) => window.bench.ready(ns), ns)
  // FORCE_DURABILITY=relaxed|default: every readwrite transaction of the waiting tab with that durability (what a strict take costs).
  await w.page.evaluate((force) => {
    const g = window as unknown as { stamps: Array<[string, number]> }
    g.stamps = []
    const stamp = (what: string) => g.stamps.push([what, window.bench.absNow()])
    const request = navigator.locks.request.bind(navigator.locks) as (name: string, o: LockOptions, cb: LockGrantedCallback<unknown>) => Promise<unknown>
    navigator.locks.request = ((name: string, o: LockOptions, cb: LockGrantedCallback<unknown>) =>
      request(name, o, (lock: Lock | null) => {
        if (name.includes(':gate:') && lock) stamp('granted')
        return cb(lock)
      })) as typeof navigator.locks.request
    const transaction = IDBDatabase.prototype.transaction
    IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<IDBDatabase['transaction']>) {
      if (force && args[1] === 'readwrite') args[2] = { durability: force as IDBTransactionDurability }
      const tx = transaction.apply(this, args)
      if (tx.mode === 'readwrite') {
        stamp('tx created')
        tx.addEventListener('complete', () => stamp('tx complete'))
      }
      return tx
    } as IDBDatabase['transaction']
  }, process.env.FORCE_DURABILITY ?? '')
  const parts: Record<string, number[]> = {}
  const add = (k: string, v: number) => (parts[k] ??= []).push(v)
  for (let i = 0; i < rounds; i++) {
    const key = `k${i}`
    await a.page.evaluate(([ns, key]) => window.bench.hold('tabs', ns, key), [ns, key] as const)
    await w.page.evaluate(([ns, key]) => window.bench.wait('tabs', ns, key, 15), [ns, key] as const)
    await w.page.evaluate(() => ((window as unknown as { stamps: unknown[] }).stamps = []))
    const t0 = (await a.page.evaluate(() => window.bench.release())) - a.offset
    const held = (await w.page.evaluate(() => window.bench.waited())) - w.offset
    const stamps = (await w.page.evaluate(() => (window as unknown as { stamps: Array<[string, number]> }).stamps)).map(([k, t]) => [k, t - w.offset] as const)
    await w.page.evaluate(() => window.bench.release())
    const at = (what: string) => stamps.find(([k]) => k === what)?.[1] ?? NaN
    add('release call -> gate granted (waiter)', at('granted') - t0)
    add('gate granted -> take tx created', at('tx created') - at('granted'))
    add('take tx created -> complete', at('tx complete') - at('tx created'))
    add('take tx complete -> held', held - at('tx complete'))
    add('total handoff', held - t0)
    add('readwrite txs in the waiter before it held', stamps.filter(([k, t]) => k === 'tx created' && t <= held).length)
  }
  for (const [k, v] of Object.entries(parts)) console.log(`${k.padEnd(46)} median ${median(v).toFixed(2)}`)
} finally {
  await b.close()
}
