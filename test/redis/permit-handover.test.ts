/**
 * The Redis store hands over with other ways (capability `orElse`,
 * src/adapters/redis/handover.ts), against a real redis-server: a parked
 * commit goes through the first of its ways whose checks hold, on its first
 * try, in the script of a change at any key any way checks (in
 * `parkOrder`), and at its last try; judged and answered on its own checks.
 * A semaphore's waiter parks so; then the client API end to end: a released
 * permit goes to the first waiter in line, in the release's script, and a
 * waiter that gave up never holds.
 */
import { describe, expect, test } from 'vitest'
import { Client, type CommitOptions, type CommitResult } from 'zaris'
import type { RedisAdapter } from 'zaris/redis'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { until } from '../conformance/util'
import { MemoryHistory, recordingAdapter } from '../lincheck/recorder'
import { verifyHistory } from '../lincheck/verify'
import { absent, del, life, ok, parkedFixture, set } from './parked-fixture'

const fx = parkedFixture('ph')
const raw = () => fx.raw
const SLOTS = ['s0', 's1', 's2']

/** A waiter's place and its parked take of any slot, as the core sends them. */
async function waiter(a: RedisAdapter, id: string, extra: Partial<CommitOptions> = {}) {
  const place = ok(await a.commit([absent(`q.${id}`)], [set(`q.${id}`, id)])).revision
  const way = (slot: string) => ({ checks: [absent(slot), life(`q.${id}`, place)], ops: [set(slot, id), del(`q.${id}`)] })
  const out: { parked: boolean; answer?: CommitResult; place: number } = { parked: false, place }
  const own = way('s0')
  const take = a.commit(own.checks, own.ops, { waitChange: 10_000, keepParked: true, parkOrder: place, orElse: SLOTS.slice(1).map(way), onParked: () => (out.parked = true), ...extra })
  void take.then((r) => (out.answer = r))
  return { out, take }
}

async function full(a: RedisAdapter): Promise<number[]> {
  const created: number[] = []
  for (const s of SLOTS) created.push(ok(await a.commit([absent(s)], [set(s, `h.${s}`)])).revision)
  return created
}

describe('a parked commit with other ways, in Redis', () => {
  test('its first try goes another way when its own fails (no park), and the answer names the entries of that way', async () => {
    const { ns, all } = await fx.adapters(1)
    const [a] = all as [RedisAdapter]
    try {
      await a.commit([absent('s0')], [set('s0', 'h')])
      const { out, take } = await waiter(a, 'w')
      expect(await take).toMatchObject({ ok: true, entries: [{ key: 's1', owner: 'w' }], deleted: ['q.w'] })
      expect(out.parked).toBe(false)
      expect(await raw().hlen(namespaceKeys(ns)[7]!)).toBe(0)
    } finally {
      await a.close()
    }
  })

  test("a release of any slot goes to the first in line, in the release's script; never more than the slots", async () => {
    const { ns, all } = await fx.adapters(3)
    const [h, x, y] = all as [RedisAdapter, RedisAdapter, RedisAdapter]
    try {
      const tokens = await full(h)
      const a = await waiter(x, 'a')
      const b = await waiter(y, 'b')
      await until(() => a.out.parked && b.out.parked)
      const r = ok(await h.commit([life('s2', tokens[2]!)], [del('s2')]))
      // Before the release's answer came, s2 was a's: nobody could take it between.
      expect(await h.get('s2')).toMatchObject({ owner: 'a', created: r.revision + 1 })
      expect((await h.commit([absent('s2')], [set('s2', 'barger')])).ok).toBe(false)
      expect(await a.take).toMatchObject({ ok: true, entries: [{ key: 's2', owner: 'a' }] })
      expect(b.out.answer).toBeUndefined()
      await h.commit([life('s0', tokens[0]!)], [del('s0')])
      expect(await b.take).toMatchObject({ ok: true, entries: [{ key: 's0', owner: 'b' }] })
      expect((await h.list('s')).entries.map((e) => e.owner)).toEqual(['b', 'h.s1', 'a'])
      expect(await raw().hlen(namespaceKeys(ns)[8]!)).toBe(0)
    } finally {
      await Promise.all(all.map((c) => c.close()))
    }
  })

  test('a waiter whose place went in the same tick as the release is answered with its failure; the next in line gets the slot', async () => {
    const { all } = await fx.adapters(3)
    const [h, x, y] = all as [RedisAdapter, RedisAdapter, RedisAdapter]
    try {
      const tokens = await full(h)
      const a = await waiter(x, 'a')
      const b = await waiter(y, 'b')
      await until(() => a.out.parked && b.out.parked)
      const gone = h.commit([life('q.a', a.out.place)], [del('q.a')])
      const release = h.commit([life('s1', tokens[1]!)], [del('s1')])
      await Promise.all([gone, release])
      expect(await a.take).toMatchObject({ ok: false })
      expect(await b.take).toMatchObject({ ok: true, entries: [{ key: 's1', owner: 'b' }] })
    } finally {
      await Promise.all(all.map((c) => c.close()))
    }
  })

  test('an abort in the same tick as the release: never applied once aborted', async () => {
    const { all } = await fx.adapters(2)
    const [h, x] = all as [RedisAdapter, RedisAdapter]
    try {
      const tokens = await full(h)
      const stop = new AbortController()
      const a = await waiter(x, 'a', { signal: stop.signal })
      await until(() => a.out.parked)
      stop.abort()
      await h.commit([life('s1', tokens[1]!)], [del('s1')])
      const answer = await a.take
      // Either the abort's unpark came first (a failure, s1 stays free) or the release did (the grant stands, and is answered).
      if (answer.ok) expect(await h.get('s1')).toMatchObject({ owner: 'a' })
      else expect(await h.get('s1')).toBeUndefined()
    } finally {
      await Promise.all(all.map((c) => c.close()))
    }
  })
})

