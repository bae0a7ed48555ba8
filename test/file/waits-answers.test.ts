/**
 * How a commit parked in a `file://` store hears its answer
 * (src/adapters/file/waits.ts): which changes make it read its row, which
 * holder it looks at, how its wait ends (deadline, abort, close, its row
 * gone, its log reader fallen behind) and what it leaves once answered.
 * Counted at better-sqlite3's statements, as test/file/waits.test.ts does.
 */
import { execFile } from 'node:child_process'
import { getEventListeners } from 'node:events'
import { resolve } from 'node:path'
import { describe, expect, test } from 'vitest'
import type { Adapter, Check, CommitResult, Op } from 'zaris'
import { thisProcess, type ProcessId } from '../../src/adapters/file/machine'
import { newFile, open, raw, rawPut, until } from './helpers'
import { absent, countRuns, del, handClock, life, ok, park, set } from './park-kit'

/** A put with no TTL (no expiry timer on the store's clock) and, without `owner`, no holder to look at. */
const put = (key: string, owner?: string): Op => (owner === undefined ? { type: 'set', key, value: 1 } : { type: 'set', key, value: null, owner })
type Options = NonNullable<Parameters<Adapter['commit']>[2]>

const ROW = 'SELECT id, nonce, ord, deadline, plan, held, answer FROM zaris_file_parked WHERE id = ?'
const REGISTRATIONS = 'SELECT count(*) AS n FROM zaris_file_owners WHERE ns = ? AND owner = ?'
const OWNERS_OF = 'FROM zaris_file_owners WHERE ns = ? AND owner = ?'

/** Sends a commit that parks; resolves once it has (its answer is `wait`). */
async function parked(a: Adapter, checks: Check[], ops: Op[], options: Options): Promise<{ wait: Promise<CommitResult> }> {
  let done = false
  const wait = a.commit(checks, ops, { ...options, onParked: () => (done = true) })
  void wait.catch(() => {})
  await until(() => done)
  return { wait }
}

/** Every step the event loop has queued runs (a look at a holder, a read of a row: microtasks and immediates). */
const settle = () => new Promise((r) => setImmediate(r))

