/**
 * A waiter keeps its turn between two parks on Redis too
 * (src/adapters/redis/handover.ts, as test/memory/turns.test.ts for the local
 * store), against a real redis-server: a release that falls between the
 * first waiter's parks does not go to the waiter behind it. Then with real
 * clients whose first waiter's answers come late (a slow client, simulated
 * by a delay in its adapter: the one fake here).
 */
import { spawnSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Adapter, Check, CommitResult, Op } from 'zaris'
import { redisAdapter } from 'zaris/redis'
import { until } from '../conformance/util'
import { firstInLineRounds } from '../setup/first-in-line'
import { MAX_TURNS } from '../../src/adapters/redis/handover'
import { REDIS_CLI, startRedis, type RedisServer } from './server'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(async () => {
  await server?.dispose()
})

let n = 0
const fresh = () => `t${++n}-${Math.random().toString(36).slice(2, 8)}`
const set = (key: string, owner: string): Op => ({ type: 'set', key, value: null, owner, ttl: 60_000 })
const del = (key: string): Op => ({ type: 'delete', key })
const absent = (key: string): Check => ({ key, revision: null })
const life = (key: string, created: number): Check => ({ key, created })
const ok = (r: CommitResult) => r as Extract<CommitResult, { ok: true }>
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Four adapters on a fresh namespace; the lock held by the first; two waiters' places, the first's take parked `ms`. */
async function between(ms: number) {
  const ns = fresh()
  const [h, w1, w2] = await Promise.all([0, 1, 2].map(() => redisAdapter({ url: server.url(ns) })))
  const held = ok(await h!.commit([absent('lock')], [set('lock', 'h')])).entries[0]!.created
  const place = async (a: Adapter, id: string) => ok(await a.commit([absent(`q.${id}`)], [set(`q.${id}`, id)])).entries[0]!.created
  const p1 = await place(w1!, 'w1')
  const p2 = await place(w2!, 'w2')
  const take = (a: Adapter, id: string, p: number, wait: number) => a.commit([absent('lock'), life(`q.${id}`, p)], [set('lock', id), del(`q.${id}`)], { waitChange: wait, keepParked: true, parkOrder: p })
  const answers: string[] = []
  const second = take(w2!, 'w2', p2, 1_500).then((r) => (answers.push(`w2 ${r.ok}`), r))
  const first = await take(w1!, 'w1', p1, ms)
  expect(first).toMatchObject({ ok: false, failed: [{ key: 'lock' }] })
  return {
    h: h!,
    w1: w1!,
    second,
    answers,
    release: () => h!.commit([life('lock', held)], [del('lock')]),
    again: () => take(w1!, 'w1', p1, 10_000),
    close: () => Promise.all([h, w1, w2].map((a) => a!.close())),
  }
}

describe('a waiter keeps its turn between two parks (Redis)', () => {
  test('a release while the first waiter is between parks goes to nobody; its next take gets the lock, the second stays parked', async () => {
    const s = await between(100)
    expect(await s.release()).toMatchObject({ ok: true })
    await sleep(50)
    expect(await s.h.get('lock')).toBeUndefined()
    expect(s.answers).toEqual([])
    expect(await s.again()).toMatchObject({ ok: true })
    expect(await s.h.get('lock')).toMatchObject({ owner: 'w1' })
    expect(await s.second).toMatchObject({ ok: false })
    await s.close()
  })

  test('a first waiter that gives up (deletes its place) ends its turn in that script: the second gets the lock', async () => {
    const s = await between(100)
    await s.release()
    await s.w1.commit([], [del('q.w1')])
    const left = performance.now()
    expect(await s.second).toMatchObject({ ok: true })
    // In that script, not at its own wait's end (1.5 s).
    expect(performance.now() - left).toBeLessThan(500)
    expect(await s.h.get('lock')).toMatchObject({ owner: 'w2' })
    await s.close()
  })

  test('a turn not taken up passes: the second gets the lock at its own wait\'s end, answered with nothing failed meanwhile never', async () => {
    const s = await between(100)
    const released = performance.now()
    await s.release()
    expect(await s.second).toMatchObject({ ok: true })
    // Its wait (1.5 s) ran out after the turn (1 s) had: its last try went through.
    expect(performance.now() - released).toBeGreaterThanOrEqual(900)
    await s.close()
  })
})

