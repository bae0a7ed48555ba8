/**
 * How the `file://` store judges its parked commits (src/adapters/file/parked.ts):
 * which first try parks, which try at a change grants, answers or keeps a
 * row, in what order rows are tried, and what a commit sent again or taken
 * out of park is answered. Adapters on one file stand for processes; the
 * statements a store runs are counted at better-sqlite3, as in waits.test.ts.
 */
import Database from 'better-sqlite3'
import { describe, expect, test } from 'vitest'
import type { Adapter, Check, CommitResult, Op } from 'zaris'
import { thisProcess, type ProcessId } from '../../src/adapters/file/machine'
import { newFile, open, raw, until } from './helpers'
import { absent, adapters, afterTest, countRuns, del, handClock, life, ok, park, set } from './park-kit'

/** A value with no owner (a setting, not a hold). */
const plain = (key: string, value: string | number = 1): Op => ({ type: 'set', key, value })

/** Parked rows still waiting for an answer: the answer is written in the transaction that decides it, so this is exact right after a commit. */
function waiting(path: string): number {
  return (raw(path).prepare('SELECT count(*) AS n FROM zaris_file_parked WHERE answer IS NULL').get() as { n: number }).n
}

/** Commits `checks`/`ops` as a waiting commit, resolved once it parked (`parked` false: answered at its first try). */
async function parkOf(a: Adapter, checks: Check[], ops: Op[], options: Record<string, unknown> = park()): Promise<{ answer: Promise<CommitResult>; parked: boolean }> {
  let parked = false
  const answer = a.commit(checks, ops, { ...options, onParked: () => (parked = true) })
  let settled = false
  void answer.then(
    () => (settled = true),
    () => (settled = true),
  )
  await until(() => parked || settled)
  return { answer, parked }
}

