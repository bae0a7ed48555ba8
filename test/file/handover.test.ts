/**
 * The `file://` store hands over (src/adapters/file/parked.ts, waits.ts): a
 * waiting commit parks as a row of the file, and the write transaction of
 * whichever process changes one of its keys applies it, in `parkOrder`, and
 * writes its answer into the row; the waiter reads it when its tail shows
 * the change. Adapters on one file stand for processes (each its own
 * connection); one test parks in a real child process.
 */
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { describe, expect, test } from 'vitest'
import type { Adapter, CommitResult } from 'zaris'
import { machineClock, thisProcess, type ProcessId } from '../../src/adapters/file/machine'
import { KEPT_MS } from '../../src/adapters/file/parked'
import { collect, newFile, open, raw, until } from './helpers'
import { absent, adapters, del, handClock, life, ok, park, set } from './park-kit'

/** Rows of the parked table, and their keys' rows (which must go with them). */
function parkedRows(path: string): { rows: number; waiting: number; keys: number } {
  const db = raw(path)
  const rows = (db.prepare('SELECT count(*) AS n FROM zaris_file_parked').get() as { n: number }).n
  const waiting = (db.prepare('SELECT count(*) AS n FROM zaris_file_parked WHERE answer IS NULL').get() as { n: number }).n
  const keys = (db.prepare('SELECT count(*) AS n FROM zaris_file_parked_keys').get() as { n: number }).n
  return { rows, waiting, keys }
}

/** `w`'s place in line (`q.<name>`), then its take of `lock` parked behind it, as the core sends them. */
async function waitInLine(w: Adapter, name: string, order?: number): Promise<{ place: number; take: Promise<CommitResult> }> {
  const place = ok(await w.commit([absent(`q.${name}`)], [set(`q.${name}`, name)])).revision
  let parked = false
  const take = w.commit([absent('lock'), life(`q.${name}`, place)], [set('lock', name), del(`q.${name}`)], { ...park(10_000, order), onParked: () => (parked = true) })
  await until(() => parked)
  return { place, take }
}

