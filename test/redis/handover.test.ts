/**
 * The Redis store hands over (src/adapters/redis/handover.ts), against a
 * real redis-server: a parked commit is kept in Redis and tried in the very
 * script of the change that lets it through, in `parkOrder`; its answer is
 * published to its adapter, and kept, so that `unpark` finds it when the
 * message never came; one past its deadline (a client that died) is never
 * applied; an abort or a close takes it out of park.
 */
import { describe, expect, test } from 'vitest'
import type { Check, Op } from 'zaris'
import type { RedisAdapter } from 'zaris/redis'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { evalText, SCRIPTS } from '../../src/adapters/redis/scripts'
import { until } from '../conformance/util'
import { absent, del, life, ok, parkedFixture, set } from './parked-fixture'
import { commandCalls } from './server'

const fx = parkedFixture('h')
const raw = () => fx.raw
const park = (ms = 10_000, order?: number) => ({ waitChange: ms, keepParked: true, parkOrder: order })

/** The commit script run by hand with park arguments: a parked commit whose adapter listens on no channel (its messages are lost). */
/** The parked commits' records (a whole one, or its short `s:` one) read from namespace `ns`'s park hash, by field, as the scripts read them. */
async function parkedRecordReads(ns: string): Promise<{ reads: string[]; monitor: { disconnect(): void } }> {
  const parkKey = namespaceKeys(ns)[7]!
  const monitor = await raw().monitor()
  const reads: string[] = []
  // MONITOR shows the calls a script makes, as they run.
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (args[0]!.toLowerCase() === 'hget' && args[1] === parkKey && /^(s:)?\d+$/.test(args[2]!)) reads.push(args[2]!)
  })
  return { reads, monitor }
}

async function parkBlind(ns: string, request: string, checks: Check[], ops: Op[], ms: number, order?: number): Promise<unknown[]> {
  const args: Array<string | number> = [checks.length]
  for (const c of checks) args.push(c.key, 'revision' in c ? 'r' : 'c', ('revision' in c ? c.revision : c.created) ?? '')
  args.push(ops.length)
  for (const o of ops) {
    if (o.type === 'delete') args.push('d', o.key, '', '', '', '')
    else if (o.type === 'set') args.push('s', o.key, JSON.stringify(o.value), o.ttl === undefined ? '' : String(o.ttl), o.owner === undefined ? '' : '=' + o.owner, '')
  }
  args.push(ms, '1', order === undefined ? '' : String(order), '', `nobody-listens-${request}`)
  return (await raw().eval(evalText(SCRIPTS.commit), 9, ...namespaceKeys(ns), 10_000, 500, 0, request, 60_000, ...args)) as unknown[]
}

async function unparkBlind(ns: string, request: string, last = ''): Promise<unknown[]> {
  return (await raw().eval(evalText(SCRIPTS.unpark), 9, ...namespaceKeys(ns), 10_000, 500, 0, request, last)) as unknown[]
}