// Every wait here may last 10 s: a test that passes only at a wait's deadline (its answer missed) fails on this timeout instead.
describe('the file store judges its parked commits', { timeout: 4_000 }, () => {
  test('takes with no parkOrder freed in one transaction are tried in the order they parked, whichever key freed them first', async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    // Gates held by values with no owner: a take fails at them, parks, and waits (no wakeOwner of anyone's).
    await h.commit([], [plain('a'), plain('b'), plain('c')])
    const takes: Array<Promise<CommitResult>> = []
    for (const [name, gate] of [['r1', 'b'], ['r2', 'a'], ['r3', 'c']] as const) {
      const t = await parkOf(w, [absent(gate), absent('t')], [set('t', name)])
      expect(t.parked).toBe(true)
      takes.push(t.answer)
    }
    // Freed a, b, c in that order: the rows come up r2, r1, r3; r1 parked first.
    await h.commit([], [del('a'), del('b'), del('c')])
    const [r1, r2, r3] = await Promise.all(takes)
    expect(r1).toMatchObject({ ok: true, entries: [{ key: 't', owner: 'r1' }] })
    // The others lost `t`, which was free at their first try: answered with that failure.
    for (const r of [r2, r3]) expect(r).toMatchObject({ ok: false, failed: [{ key: 't', entry: { owner: 'r1' } }] })
  })

  test('a row whose deadline is the very moment of a release is not applied; its own last try takes the lock', async () => {
    const clock = handClock(1_000)
    const { path, all } = await adapters(2, { clock })
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const take = await parkOf(w, [absent('lock')], [set('lock', 'w')], park(600))
    clock.set(1_600)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await h.get('lock')).toBeUndefined()
    expect(waiting(path)).toBe(1)
    clock.fire()
    expect(await take.answer).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
  })

  test('a way counts only when every one of its checks holds: at the first try, and at a change; the other way is granted when it frees', async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    ok(await h.commit([], [set('s.1', 'h'), set('s.2', 'h'), set('t', 'h')]))
    const slot = (n: number) => ({ checks: [absent(`s.${n}`)], ops: [set(`s.${n}`, 'w')] })
    // Its third way needs s.3 (free) and t (held): half of it holds, so it does not go.
    const third = { checks: [absent('s.3'), absent('t')], ops: [set('s.3', 'w')] }
    const take = await parkOf(w, slot(1).checks, slot(1).ops, { ...park(), orElse: [slot(2), third] })
    expect(take.parked).toBe(true)
    // A change at s.1 that leaves it held: tried again, still no way through.
    const s1 = (await h.get('s.1'))!
    await h.commit([life('s.1', s1.created)], [set('s.1', 'h')])
    expect(await h.get('s.3')).toBeUndefined()
    const s2 = (await h.get('s.2'))!
    await h.commit([life('s.2', s2.created)], [del('s.2')])
    expect(await take.answer).toMatchObject({ ok: true, entries: [{ key: 's.2', owner: 'w' }] })
    expect(await h.get('s.3')).toBeUndefined()
  })

  test("a shared waiter whose failures include a key its owner holds is answered at once, though another key's holder is someone else", async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    await h.commit([], [set('g', 'group'), set('x', 'h')])
    const t = await parkOf(w, [absent('x'), absent('g')], [set('g', 'w')], { ...park(), wakeOwner: 'group' })
    expect(t.parked).toBe(false)
    expect(await t.answer).toMatchObject({ ok: false, failed: [{ key: 'x', entry: { owner: 'h' } }, { key: 'g', entry: { owner: 'group' } }] })
  })

  test("a shared waiter with a check failing at an absent key parks; the key passing to someone else keeps it parked, to its group's owner answers it", async () => {
    const { path, all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const g = ok(await h.commit([absent('g')], [set('g', 'h')]))
    // `p` has no entry: its failure names no owner.
    const t = await parkOf(w, [absent('g'), life('p', g.revision)], [set('g', 'w')], { ...park(), wakeOwner: 'group' })
    expect(t.parked).toBe(true)
    const g2 = ok(await h.commit([life('g', g.revision)], [set('g', 'h2')]))
    expect(waiting(path)).toBe(1)
    await h.commit([life('g', g2.entries[0]!.created)], [set('g', 'group')])
    const answer = (await t.answer) as Extract<CommitResult, { ok: false }>
    expect(answer).toMatchObject({ ok: false, failed: [{ key: 'g', entry: { owner: 'group' } }, { key: 'p' }] })
    expect(answer.failed[1]!.entry).toBeUndefined()
  })

  test('a take held off by a value with no owner parks, stays parked while the value is rewritten, and is granted at its delete', async () => {
    const { path, all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    await h.commit([], [plain('v', 1)])
    const t = await parkOf(w, [absent('v')], [set('v', 'w')])
    expect(t.parked).toBe(true)
    await h.commit([], [plain('v', 2)])
    expect(waiting(path)).toBe(1)
    await h.commit([], [del('v')])
    expect(await t.answer).toMatchObject({ ok: true, entries: [{ key: 'v', owner: 'w' }] })
  })

  test('a try that turns no outcome writes nothing to the row; one that turns some (not all) remembers them', async () => {
    const setHeld = countRuns('UPDATE zaris_file_parked SET held')
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const k1 = ok(await h.commit([absent('k1')], [set('k1', 'h')]))
    const k2 = ok(await h.commit([absent('k2')], [set('k2', 'h')]))
    const t = await parkOf(w, [absent('k1'), absent('k2')], [set('k1', 'w'), set('k2', 'w')])
    // k1 passes from holder to holder: tried, still failing as before.
    const k1b = ok(await h.commit([life('k1', k1.revision)], [set('k1', 'h2')]))
    expect(setHeld()).toBe(0)
    await h.commit([life('k1', k1b.entries[0]!.created)], [del('k1')])
    expect(setHeld()).toBe(1)
    await h.commit([life('k2', k2.revision)], [del('k2')])
    expect(await t.answer).toMatchObject({ ok: true, entries: [{ key: 'k1' }, { key: 'k2' }] })
    expect(setHeld()).toBe(1)
  })

  test('a commit with no request id looks none up, neither among commits nor among parked rows', async () => {
    const lookups = countRuns('request_id = ?')
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const t = await parkOf(w, [absent('lock')], [set('lock', 'w')])
    await h.commit([life('lock', held.revision)], [del('lock')])
    const won = ok(await t.answer)
    expect(lookups()).toBe(0)
    // With one, it is looked up (the count counts).
    await parkOf(w, [absent('lock')], [set('lock', 'w2')], { ...park(), requestId: 'r-9', signal: AbortSignal.abort() })
    expect(lookups()).toBeGreaterThan(0)
    expect(won.ok).toBe(true)
  })

  test('a commit sent again after its wait was answered with a failure gets that answer at once, not a wait on its old row', async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    await h.commit([], [set('a', 'h')])
    const wait = { waitChange: 10_000, requestId: 'r-2' }
    const first = await parkOf(w, [absent('a'), absent('b')], [set('c', 'w')], wait)
    await h.commit([], [set('b', 'h')])
    const failed = await first.answer
    expect(failed).toMatchObject({ ok: false, failed: [{ key: 'a' }, { key: 'b' }] })
    const again = await parkOf(w, [absent('a'), absent('b')], [set('c', 'w')], wait)
    expect(again.parked).toBe(false)
    expect(await again.answer).toEqual(failed)
  })

  test('sent again while its row waits past its deadline with its checks holding, a commit waits that row: aborted, it is answered as not applied; the first send takes the lock', async () => {
    const clock = handClock(1_000)
    const { path, all } = await adapters(2, { clock })
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const first = await parkOf(w, [absent('lock')], [set('lock', 'w')], { ...park(600), requestId: 'r-3' })
    // Past its deadline in the store, before its timer: the release does not apply it.
    clock.set(1_700)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(waiting(path)).toBe(1)
    const stop = new AbortController()
    const again = await parkOf(w, [absent('lock')], [set('lock', 'w')], { ...park(600), requestId: 'r-3', signal: stop.signal })
    expect(again.parked).toBe(true)
    stop.abort()
    // Its first try's failure: none of its checks fails now, yet it was not applied.
    expect(await again.answer).toEqual({ ok: false, failed: [] })
    clock.fire()
    expect(await first.answer).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
  })

  test('sent again while its first send waits with its lock held, it waits the same row: aborted, it is answered with the failure it has now', async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    await h.commit([absent('lock')], [set('lock', 'h')])
    const first = await parkOf(w, [absent('lock')], [set('lock', 'w')], { ...park(), requestId: 'r-4' })
    const stop = new AbortController()
    const again = await parkOf(w, [absent('lock')], [set('lock', 'w')], { ...park(), requestId: 'r-4', signal: stop.signal })
    expect(again.parked).toBe(true)
    stop.abort()
    expect(await again.answer).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
    void first.answer.catch(() => {})
  })

  test("a waiter whose own process is judged gone has its row dropped and its place ended: it is answered with its last try's failure", async () => {
    const path = newFile()
    const dead = new Set<number>()
    const alive = (p: ProcessId) => !dead.has(p.pid)
    const h = await open({ path, alive })
    const w = await open({ path, alive, self: { ...thisProcess(), pid: 70_101, start: 'x' } })
    await w.registerOwner!('w')
    await h.commit([absent('lock')], [set('lock', 'h')])
    const place = ok(await w.commit([absent('q.w')], [set('q.w', 'w')])).revision
    const t = await parkOf(w, [absent('lock'), life('q.w', place)], [set('lock', 'w'), del('q.w')])
    // Its store's own sweep (its tail follows the log) finds the process gone: the row goes, the place ends.
    dead.add(70_101)
    const answer = (await t.answer) as Extract<CommitResult, { ok: false }>
    expect(answer).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }, { key: 'q.w' }] })
    expect(answer.failed[1]!.entry).toBeUndefined()
  })

  test('a grant written before its waiter read it stands at an abort that comes first: the grant is answered', async () => {
    const path = newFile()
    const h = await open({ path })
    // Of another kind (its poll), so it shares no tail with h: h's own watch hears the release first.
    const w = await open({ path, pollMs: 99 })
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const stop = new AbortController()
    const t = await parkOf(w, [absent('lock')], [set('lock', 'w')], { ...park(), signal: stop.signal })
    let abortedAt: string | undefined
    await h.watch('lock', {
      event: (e) => {
        if (e.type !== 'delete' || stop.signal.aborted) return
        abortedAt = raw(path).prepare('SELECT answer FROM zaris_file_parked').pluck().get() as string
        stop.abort()
      },
      error: () => {},
    })
    await h.commit([life('lock', held.revision)], [del('lock')])
    // The abort came with the answer already in the row.
    expect(JSON.parse(abortedAt!)).toMatchObject({ ok: true })
    expect(await t.answer).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
    expect((await h.get('lock'))!.owner).toBe('w')
  })

  test("the disk filling up in the middle of a grant (stood in for by SQLite's page limit) fails the releasing commit with the disk's error and changes nothing: the lock stays, the take waits on", async () => {
    // The adapters' own connections, to lower their page limit (the disk's end) once the take is parked.
    const proto = Database.prototype as unknown as { prepare(this: Database.Database, sql: string): unknown }
    const prepare = proto.prepare
    const dbs = new Set<Database.Database>()
    proto.prepare = function (sql) {
      dbs.add(this)
      return prepare.call(this, sql)
    }
    afterTest(() => (proto.prepare = prepare))
    const { path, all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const big = 'x'.repeat(200_000)
    const take = await parkOf(w, [absent('lock')], [{ type: 'set', key: 'lock', value: big, owner: 'w', ttl: 60_000 }])
    // Free pages enough for the release's own rows, far too few for the grant's value.
    await h.commit([], [plain('ballast', 'y'.repeat(40_000))])
    await h.commit([], [del('ballast')])
    const limit = (n: number) => {
      for (const db of dbs) if (db.open) db.pragma(`max_page_count = ${n}`)
    }
    limit(raw(path).pragma('page_count', { simple: true }) as number)
    await expect(h.commit([life("lock", held.revision)], [del("lock")])).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/SQLITE_FULL/) })
    expect((await h.get('lock'))!.owner).toBe('h')
    expect(waiting(path)).toBe(1)
    limit(1_073_741_823)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await take.answer).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w', value: big }] })
  })

  test('a grant the store refuses (an add past the safe integers) leaves the commit parked: a later change grants it once it fits', async () => {
    const { path, all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const gate = ok(await h.commit([absent('gate')], [set('gate', 'h')]))
    await h.commit([], [{ type: 'add', key: 'n', delta: 7 }])
    const over = await parkOf(w, [absent('gate')], [{ type: 'add', key: 'n', delta: Number.MAX_SAFE_INTEGER }])
    ok(await h.commit([life('gate', gate.revision)], [del('gate')]))
    expect(waiting(path)).toBe(1)
    await h.commit([], [plain('n', 0)])
    const again = ok(await h.commit([absent('gate')], [set('gate', 'h')]))
    await h.commit([life('gate', again.revision)], [del('gate')])
    expect(await over.answer).toMatchObject({ ok: true, entries: [{ key: 'n', value: Number.MAX_SAFE_INTEGER }] })
  })
})