// Every wait here may last 10 s: a test that passes only at a wait's deadline (its answer missed) fails on this timeout instead.
describe('the file store hands over', { timeout: 4_000 }, () => {
  test("a release hands the lock to the parked take in the release's own transaction; a barger right after fails", async () => {
    const { path, all } = await adapters(3)
    const [h, w, b] = all as [Adapter, Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const { take } = await waitInLine(w, 'w')
    expect(parkedRows(path)).toEqual({ rows: 1, waiting: 1, keys: 2 })
    const release = ok(await h.commit([life('lock', held.revision)], [del('lock')]))
    // The release's answer came after its transaction: the lock is the waiter's already.
    const now = await b.get('lock')
    expect(now).toMatchObject({ owner: 'w' })
    expect(now!.created).toBe(release.revision + 1)
    expect((await b.commit([absent('lock')], [set('lock', 'barger')])).ok).toBe(false)
    expect(await take).toMatchObject({ ok: true, revision: now!.created, deleted: ['q.w'], entries: [{ key: 'lock', owner: 'w', created: now!.created }] })
    // Answered: kept for its waiter a while, judged no more.
    expect(parkedRows(path)).toEqual({ rows: 1, waiting: 0, keys: 0 })
  })

  test('a waiter in another process is handed the lock, and hears of it from the kernel (its poll set to a minute)', async () => {
    const { path, all } = await adapters(1, { namespace: 'child' })
    const [h] = all as [Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const child = spawn(process.execPath, ['--import', 'tsx', resolve(import.meta.dirname, 'park-child.ts'), path, 'child', '60000'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const exited = new Promise((r) => child.once('exit', r))
    try {
      await until(() => out.includes('parked') || child.exitCode !== null, 20_000)
      expect(out, err).toContain('parked')
      const releasedAt = machineClock.now()
      ok(await h.commit([life('lock', held.revision)], [del('lock')]))
      await until(() => out.includes('"answer"'), 5_000).catch((e) => {
        throw new Error(`${e}: ${out} ${err}`)
      })
      const { at, answer } = JSON.parse(out.split('\n').find((l) => l.includes('"answer"'))!) as { at: number; answer: CommitResult }
      expect(answer).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'child' }] })
      expect(await h.get('lock')).toMatchObject({ owner: 'child' })
      // Typically ~1 ms; bounded loosely for a loaded machine (its poll would take a minute).
      expect(at - releasedAt).toBeLessThan(2_000)
    } finally {
      child.kill('SIGKILL')
      await exited
    }
  }, 30_000)

  test('waiters get the lock in parkOrder, not in the order they parked; then in the order they parked', async () => {
    const { all } = await adapters(4)
    const [h, a, b, c] = all as [Adapter, Adapter, Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const first = await waitInLine(c, 'c')
    const second = await waitInLine(a, 'a', 7)
    const third = await waitInLine(b, 'b', 3)
    const order: string[] = []
    for (const [name, t] of [['a', second], ['b', third], ['c', first]] as const) void t.take.then((r) => r.ok && order.push(name))
    let lock = held.revision
    for (const next of ['b', 'a', 'c']) {
      await h.commit([life('lock', lock)], [del('lock')])
      const e = (await h.get('lock'))!
      expect(e.owner).toBe(next)
      lock = e.created
    }
    await until(() => order.length === 3)
    expect(order).toEqual(['b', 'a', 'c'])
  })

  test('a waiter that gave up its place is answered with that failure and never granted', async () => {
    const { path, all } = await adapters(3)
    const [h, w, x] = all as [Adapter, Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const { place, take } = await waitInLine(w, 'w')
    const behind = await waitInLine(x, 'x')
    await w.commit([life('q.w', place)], [del('q.w')])
    const gaveUp = (await take) as Extract<CommitResult, { ok: false }>
    expect(gaveUp).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }, { key: 'q.w' }] })
    expect(gaveUp.failed[1]!.entry).toBeUndefined()
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await behind.take).toMatchObject({ ok: true })
    expect((await h.get('lock'))!.owner).toBe('x')
    expect(parkedRows(path).waiting).toBe(0)
  })

  test("a holder's TTL ends with nobody else writing: the parked waiter holds within the TTL and a few ms, its TTL counted from the grant", async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    await h.commit([absent('lock')], [set('lock', 'h', 300)])
    const t0 = performance.now()
    const { take } = await waitInLine(w, 'w')
    const won = ok(await take)
    const waited = performance.now() - t0
    expect(waited).toBeGreaterThanOrEqual(290)
    expect(waited).toBeLessThan(600)
    expect(won.entries[0]).toMatchObject({ key: 'lock', owner: 'w', ttl: 60_000 })
  })

  test('an expiry a commit finds hands the key to the line before that commit is tried', async () => {
    const clock = handClock(1_000)
    const { all } = await adapters(3, { clock })
    const [h, w, b] = all as [Adapter, Adapter, Adapter]
    await h.commit([absent('lock')], [set('lock', 'h', 500)])
    const place = ok(await w.commit([absent('q.w')], [set('q.w', 'w')])).revision
    let parked = false
    const take = w.commit([absent('lock'), life('q.w', place)], [set('lock', 'w'), del('q.w')], { ...park(), onParked: () => (parked = true) })
    await until(() => parked)
    // The clock moves without its timers firing: the barger's own transaction finds the expiry.
    clock.set(1_600)
    expect(await b.commit([absent('lock')], [set('lock', 'b')])).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'w' } }] })
    expect(await take).toMatchObject({ ok: true })
  })

  test("a dead holder's process is found by the waiter's store within tens of ms, and the lock is handed over", async () => {
    const path = newFile()
    const dead = new Set<number>()
    const alive = (p: ProcessId) => !dead.has(p.pid)
    const h = await open({ path, alive, self: { ...thisProcess(), pid: 70_001, start: 'x' } })
    await h.registerOwner!('h')
    const w = await open({ path, alive })
    await h.commit([absent('lock')], [set('lock', 'h')])
    const { take } = await waitInLine(w, 'w')
    const t0 = performance.now()
    dead.add(70_001)
    expect(await take).toMatchObject({ ok: true, entries: [{ owner: 'w' }] })
    expect(performance.now() - t0).toBeLessThan(1_000) // the sweep looks every 50 ms
  })

  test("a dead waiter's process: its parked take is never granted, even by a release right after the death; its row is dropped", async () => {
    const path = newFile()
    const dead = new Set<number>()
    const alive = (p: ProcessId) => !dead.has(p.pid)
    const h = await open({ path, alive })
    const w = await open({ path, alive, self: { ...thisProcess(), pid: 70_002, start: 'x' } })
    await w.registerOwner!('w')
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    void waitInLine(w, 'w').then((t) => t.take.catch(() => {}))
    await until(() => parkedRows(path).waiting === 1)
    await new Promise((r) => setTimeout(r, 30))
    // A write that looks at every owner (its last look is stale), then the death, then the release within the
    // 20 ms before the next such look: the grant itself asks after the waiter's process.
    await h.commit([], [set('other', 'h')])
    dead.add(70_002)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await h.get('lock')).toBeUndefined()
    expect(parkedRows(path)).toEqual({ rows: 0, waiting: 0, keys: 0 })
    // And its client's place ended with it, as an expiry.
    expect(await h.get('q.w')).toBeUndefined()
  })

  test('a wait that runs out is given one last try: taken where its checks hold then; never applied by a change after its deadline', async () => {
    const clock = handClock(1_000)
    const { path, all } = await adapters(2, { clock })
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(600), onParked: () => (parked = true) })
    await until(() => parked)
    // Past its deadline in the store, before its timer: a release does not apply it.
    clock.set(1_700)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await h.get('lock')).toBeUndefined()
    expect(parkedRows(path).waiting).toBe(1)
    clock.fire() // its timer (due at 1 600) fires: the last try takes the free lock
    expect(await take).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
    expect(parkedRows(path)).toEqual({ rows: 0, waiting: 0, keys: 0 })
    // And one whose last try fails is answered with that failure.
    const again = w.commit([absent('lock')], [set('lock', 'w2')], { ...park(100) })
    await until(() => parkedRows(path).waiting === 1)
    clock.set(1_800)
    clock.fire()
    expect(await again).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'w' } }] })
  })

  test('an aborted wait is taken out of park at once and never applied; a close does the same for every wait', async () => {
    const { path, all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const stop = new AbortController()
    let parked = 0
    const aborted = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), signal: stop.signal, onParked: () => parked++ })
    await until(() => parked === 1)
    const t0 = performance.now()
    stop.abort()
    expect(await aborted).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
    expect(performance.now() - t0).toBeLessThan(1_000)
    expect(parkedRows(path).rows).toBe(0)
    const closed = [1, 2].map(() => w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => parked++ }))
    await until(() => parked === 3)
    await w.close()
    for (const r of await Promise.all(closed)) expect(r).toMatchObject({ ok: false })
    expect(parkedRows(path).rows).toBe(0)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await h.get('lock')).toBeUndefined()
  })

  test('an abort gives no last try: past its deadline in the store, with the lock free, an aborted take is answered with its first failure', async () => {
    const clock = handClock(1_000)
    const { all } = await adapters(2, { clock })
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const stop = new AbortController()
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(600), signal: stop.signal, onParked: () => (parked = true) })
    await until(() => parked)
    clock.set(1_700)
    await h.commit([life('lock', held.revision)], [del('lock')])
    stop.abort()
    // Its deadline's timer fires while the abort's end is under way: one end, with no last try.
    clock.fire()
    expect(await take).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
    expect(await h.get('lock')).toBeUndefined()
    // Its deadline's timer, fired after, does nothing more.
    clock.fire()
    await new Promise((r) => setTimeout(r, 20))
    expect(await h.get('lock')).toBeUndefined()
  })

  test('an answer written before an abort stands: the grant is answered, not undone', async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const stop = new AbortController()
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), signal: stop.signal, onParked: () => (parked = true) })
    await until(() => parked)
    await h.commit([life('lock', held.revision)], [del('lock')])
    // Aborted in the same turn as the release's answer, before the waiter read its row.
    stop.abort()
    expect(await take).toMatchObject({ ok: true, entries: [{ owner: 'w' }] })
    expect((await h.get('lock'))!.owner).toBe('w')
  })

  test('a wait whose signal is already aborted is answered at once with its failure and left in no line', async () => {
    const { path, all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    await h.commit([absent('lock')], [set('lock', 'h')])
    const stop = new AbortController()
    stop.abort()
    let parked = false
    const t0 = performance.now()
    expect(await w.commit([absent('lock')], [set('lock', 'w')], { ...park(5_000), signal: stop.signal, onParked: () => (parked = true) })).toMatchObject({ ok: false, failed: [{ key: 'lock' }] })
    expect(performance.now() - t0).toBeLessThan(1_000)
    expect(parked).toBe(true)
    expect(parkedRows(path).rows).toBe(0)
  })

  test("a permit's other ways: the first free slot goes to the first in line, in the release's transaction; a first try may go another way", async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const s1 = ok(await h.commit([absent('s.1')], [set('s.1', 'h')]))
    await h.commit([absent('s.2')], [set('s.2', 'h')])
    const slot = (n: number) => ({ checks: [absent(`s.${n}`)], ops: [set(`s.${n}`, 'w')] })
    let parked = false
    const take = w.commit(slot(1).checks, slot(1).ops, { ...park(), orElse: [slot(2)], onParked: () => (parked = true) })
    await until(() => parked)
    await h.commit([life('s.1', s1.revision)], [del('s.1')])
    expect(await take).toMatchObject({ ok: true, entries: [{ key: 's.1', owner: 'w' }] })
    // Slot 1 taken, slot 3 free: the first try goes through its other way at once.
    let parkedAgain = false
    expect(await w.commit(slot(1).checks, slot(1).ops, { ...park(), orElse: [slot(2), slot(3)], onParked: () => (parkedAgain = true) })).toMatchObject({ ok: true, entries: [{ key: 's.3' }] })
    expect(parkedAgain).toBe(false)
  })

  test('other ways count only with keepParked: a plain waitChange goes by its own checks', async () => {
    const { all } = await adapters(1)
    const [w] = all as [Adapter]
    await w.commit([], [set('s.1', 'h')])
    const r = await w.commit([absent('s.1')], [set('s.1', 'w')], { waitChange: 50, orElse: [{ checks: [absent('s.2')], ops: [set('s.2', 'w')] }] })
    expect(r).toMatchObject({ ok: false, failed: [{ key: 's.1' }] })
    expect(await w.get('s.2')).toBeUndefined()
  })

  test('a shared waiter (wakeOwner) is answered when its owner started the group at a key it checks, and does not park when it already has', async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('g')], [set('g', 'h')]))
    let parked = false
    const take = w.commit([absent('g')], [set('g', 'w')], { ...park(), wakeOwner: 'group', onParked: () => (parked = true) })
    await until(() => parked)
    // The key passes to the group's owner: the waiter comes back to join it, at once (not at its wait's end).
    const t0 = performance.now()
    await h.commit([life('g', held.revision)], [set('g', 'group')])
    expect(await take).toMatchObject({ ok: false, failed: [{ key: 'g', entry: { owner: 'group' } }] })
    expect(performance.now() - t0).toBeLessThan(1_000)
    let parkedAgain = false
    expect(await w.commit([absent('g')], [set('g', 'w')], { ...park(), wakeOwner: 'group', onParked: () => (parkedAgain = true) })).toMatchObject({ ok: false })
    expect(parkedAgain).toBe(false)
  })

  test('a plain waitChange (no keepParked) is answered at the first change that turns one of its checks, not at one that does not', async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const a = ok(await h.commit([], [set('a', 'h')]))
    let answered = false
    let parked = false
    const wait = w.commit([absent('a'), absent('b')], [set('c', 'w')], { waitChange: 10_000, onParked: () => (parked = true) })
    void wait.then(() => (answered = true))
    await until(() => parked)
    // `a` rewritten: still not absent, nothing turned.
    const a2 = ok(await h.commit([life('a', a.revision)], [set('a', 'h')]))
    await new Promise((r) => setTimeout(r, 50))
    expect(answered).toBe(false)
    // `b` written: its check turned (held, now fails): answered with that failure.
    await h.commit([], [set('b', 'h')])
    expect(await wait).toMatchObject({ ok: false, failed: [{ key: 'a' }, { key: 'b' }] })
    expect(a2.ok).toBe(true)
  })

  test("a handed-over take writes its value, owner and TTL; an add goes through the same way; one past the safe integers stays parked and its last try says why", async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const gate = ok(await h.commit([absent('gate')], [set('gate', 'h')]))
    await h.commit([], [{ type: 'add', key: 'n', delta: 2 }])
    let parked = 0
    const take = w.commit([absent('lock')], [{ type: 'set', key: 'lock', value: { by: 'w' }, owner: 'w', ttl: 5_000 }], { ...park(), onParked: () => parked++ })
    const add = w.commit([absent('gate')], [{ type: 'add', key: 'n', delta: 5 }], { waitChange: 10_000, onParked: () => parked++ })
    await until(() => parked === 2)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await take).toMatchObject({ ok: true, entries: [{ key: 'lock', value: { by: 'w' }, owner: 'w', ttl: 5_000 }] })
    await h.commit([life('gate', gate.revision)], [del('gate')])
    expect(await add).toMatchObject({ ok: true, entries: [{ key: 'n', value: 7 }] })
    const gate2 = ok(await h.commit([absent('gate')], [set('gate', 'h')]))
    const over = w.commit([absent('gate')], [{ type: 'add', key: 'n', delta: Number.MAX_SAFE_INTEGER }], { ...park(300), onParked: () => parked++ })
    await until(() => parked === 3)
    // The release goes through; the add cannot: it stays parked, and its last try fails as a plain commit would.
    ok(await h.commit([life('gate', gate2.revision)], [del('gate')]))
    expect(await h.get('gate')).toBeUndefined()
    await expect(over).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect((await h.get('n'))!.value).toBe(7)
  })

  test("a caller's request id: the grant is written with it, so the commit sent again is answered, not tried again; sent again while parked, it waits the same wait", async () => {
    const { path, all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    let parked = 0
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), requestId: 'r-1', onParked: () => parked++ })
    await until(() => parked === 1)
    const again = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), requestId: 'r-1', onParked: () => parked++ })
    await until(() => parked === 2)
    expect(parkedRows(path).rows).toBe(1)
    await h.commit([life('lock', held.revision)], [del('lock')])
    const won = ok(await take)
    expect(await again).toEqual(won)
    expect(await w.commit([absent('lock')], [set('lock', 'w')], { requestId: 'r-1' })).toEqual(won)
    // Sent again as a waiting commit after its grant: the grant, not a park behind itself.
    let parkedAgain = false
    expect(await w.commit([absent('lock')], [set('lock', 'w')], { ...park(), requestId: 'r-1', onParked: () => (parkedAgain = true) })).toEqual(won)
    expect(parkedAgain).toBe(false)
  })

  test('a granted wait is done: its deadline, passed after its row was pruned, gives no second try (the lock let go stays free)', async () => {
    const clock = handClock(1_000)
    const { all } = await adapters(2, { clock })
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    // A take with no place in line to check (nothing else would stop a second try of it).
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { ...park(), onParked: () => (parked = true) })
    await until(() => parked)
    await h.commit([life('lock', held.revision)], [del('lock')])
    const won = ok(await take)
    await w.commit([life('lock', won.revision)], [del('lock')])
    // Its answered row pruned by a later park, then its (cleared) deadline timer would fire.
    clock.set(1_000 + KEPT_MS + 11_000)
    await h.commit([absent('other')], [set('other', 'h')], { ...park() })
    clock.fire()
    await new Promise((r) => setTimeout(r, 20))
    expect(await h.get('lock')).toBeUndefined()
  })

  test("a take of two keys freed one after the other is granted at the second release (the first one's outcome remembered)", async () => {
    const { all } = await adapters(3)
    const [a, b, w] = all as [Adapter, Adapter, Adapter]
    const ha = ok(await a.commit([absent('k1')], [set('k1', 'a')]))
    const hb = ok(await b.commit([absent('k2')], [set('k2', 'b')]))
    let parked = false
    const take = w.commit([absent('k1'), absent('k2')], [set('k1', 'w'), set('k2', 'w')], { ...park(), onParked: () => (parked = true) })
    await until(() => parked)
    await a.commit([life('k1', ha.revision)], [del('k1')])
    await b.commit([life('k2', hb.revision)], [del('k2')])
    expect(await take).toMatchObject({ ok: true, entries: [{ key: 'k1', owner: 'w' }, { key: 'k2', owner: 'w' }] })
  })

  test('a watcher hears the release, then the waiter\'s put at a later revision', async () => {
    const { all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const heard = collect()
    await h.watch('lock', heard.sink)
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const { take } = await waitInLine(w, 'w')
    const release = ok(await h.commit([life('lock', held.revision)], [del('lock')]))
    expect(ok(await take).revision).toBe(release.revision + 1)
    await until(() => heard.events.length === 3)
    expect(heard.events.map((e) => `${e.type} ${e.owner ?? ''}`.trim())).toEqual(['put h', 'delete', 'put w'])
  })

  test('rows are pruned once their time is over: answered or past their deadline, some seconds later', async () => {
    const clock = handClock(1_000)
    const { path, all } = await adapters(2, { clock })
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h', 600_000)]))
    const { take } = await waitInLine(w, 'w')
    await h.commit([life('lock', held.revision)], [del('lock')])
    await take
    // A row left by an adapter that never came back for it (written as one would be).
    const db = raw(path)
    db.prepare(`INSERT INTO zaris_file_parked (ns, deadline, ends, plan, held, nonce) VALUES ('test', 1500, 1500, '{"keys":["x"]}', '[]', 'gone')`).run()
    db.prepare(`INSERT INTO zaris_file_parked_keys (ns, k, id) VALUES ('test', x'0078', last_insert_rowid())`).run()
    expect(parkedRows(path)).toEqual({ rows: 2, waiting: 1, keys: 1 })
    clock.set(1_000 + KEPT_MS + 600)
    const next = w.commit([absent('other')], [set('other', 'w')], { ...park() })
    expect(await next).toMatchObject({ ok: true })
    expect(parkedRows(path)).toEqual({ rows: 0, waiting: 0, keys: 0 })
  })

  test('the log is followed only while a commit waits: after, a TTL ends unwritten until someone reads', async () => {
    const { path, all } = await adapters(2)
    const [h, w] = all as [Adapter, Adapter]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const { take } = await waitInLine(w, 'w')
    await h.commit([life('lock', held.revision)], [del('lock')])
    await take
    await w.commit([], [set('short', 'w', 30)])
    await new Promise((r) => setTimeout(r, 150))
    const expiries = () => raw(path).prepare(`SELECT count(*) AS n FROM zaris_file_events WHERE type = 'expire'`).get()
    expect(expiries()).toEqual({ n: 0 })
  })

  test('bad park options are refused with INVALID_ARGUMENT, naming the field', async () => {
    const { all } = await adapters(1)
    const [w] = all as [Adapter]
    await expect(w.commit([], [], { waitChange: 100, parkOrder: 1.5 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/parkOrder/) })
    await expect(w.commit([], [], { waitChange: 100, wakeOwner: 5 as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/wakeOwner/) })
    await expect(w.commit([], [], { waitChange: 100, keepParked: true, orElse: 'x' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
  })

  test('a reboot of the machine drops every parked row (their waiters were of the old boot)', async () => {
    const path = newFile()
    const h = await open({ path, boot: 'boot-1' })
    const w = await open({ path, boot: 'boot-1' })
    await h.commit([absent('lock')], [set('lock', 'h')])
    void w.commit([absent('lock')], [set('lock', 'w')], { ...park() }).catch(() => {})
    await until(() => parkedRows(path).rows === 1)
    await open({ path, boot: 'boot-2' })
    expect(parkedRows(path)).toEqual({ rows: 0, waiting: 0, keys: 0 })
  })
})
