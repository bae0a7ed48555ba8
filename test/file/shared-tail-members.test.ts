/**
 * The members of one process's shared tail on a `file://` store
 * (src/adapters/file/shared-tail.ts): which adapters share one, what an
 * adapter's close hands on or leaves behind, and the process's one look at
 * each holder in its waits' way. Looks are counted at the liveness the
 * store is given (`alive`) and at better-sqlite3's statements; a clock that
 * never moves keeps the store's own sweep (which looks only when 20 ms of
 * the store's clock went by) out of those counts.
 */
import { describe, expect, test } from 'vitest'
import type { Adapter, CommitResult } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { thisProcess, type ProcessId } from '../../src/adapters/file/machine'
import { collect, newFile, open, raw, until } from './helpers'
import { absent, countRuns, set } from './park-kit'

const park = { waitChange: 10_000, keepParked: true }
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Liveness that counts the looks at each process (all alive, unless `failing` names it: then the look throws). */
function counted() {
  const looks = new Map<number, number>()
  const failing = new Set<number>()
  const alive = (p: ProcessId) => {
    looks.set(p.pid, (looks.get(p.pid) ?? 0) + 1)
    if (failing.has(p.pid)) throw new Error('the system could not be asked')
    return true
  }
  return { alive, failing, at: (pid: number) => looks.get(pid) ?? 0 }
}

/** An adapter standing for another process `pid` that registers `owner` and holds `key` for it. */
async function holder(path: string, pid: number, owner: string, more: Parameters<typeof open>[0], key = 'lock'): Promise<Adapter> {
  const h = await open({ path, self: { ...thisProcess(), pid, start: 'x' }, ...more })
  await h.registerOwner!(owner)
  await h.commit([absent(key)], [set(key, owner)])
  return h
}

/** A take of `key` by `w`, parked behind its holder; `onParked` runs where the store calls it. */
async function parked(w: Adapter, key = 'lock', more: { signal?: AbortSignal; onParked?: () => void } = {}): Promise<{ take: Promise<CommitResult> }> {
  let done = false
  const take = w.commit([absent(key)], [set(key, 'w')], { ...park, ...more, onParked: () => ((done = true), more.onParked?.()) })
  // Answered at the close after the test, if not before.
  void take.catch(() => {})
  await until(() => done)
  return { take }
}

// A test that passes only when a wait reaches its 10 s deadline fails on this timeout instead.
describe("a process's adapters on one file share a tail", { timeout: 4_000 }, () => {
  test("an adapter closed while its waiting commit's first try waits out a busy file leaves nothing reading through it", async () => {
    const path = newFile()
    const a = await open({ path, pollMs: 10 })
    // Registered: its close then writes, so the close too waits for the file.
    await a.registerOwner!('a')
    const lock = raw(path)
    lock.exec('BEGIN IMMEDIATE')
    const thrown: unknown[] = []
    const onThrown = (e: unknown) => void thrown.push(e)
    process.on('uncaughtException', onThrown)
    try {
      const take = a.commit([absent('lock')], [set('lock', 'a')], park)
      const closed = a.close()
      // Long enough for tens of polls of a tail left running (every 10 ms), each of which would throw.
      await sleep(300)
      lock.exec('COMMIT')
      await closed
      // The commit goes through or finds the adapter closed: either way it is answered.
      expect(await take.then(() => 'answered', () => 'answered')).toBe('answered')
      await sleep(50)
    } finally {
      process.off('uncaughtException', onThrown)
    }
    expect(thrown).toEqual([])
  })

  test('the leader closing while no watch is open starts no timers in the next adapter: a TTL ends unwritten until someone watches', async () => {
    const path = newFile()
    const [lead, next] = [await open({ path }), await open({ path })]
    await next.commit([], [set('short', 'x', 30)])
    await lead.close()
    const expiries = () => (raw(path).prepare(`SELECT count(*) AS n FROM zaris_file_events WHERE type = 'expire'`).get() as { n: number }).n
    // Ten times the TTL: an expiry timer started by the close would have written it.
    await sleep(300)
    expect(expiries()).toBe(0)
    const heard = collect()
    await next.watch('', heard.sink)
    await until(() => expiries() === 1, 2_000)
  })

  test('adapters on one file with two clocks share no tail, whichever opened first: one on a clock that never moves times no other', async () => {
    const path = newFile()
    const still = await open({ path, clock: new ManualClock(0) })
    await still.watch('', collect().sink)
    const later = await open({ path })
    const heard = collect()
    await later.watch('', heard.sink)
    await later.commit([], [set('short', 'x', 50)])
    await until(() => heard.events.some((e) => e.type === 'expire' && e.key === 'short'), 2_000)
  })

  test("adapters on two files whose names run into their namespaces ('store.db' + 'ab', 'store.dba' + 'b') share no tail", async () => {
    const path = newFile()
    const [a, b] = [await open({ path, namespace: 'ab' }), await open({ path: `${path}a`, namespace: 'b' })]
    const [wa, wb] = [collect(), collect()]
    await a.watch('', wa.sink)
    await b.watch('', wb.sink)
    await b.commit([], [{ type: 'set', key: 'in-b', value: 1 }])
    await a.commit([], [{ type: 'set', key: 'in-a', value: 1 }])
    await until(() => wa.events.length > 0 && wb.events.length > 0, 2_000)
    await sleep(50)
    expect([wa.events.map((e) => e.key), wb.events.map((e) => e.key)]).toEqual([['in-a'], ['in-b']])
  })

  test('a leader that closes runs no timers after: only the adapter that leads now looks for gone owners', async () => {
    const owners = countRuns('SELECT owner, nonce, pid, start, host FROM zaris_file_owners WHERE ns = ?', { exact: true })
    const clock = new ManualClock(1_000)
    const path = newFile()
    const [lead, next] = [await open({ path, clock }), await open({ path, clock })]
    await lead.watch('', collect().sink)
    await next.watch('', collect().sink)
    await lead.close()
    const before = owners()
    // The clock moves: each sweep still running looks once (the one of a closed adapter fails, and is due again at each tick).
    await clock.advance(1_000)
    await until(() => owners() > before, 2_000)
    await sleep(250)
    expect(owners() - before).toBe(1)
  })

  test("an adapter that does not lead closing leaves the leader's timers as they are; the leader's close hands them on", async () => {
    const deadlines = countRuns('SELECT min(expires) AS at FROM zaris_file_entries WHERE ns = ? AND expires IS NOT NULL', { exact: true })
    const clock = new ManualClock(1_000)
    const path = newFile()
    const [lead, other, next] = [await open({ path, clock }), await open({ path, clock }), await open({ path, clock })]
    for (const a of [lead, other, next]) await a.watch('', collect().sink)
    // Timers started again read the next deadline again (the clock stands still: nothing else reads it).
    const before = deadlines()
    await other.close()
    expect(deadlines() - before).toBe(0)
    await lead.close()
    expect(deadlines() - before).toBe(1)
  })
})