describe('semaphores on Redis hand permits over', () => {
  test('8 clients, 3 permits: never more than 3 live, every waiter served, the history of commits linearizable', async () => {
    const { all } = await fx.adapters(8)
    const history = new MemoryHistory(() => performance.now())
    const clients = all.map((a, i) => new Client(recordingAdapter(a, history, `c${i}`), { id: `c${i}` }))
    const key = `sem-${fx.fresh()}`
    let live = 0
    let most = 0
    const each = clients.map(() => 0)
    try {
      await Promise.all(
        clients.map(async (c, i) => {
          for (let k = 0; k < 6; k++) {
            const p = await c.semaphores.acquire(key, { limit: 3, ttl: 10_000, wait: 10_000 })
            expect(p).not.toBeNull()
            most = Math.max(most, ++live)
            each[i]!++
            await new Promise((r) => setTimeout(r, 2))
            live--
            await p!.release()
          }
        }),
      )
      expect(most).toBeLessThanOrEqual(3)
      expect(each).toEqual(clients.map(() => 6))
      expect((await clients[0]!.semaphores.holders(key)).length).toBe(0)
      // Permits went through other ways (a waiter's take of a slot it did not plan), judged as such.
      const ways = history.events.filter((e) => e.type === 'invoke' && e.f === 'commit' && (e.value as { orElse?: unknown }).orElse)
      expect(ways.length).toBeGreaterThan(0)
      const verdict = verifyHistory(history.events)
      if (!verdict.ok) throw new Error(verdict.report)
    } finally {
      await Promise.all(clients.map((c) => c.close()))
    }
  })

  test('a waiter aborted while parked never holds a permit, and the permit goes to the next in line', async () => {
    const { ns, all } = await fx.adapters(3)
    const [h, x, y] = all.map((a) => new Client(a)) as [Client, Client, Client]
    // Each parked commit is three fields of the park hash: its record, what a retry reads of it (s:), its request id (r:).
    const parked = async () => (await raw().hkeys(namespaceKeys(ns)[7]!)).filter((f) => /^\d+$/.test(f)).length
    const key = `sem-${fx.fresh()}`
    try {
      const held = await Promise.all([0, 1].map(() => h.semaphores.acquire(key, { limit: 2, ttl: 10_000 })))
      const stop = new AbortController()
      const a = x.semaphores.acquire(key, { limit: 2, ttl: 10_000, wait: 10_000, signal: stop.signal })
      a.catch(() => {})
      await until(async () => (await parked()) === 1)
      const b = y.semaphores.acquire(key, { limit: 2, ttl: 10_000, wait: 10_000 })
      await until(async () => (await parked()) === 2)
      // The abort and the release in the same tick.
      stop.abort(new Error('gave up'))
      await held[0]!.release()
      await expect(a).rejects.toThrow('gave up')
      const permit = await b
      expect(permit).not.toBeNull()
      const holders = await h.semaphores.holders(key)
      expect(holders.map((p) => p.owner).sort()).toEqual([h.id, y.id].sort())
      await permit!.release()
      await held[1]!.release()
    } finally {
      await Promise.all([h, x, y].map((c) => c.close()))
    }
  })
})
