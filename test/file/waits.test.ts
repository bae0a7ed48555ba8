/**
 * What a process pays while its commits wait in a `file://` store's line
 * (src/adapters/file/waits.ts, shared-tail.ts): a waiter behind others reads
 * its row only on a change that may answer it, the adapters of a process
 * share one reader of the log and one look at a holder's process, and
 * whichever adapter leads hands its timers on when it closes. Counted at
 * better-sqlite3's statements and at the liveness the store is given.
 */
import { describe, expect, test } from 'vitest'
import type { Adapter, CommitResult } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { thisProcess, type ProcessId } from '../../src/adapters/file/machine'
import { collect, newFile, open, until } from './helpers'
import { absent, countRuns, del, life, ok, set } from './park-kit'

/** `name`'s place in line, then its take of `lock` parked behind it. */
async function waitInLine(w: Adapter, name: string): Promise<{ take: Promise<CommitResult> }> {
  // Registered, as a client is (an id nobody registered counts as gone to a waiter's look).
  await w.registerOwner!(name)
  const place = ok(await w.commit([absent(`q.${name}`)], [set(`q.${name}`, name)])).revision
  let parked = false
  const take = w.commit([absent('lock'), life(`q.${name}`, place)], [set('lock', name), del(`q.${name}`)], { waitChange: 10_000, keepParked: true, parkOrder: place, onParked: () => (parked = true) })
  await until(() => parked)
  return { take }
}