describe("a process's one look at each holder in its waits' way", { timeout: 4_000 }, () => {
  test("a holder is looked at every few ms for as long as a wait is behind it: another wait giving up, another adapter's close stop nothing", async () => {
    const clock = new ManualClock(1_000)
    const { alive, at } = counted()
    const path = newFile()
    await holder(path, 70_101, 'h', { clock, alive })
    const [w, other] = [await open({ path, clock, alive }), await open({ path, clock, alive })]
    await parked(w)
    const stop = new AbortController()
    const { take: second } = await parked(w, 'lock', { signal: stop.signal })
    stop.abort()
    expect(await second).toMatchObject({ ok: false })
    let before = at(70_101)
    // ~20 looks every 10 ms; the loosest bound a loaded machine needs, and none is 0.
    await sleep(200)
    expect(at(70_101) - before).toBeGreaterThan(3)
    await other.close()
    before = at(70_101)
    await sleep(200)
    expect(at(70_101) - before).toBeGreaterThan(3)
  })

  test("a wait that ends after its holder's id was found gone stops no look at that id taken by a new client", async () => {
    const clock = new ManualClock(1_000)
    const { alive, at } = counted()
    const path = newFile()
    const h = await open({ path, clock, alive, self: { ...thisProcess(), pid: 70_102, start: 'x' } })
    // Held by an id nobody registered: gone to the first look.
    await h.commit([absent('lock')], [set('lock', 'o')])
    const w = await open({ path, clock, alive })
    const stop = new AbortController()
    const { take: first } = await parked(w, 'lock', { signal: stop.signal })
    await h.registerOwner!('o')
    await parked(w)
    stop.abort()
    expect(await first).toMatchObject({ ok: false })
    const before = at(70_102)
    await sleep(200)
    expect(at(70_102) - before).toBeGreaterThan(3)
  })

  test('a holder newly in a wait\'s way is looked at once at once, and no other holder with it', async () => {
    const { alive, at } = counted()
    const path = newFile()
    await holder(path, 70_103, 'h1', { alive }, 'a')
    await holder(path, 70_104, 'h2', { alive }, 'b')
    const w = await open({ path, alive })
    await parked(w, 'a')
    // Read where the store tells of the park, and after the reactions queued by then (no timer runs between).
    let seen: number[] = []
    await parked(w, 'b', {
      onParked: () => {
        const before = [at(70_103), at(70_104)]
        queueMicrotask(() => (seen = [at(70_103) - before[0]!, at(70_104) - before[1]!]))
      },
    })
    expect(seen).toEqual([0, 1])
  })

  test('a look that fails (the system could not be asked) is made again at the next poll', async () => {
    const clock = new ManualClock(1_000)
    const { alive, at, failing } = counted()
    const path = newFile()
    await holder(path, 70_105, 'h', { clock, alive })
    const w = await open({ path, clock, alive })
    await parked(w)
    // Failing only once parked: the park's own write asks too.
    failing.add(70_105)
    try {
      const before = at(70_105)
      await until(() => at(70_105) > before)
      const failed = at(70_105)
      await sleep(200)
      expect(at(70_105) - failed).toBeGreaterThan(3)
    } finally {
      failing.clear()
    }
  })

  test('a holder found gone with nothing to end (an id nobody registered) is looked at once, not again', async () => {
    const looks = countRuns('SELECT count(*) AS n FROM zaris_file_owners WHERE ns = ? AND owner = ?', { exact: true })
    const path = newFile()
    const [h, w] = [await open({ path }), await open({ path })]
    await h.commit([absent('lock')], [set('lock', 'ghost')])
    await parked(w)
    // Twenty polls' time.
    await sleep(200)
    expect(looks()).toBe(1)
  })
})
