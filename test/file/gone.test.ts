/**
 * Gone owners, in one process: adapters that stand for other processes
 * (`self`), judged by a liveness the test controls (`alive`), so that a
 * "process" can die at a chosen moment. Real processes killed with kill -9
 * are in test/faults/file.test.ts; here, each way a gone owner's entries end
 * for every reader, and each way they must not.
 */
import { describe, expect, test } from 'vitest'
import { Client, type Adapter } from 'zaris'
import { thisProcess, type ProcessId } from '../../src/adapters/file/machine'
import { collect, newFile, open, raw, until } from './helpers'

/** A world of "processes" (pids) the test kills at will; the real process is always alive. */
function world() {
  const dead = new Set<number>()
  const here = thisProcess()
  const alive = (p: ProcessId) => !dead.has(p.pid)
  let next = 70_000
  return {
    dead,
    /** An adapter standing for a new process of this machine. */
    process: (path: string, more: Record<string, unknown> = {}): Promise<Adapter> => open({ path, alive, self: { ...here, pid: ++next, start: 'x' }, ...more }),
    /** An adapter of the real process, judging the others by the same liveness. */
    observer: (path: string): Promise<Adapter> => open({ path, alive }),
    pidOf: () => next,
  }
}

describe('a gone owner', () => {
  test('its lock, lease and place in line end as expiries for a watcher, each with a revision of its own', async () => {
    const path = newFile()
    const w = world()
    const holder = new Client(await w.process(path), { id: 'holder' })
    const pid = w.pidOf()
    const other = new Client(await w.process(path), { id: 'other' })
    const observer = await w.observer(path)
    expect(await holder.locks.acquire('lock:a', { ttl: 60_000 })).not.toBeNull()
    expect(await holder.leases.grant('lease:h', { ttl: 60_000, value: 1 })).not.toBeNull()
    const blocker = (await other.locks.acquire('lock:b', { ttl: 60_000 }))!
    void holder.locks.acquire('lock:b', { ttl: 60_000, wait: 60_000 }).catch(() => {})
    await until(async () => (await observer.list('\u0001q')).entries.length === 1)
    const events = collect()
    await observer.watch('', events.sink)
    const killedAt = performance.now()
    w.dead.add(pid)
    await until(() => events.events.filter((e) => e.type === 'expire').length === 3)
    expect(performance.now() - killedAt).toBeLessThan(1_000) // a sweep every 50 ms
    const ends = events.events.filter((e) => e.type === 'expire')
    expect(ends.map((e) => e.key).sort()).toEqual(['lease:h', 'lock:a', expect.stringMatching(/^\u0001q/)].sort())
    expect(new Set(ends.map((e) => e.revision)).size).toBe(3)
    expect(raw(path).prepare('SELECT owner FROM zaris_file_owners ORDER BY owner').all()).toEqual([{ owner: 'other' }])
    await blocker.release()
  })

  test('a plain read sees it gone at once, with nobody watching: the read ends it first', async () => {
    const path = newFile()
    const w = world()
    const holder = new Client(await w.process(path), { id: 'holder' })
    await holder.locks.acquire('lock:a', { ttl: 60_000 })
    const reader = await w.observer(path)
    expect((await reader.get('lock:a'))?.owner).toBe('holder')
    w.dead.add(w.pidOf())
    await new Promise((r) => setTimeout(r, 25)) // the reader's last verdict grows stale
    expect(await reader.get('lock:a')).toBeUndefined()
    expect(raw(path).prepare(`SELECT type FROM zaris_file_events WHERE key = 'lock:a' ORDER BY revision`).all()).toEqual([{ type: 'put' }, { type: 'expire' }])
  })

  test('a plain acquire takes it over at once; a waiter is told by ownerGone', async () => {
    const path = newFile()
    const w = world()
    const holder = new Client(await w.process(path), { id: 'holder' })
    const held = (await holder.locks.acquire('lock:a', { ttl: 60_000 }))!
    const taker = new Client(await w.observer(path), { id: 'taker' })
    expect(await taker.locks.acquire('lock:a', { ttl: 60_000 })).toBeNull()
    const waiting = taker.locks.acquire('lock:a', { ttl: 60_000, wait: 30_000 })
    await new Promise((r) => setTimeout(r, 50))
    w.dead.add(w.pidOf())
    const lock = await waiting
    expect(lock!.token).toBeGreaterThan(held.token)
  })

  test('a client id with a live registration left is not gone: one process of two died', async () => {
    const path = newFile()
    const w = world()
    const first = new Client(await w.process(path), { id: 'shared-id' })
    const firstPid = w.pidOf()
    const second = await w.process(path)
    await second.registerOwner!('shared-id')
    await first.locks.acquire('lock:a', { ttl: 60_000 })
    const observer = await w.observer(path)
    const gone = observer.ownerGone!('shared-id', AbortSignal.timeout(5_000)).then(() => 'gone', () => 'still there')
    w.dead.add(firstPid)
    await new Promise((r) => setTimeout(r, 100))
    expect((await observer.get('lock:a'))?.owner).toBe('shared-id')
    // Its last registration gone with its adapter: now it is.
    await second.close()
    expect(await gone).toBe('gone')
    await until(async () => (await observer.get('lock:a')) === undefined)
  })

  test('ownerGone: at once for an id nobody registered; never for a live owner; rejects on abort', async () => {
    const path = newFile()
    const w = world()
    const observer = await w.observer(path)
    await expect(observer.ownerGone!('nobody', new AbortController().signal)).resolves.toBeUndefined()
    const live = new Client(await w.process(path), { id: 'live' })
    await live.locks.acquire('lock:a', { ttl: 60_000 })
    const stop = new AbortController()
    const waiting = observer.ownerGone!('live', stop.signal)
    await new Promise((r) => setTimeout(r, 100))
    stop.abort(new Error('enough'))
    await expect(waiting).rejects.toThrow('enough')
    await observer.close()
    await expect(observer.ownerGone!('live', new AbortController().signal)).rejects.toMatchObject({ code: 'CLOSED' })
  })

  test('a client id registered again after its process died: the old entries end first', async () => {
    const path = newFile()
    const w = world()
    const before = new Client(await w.process(path), { id: 'worker' })
    const old = (await before.locks.acquire('lock:a', { ttl: 60_000 }))!
    w.dead.add(w.pidOf())
    const after = new Client(await w.process(path), { id: 'worker' })
    const lock = await after.locks.acquire('lock:a', { ttl: 60_000 })
    expect(lock!.token).toBeGreaterThan(old.token)
    const events = raw(path).prepare(`SELECT type FROM zaris_file_events WHERE key = 'lock:a' ORDER BY revision`).all()
    expect(events).toEqual([{ type: 'put' }, { type: 'expire' }, { type: 'put' }])
  })

  test('an entry whose owner never registered lasts its TTL for readers', async () => {
    const path = newFile()
    const w = world()
    const a = await w.observer(path)
    await a.commit([], [{ type: 'set', key: 'lock:raw', value: null, owner: 'unregistered', ttl: 60_000 }])
    const events = collect()
    await a.watch('', events.sink)
    await new Promise((r) => setTimeout(r, 150)) // three sweeps
    expect((await a.get('lock:raw'))?.owner).toBe('unregistered')
    expect(events.events).toEqual([])
  })

  test('closing an adapter ends its clients\' holds; another adapter of the same process keeps its own', async () => {
    const path = newFile()
    const [a, b] = [await open({ path }), await open({ path })]
    const [ca, cb] = [new Client(a, { id: 'a' }), new Client(b, { id: 'b' })]
    await ca.locks.acquire('lock:a', { ttl: 60_000 })
    await cb.locks.acquire('lock:b', { ttl: 60_000 })
    await a.close()
    expect(await b.get('lock:a')).toBeUndefined()
    expect((await b.get('lock:b'))?.owner).toBe('b')
  })
})
