/**
 * The `file://` store's timers and the reboot rule, on the store clock in
 * the test's hand (ManualClock): one expiry timer, and only while watches
 * are open; a timer that meets a locked file tries again; a reboot told by
 * the boot id, or by the clock where the id is unknown. And what is never
 * written: a read, or a close with nothing registered, changes the file
 * for no other connection.
 */
import { describe, expect, test } from 'vitest'
import { Client } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { thisProcess } from '../../src/adapters/file/machine'
import { collect, newFile, open, raw, REVISION, until } from './helpers'

const set = (key: string, ttl?: number) => ({ type: 'set' as const, key, value: 1, ...(ttl === undefined ? {} : { ttl }) })

describe('the expiry timer', () => {
  test('runs only while a watch is open: one, for the earliest deadline', async () => {
    const clock = new ManualClock(0)
    const a = await open({ clock })
    await a.commit([], [set('plain'), set('later', 500)])
    expect(clock.pending).toBe(0)
    const stop = await a.watch('', collect().sink)
    expect(clock.pending).toBe(1)
    await a.commit([], [set('even-later', 900)])
    await a.commit([], [set('sooner', 100)])
    expect(clock.pending).toBe(1)
    await clock.advance(101)
    await until(async () => (await a.get('sooner')) === undefined)
    expect(clock.pending).toBe(1) // the next deadline's
    stop()
    expect(clock.pending).toBe(0)
    await a.commit([], [set('no-watch-no-timer', 50)])
    expect(clock.pending).toBe(0)
    const none = await open({ clock })
    await none.watch('', collect().sink)
    expect(clock.pending).toBe(0)
  })

  test('a timer that fires before the deadline by the store clock (as Node\'s can: it counts from its loop\'s cached time) is set again, and the entry expires', async () => {
    const manual = new ManualClock(0)
    // Timers of 10 ms or more fire 5 ms early by the clock the store reads.
    const early = { now: () => manual.now(), setTimeout: (fn: () => void, ms: number) => manual.setTimeout(fn, ms >= 10 ? ms - 5 : ms), clearTimeout: (h: unknown) => manual.clearTimeout(h as never) }
    const a = await open({ clock: early })
    const w = collect()
    await a.watch('', w.sink)
    await a.commit([], [set('k', 100)])
    await manual.advance(96) // the timer fires: nothing is due yet
    await new Promise((r) => setTimeout(r, 20))
    expect(w.events.map((e) => e.type)).toEqual(['put'])
    expect(manual.pending).toBe(1) // set again, for the same deadline
    await manual.advance(10)
    await until(() => w.events.length === 2)
    expect(w.events[1]).toMatchObject({ type: 'expire', key: 'k' })
  })

  test('fires at the deadline and not before; a locked file makes it try again a little later', async () => {
    const clock = new ManualClock(0)
    const path = newFile()
    const a = await open({ path, clock })
    const w = collect()
    await a.watch('', w.sink)
    await a.commit([], [set('k', 100)])
    await clock.advance(100)
    await new Promise((r) => setTimeout(r, 20))
    expect(w.events.map((e) => e.type)).toEqual(['put'])
    const other = raw(path)
    other.pragma('busy_timeout = 0')
    other.exec('BEGIN IMMEDIATE')
    await clock.advance(1) // the timer fires and finds the file locked
    await new Promise((r) => setTimeout(r, 20))
    expect(w.events.map((e) => e.type)).toEqual(['put'])
    other.exec('COMMIT')
    await clock.advance(50)
    await until(() => w.events.length === 2)
    expect(w.events[1]).toMatchObject({ type: 'expire', key: 'k' })
  })

  test('deadlines one after the other each fire on time', async () => {
    const clock = new ManualClock(0)
    const a = await open({ clock })
    const w = collect()
    await a.watch('', w.sink)
    await a.commit([], [set('first', 100), set('second', 120)])
    await clock.advance(101)
    await until(() => w.events.length === 3)
    await clock.advance(20)
    await until(() => w.events.length === 4)
    expect(w.events.slice(2).map((e) => `${e.type} ${e.key}`)).toEqual(['expire first', 'expire second'])
  })

  test('a watch that ends on the expiry it is told of leaves no timer behind', async () => {
    const clock = new ManualClock(0)
    const a = await open({ clock })
    await a.commit([], [set('k', 100), set('later', 500)])
    let stop = () => {}
    stop = await a.watch('', { event: (ev) => ev.type === 'expire' && stop(), error: () => {} })
    await clock.advance(101)
    await until(async () => (await a.get('k')) === undefined)
    await new Promise((r) => setTimeout(r, 20))
    expect(clock.pending).toBe(0)
  })
})