describe('a process whose commits wait in line', { timeout: 4_000 }, () => {
  test('a waiter reads its row on the changes that may answer it, not at every grant to those ahead', async () => {
    const rowReads = countRuns('FROM zaris_file_parked WHERE id = ?')
    const path = newFile()
    const h = await open({ path })
    await h.registerOwner!('h')
    const ws = [] as Adapter[]
    for (let i = 0; i < 6; i++) ws.push(await open({ path }))
    let lock = ok(await h.commit([absent('lock')], [set('lock', 'h')])).revision
    const takes = [] as Array<Promise<CommitResult>>
    for (const [i, w] of ws.entries()) takes.push((await waitInLine(w, `w${i}`)).take)
    const before = rowReads()
    // Each holder in turn lets go: the lock goes down the line, six grants.
    await h.commit([life('lock', lock)], [del('lock')])
    for (const [i, take] of takes.entries()) {
      const won = ok(await take)
      lock = won.entries[0]!.created
      expect(won.entries[0]!.owner).toBe(`w${i}`)
      await ws[i]!.commit([life('lock', lock)], [del('lock')])
    }
    // One read each, for its own grant (a read at every grant ahead would be 21).
    expect(rowReads() - before).toBeLessThanOrEqual(6 + 3)
  })

  test('a waiter whose take does not show as a put of its own reads its row at every change of its keys (and is answered)', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    const gate = ok(await h.commit([absent('gate')], [set('gate', 'h')]))
    let parked = false
    const add = w.commit([absent('gate')], [{ type: 'add', key: 'n', delta: 1 }], { waitChange: 10_000, keepParked: true, onParked: () => (parked = true) })
    await until(() => parked)
    const t0 = performance.now()
    await h.commit([life('gate', gate.revision)], [del('gate')])
    expect(await add).toMatchObject({ ok: true, entries: [{ key: 'n', value: 1 }] })
    expect(performance.now() - t0).toBeLessThan(1_000)
  })

  test('the adapters of one process read the log once per commit between them, not once each', async () => {
    const reads = countRuns('FROM zaris_file_events WHERE ns = @ns AND (revision, seq) > (@revision, @seq)')
    const path = newFile()
    const [a, b, c] = [await open({ path }), await open({ path }), await open({ path })]
    const [wa, wb] = [collect(), collect()]
    await a.watch('', wa.sink)
    await b.watch('', wb.sink)
    const before = reads()
    for (let i = 0; i < 10; i++) await c.commit([], [{ type: 'set', key: `k${i}`, value: i }])
    await until(() => wa.events.length === 10 && wb.events.length === 10)
    expect(reads() - before).toBeLessThanOrEqual(12)
  })

  test("one look at a holder's process for the whole process, every 10 ms, however many of its adapters wait behind it", async () => {
    const path = newFile()
    const looks = new Map<number, number>()
    const alive = (p: ProcessId) => (looks.set(p.pid, (looks.get(p.pid) ?? 0) + 1), true)
    const h = await open({ path, alive, self: { ...thisProcess(), pid: 70_010, start: 'x' } })
    await h.registerOwner!('h')
    await h.commit([absent('lock')], [set('lock', 'h')])
    const ws = [await open({ path, alive }), await open({ path, alive }), await open({ path, alive })]
    const takes = [] as Array<Promise<CommitResult>>
    for (const [i, w] of ws.entries()) takes.push((await waitInLine(w, `w${i}`)).take)
    const before = looks.get(70_010) ?? 0
    await new Promise((r) => setTimeout(r, 300))
    const n = (looks.get(70_010) ?? 0) - before
    // ~30 looks (every 10 ms); the store's own sweep alone would be ~6, three adapters looking each ~90.
    expect(n).toBeGreaterThan(12)
    expect(n).toBeLessThan(60)
    for (const t of takes) void t.catch(() => {})
  })

  test('a holder that dies while three adapters of a process wait behind it: the first in line holds within tens of ms', async () => {
    const path = newFile()
    const dead = new Set<number>()
    const alive = (p: ProcessId) => !dead.has(p.pid)
    const h = await open({ path, alive, self: { ...thisProcess(), pid: 70_011, start: 'x' } })
    await h.registerOwner!('h')
    await h.commit([absent('lock')], [set('lock', 'h')])
    const ws = [await open({ path, alive }), await open({ path, alive }), await open({ path, alive })]
    const takes = [] as Array<Promise<CommitResult>>
    for (const [i, w] of ws.entries()) takes.push((await waitInLine(w, `w${i}`)).take)
    const t0 = performance.now()
    dead.add(70_011)
    expect(await takes[0]).toMatchObject({ ok: true, entries: [{ owner: 'w0' }] })
    expect(performance.now() - t0).toBeLessThan(500)
  })

  test('the adapter that leads closes: another adapter of the process runs the timers, and its watch hears a TTL end with nobody writing', async () => {
    const path = newFile()
    const [lead, other] = [await open({ path }), await open({ path })]
    const [wl, wo] = [collect(), collect()]
    await lead.watch('', wl.sink)
    await other.watch('', wo.sink)
    // The deadline is written (the leader's timer set for it), then the leader goes: nothing is written after.
    await other.commit([], [set('short', 'x', 150)])
    await until(() => wo.events.length === 1)
    await lead.close()
    await until(() => wo.events.some((e) => e.type === 'expire' && e.key === 'short'), 2_000)
    expect(wl.events.map((e) => e.type)).not.toContain('expire')
    expect(wo.errors).toEqual([])
  })

  test('a take with no place of its own (no delete in its grant) is answered at its grant, by the put of its own owner', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.registerOwner!('h')
    await w.registerOwner!('w')
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    let parked = false
    const take = w.commit([absent('lock')], [set('lock', 'w')], { waitChange: 10_000, keepParked: true, onParked: () => (parked = true) })
    await until(() => parked)
    const t0 = performance.now()
    await h.commit([life('lock', held.revision)], [del('lock')])
    expect(await take).toMatchObject({ ok: true, entries: [{ owner: 'w' }] })
    expect(performance.now() - t0).toBeLessThan(1_000)
  })

  test('a waiter whose place another adapter deleted is answered with that failure at once', async () => {
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.registerOwner!('h')
    await h.commit([absent('lock')], [set('lock', 'h')])
    const { take } = await waitInLine(w, 'w')
    const place = (await h.get('q.w'))!
    const t0 = performance.now()
    await h.commit([life('q.w', place.created)], [del('q.w')])
    expect(await take).toMatchObject({ ok: false, failed: [{ key: 'lock' }, { key: 'q.w' }] })
    expect(performance.now() - t0).toBeLessThan(1_000)
  })

  test('once nobody waits, nobody looks at the holder any more', async () => {
    const path = newFile()
    const looks = new Map<number, number>()
    const alive = (p: ProcessId) => (looks.set(p.pid, (looks.get(p.pid) ?? 0) + 1), true)
    const h = await open({ path, alive, self: { ...thisProcess(), pid: 70_012, start: 'x' } })
    await h.registerOwner!('h')
    const held = ok(await h.commit([absent('lock')], [set('lock', 'h')]))
    const w = await open({ path, alive })
    const { take } = await waitInLine(w, 'w')
    await new Promise((r) => setTimeout(r, 50))
    expect(looks.get(70_012) ?? 0).toBeGreaterThan(0)
    await h.commit([life('lock', held.revision)], [del('lock')])
    await take
    const after = looks.get(70_012) ?? 0
    await new Promise((r) => setTimeout(r, 100))
    expect(looks.get(70_012) ?? 0).toBe(after)
  })

  test('adapters of one process on two files, or on one file with two clocks, share no tail: each hears its own file, on its own clock', async () => {
    const [p1, p2] = [newFile(), newFile()]
    const [a, b] = [await open({ path: p1 }), await open({ path: p2 })]
    const [wa, wb] = [collect(), collect()]
    await a.watch('', wa.sink)
    await b.watch('', wb.sink)
    await a.commit([], [{ type: 'set', key: 'in-1', value: 1 }])
    await b.commit([], [{ type: 'set', key: 'in-2', value: 1 }])
    await until(() => wa.events.length === 1 && wb.events.length === 1)
    expect([wa.events[0]!.key, wb.events[0]!.key]).toEqual(['in-1', 'in-2'])
    // A leader on a clock that never moves would keep the other's TTLs from ending.
    const still = await open({ path: p1, clock: new ManualClock(0) })
    const ws = collect()
    await still.watch('', ws.sink)
    const [later, wl] = [await open({ path: p1 }), collect()]
    await later.watch('', wl.sink)
    await later.commit([], [set('short', 'x', 50)])
    await until(() => wl.events.some((e) => e.type === 'expire' && e.key === 'short'), 2_000)
  })

  test("closing one adapter ends its watches only: the process's other adapters go on hearing every commit", async () => {
    const path = newFile()
    const [a, b, writer] = [await open({ path }), await open({ path }), await open({ path })]
    const [wa, wb] = [collect(), collect()]
    await a.watch('', wa.sink)
    await b.watch('', wb.sink)
    await b.close()
    await writer.commit([], [{ type: 'set', key: 'k', value: 1 }])
    await until(() => wa.events.length === 1)
    await new Promise((r) => setTimeout(r, 50))
    expect(wb.events).toEqual([])
    expect(wa.errors).toEqual([])
  })
})
