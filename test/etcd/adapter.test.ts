/**
 * What the etcd adapter does beyond the conformance suite, on one real etcd
 * member: expiry told from delete for every watcher, the new-life rule over
 * etcd's create revisions, `add` as a compare-and-swap, a commit sent again
 * answered instead of applied twice, TTLs never served short, compaction,
 * and bad input.
 */
import { Etcd3 } from 'etcd3'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { connect, type Adapter, type Op, type WatchEvent } from 'zaris'
import { etcdAdapter } from 'zaris/etcd'
import { EtcdCluster } from './server'

let etcd: EtcdCluster
const opened: Adapter[] = []
beforeAll(async () => {
  etcd = await EtcdCluster.start(1)
})
afterAll(async () => {
  await Promise.all(opened.map((a) => a.close()))
  await etcd?.dispose()
})

let n = 0
async function adapter(namespace = `t${++n}`): Promise<Adapter> {
  const a = await etcdAdapter({ url: etcd.url(namespace) })
  opened.push(a)
  return a
}
const until = async (cond: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 10))
  }
}
const add = (key: string, delta: number) => ({ type: 'add', key, delta }) as unknown as Op

describe('etcd adapter', () => {
  test('every watcher sees a lease expiry as expire and a user delete as delete, once each', async () => {
    const ns = `w${++n}`
    const [a, b] = [await adapter(ns), await adapter(ns)]
    const seen: WatchEvent[][] = [[], [], []]
    const stops = [
      await a.watch('', { event: (e) => seen[0]!.push(e), error: () => {} }),
      await b.watch('x/', { event: (e) => seen[1]!.push(e), error: () => {} }),
      await b.watch('x/t', { event: (e) => seen[2]!.push(e), error: () => {} }),
    ]
    await a.commit([], [{ type: 'set', key: 'x/t', value: 1, ttl: 100, owner: 'o' }, { type: 'set', key: 'x/d', value: 2, ttl: 60_000 }])
    await a.commit([], [{ type: 'delete', key: 'x/d' }])
    await a.commit([], [{ type: 'delete', key: 'x/never' }]) // nothing to delete: no event
    await until(() => seen[2]!.some((e) => e.type === 'expire'), 3_000 + a.capabilities!.ttlGranularity!)
    await new Promise((r) => setTimeout(r, 300))
    stops.forEach((s) => s())
    const shape = (evs: WatchEvent[]) => evs.map((e) => `${e.type} ${e.key}`)
    expect(shape(seen[0]!).sort()).toEqual(['delete x/d', 'expire x/t', 'put x/d', 'put x/t'])
    expect(shape(seen[1]!)).toEqual(shape(seen[0]!))
    expect(shape(seen[2]!)).toEqual(['put x/t', 'expire x/t'])
    expect(seen[0]!.find((e) => e.type === 'expire')!.revision).toBe(seen[2]![1]!.revision)
  })

  test('an owner change starts a new life; the same owner keeps it; fresh starts one', async () => {
    const a = await adapter()
    const events: WatchEvent[] = []
    await a.watch('k', { event: (e) => events.push(e), error: () => {} })
    const created = async (op: Omit<Extract<Op, { type: 'set' }>, 'type' | 'key' | 'value'>) => {
      const r = await a.commit([], [{ type: 'set', key: 'k', value: 0, ...op }])
      if (!r.ok) throw new Error('commit failed')
      expect((await a.get('k'))?.created).toBe(r.entries[0]!.created)
      return [r.revision, r.entries[0]!.created]
    }
    const [r1, c1] = await created({ owner: 'a' })
    expect(c1).toBe(r1)
    const [, c2] = await created({ owner: 'a', ttl: 60_000 })
    expect(c2).toBe(c1) // same owner: same life
    const [r3, c3] = await created({ owner: 'b' })
    expect(c3).toBe(r3) // another owner: new life
    const [r4, c4] = await created({})
    expect(c4).toBe(r4) // ownerless over owned: new life
    const [, c5] = await created({})
    expect(c5).toBe(c4) // ownerless over ownerless: same life
    const [r6, c6] = await created({ fresh: true })
    expect(c6).toBe(r6)
    await until(() => events.length === 6)
    // A new life over a live entry is one put for watchers, never a delete or an expiry.
    expect(events.map((e) => [e.type, e.created])).toEqual([c1, c2, c3, c4, c5, c6].map((c) => ['put', c]))
  })

  test('add creates at 0, keeps created, owner and TTL, refuses non-numbers, and is exact under contention', async () => {
    const ns = `c${++n}`
    const adapters = [await adapter(ns), await adapter(ns), await adapter(ns), await adapter(ns)]
    const a = adapters[0]!
    const first = await a.commit([], [add('n', 5)])
    expect(first).toMatchObject({ ok: true, entries: [{ key: 'n', value: 5 }] })
    await a.commit([], [{ type: 'set', key: 'held', value: 1, owner: 'o', ttl: 60_000 }])
    const before = await a.get('held')
    const r = await a.commit([], [add('held', 2)])
    expect(r.ok && r.entries[0]).toMatchObject({ value: 3, owner: 'o', created: before!.created })
    expect((await a.get('held'))!.ttl).toBeGreaterThan(50_000)
    await a.commit([], [{ type: 'set', key: 's', value: 'text' }])
    await expect(a.commit([], [add('s', 1)])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('"s"') })
    // A failed check is a failed commit, not a refusal.
    expect(await a.commit([{ key: 's', revision: null }], [add('s', 1)])).toMatchObject({ ok: false, failed: [{ key: 's', entry: { value: 'text' } }] })
    await a.commit([], [{ type: 'set', key: 'big', value: Number.MAX_SAFE_INTEGER - 1 }])
    await expect(a.commit([], [add('big', 2)])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    const results = await Promise.all(adapters.flatMap((x) => Array.from({ length: 25 }, () => x.commit([], [add('race', 1)]))))
    const values = results.map((x) => (x.ok ? x.entries[0]!.value : undefined))
    expect(new Set(values).size).toBe(100)
    expect((await a.get('race'))?.value).toBe(100)
  })

  test('a commit sent again with its request id is answered as the first time, not applied again', async () => {
    const a = await adapter()
    const once = await a.commit([], [add('n', 1), { type: 'set', key: 'v', value: 'x', owner: 'o' }], { requestId: 'req-1' })
    await a.commit([], [{ type: 'set', key: 'v', value: 'y', owner: 'o' }])
    const again = await a.commit([], [add('n', 1), { type: 'set', key: 'v', value: 'x', owner: 'o' }], { requestId: 'req-1' })
    expect(again).toEqual(once)
    expect((await a.get('n'))?.value).toBe(1)
    expect((await a.get('v'))?.value).toBe('y')
    const del = await a.commit([], [{ type: 'delete', key: 'v' }], { requestId: 'req-2' })
    expect(await a.commit([], [{ type: 'delete', key: 'v' }], { requestId: 'req-2' })).toEqual(del)
  })

  test('an entry never frees before its TTL and frees within the declared granularity after it', async () => {
    const a = await adapter()
    const granularity = a.capabilities!.ttlGranularity!
    expect(granularity).toBeGreaterThanOrEqual(1_000)
    const ttls = [50, 1_000, 1_300]
    const gone = await Promise.all(
      ttls.map(async (ttl, i) => {
        const sent = performance.now()
        await a.commit([], [{ type: 'set', key: `t${i}`, value: i, ttl }])
        while (await a.get(`t${i}`)) await new Promise((r) => setTimeout(r, 20))
        return performance.now() - sent
      }),
    )
    gone.forEach((ms, i) => {
      expect(ms).toBeGreaterThanOrEqual(ttls[i]!)
      expect(ms).toBeLessThan(ttls[i]! + granularity + 1_000)
    })
  })

  test('the TTL left of an entry written by another process comes from etcd', async () => {
    const ns = `l${++n}`
    const a = await adapter(ns)
    // Other options: a connection (and lease pool) of its own, as another process would have.
    const b = await etcdAdapter({ url: etcd.url(ns), callTimeout: 1_999 })
    opened.push(b)
    await a.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 5_000 }])
    await new Promise((r) => setTimeout(r, 1_200))
    const left = (await b.get('k'))!.ttl!
    expect(left).toBeLessThanOrEqual(4_000)
    expect(left).toBeGreaterThanOrEqual(2_000)
    expect((await b.list('')).entries[0]!.ttl).toBeLessThanOrEqual(left)
  })

  test('a watch from a revision etcd has compacted away gets CompactedError', async () => {
    const a = await adapter()
    const r1 = await a.commit([], [{ type: 'set', key: 'h', value: 1 }])
    const r2 = await a.commit([], [{ type: 'set', key: 'h', value: 2 }])
    if (!r1.ok || !r2.ok) throw new Error('commit failed')
    const raw = new Etcd3({ hosts: etcd.members[0]!.endpoint })
    await raw.kv.compact({ revision: r2.revision, physical: true })
    raw.close()
    const errors: Error[] = []
    await a.watch('h', { event: () => {}, error: (e) => errors.push(e) }, r1.revision - 1)
    await until(() => errors.length > 0)
    expect(errors[0]).toMatchObject({ code: 'COMPACTED' })
    const events: WatchEvent[] = []
    await a.watch('h', { event: (e) => events.push(e), error: () => {} }, r2.revision)
    await a.commit([], [{ type: 'set', key: 'h', value: 3 }])
    await until(() => events.length === 1)
  })

  test('bad input is refused with a clear error', async () => {
    const a = await adapter()
    await expect(a.get('\uD800x')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('lone surrogate') })
    await expect(a.commit([], [{ type: 'set', key: 'a', value: 1 }, { type: 'delete', key: 'a' }])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(a.commit([], Array.from({ length: 61 }, (_, i) => ({ type: 'delete', key: `k${i}` }) as Op))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    // Over etcd's --max-request-bytes (1.5 MiB by default).
    await expect(a.commit([], [{ type: 'set', key: 'big', value: 'x'.repeat(2 * 1024 * 1024) }])).rejects.toMatchObject({ code: 'TOO_LARGE' })
    await expect(connect('etcd://127.0.0.1:2379')).rejects.toMatchObject({ code: 'INVALID_URL' })
    await expect(connect('etcd://127.0.0.1:99999/ns')).rejects.toMatchObject({ code: 'INVALID_URL' })
    await expect(etcdAdapter({ url: 'etcd://127.0.0.1:1/ns', timeout: 500, callTimeout: 200 })).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    // Keys with bytes 0x00 and 0x01 (zaris's queue keys start with U+0001) round-trip and stay apart.
    await a.commit([], [{ type: 'set', key: 'z', value: 0 }, { type: 'set', key: 'z\u0000', value: 1 }, { type: 'set', key: 'z\u0001q', value: 2 }])
    expect((await a.list('z')).entries.map((e) => [e.key, e.value])).toEqual([['z', 0], ['z\u0000', 1], ['z\u0001q', 2]])
    expect(await a.commit([{ key: 'z', revision: null }], [])).toMatchObject({ ok: false })
  })
})