describe('turns and wake owners, case by case (Redis, as test/memory/turns.test.ts)', () => {
  /** A lock held by h on a fresh namespace, and waiters that take a place and park takes in its order. */
  async function lockWithLine(n: number) {
    const ns = fresh()
    const all = await Promise.all(Array.from({ length: n + 1 }, () => redisAdapter({ url: server.url(ns) })))
    const h = all[0]!
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')])).entries[0]!.created
    const waiter = async (a: Adapter, id: string) => {
      const place = ok(await a.commit([absent(`q.${id}`)], [set(`q.${id}`, id)])).entries[0]!.created
      return { place, take: (ms: number) => a.commit([absent('lock'), life(`q.${id}`, place)], [set('lock', id), del(`q.${id}`)], { waitChange: ms, keepParked: true, parkOrder: place }), leave: () => a.commit([], [del(`q.${id}`)]) }
    }
    return { h, all, waiter, release: () => h.commit([life('lock', held)], [del('lock')]), close: () => Promise.all(all.map((a) => a.close())) }
  }

  test('a waiter that gives up with nothing else parked ends its turn: the next take goes through at once', async () => {
    const s = await lockWithLine(2)
    const first = await s.waiter(s.all[1]!, 'first')
    expect(await first.take(50)).toMatchObject({ ok: false, failed: [{ key: 'lock' }] })
    await s.release()
    await first.leave()
    const next = await s.waiter(s.all[2]!, 'next')
    const t0 = performance.now()
    expect(await next.take(5_000)).toMatchObject({ ok: true })
    expect(performance.now() - t0).toBeLessThan(500)
    await s.close()
  })

  test('a take that comes while an earlier turn is kept waits, though the lock is free; its wait ending meanwhile is answered with no check failed', async () => {
    const s = await lockWithLine(2)
    const first = await s.waiter(s.all[1]!, 'first')
    expect(await first.take(50)).toMatchObject({ ok: false })
    await s.release()
    const late = await s.waiter(s.all[2]!, 'late')
    expect(await late.take(200)).toEqual({ ok: false, failed: [] })
    expect(await s.h.get('lock')).toBeUndefined()
    // Its waiter comes back: its turn ends, and it takes the lock.
    expect(await first.take(5_000)).toMatchObject({ ok: true })
    await s.close()
  })

  test('a turn holds back only higher orders and only at its keys: a take of another lock, a waiting take with no order and a plain commit go through', async () => {
    const s = await lockWithLine(1)
    const first = await s.waiter(s.all[1]!, 'first')
    expect(await first.take(50)).toMatchObject({ ok: false })
    await s.release()
    const h = s.all[0]!
    expect(await h.commit([absent('other')], [set('other', 'x')], { waitChange: 5_000, keepParked: true, parkOrder: 1e12 })).toMatchObject({ ok: true })
    const unordered = ok(await h.commit([absent('lock')], [set('lock', 'u')], { waitChange: 5_000, keepParked: true }))
    await h.commit([life('lock', unordered.revision)], [del('lock')])
    expect(await h.commit([absent('lock')], [set('lock', 'plain')])).toMatchObject({ ok: true })
    await s.close()
  })

  test('a waiter that comes back ends its turn, though its take checks no place: once it has had the lock and let it go, a later take goes through', async () => {
    const s = await lockWithLine(2)
    const [w1, w2] = [s.all[1]!, s.all[2]!]
    // No place checked: only its waiter's return (or its end, a second on) ends w1's turn.
    const take = (a: Adapter, id: string, order: number, ms: number) => a.commit([absent('lock')], [set('lock', id)], { waitChange: ms, keepParked: true, parkOrder: order })
    expect(await take(w1, 'w1', 1, 50)).toMatchObject({ ok: false })
    await s.release()
    const had = ok(await take(w1, 'w1', 1, 5_000))
    await w1.commit([life('lock', had.revision)], [del('lock')])
    expect(await take(w2, 'w2', 2, 300)).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w2' }] })
    await s.close()
  })

  test("an earlier turn holds back a later take's other way too: while it is kept, neither way goes through", async () => {
    const s = await lockWithLine(2)
    const [h, w1, w2] = [s.all[0]!, s.all[1]!, s.all[2]!]
    const b = ok(await h.commit([absent('b')], [set('b', 'h')]))
    expect(await w1.commit([absent('b')], [set('b', 'w1')], { waitChange: 50, keepParked: true, parkOrder: 1 })).toMatchObject({ ok: false })
    await h.commit([life('b', b.revision)], [del('b')])
    // The lock is h's; b is free, but w1 keeps its turn there.
    const orElse = [{ checks: [absent('b')], ops: [set('b', 'w2')] }]
    expect(await w2.commit([absent('lock')], [set('lock', 'w2')], { waitChange: 200, keepParked: true, parkOrder: 2, orElse })).toMatchObject({ ok: false, failed: [{ key: 'lock' }] })
    expect(await h.get('b')).toBeUndefined()
    await s.close()
  })

  test('a waiting take without keepParked keeps no turn when its wait runs out, though it has an order: a later take goes through', async () => {
    const s = await lockWithLine(2)
    const [w1, w2] = [s.all[1]!, s.all[2]!]
    expect(await w1.commit([absent('lock')], [set('lock', 'w1')], { waitChange: 50, parkOrder: 1 })).toMatchObject({ ok: false })
    await s.release()
    expect(await w2.commit([absent('lock')], [set('lock', 'w2')], { waitChange: 300, keepParked: true, parkOrder: 2 })).toMatchObject({ ok: true })
    await s.close()
  })

  test('two turns kept at one key: the first ending (its waiter gives up) leaves the second holding back a later take; the second comes back and takes the lock', async () => {
    const s = await lockWithLine(3)
    const [first, second, third] = await Promise.all(['first', 'second', 'third'].map((id, i) => s.waiter(s.all[i + 1]!, id)))
    expect(await first!.take(50)).toMatchObject({ ok: false })
    expect(await second!.take(50)).toMatchObject({ ok: false })
    await s.release()
    const late = third!.take(600)
    await sleep(100)
    await first!.leave()
    expect(await late).toEqual({ ok: false, failed: [] })
    expect(await s.h.get('lock')).toBeUndefined()
    expect(await second!.take(5_000)).toMatchObject({ ok: true })
    await s.close()
  })

  test("wakeOwner: a waiting take whose key its wake owner holds is answered at once, not parked; one parked is answered when the key becomes the wake owner's", async () => {
    const s = await lockWithLine(2)
    const [h, me] = [s.all[0]!, s.all[1]!]
    const mine = ok(await me.commit([absent('mine')], [set('mine', 'me')]))
    let parked = false
    const t0 = performance.now()
    const r1 = await me.commit([absent('mine')], [set('mine', 'me2')], { waitChange: 5_000, keepParked: true, wakeOwner: 'me', onParked: () => (parked = true) })
    expect(r1).toMatchObject({ ok: false, failed: [{ key: 'mine', entry: { owner: 'me' } }] })
    expect(parked).toBe(false)
    expect(performance.now() - t0).toBeLessThan(1_000)
    // Parked while h holds the lock; h's lock becomes me's (a takeover over h's very entry): answered with that.
    const lock = (await h.get('lock'))!
    const waiting = me.commit([absent('lock')], [set('lock', 'me')], { waitChange: 5_000, keepParked: true, wakeOwner: 'me', onParked: () => (parked = true) })
    await until(() => parked)
    await h.commit([life('lock', lock.created)], [set('lock', 'me')])
    const t1 = performance.now()
    expect(await waiting).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'me' } }] })
    expect(performance.now() - t1).toBeLessThan(1_000)
    expect(mine.revision).toBeGreaterThan(0)
    // A failed check that finds no entry is nobody's: parked as any other.
    parked = false
    const stop = new AbortController()
    await h.commit([absent('lock2')], [set('lock2', 'h')])
    const gone = me.commit([absent('lock2'), life('q.gone', 12_345)], [set('lock2', 'me')], { waitChange: 5_000, keepParked: true, wakeOwner: 'me', signal: stop.signal, onParked: () => (parked = true) })
    await until(() => parked)
    stop.abort()
    expect(await gone).toMatchObject({ ok: false })
    await s.close()
  })
})