describe('a reboot', () => {
  async function rebooted(options: { from: string; boot: string; clockAt: number }) {
    const path = newFile()
    const before = await open({ path, clock: new ManualClock(50_000), boot: options.from })
    await before.commit([], [set('ttl', 1_000)])
    const oldHost = options.from === '' ? 'host:old' : `${options.from}/ns`
    const old = new Client(await open({ path, clock: new ManualClock(50_000), boot: options.from, self: { pid: 4_000_001, start: 'a', host: oldHost }, alive: () => true }), { id: 'old' })
    await old.locks.acquire('lock:old', { ttl: 60_000 })
    const current = new Client(await open({ path, clock: new ManualClock(50_000), boot: options.from, self: { pid: 4_000_002, start: 'b', host: `${options.boot}/ns` }, alive: () => true }), { id: 'current' })
    await current.locks.acquire('lock:current', { ttl: 60_000 })
    raw(path).prepare('UPDATE zaris_file_spaces SET reserved = 700').run()
    const after = await open({ path, clock: new ManualClock(options.clockAt), boot: options.boot, alive: () => true })
    return { after, ttl: (await after.get('ttl'))?.ttl, revision: (await after.commit([], [set('x')])).ok ? raw(path).prepare(`SELECT ${REVISION} AS revision FROM zaris_file_spaces`).get() : undefined, old: await after.get('lock:old'), current: await after.get('lock:current') }
  }

  test('told by another boot id: revisions jump past the reservation, TTLs start again, the old boot\'s holders are gone, the new boot\'s stay', async () => {
    const r = await rebooted({ from: 'boot-1', boot: 'boot-2', clockAt: 90_000 })
    expect(r.ttl).toBe(1_000)
    expect(r.revision).toEqual({ revision: 702 })
    expect(r.old).toBeUndefined()
    expect(r.current?.owner).toBe('current')
  })

  test('the same boot id with the clock behind is no reboot (the id is the word)', async () => {
    const r = await rebooted({ from: 'boot-1', boot: 'boot-1', clockAt: 10 })
    expect(r.revision).toEqual({ revision: 4 })
    expect(r.old?.owner).toBe('old')
  })

  test('with no boot id, the clock found behind the file\'s last reading tells it: TTLs and revisions as above, holders judged by pid as ever', async () => {
    const behind = await rebooted({ from: '', boot: '', clockAt: 10 })
    expect(behind.ttl).toBe(1_000)
    expect(behind.revision).toEqual({ revision: 701 })
    expect(behind.old?.owner).toBe('old')
    const ahead = await rebooted({ from: '', boot: '', clockAt: 49_500 })
    expect(ahead.revision).toEqual({ revision: 4 })
    expect(ahead.ttl).toBe(1_500) // written at 50 000 with 1 000 to live, read at 49 500
  })
})

describe('what is not written', () => {
  test('reads, history, watches and a close with nothing registered change nothing another connection could see', async () => {
    const path = newFile()
    const a = await open({ path })
    await a.commit([], [set('k', 60_000)])
    const other = raw(path)
    const version = () => other.pragma('data_version', { simple: true })
    const before = version()
    await a.get('k')
    await a.list('')
    await a.history!('', 0, { maxEvents: 10, maxBytes: 1 << 20 })
    const stop = await a.watch('', collect().sink, 0)
    stop()
    await a.close()
    expect(version()).toBe(before)
  })

  test('a waiter\'s look removes the registration of a dead process, while the client lives on in another', async () => {
    const path = newFile()
    const dead = new Set<number>()
    const alive = (p: { pid: number }) => !dead.has(p.pid)
    const host = thisProcess().host
    const first = await open({ path, alive, self: { pid: 4_100_001, start: 'x', host } })
    const second = await open({ path, alive, self: { pid: 4_100_002, start: 'x', host } })
    await first.registerOwner!('shared')
    await second.registerOwner!('shared')
    const observer = await open({ path, alive })
    const waiting = observer.ownerGone!('shared', AbortSignal.timeout(500)).then(() => 'gone', () => 'alive')
    dead.add(4_100_001)
    const rows = () => raw(path).prepare(`SELECT pid FROM zaris_file_owners WHERE owner = 'shared'`).all()
    await until(() => rows().length === 1)
    expect(rows()).toEqual([{ pid: 4_100_002 }])
    expect(await waiting).toBe('alive')
  })

  test('waiting for a live owner writes nothing', async () => {
    const path = newFile()
    const holder = await open({ path })
    await holder.registerOwner!('live')
    const observer = await open({ path })
    const other = raw(path)
    const version = () => other.pragma('data_version', { simple: true })
    const before = version()
    await observer.ownerGone!('live', AbortSignal.timeout(100)).catch(() => {})
    expect(version()).toBe(before)
  })
})
