/**
 * Calls per operation: how many IndexedDB transactions (readwrite and
 * readonly) and requests, Web Locks requests and queries, and
 * BroadcastChannel posts one tab's acquire + release over zaris://idb
 * makes, and a cross-tab handoff (both tabs' calls), counted in the pages
 * by wrapping the platform's own methods. A count, unlike a time, does not
 * move with the machine's load.
 *
 *   npx tsx bench/tools/idb-calls.ts [cycles]
 *
 * @module
 */
import { startBrowser, type Tab } from '../browser/driver'

const cycles = Number(process.argv[2] ?? 50)
const b = await startBrowser({ minify: false })

/** Wraps the methods to count in `tab`; `window.calls` holds the counts. */
function instrument(tab: Tab): Promise<void> {
  return tab.page.evaluate(() => {
    const calls: Record<string, number> = {}
    const g = window as unknown as { calls: Record<string, number>; marks: Array<[string, number]> }
    g.calls = calls
    g.marks = []
    const count = (name: string) => {
      calls[name] = (calls[name] ?? 0) + 1
      g.marks.push([name, performance.timeOrigin + performance.now()])
    }
    const wrap = <T extends object>(proto: T, method: string, name: (self: never, args: unknown[]) => string) => {
      const original = (proto as Record<string, Function>)[method]!
      ;(proto as Record<string, Function>)[method] = function (this: never, ...args: unknown[]) {
        count(name(this, args))
        return original.apply(this, args)
      }
    }
    const tx = IDBDatabase.prototype.transaction
    IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<typeof tx>) {
      const t = tx.apply(this, args)
      count(`idb tx ${t.mode}`)
      t.addEventListener('complete', () => g.marks.push([`idb tx ${t.mode} complete`, performance.timeOrigin + performance.now()]))
      return t
    } as typeof tx
    for (const m of ['get', 'getAll', 'getAllKeys', 'put', 'add', 'delete', 'openCursor', 'openKeyCursor', 'count']) wrap(IDBObjectStore.prototype, m, () => 'idb request')
    for (const m of ['get', 'getAll', 'getAllKeys', 'openCursor', 'openKeyCursor', 'count']) wrap(IDBIndex.prototype, m, () => 'idb request')
    wrap(LockManager.prototype, 'request', () => 'web lock request')
    wrap(LockManager.prototype, 'query', () => 'web lock query')
    wrap(BroadcastChannel.prototype, 'postMessage', () => 'broadcast post')
    wrap(window, 'setTimeout', () => 'setTimeout')
  })
}
const take = (tab: Tab) => tab.page.evaluate(() => Object.assign({}, (window as unknown as { calls: Record<string, number> }).calls))
const reset = (tab: Tab) => tab.page.evaluate(() => {
  const c = (window as unknown as { calls: Record<string, number> }).calls
  for (const k of Object.keys(c)) delete c[k]
})
const show = (title: string, counts: Record<string, number>, n: number) => {
  console.log(title)
  for (const [k, v] of Object.entries(counts).sort()) console.log(`  ${k.padEnd(22)} ${(v / n).toFixed(2)}`)
}

try {
  const [a, w] = [await b.tab(), await b.tab()]
  for (const t of [a, w]) {
    await t.page.evaluate(() => window.bench.ready('calls'))
    await instrument(t)
  }
  // One tab: warm up, then count.
  await a.page.evaluate((n) => window.bench.loop('zaris', 'calls', 200).then(() => n), cycles)
  await reset(a)
  await a.page.evaluate(async (n) => {
    const c = await window.bench.client('calls')
    for (let i = 0; i < n; i++) await (await c.locks.acquire('lock:one-tab', { ttl: 30_000 }))!.release()
  }, cycles)
  show('one tab, per acquire + release:', await take(a), cycles)
  // Where the time of one cycle goes: each call's mean time from the acquire call (ms).
  const timeline = await a.page.evaluate(async (n) => {
    const g = window as unknown as { marks: Array<[string, number]> }
    const c = await window.bench.client('calls')
    const at = new Map<string, number[]>()
    for (let i = 0; i < n; i++) {
      g.marks = []
      const now = () => performance.timeOrigin + performance.now()
      const t0 = now()
      const lock = (await c.locks.acquire('lock:one-tab', { ttl: 30_000 }))!
      g.marks.push(['acquire resolved', now()])
      g.marks.push(['release called', now()])
      await lock.release()
      g.marks.push(['release resolved', now()])
      const seen = new Map<string, number>()
      for (const [name, t] of g.marks) {
        const k = seen.get(name) ?? 0
        seen.set(name, k + 1)
        const label = `${name}${k > 0 ? ` #${k + 1}` : ''}`
        at.set(label, [...(at.get(label) ?? []), t - t0])
      }
    }
    return [...at].map(([k, v]) => [k, v.reduce((x, y) => x + y, 0) / v.length, v.length] as const).sort((x, y) => x[1] - y[1])
  }, cycles)
  console.log('one tab, mean time of each call from the acquire call (ms):')
  for (const [k, t, n] of timeline) console.log(`  ${t.toFixed(2).padStart(6)}  ${k}${n < cycles ? ` (${n} of ${cycles})` : ''}`)
  // Handoff: a holds, w waits, a releases, w holds; counted in both tabs, per handoff.
  const sum: Record<string, number> = {}
  const at = new Map<string, number[]>()
  const marks = (t: Tab) => t.page.evaluate(() => (window as unknown as { marks: Array<[string, number]> }).marks)
  for (let i = 0; i < cycles; i++) {
    const key = `calls-${i}`
    await a.page.evaluate((key) => window.bench.hold('zaris', 'calls', key), key)
    await w.page.evaluate((key) => window.bench.wait('zaris', 'calls', key, 15), key)
    for (const t of [a, w]) {
      await reset(t)
      await t.page.evaluate(() => ((window as unknown as { marks: unknown[] }).marks = []))
    }
    const t0 = (await a.page.evaluate(() => window.bench.release())) - a.offset
    const t1 = (await w.page.evaluate(() => window.bench.waited())) - w.offset
    for (const t of [a, w]) for (const [k, v] of Object.entries(await take(t))) sum[k] = (sum[k] ?? 0) + v
    const seen = new Map<string, number>()
    const all = [...(await marks(a)).map(([n, x]) => [`holder: ${n}`, x - a.offset] as const), ...(await marks(w)).map(([n, x]) => [`waiter: ${n}`, x - w.offset] as const), ['waiter holds', t1] as const]
    for (const [name, x] of all) {
      const k = seen.get(name) ?? 0
      seen.set(name, k + 1)
      const label = `${name}${k > 0 ? ` #${k + 1}` : ''}`
      at.set(label, [...(at.get(label) ?? []), x - t0])
    }
    await w.page.evaluate(() => window.bench.release())
  }
  show('handoff, per handoff (both tabs, from the release call to the grant):', sum, cycles)
  console.log('handoff, median time of each call from the release call (ms; both tabs on one clock):')
  const med = (v: number[]) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)]!
  for (const [k, v] of [...at].sort((x, y) => med(x[1]) - med(y[1]))) console.log(`  ${med(v).toFixed(2).padStart(6)}  ${k}${v.length < cycles ? ` (${v.length} of ${cycles})` : ''}`)
} finally {
  await b.close()
}