describe('turns are bounded (Redis)', () => {
  /** The turns kept in namespace ns's park hash now. */
  const turns = (ns: string) =>
    spawnSync(REDIS_CLI, ['-p', String(server.port), 'HKEYS', `zaris:{${ns}}:park`], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((f) => f.startsWith('t:')).length

  test(`a peer that parks short waits at ${MAX_TURNS + 100} keys keeps at most ${MAX_TURNS} turns; the next turn, a second later, ends them`, async () => {
    const ns = fresh()
    const [h, peer] = await Promise.all([0, 1].map(() => redisAdapter({ url: server.url(ns) })))
    const n = MAX_TURNS + 100
    const keys = Array.from({ length: n + 1 }, (_, i) => i)
    await Promise.all(keys.map((i) => h!.commit([absent(`lock${i}`)], [set(`lock${i}`, 'h')])))
    const places = await Promise.all(keys.map(async (i) => ok(await peer!.commit([absent(`q${i}`)], [set(`q${i}`, 'peer')])).entries[0]!.created))
    // Keys no script touches again: nothing but the cap and later turns ends these.
    const take = (i: number) => peer!.commit([absent(`lock${i}`), life(`q${i}`, places[i]!)], [set(`lock${i}`, 'peer'), del(`q${i}`)], { waitChange: 30, keepParked: true, parkOrder: places[i] })
    const answers = await Promise.all(keys.slice(0, n).map(take))
    expect(answers.every((r) => !r.ok)).toBe(true)
    expect(turns(ns)).toBe(MAX_TURNS)
    await sleep(1_100)
    await take(n)
    expect(turns(ns)).toBe(1)
    await Promise.all([h, peer].map((a) => a!.close()))
  }, 30_000)

  test(`at the cap, a turn that ended out of line makes room: the next turn is kept, the one after is not`, async () => {
    const ns = fresh()
    const [h, peer] = await Promise.all([0, 1].map(() => redisAdapter({ url: server.url(ns) })))
    const n = MAX_TURNS
    const keys = Array.from({ length: n + 2 }, (_, i) => i)
    await Promise.all(keys.map((i) => h!.commit([absent(`lock${i}`)], [set(`lock${i}`, 'h')])))
    const places = await Promise.all(keys.map(async (i) => ok(await peer!.commit([absent(`q${i}`)], [set(`q${i}`, 'peer')])).entries[0]!.created))
    const take = (i: number) => peer!.commit([absent(`lock${i}`), life(`q${i}`, places[i]!)], [set(`lock${i}`, 'peer'), del(`q${i}`)], { waitChange: 30, keepParked: true, parkOrder: places[i] })
    // The first turn kept stays the oldest (and live) throughout; the last of the rest ends early, its waiter gone.
    expect((await take(0)).ok).toBe(false)
    expect((await Promise.all(keys.slice(1, n).map(take))).every((r) => !r.ok)).toBe(true)
    expect(turns(ns)).toBe(MAX_TURNS)
    await peer!.commit([], [del(`q${n - 1}`)])
    expect(turns(ns)).toBe(MAX_TURNS - 1)
    await take(n)
    expect(turns(ns)).toBe(MAX_TURNS)
    await take(n + 1)
    expect(turns(ns)).toBe(MAX_TURNS)
    await Promise.all([h, peer].map((a) => a!.close()))
  }, 30_000)
})

describe('real clients on Redis, the first waiter slow to park again (its answers 40 ms late, its park 100 ms)', () => {
  test('12 rounds: each release goes to the first in line, never to the waiter behind it', async () => {
    const namespaces = new Map<number, string>()
    await firstInLineRounds(12, (round) => {
      if (!namespaces.has(round)) namespaces.set(round, fresh())
      return redisAdapter({ url: server.url(namespaces.get(round)!) })
    })
  }, 60_000)
})