// Every wait here may last 10 s: a test that passes only at a wait's deadline (its answer missed) fails on this timeout instead.
describe('a parked commit hears its answer', { timeout: 4_000 }, () => {
  test("a waiter whose log reader fell behind the pruned log reads its row again, and hears the grant it missed", { timeout: 10_000 }, async () => {
    const path = newFile()
    // The holder prunes its log to one revision (every 1 000); the waiter hears only this process's writes.
    const h = await open({ path, historySize: 1 })
    const w = await open({ path, notify: false, pollMs: 60_000 })
    const held = ok(await h.commit([absent('lock')], [put('lock')]))
    const { wait } = await parked(w, [absent('lock')], [put('lock', 'w')], park(30_000))
    // The release (its grant) and enough writes to prune the log past the waiter's reader, before it reads again.
    const writes = [h.commit([life('lock', held.revision)], [del('lock')])]
    for (let i = 0; i < 1_010; i++) writes.push(h.commit([], [{ type: 'set', key: 'filler', value: i }]))
    await Promise.all(writes)
    expect(await wait).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
  })

  test('a row the waiter cannot read (the file failing) leaves the wait to its deadline, whose last try answers it', async () => {
    const rowReads = countRuns(ROW)
    const clock = handClock(1_000)
    const path = newFile()
    const [h, w] = [await open({ path, clock }), await open({ path, clock })]
    await h.commit([], [put('gate')])
    const { wait } = await parked(w, [absent('gate')], [put('n', 'w')], { waitChange: 600 })
    let answered = false
    void wait.then(
      () => (answered = true),
      () => (answered = true),
    )
    const before = rowReads()
    const db = raw(path)
    db.exec('ALTER TABLE zaris_file_parked RENAME TO zaris_file_parked_away')
    rawPut(path, 'gate')
    await until(() => rowReads() > before)
    await settle()
    expect(answered).toBe(false)
    db.exec('ALTER TABLE zaris_file_parked_away RENAME TO zaris_file_parked')
    clock.set(1_700)
    clock.fire()
    expect(await wait).toMatchObject({ ok: false, failed: [{ key: 'gate' }] })
  })

  test("an answered wait leaves nothing behind: no listener on its caller's signal, no timer on the store's clock", async () => {
    const clock = handClock(1_000)
    const path = newFile()
    const [h, w] = [await open({ path, clock }), await open({ path, clock })]
    const held = ok(await h.commit([absent('lock')], [put('lock')]))
    const stop = new AbortController()
    const { wait } = await parked(w, [absent('lock')], [put('lock', 'w')], { ...park(), signal: stop.signal })
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(1)
    expect(clock.pending()).toBe(1)
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await wait).toMatchObject({ ok: true })
    // A signal kept for many commits (a shutdown signal) would gather one listener per commit.
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0)
    expect(clock.pending()).toBe(0)
  })

  test('a key freed in the way of a take of two keys is looked at for nobody: only the key still held has a holder to look at', async () => {
    const nobody = countRuns(OWNERS_OF, { pick: (args) => args[1] === undefined })
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.registerOwner!('h')
    await w.registerOwner!('w')
    const k1 = ok(await h.commit([absent('k1')], [set('k1', 'h')]))
    const k2 = ok(await h.commit([absent('k2')], [set('k2', 'h')]))
    const { wait } = await parked(w, [absent('k1'), absent('k2')], [set('k1', 'w'), set('k2', 'w')], park())
    await h.commit([life('k1', k1.revision)], [del('k1')])
    await settle()
    expect(nobody()).toBe(0)
    await h.commit([life('k2', k2.revision)], [del('k2')])
    expect(await wait).toMatchObject({ ok: true, entries: [{ key: 'k1', owner: 'w' }, { key: 'k2', owner: 'w' }] })
  })

  test('a wait for a key to appear (no entry in its way) looks at no holder, and goes through once the key is created', async () => {
    const looks = countRuns(OWNERS_OF)
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    const { revision } = ok(await h.commit([], [put('other')]))
    // The next revision is the one `ready` is created at.
    const { wait } = await parked(w, [life('ready', revision + 1)], [put('got', 'w')], { waitChange: 10_000 })
    await h.commit([], [put('ready')])
    expect(await wait).toMatchObject({ ok: true, entries: [{ key: 'got', owner: 'w' }] })
    expect(looks()).toBe(0)
  })

  test('a wait whose signal was aborted before it parked gets no last try, though the lock is free by then', async () => {
    const clock = handClock(1_000)
    const path = newFile()
    const [h, w] = [await open({ path, clock }), await open({ path, clock })]
    await h.commit([absent('lock')], [set('lock', 'h', 500)])
    const stop = new AbortController()
    stop.abort()
    // Time passes between its park and its end: the holder's TTL ends, and so does the wait's own deadline (so no grant).
    const r = await w.commit([absent('lock')], [set('lock', 'w')], { ...park(600), signal: stop.signal, onParked: () => clock.set(1_700) })
    expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
    expect(await h.get('lock')).toBeUndefined()
  })

  test('a close while a waiting commit\'s first try waits out a busy file ends it with CLOSED, not a raw SQLite error', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.commit([absent('lock')], [set('lock', 'h')])
    const lock = raw(path)
    lock.exec('BEGIN IMMEDIATE')
    const take = w.commit([absent('lock')], [set('lock', 'w')], park()).then(
      (r) => r,
      (e: unknown) => e,
    )
    // Nothing of w's to end at its close: the connection closes while the take still waits for the file.
    await w.close()
    lock.exec('COMMIT')
    expect(await take).toMatchObject({ code: 'CLOSED' })
    expect((lock.prepare('SELECT count(*) AS n FROM zaris_file_parked').get() as { n: number }).n).toBe(0)
  })

  test('a close racing a waiting commit\'s first try for a busy file: the commit is answered or CLOSED, and leaves no row parked', async () => {
    for (let round = 0; round < 6; round++) {
      const path = newFile()
      const [h, w] = [await open({ path }), await open({ path })]
      await h.commit([absent('lock')], [set('lock', 'h')])
      // Registered: its close writes too, so the close and the take both wait for the file, and either may go first.
      await w.registerOwner!('w')
      const lock = raw(path)
      lock.exec('BEGIN IMMEDIATE')
      const take = w.commit([absent('lock')], [set('lock', 'w')], park()).then(
        (r) => r,
        (e: unknown) => e,
      )
      const closed = w.close()
      await new Promise((r) => setTimeout(r, 20))
      lock.exec('COMMIT')
      await closed
      const r = await take
      if ((r as { code?: string }).code !== 'CLOSED') expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
      expect((lock.prepare('SELECT count(*) AS n FROM zaris_file_parked').get() as { n: number }).n).toBe(0)
    }
  })

  test("a close gives no last try: past its deadline in the store, with the lock free, a parked take is answered with its first failure", async () => {
    const clock = handClock(1_000)
    const path = newFile()
    const [h, w] = [await open({ path, clock }), await open({ path, clock })]
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const { wait } = await parked(w, [absent('lock')], [set('lock', 'w')], park(600))
    clock.set(1_700)
    await h.commit([life('lock', held.revision)], [del('lock')])
    await w.close()
    expect(await wait).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
    expect(await h.get('lock')).toBeUndefined()
  })

  test("an abort whose own write ends the holder's TTL: answered with its first failure, never applied, its row read no more", async () => {
    const rowReads = countRuns(ROW)
    const clock = handClock(1_000)
    const path = newFile()
    const [h, w] = [await open({ path, clock }), await open({ path, clock })]
    await h.commit([absent('lock')], [set('lock', 'h', 500)])
    const stop = new AbortController()
    // A plain waitChange: the expiry at its key makes it look at its row.
    const { wait } = await parked(w, [absent('lock')], [set('lock', 'w')], { waitChange: 600, signal: stop.signal })
    await settle()
    const before = rowReads()
    clock.set(1_700)
    stop.abort()
    expect(await wait).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }] })
    expect(await h.get('lock')).toBeUndefined()
    // One read: its end's own, in the write that took it out of park.
    expect(rowReads() - before).toBe(1)
  })

  test("a waiter looks at whoever holds its key now: the holder after the one it parked behind dies, and the key is handed over", async () => {
    // A clock that stands still: no sweep or write is due to look at owners; only the waiter's look at its holder does.
    const clock = handClock(1_000)
    const dead = new Set<number>()
    const alive = (p: ProcessId) => !dead.has(p.pid)
    const path = newFile()
    const h = await open({ path, clock, alive })
    const h2 = await open({ path, clock, alive, self: { ...thisProcess(), pid: 70_101, start: 'x' } })
    const w = await open({ path, clock, alive })
    await h.registerOwner!('h')
    await h2.registerOwner!('h2')
    await w.registerOwner!('w')
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const first = await parked(h2, [absent('lock')], [set('lock', 'h2')], park(10_000, 1))
    const { wait } = await parked(w, [absent('lock')], [set('lock', 'w')], park(10_000, 2))
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await first.wait).toMatchObject({ ok: true, entries: [{ owner: 'h2' }] })
    dead.add(70_101)
    expect(await wait).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
  })

  test("a holder ended by another process's write, which the waiter's log reader has not heard, is found by the waiter's look: it reads its row", { timeout: 20_000 }, async () => {
    const path = newFile()
    const h = await open({ path, alive: () => true, self: { ...thisProcess(), pid: 70_103, start: 'x' } })
    // Hears no other process's write: no kernel notes, a poll a minute apart.
    const w = await open({ path, alive: () => true, notify: false, pollMs: 60_000 })
    await h.registerOwner!('h')
    await w.registerOwner!('w')
    await h.commit([absent('lock')], [set('lock', 'h')])
    const { wait } = await parked(w, [absent('lock')], [set('lock', 'w')], park(30_000))
    let answered = false
    void wait.then(() => (answered = true))
    // A real other process, to which the holder's is dead: its first write ends the holder and hands the lock over.
    const code = `const { fileAdapter } = await import(${JSON.stringify(resolve(import.meta.dirname, '../../src/adapters/file/index.ts'))})
      const a = await fileAdapter({ path: ${JSON.stringify(path)}, namespace: 'test', alive: (p) => p.pid !== 70103 })
      await a.commit([], [{ type: 'set', key: 'other', value: 1 }])
      console.log(JSON.stringify(await a.get('lock')))
      await a.close()`
    const out = await new Promise<string>((done, fail) =>
      execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], (err, stdout, stderr) => (err ? fail(new Error(`${err.message} ${stderr}`)) : done(stdout))),
    )
    expect(JSON.parse(out)).toMatchObject({ owner: 'w' })
    // Its look runs every 10 ms; its reader would hear the write at its poll, a minute away (its deadline: 30 s).
    await until(() => answered, 3_000)
    expect(await wait).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w' }] })
  })

  test('a holder that rewrites its key many times is looked at every few ms, not once per write', async () => {
    const looks = countRuns(REGISTRATIONS)
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.registerOwner!('h')
    await h.commit([absent('lock')], [set('lock', 'h')])
    await parked(w, [absent('lock')], [set('lock', 'w')], park())
    await settle()
    const before = looks()
    // Twenty writes in one step of the event loop: no 10 ms poll falls between them.
    const writes = [] as Array<Promise<CommitResult>>
    for (let i = 0; i < 20; i++) writes.push(h.commit([], [set('lock', 'h')]))
    await Promise.all(writes)
    await settle()
    expect(looks() - before).toBeLessThan(5)
  })

  test("a waiter whose own process another judges gone has its row dropped: it gives its commit the last try at once", async () => {
    const path = newFile()
    const w = await open({ path, alive: () => true, self: { ...thisProcess(), pid: 70_102, start: 'x' } })
    const h = await open({ path, alive: () => true })
    await h.registerOwner!('h')
    await w.registerOwner!('w')
    await h.commit([absent('lock')], [set('lock', 'h')])
    const place = ok(await w.commit([absent('q.w')], [set('q.w', 'w')])).revision
    const { wait } = await parked(w, [absent('lock'), life('q.w', place)], [set('lock', 'w'), del('q.w')], park())
    // Another adapter's first write finds the waiter's process dead: its registration, parked row and place end.
    const x = await open({ path, alive: (p) => p.pid !== 70_102 })
    await x.commit([], [put('x')])
    // The last try's failure (its place is gone now), not the first try's.
    expect(await wait).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'h' } }, { key: 'q.w' }] })
  })

  test('a wait that is answered is forgotten at its keys: a later holder there is not looked at for it', async () => {
    const looksAtH2 = countRuns(REGISTRATIONS, { pick: (args) => args[1] === 'h2' })
    const path = newFile()
    const [h, w, h2] = [await open({ path }), await open({ path }), await open({ path })]
    await h.registerOwner!('h')
    await w.registerOwner!('w')
    await h2.registerOwner!('h2')
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    await h.commit([absent('other')], [set('other', 'h')])
    const first = await parked(w, [absent('lock')], [set('lock', 'w')], park())
    // Still waiting: the adapter goes on following the log.
    await parked(w, [absent('other')], [set('other', 'w')], park())
    await h.commit([life('lock', held.revision)], [del('lock')])
    const won = ok(await first.wait)
    await w.commit([life('lock', won.entries[0]!.created)], [del('lock')])
    await h2.commit([absent('lock')], [set('lock', 'h2')])
    await settle()
    expect(looksAtH2()).toBe(0)
  })

  test('two waits of one adapter at one key: the second is answered once the first has had its turn', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.registerOwner!('h')
    await w.registerOwner!('w1')
    await w.registerOwner!('w2')
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const first = await parked(w, [absent('lock')], [set('lock', 'w1')], park(10_000, 1))
    const second = await parked(w, [absent('lock')], [set('lock', 'w2')], park(10_000, 2))
    await h.commit([life('lock', held.revision)], [del('lock')])
    const won = ok(await first.wait)
    await w.commit([life('lock', won.entries[0]!.created)], [del('lock')])
    expect(await second.wait).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w2' }] })
  })

  test('a permit whose ways all check its place in line is answered when one of them goes through', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.registerOwner!('h')
    await w.registerOwner!('w')
    await h.commit([absent('s.1')], [set('s.1', 'h')])
    const s2 = ok(await h.commit([absent('s.2')], [set('s.2', 'h')]))
    const place = ok(await w.commit([absent('q.w')], [set('q.w', 'w')])).revision
    const slot = (n: number) => ({ checks: [absent(`s.${n}`), life('q.w', place)], ops: [set(`s.${n}`, 'w'), del('q.w')] })
    const { wait } = await parked(w, slot(1).checks, slot(1).ops, { ...park(), orElse: [slot(2)] })
    await h.commit([life('s.2', s2.revision)], [del('s.2')])
    expect(await wait).toMatchObject({ ok: true, entries: [{ key: 's.2', owner: 'w' }], deleted: ['q.w'] })
  })

  test('a waiter does not read its row when what stands in its way is only written again: an unowned gate, another way\'s slot, one of two keys', async () => {
    const rowReads = countRuns(ROW)
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.registerOwner!('h')
    await w.registerOwner!('w')
    await h.commit([], [put('gate'), set('s.1', 'h'), set('s.2', 'h'), set('k1', 'h'), set('k2', 'h')])
    await parked(w, [absent('gate')], [set('gate', 'w')], park())
    await parked(w, [absent('s.1')], [set('s.1', 'w')], { ...park(), orElse: [{ checks: [absent('s.2')], ops: [set('s.2', 'w')] }] })
    await parked(w, [absent('k1'), absent('k2')], [set('k1', 'w'), set('k2', 'w')], park())
    await settle()
    const before = rowReads()
    for (let i = 0; i < 3; i++) {
      await h.commit([], [put('gate')])
      await h.commit([], [set('s.2', 'h')])
      await h.commit([], [set('k1', 'h')])
    }
    await settle()
    expect(rowReads() - before).toBe(0)
  })

  test('a shared waiter whose wake owner is a registered client is answered when that owner takes the key', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.registerOwner!('h')
    // Registered and alive: the look at it finds nothing; only the put by the wake owner says to read the row.
    await h.registerOwner!('group')
    const held = ok(await h.commit([absent('g')], [set('g', 'h')]))
    const { wait } = await parked(w, [absent('g')], [set('g', 'w')], { ...park(), wakeOwner: 'group' })
    await h.commit([life('g', held.revision)], [set('g', 'group')])
    expect(await wait).toMatchObject({ ok: false, failed: [{ key: 'g', entry: { owner: 'group' } }] })
  })

  test('a waiter whose place is written anew (a new life) is answered with that failure at once', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.registerOwner!('h')
    await w.registerOwner!('w')
    await h.commit([absent('lock')], [set('lock', 'h')])
    const place = ok(await w.commit([absent('q.w')], [set('q.w', 'w')])).revision
    const { wait } = await parked(w, [absent('lock'), life('q.w', place)], [set('lock', 'w'), del('q.w')], park())
    await w.commit([], [{ type: 'set', key: 'q.w', value: null, owner: 'w', fresh: true }])
    expect(await wait).toMatchObject({ ok: false, failed: [{ key: 'lock' }, { key: 'q.w', entry: { owner: 'w' } }] })
  })

  test('a plain waitChange whose commit puts an owned key it does not check is answered when it goes through', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    const a = ok(await h.commit([], [put('a')]))
    const { wait } = await parked(w, [absent('a')], [put('c', 'w')], { waitChange: 10_000 })
    await h.commit([life('a', a.revision)], [del('a')])
    expect(await wait).toMatchObject({ ok: true, entries: [{ key: 'c', owner: 'w' }] })
  })

  test('a keepParked take whose grant is a put with no owner is answered at its grant', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    const held = ok(await h.commit([], [put('lock')]))
    const { wait } = await parked(w, [absent('lock')], [{ type: 'set', key: 'lock', value: 'w' }], park())
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await wait).toMatchObject({ ok: true, entries: [{ key: 'lock', value: 'w' }] })
  })

  test('a take whose add carries a stray owner (not an owned put: the store ignores it) is read at every change, and answered', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    const gate = ok(await h.commit([], [put('gate')]))
    // As a JavaScript caller may send it (the contract's add has no owner): it writes no put by 'w' at any key.
    const add = { type: 'add', key: 'n', delta: 1, owner: 'w' } as Op
    const { wait } = await parked(w, [absent('gate')], [add], park())
    await h.commit([life('gate', gate.revision)], [del('gate')])
    expect(await wait).toMatchObject({ ok: true, entries: [{ key: 'n', value: 1 }] })
  })

  test('a take whose ways put one key for different owners is answered whichever way goes through', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    // Registered: a look at an unknown owner would find it gone and read the row anyway.
    await w.registerOwner!('w-a')
    await w.registerOwner!('w-b')
    const held = ok(await h.commit([], [put('lock')]))
    const { wait } = await parked(w, [absent('lock')], [set('lock', 'w-a')], { ...park(), orElse: [{ checks: [absent('lock')], ops: [set('lock', 'w-b')] }] })
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await wait).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'w-a' }] })
  })
})