describe('the Redis store hands over', () => {
  test("a release hands the lock to the parked take in the release's own script, with the next revision", async () => {
    const { ns, all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    try {
      await h.commit([absent('lock')], [set('lock', 'h')])
      const place = ok(await w.commit([absent('q.w')], [set('q.w', 'w')]))
      let parked = false
      const take = w.commit([absent('lock'), life('q.w', place.revision)], [set('lock', 'w'), del('q.w')], { ...park(), onParked: () => (parked = true) })
      await until(() => parked)
      const release = ok(await h.commit([life('lock', 1)], [del('lock')]))
      // The release's answer came after its script: the lock is the waiter's already, and nobody else could take it.
      expect(await h.get('lock')).toMatchObject({ owner: 'w', created: release.revision + 1 })
      expect((await h.commit([absent('lock')], [set('lock', 'barger')])).ok).toBe(false)
      expect(await take).toMatchObject({ ok: true, revision: release.revision + 1, deleted: ['q.w'], entries: [{ key: 'lock', owner: 'w', created: release.revision + 1 }] })
      // Out of park, and out of every key's list.
      expect(await raw().hlen(namespaceKeys(ns)[7]!)).toBe(0)
      expect(await raw().hlen(namespaceKeys(ns)[8]!)).toBe(0)
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test("a watcher hears the handover as any commit: the release's delete, then the waiter's put at the next revision, with its owner and life", async () => {
    const { all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    const heard: string[] = []
    try {
      await h.watch('lock', { event: (e) => heard.push(`${e.revision} ${e.type} ${e.key} ${e.owner ?? ''} ${e.created ?? ''}`.trim()), error: () => {} })
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      let parked = false
      const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => (parked = true) })
      await until(() => parked)
      const release = ok(await h.commit([life('lock', held.revision)], [del('lock')]))
      const won = ok(await take)
      const r = release.revision
      await until(() => heard.length === 3)
      expect(heard).toEqual([`${held.revision} put lock h ${held.revision}`, `${r} delete lock`, `${r + 1} put lock w ${r + 1}`])
      expect(won.revision).toBe(r + 1)
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test("a parked take's last try at its deadline goes through its other way when only that holds then, its own way when both do (expiries nobody swept till the unpark's own script)", async () => {
    const { all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    try {
      await h.commit([absent('a')], [set('a', 'h')])
      await h.commit([absent('b')], [set('b', 'h', 200)])
      let parked = false
      const take = w.commit([absent('a')], [set('a', 'w')], { waitChange: 400, keepParked: true, orElse: [{ checks: [absent('b')], ops: [set('b', 'w')] }], onParked: () => (parked = true) })
      await until(() => parked)
      const r = ok(await take)
      expect(r.entries).toMatchObject([{ key: 'b', owner: 'w' }])
      expect((await h.get('b'))?.owner).toBe('w')
      expect((await h.get('a'))?.owner).toBe('h')
      // Both ways hold at the last try (both keys expired unswept): the commit's own goes through.
      await h.commit([absent('c')], [set('c', 'h', 200)])
      await h.commit([absent('d')], [set('d', 'h', 200)])
      parked = false
      const both = w.commit([absent('c')], [set('c', 'w')], { waitChange: 400, keepParked: true, orElse: [{ checks: [absent('d')], ops: [set('d', 'w')] }], onParked: () => (parked = true) })
      await until(() => parked)
      expect(ok(await both).entries).toMatchObject([{ key: 'c', owner: 'w' }])
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test("a waiting commit's other way is judged by its own checks' kinds: a revision check on an entry whose revision is past its created", async () => {
    const { all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    try {
      await h.commit([absent('a')], [set('a', 'h')])
      const first = ok(await h.commit([], [set('b', 'h')]))
      // The same owner writes again: the revision moves on, the life (created) stays.
      const again = ok(await h.commit([], [set('b', 'h')]))
      expect(again.entries[0]).toMatchObject({ created: first.revision, revision: again.revision })
      const take = w.commit([absent('a')], [set('a', 'w')], { waitChange: 2_000, keepParked: true, orElse: [{ checks: [{ key: 'b', revision: again.revision }], ops: [set('b', 'w')] }] })
      expect(ok(await take).entries).toMatchObject([{ key: 'b', owner: 'w' }])
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test('taking a parked commit out of park walks each key it checks once, however many of its ways check it too', async () => {
    const { all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    const hgets = () => commandCalls(raw(), 'hget')
    const abortCost = async (orElse?: Array<{ checks: Check[]; ops: Op[] }>) => {
      const stop = new AbortController()
      let parked = false
      const take = w.commit([absent('a')], [set('a', 'w')], { ...park(), orElse, signal: stop.signal, onParked: () => (parked = true) })
      await until(() => parked)
      const before = await hgets()
      stop.abort()
      expect(await take).toMatchObject({ ok: false })
      return (await hgets()) - before
    }
    try {
      await h.commit([absent('a')], [set('a', 'h')])
      const alone = await abortCost()
      const withWays = await abortCost([{ checks: [absent('a')], ops: [set('b', 'w')] }, { checks: [absent('a')], ops: [set('c', 'w')] }])
      expect(withWays).toBe(alone)
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test("a release of two keys a parked take checks reads that take's record once, though both keys name it", async () => {
    const { ns, all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    const { reads, monitor } = await parkedRecordReads(ns)
    try {
      const held = ok(await h.commit([absent('a'), absent('b')], [set('a', 'h'), set('b', 'h')]))
      let parked = false
      const take = w.commit([absent('a'), absent('b')], [set('a', 'w'), set('b', 'w')], { ...park(), onParked: () => (parked = true) })
      await until(() => parked)
      reads.length = 0
      await h.commit([life('a', held.revision), life('b', held.revision)], [del('a'), del('b')])
      expect(ok(await take).entries).toMatchObject([{ key: 'a', owner: 'w' }, { key: 'b', owner: 'w' }])
      await until(() => reads.length > 0)
      expect(new Set(reads).size).toBe(reads.length)
    } finally {
      monitor.disconnect()
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test("a change that leaves a parked take parked reads only what a retry needs of it (its 's:' record), never the whole", async () => {
    const { ns, all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    const { reads, monitor } = await parkedRecordReads(ns)
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      let parked = false
      const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => (parked = true) })
      await until(() => parked)
      reads.length = 0
      // The holder renews: the take is tried again, fails again, stays parked.
      await h.commit([life('lock', held.revision)], [set('lock', 'h')])
      await until(() => reads.length > 0)
      await h.get('lock')
      expect(reads.every((f) => f.startsWith('s:'))).toBe(true)
      await h.commit([life('lock', held.revision)], [del('lock')])
      expect(ok(await take).entries).toMatchObject([{ key: 'lock', owner: 'w' }])
    } finally {
      monitor.disconnect()
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test("a change at a key where a waiter keeps its turn (its wait ran out) looks at that turn without asking whether anything is parked at all", async () => {
    const { all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    const existsCalls = () => commandCalls(raw(), 'exists')
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      // Its wait runs out while the lock is held: the waiter keeps its turn at the key (for TURN_US).
      expect(await w.commit([absent('lock')], [set('lock', 'w')], park(150, 1))).toMatchObject({ ok: false })
      const before = await existsCalls()
      await h.commit([life('lock', held.revision)], [set('lock', 'h')])
      expect((await existsCalls()) - before).toBe(0)
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test('a waiting commit without keepParked stays parked through a change that turns none of its checks (the holder renewing), and is answered by the one that does', async () => {
    const { all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      let answered = false
      const take = w.commit([absent('lock')], [set('lock', 'w')], { waitChange: 5_000 }).then((r) => ((answered = true), r))
      await new Promise((r) => setTimeout(r, 50))
      const renewed = ok(await h.commit([life('lock', held.revision)], [set('lock', 'h')]))
      expect(renewed.entries[0]!.created).toBe(held.revision)
      await new Promise((r) => setTimeout(r, 100))
      expect(answered).toBe(false)
      await h.commit([life('lock', held.revision)], [del('lock')])
      expect(await take).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
      // Two checks failing: one turning is news, though the other still fails.
      const a = ok(await h.commit([absent('a')], [set('a', 'h')]))
      await h.commit([absent('b')], [set('b', 'h')])
      answered = false
      const both = w.commit([absent('a'), absent('b')], [set('a', 'w'), set('b', 'w')], { waitChange: 5_000 }).then((r) => ((answered = true), r))
      await new Promise((r) => setTimeout(r, 50))
      await h.commit([life('a', a.revision)], [del('a')])
      await until(() => answered, 1_000)
      expect(await both).toMatchObject({ ok: false, failed: [{ key: 'b', entry: { owner: 'h' } }] })
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test("a waiting commit without keepParked is woken by a release that frees its key, though the release hands that key to a waiter ahead of it in the same script (as the local store: handover-same seed 848754521)", async () => {
    const { all } = await fx.adapters(3)
    const [h, w0, w1] = all as [RedisAdapter, RedisAdapter, RedisAdapter]
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      let parked = 0
      let answered = false
      const watcher = w0.commit([absent('lock')], [set('lock', 'w0')], { waitChange: 10_000, onParked: () => parked++ }).then((r) => ((answered = true), r))
      const taker = w1.commit([absent('lock')], [set('lock', 'w1')], { ...park(10_000, 1), onParked: () => parked++ })
      await until(() => parked === 2)
      await h.commit([life('lock', held.revision)], [del('lock')])
      expect(ok(await taker).entries).toMatchObject([{ key: 'lock', owner: 'w1' }])
      await until(() => answered, 1_000)
      expect(await watcher).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'w1' } }] })
    } finally {
      await Promise.all(all.map((c) => c.close()))
    }
  })

  test('parked takes go in parkOrder, whatever order they parked in; one behind costs no answer until its turn', async () => {
    const { ns, all } = await fx.adapters(4)
    const [h, ...ws] = all as [RedisAdapter, RedisAdapter, RedisAdapter, RedisAdapter]
    try {
      await h.commit([absent('lock')], [set('lock', 'h')])
      const order = [30, 10, 20]
      const answered: string[] = []
      const takes = ws.map((w, i) => w.commit([absent('lock')], [set('lock', `w${order[i]}`)], park(10_000, order[i])).then((r) => (answered.push(`w${order[i]}`), r)))
      // Three parked: each under its number, its retry record (s:) and its request id.
      await until(async () => (await raw().hlen(namespaceKeys(ns)[7]!)) === 9)
      const holders: string[] = []
      for (let i = 0; i < 3; i++) {
        const now = (await h.get('lock'))!
        await h.commit([life('lock', now.created)], [del('lock')])
        holders.push((await h.get('lock'))!.owner!)
        await until(() => answered.length === i + 1)
      }
      expect(holders).toEqual(['w10', 'w20', 'w30'])
      expect(answered).toEqual(['w10', 'w20', 'w30'])
      expect((await Promise.all(takes)).every((r) => r.ok)).toBe(true)
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test("a parked commit tried in a release's script and failing is tried again there when a commit handed over after it frees what it waits for", async () => {
    const { all } = await fx.adapters(3)
    const [h, w1, w2] = all as [RedisAdapter, RedisAdapter, RedisAdapter]
    try {
      const a = ok(await h.commit([absent('a')], [set('a', 'h')]))
      await h.commit([absent('b')], [set('b', 'h')])
      let parked = 0
      // First in line, but it needs b too; the second, once a is free, lets b go.
      const first = w1.commit([absent('a'), absent('b')], [set('a', 'w1'), set('b', 'w1')], { ...park(10_000, 1), onParked: () => parked++ })
      const second = w2.commit([absent('a')], [del('b')], { ...park(10_000, 2), onParked: () => parked++ })
      await until(() => parked === 2)
      await h.commit([life('a', a.revision)], [del('a')])
      // Both in the release's script: the second's delete, then the first's take.
      expect(await h.get('b')).toMatchObject({ owner: 'w1' })
      expect(await second).toMatchObject({ ok: true, deleted: ['b'] })
      expect(await first).toMatchObject({ ok: true, entries: [{ key: 'a', owner: 'w1' }, { key: 'b', owner: 'w1' }] })
    } finally {
      await Promise.all(all.map((c) => c.close()))
    }
  })

  test('commits parked at different keys and freed by one change go through in the order they parked, each at its revision', async () => {
    const { all } = await fx.adapters(5)
    const [h, ...ws] = all as [RedisAdapter, ...RedisAdapter[]]
    try {
      const held = ok(await h.commit([absent('a'), absent('b')], [set('a', 'h'), set('b', 'h')]))
      const takes: Array<Promise<unknown>> = []
      for (const [i, w] of ws.entries()) {
        let parked = false
        takes.push(w.commit([absent(i % 2 === 0 ? 'a' : 'b')], [set(`got${i}`, `w${i}`)], { waitChange: 10_000, keepParked: true, onParked: () => (parked = true) }))
        await until(() => parked)
      }
      const release = ok(await h.commit([life('a', held.revision), life('b', held.revision)], [del('a'), del('b')]))
      const r = release.revision
      expect(await Promise.all(takes)).toMatchObject([1, 2, 3, 4].map((n) => ({ ok: true, revision: r + n })))
    } finally {
      await Promise.all(all.map((c) => c.close()))
    }
  })

  test('an answer whose message was lost is kept: unpark finds it (the grant), and a take past its deadline is never applied', async () => {
    const { ns, all } = await fx.adapters(1)
    const [h] = all as [RedisAdapter]
    try {
      await h.commit([absent('lock')], [set('lock', 'h')])
      expect((await parkBlind(ns, 'blind-1', [absent('lock')], [set('lock', 'blind')], 10_000))[0]).toBe('parked')
      const lock = (await h.get('lock'))!
      const release = ok(await h.commit([life('lock', lock.created)], [del('lock')]))
      expect((await h.get('lock'))?.owner).toBe('blind')
      const unparked = await unparkBlind(ns, 'blind-1')
      expect(unparked[0]).toBe('dup')
      expect(String(unparked[3]).split(' ')[0]).toBe(String(release.revision + 1))
      // A take whose deadline passed (its client died and never unparked it) is answered with its failure, not applied.
      const held = ok(await h.commit([absent('lock2')], [set('lock2', 'h')]))
      expect((await parkBlind(ns, 'dead-1', [absent('lock2')], [set('lock2', 'dead')], 50))[0]).toBe('parked')
      await new Promise((r) => setTimeout(r, 120))
      await h.commit([life('lock2', held.revision)], [del('lock2')])
      expect(await h.get('lock2')).toBeUndefined()
      // Its adapter, late, gives up: the first try's failure (what held lock2 then), never applied.
      expect(await unparkBlind(ns, 'dead-1')).toMatchObject(['fail', expect.anything(), expect.anything(), ['lock2', expect.stringContaining('\nh')]])
      expect(await h.get('lock2')).toBeUndefined()
      // One whose adapter unparks it at its deadline gets one last try, as any commit.
      const held3 = ok(await h.commit([absent('lock3')], [set('lock3', 'h')]))
      expect((await parkBlind(ns, 'late-1', [absent('lock3')], [set('lock3', 'late')], 50))[0]).toBe('parked')
      await new Promise((r) => setTimeout(r, 120))
      await h.commit([life('lock3', held3.revision)], [del('lock3')])
      expect(await h.get('lock3')).toBeUndefined()
      expect((await unparkBlind(ns, 'late-1', 'last'))[0]).toBe('dup')
      expect((await h.get('lock3'))?.owner).toBe('late')
    } finally {
      await h.close()
    }
  })

  test("a take past its deadline whose own turn a change kept meanwhile still gets its last try: a turn holds back later orders, never its own", async () => {
    const { ns, all } = await fx.adapters(1)
    const [h] = all as [RedisAdapter]
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      const place = ok(await h.commit([absent('q.p')], [set('q.p', 'p')])).revision
      expect((await parkBlind(ns, 'own-1', [absent('lock'), life('q.p', place)], [set('lock', 'p'), del('q.p')], 50, place))[0]).toBe('parked')
      await new Promise((r) => setTimeout(r, 120))
      // The release finds it past its deadline: not applied, its waiter's turn kept.
      await h.commit([life('lock', held.revision)], [del('lock')])
      expect(await h.get('lock')).toBeUndefined()
      expect((await unparkBlind(ns, 'own-1', 'last'))[0]).toBe('dup')
      expect(await h.get('lock')).toMatchObject({ owner: 'p' })
    } finally {
      await h.close()
    }
  })

  test("a take held back by an earlier turn when its wait ran out keeps its own turn a second from its adapter's last try, however late that came, not from its deadline", async () => {
    const { ns, all } = await fx.adapters(2)
    const [h, x] = all as [RedisAdapter, RedisAdapter]
    const sleepTill = (at: number) => new Promise((r) => setTimeout(r, Math.max(0, at - performance.now())))
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      const a = ok(await h.commit([absent('q.a')], [set('q.a', 'a')])).revision
      const p = ok(await h.commit([absent('q.p')], [set('q.p', 'p')])).revision
      // Two waiters whose adapters never unpark in time (blind): a first, p behind it.
      expect((await parkBlind(ns, 'a-1', [absent('lock'), life('q.a', a)], [set('lock', 'a'), del('q.a')], 50, a))[0]).toBe('parked')
      const parkedAt = performance.now()
      expect((await parkBlind(ns, 'p-1', [absent('lock'), life('q.p', p)], [set('lock', 'p'), del('q.p')], 50, p))[0]).toBe('parked')
      const deadline = parkedAt + 50
      await sleepTill(deadline + 100)
      // The release finds both past their deadlines: neither applied, each keeps its turn (a second from its deadline).
      await h.commit([life('lock', held.revision)], [del('lock')])
      await sleepTill(deadline + 600)
      // p's adapter, late, makes its last try: a's turn holds it back, and p's own turn now runs a second from here.
      expect((await unparkBlind(ns, 'p-1', 'last'))[0]).toBe('behind')
      await h.commit([], [del('q.a')])
      await sleepTill(deadline + 1_200)
      // Past a second from p's deadline, within a second of its last try: a later take is still held back.
      const later = { waitChange: 100, keepParked: true, parkOrder: p + 1_000 }
      expect(await x.commit([absent('lock')], [set('lock', 'x')], later)).toEqual({ ok: false, failed: [] })
      await sleepTill(deadline + 1_800)
      expect(await x.commit([absent('lock')], [set('lock', 'x')], later)).toMatchObject({ ok: true })
    } finally {
      await Promise.all(all.map((c) => c.close()))
    }
  })

  test("an abort takes the parked commit out of park: it is answered with its failure and never applied; a close does the same for all of an adapter's", async () => {
    const { all } = await fx.adapters(3)
    const [h, w, c] = all as [RedisAdapter, RedisAdapter, RedisAdapter]
    try {
      await h.commit([absent('lock')], [set('lock', 'h')])
      const stop = new AbortController()
      let parked = 0
      const aborted = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), signal: stop.signal, onParked: () => parked++ })
      const closed = c.commit([absent('lock')], [set('lock', 'c')], { ...park(), onParked: () => parked++ })
      await until(() => parked === 2)
      stop.abort()
      expect(await aborted).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
      await c.close()
      expect(await closed).toMatchObject({ ok: false })
      const lock = (await h.get('lock'))!
      await h.commit([life('lock', lock.created)], [del('lock')])
      expect(await h.get('lock')).toBeUndefined()
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test("an aborted parked commit is answered with its first try's failure, not what fails at the abort (as the local store: handover-same seed 829635396)", async () => {
    const { all } = await fx.adapters(3)
    const [h, w, s] = all as [RedisAdapter, RedisAdapter, RedisAdapter]
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      const stop = new AbortController()
      let parked = false
      const aborted = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), signal: stop.signal, onParked: () => (parked = true) })
      await until(() => parked)
      // Another owner takes the lock over: the parked take is tried again, fails again, stays parked.
      ok(await s.commit([life('lock', held.revision)], [set('lock', 's')]))
      stop.abort()
      expect(await aborted).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
      expect(await h.get('lock')).toMatchObject({ owner: 's' })
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test('a waiting take without parkOrder whose wait ran out keeps no turn: once its key changes, nothing is left parked or kept, and the park counter goes', async () => {
    const { ns, all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    const [rev, , , , , , , parkKey, pkey] = namespaceKeys(ns) as [string, string, string, string, string, string, string, string, string]
    try {
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      expect(await w.commit([absent('lock')], [set('lock', 'w')], { waitChange: 50, keepParked: true })).toMatchObject({ ok: false })
      await h.commit([life('lock', held.revision)], [del('lock')])
      expect(await raw().exists(parkKey, pkey)).toBe(0)
      expect(await raw().hexists(rev, 'pq')).toBe(0)
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })

  test("a namespace where nothing is parked skips the handover's reads: the park counter goes once nothing is parked, and comes back with the next park, which is handed over as before", async () => {
    const { ns, all } = await fx.adapters(2)
    const [h, w] = all as [RedisAdapter, RedisAdapter]
    const [rev, , , , , , , parkKey, pkey] = namespaceKeys(ns) as [string, string, string, string, string, string, string, string, string]
    const calls = () => commandCalls(raw(), 'hget')
    const existsCalls = () => commandCalls(raw(), 'exists')
    try {
      for (let round = 1; round <= 2; round++) {
        const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
        let parked = false
        const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => (parked = true) })
        await until(() => parked)
        expect(await raw().hexists(rev, 'pq')).toBe(1)
        // A release that finds the key's parked take hands over without asking whether anything is parked at all.
        const beforeRelease = await existsCalls()
        await h.commit([life('lock', held.revision)], [del('lock')])
        expect((await existsCalls()) - beforeRelease).toBe(0)
        const won = ok(await take)
        expect(won.entries[0]).toMatchObject({ owner: 'w' })
        // The waiter's own release finds nothing parked anywhere: the counter goes.
        await w.commit([life('lock', won.revision)], [del('lock')])
        expect(await raw().exists(parkKey, pkey)).toBe(0)
        expect(await raw().hexists(rev, 'pq')).toBe(0)
      }
      // A park taken back (an abort) leaves nothing parked: the next commit drops the counter.
      const stop = new AbortController()
      let parkedAgain = false
      const held2 = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      const aborted = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), signal: stop.signal, onParked: () => (parkedAgain = true) })
      await until(() => parkedAgain)
      stop.abort()
      expect(await aborted).toMatchObject({ ok: false })
      expect(await raw().hexists(rev, 'pq')).toBe(1)
      await h.commit([life('lock', held2.revision)], [del('lock')])
      expect(await raw().hexists(rev, 'pq')).toBe(0)
      // Now a take and a release read no park or key list: one HGET each (the request record's; the entry is read once).
      const before = await calls()
      const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
      await h.commit([life('lock', held.revision)], [del('lock')])
      expect((await calls()) - before).toBe(4)
    } finally {
      await Promise.all(all.map((a) => a.close()))
    }
  })
})
