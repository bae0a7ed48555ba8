/**
 * A watch from a past revision on etcd (src/adapters/etcd/watch-start.ts):
 * served by a watcher from now only when nothing under the watched range
 * changed since that revision, and complete either way. Real etcd; the
 * changes the adapter cannot see in a plain read (an expiry: a slot deleted
 * with no tombstone) are made with a raw etcd client on the adapter's own
 * layout, as a lease's end makes them.
 */
import { Etcd3 } from 'etcd3'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Adapter, WatchEvent } from 'zaris'
import { etcdAdapter } from 'zaris/etcd'
import { shareConnection, type Connection } from '../../src/adapters/etcd/connection'
import { Layout } from '../../src/adapters/etcd/layout'
import { MAX_WINDOW, unchanged, watchFromPast } from '../../src/adapters/etcd/watch-start'
import { EtcdCluster } from './server'
import { until as waitFor } from '../conformance/util'

let etcd: EtcdCluster
let raw: Etcd3
let connection: Connection
const opened: Adapter[] = []
beforeAll(async () => {
  etcd = await EtcdCluster.start(1)
  raw = new Etcd3({ hosts: etcd.members[0]!.endpoint })
  connection = await shareConnection({ hosts: [etcd.members[0]!.endpoint], callTimeout: 2_000, timeout: 10_000 })
  connection.users++
})
afterAll(async () => {
  await Promise.all(opened.map((a) => a.close()))
  await connection?.release()
  raw?.close()
  await etcd?.dispose()
})

let n = 0
async function adapter(namespace: string): Promise<Adapter> {
  const a = await etcdAdapter({ url: etcd.url(namespace) })
  opened.push(a)
  return a
}
const until = (cond: () => boolean, ms = 10_000) => waitFor(cond, ms)
/** etcd's revision now. */
const revision = async () => Number((await raw.kv.range({ key: Buffer.from('zaris-test-probe') })).header.revision)
/** A write outside every watched range: moves etcd's revision on. */
const elsewhere = (i: number) => raw.put(`zaris-test-elsewhere/${i}`).value('x')

describe('whether a range changed since a revision (the look before a watch from the past)', () => {
  test('writes only outside the range: unchanged, so the watch may start from now', async () => {
    const layout = new Layout(`ws${++n}`)
    await raw.put(layout.slot('k', 0)).value('\0\0"v"')
    const from = (await revision()) + 1
    for (let i = 0; i < 5; i++) await elsewhere(i)
    expect(await unchanged(connection, layout.prefix('k'), from, await revision())).toBe(true)
  })

  test('a key of the range written in the window: changed', async () => {
    const layout = new Layout(`ws${++n}`)
    await raw.put(layout.slot('k', 0)).value('\0\0"v"')
    const from = (await revision()) + 1
    await elsewhere(0)
    await raw.put(layout.slot('k', 0)).value('\0\0"w"')
    await elsewhere(1)
    expect(await unchanged(connection, layout.prefix('k'), from, await revision())).toBe(false)
  })

  test('a key of the range that expired in the window (deleted, no tombstone): changed', async () => {
    const layout = new Layout(`ws${++n}`)
    await raw.put(layout.slot('k', 0)).value('\0\0"v"')
    await raw.put(layout.slot('other', 0)).value('\0\0"v"')
    const from = (await revision()) + 1
    await elsewhere(0)
    await raw.delete().key(layout.slot('k', 0))
    await elsewhere(1)
    expect(await unchanged(connection, layout.prefix(''), from, await revision())).toBe(false)
  })

  test('a key deleted at the window\'s last revision: changed', async () => {
    const layout = new Layout(`ws${++n}`)
    await raw.put(layout.slot('k', 0)).value('\0\0"v"')
    const from = (await revision()) + 1
    await elsewhere(0)
    await raw.delete().key(layout.slot('k', 0))
    expect(await unchanged(connection, layout.prefix('k'), from, await revision())).toBe(false)
  })

  test('a window etcd has compacted away: taken as changed (the watch from the past then reports it)', async () => {
    const layout = new Layout(`ws${++n}`)
    const from = (await revision()) + 1
    await elsewhere(0)
    await elsewhere(1)
    const now = await revision()
    await raw.kv.compact({ revision: now, physical: true })
    expect(await unchanged(connection, layout.prefix('k'), from, now)).toBe(false)
  })

  test('a key made and expired inside the window, leaving the range as it was at both ends: changed', async () => {
    const layout = new Layout(`ws${++n}`)
    await raw.put(layout.slot('k', 0)).value('\0\0"v"')
    const from = (await revision()) + 1
    await elsewhere(0)
    await raw.put(layout.slot('k2', 0)).value('\0\0"brief"')
    await elsewhere(1)
    await raw.delete().key(layout.slot('k2', 0))
    await elsewhere(2)
    expect(await unchanged(connection, layout.prefix('k'), from, await revision())).toBe(false)
  })

  test('an empty window is unchanged; a window longer than the look counts is taken as changed', async () => {
    const layout = new Layout(`ws${++n}`)
    const now = await revision()
    expect(await unchanged(connection, layout.prefix('k'), now + 1, now)).toBe(true)
    const from = now + 1
    for (let i = 0; i < MAX_WINDOW; i++) await elsewhere(i)
    expect(await unchanged(connection, layout.prefix('k'), from, await revision())).toBe(false)
  })
})

describe('a watch from a past revision delivers every event from it, in order, once', () => {
  test('nothing changed since the revision: the next change is delivered, nothing before it', async () => {
    const a = await adapter(`wsa${++n}`)
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    if (!r.ok) throw new Error('commit failed')
    for (let i = 0; i < 3; i++) await elsewhere(i)
    const events: WatchEvent[] = []
    await a.watch('k', { event: (e) => events.push(e), error: () => {} }, r.revision)
    const r2 = await a.commit([], [{ type: 'set', key: 'k', value: 2 }])
    if (!r2.ok) throw new Error('commit failed')
    await until(() => events.length >= 1)
    await a.commit([], [{ type: 'set', key: 'zz', value: 0 }]) // a later event elsewhere, to let any stray one arrive
    await new Promise((res) => setTimeout(res, 100))
    expect(events.map((e) => [e.type, e.key, e.value, e.revision])).toEqual([['put', 'k', 2, r2.revision]])
  })

  test('an expiry in the window (no tombstone) is delivered before the changes after the watch began', async () => {
    const ns = `wsb${++n}`
    const a = await adapter(ns)
    const layout = new Layout(ns)
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    if (!r.ok) throw new Error('commit failed')
    await elsewhere(0)
    await raw.delete().key(layout.slot('k', 0)) // as a lease's end deletes it
    await elsewhere(1)
    const events: WatchEvent[] = []
    await a.watch('k', { event: (e) => events.push(e), error: () => {} }, r.revision)
    await a.commit([], [{ type: 'set', key: 'k', value: 3 }])
    await until(() => events.length >= 2)
    expect(events.map((e) => [e.type, e.key])).toEqual([
      ['expire', 'k'],
      ['put', 'k'],
    ])
  })

  test('watches made from past revisions while a writer commits each see every commit from their revision, in order, once', async () => {
    const ns = `wsc${++n}`
    const writer = await adapter(ns)
    const reader = await adapter(ns)
    // A first write of the key, so that every watch starts from a revision after it: one from revision 0 would ask for
    // history an earlier test of this file compacted away (the adapter then rightly says CompactedError).
    const first = await writer.commit([], [{ type: 'set', key: 'k', value: 'first' }])
    if (!first.ok) throw new Error('commit failed')
    const written: number[] = [first.revision]
    let writing = true
    const writes = (async () => {
      for (let i = 0; writing; i++) {
        // Mostly writes elsewhere, so that many watches find their window quiet; now and then the watched key.
        const key = i % 4 === 0 ? 'k' : `other/${i}`
        const r = await writer.commit([], [{ type: 'set', key, value: i }])
        if (r.ok && key === 'k') written.push(r.revision)
      }
    })()
    const watches: Array<{ from: number; seen: number[]; errors: string[] }> = []
    for (let w = 0; w < 30; w++) {
      await new Promise((res) => setTimeout(res, 5))
      const from = written.at(-1)!
      const seen: number[] = []
      const errors: string[] = []
      watches.push({ from, seen, errors })
      await reader.watch('k', { event: (e) => seen.push(e.revision), error: (e) => errors.push(String(e)) }, from)
    }
    writing = false
    await writes
    // One write of the key after every watch began, so that each has one to wait for.
    const r = await writer.commit([], [{ type: 'set', key: 'k', value: -1 }])
    if (!r.ok) throw new Error('commit failed')
    written.push(r.revision)
    await until(() => watches.every((w) => w.seen.at(-1) === r.revision || w.errors.length > 0), 30_000).catch(() => {}) // else the comparison below says what is missing
    for (const w of watches) expect({ seen: w.seen, errors: w.errors }).toEqual({ seen: written.filter((rev) => rev > w.from), errors: [] })
  }, 90_000) // on a loaded machine (CI's 2 cores) the 30 looks and the writer share etcd: slow, but every event must come

  /**
   * The connection, with its look before a watch held until `open()`: the
   * events that reach the watcher from now meanwhile are the ones it holds.
   */
  function gated(): { connection: Connection; open(): void } {
    let open!: () => void
    const gate = new Promise<void>((resolve) => (open = resolve))
    const c = Object.create(connection) as Connection
    c.txn = async (what, req) => {
      await gate
      return connection.txn(what, req)
    }
    return { connection: c, open }
  }

  test('changes made while the look is under way are held, then delivered once, after those before', async () => {
    const ns = `wsd${++n}`
    const a = await adapter(ns)
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    if (!r.ok) throw new Error('commit failed')
    await elsewhere(0)
    const g = gated()
    const events: WatchEvent[] = []
    const watching = watchFromPast(g.connection, new Layout(ns), 'k', { event: (e) => events.push(e), error: () => {} }, r.revision + 1)
    await new Promise((res) => setTimeout(res, 100))
    const during = await a.commit([], [{ type: 'set', key: 'k', value: 2 }])
    await new Promise((res) => setTimeout(res, 100))
    expect(events).toEqual([]) // held while the look has not answered
    g.open()
    const stop = await watching
    const after = await a.commit([], [{ type: 'set', key: 'k', value: 3 }])
    if (!during.ok || !after.ok) throw new Error('commit failed')
    await until(() => events.length >= 2)
    await new Promise((res) => setTimeout(res, 100))
    stop()
    expect(events.map((e) => [e.value, e.revision])).toEqual([
      [2, during.revision],
      [3, after.revision],
    ])
  })

  test('a look that finds a change drops what the watcher from now held: each event comes once, from the past', async () => {
    const ns = `wse${++n}`
    const a = await adapter(ns)
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    if (!r.ok) throw new Error('commit failed')
    const before = await a.commit([], [{ type: 'set', key: 'k', value: 2 }]) // in the window: the look finds it
    const g = gated()
    const events: WatchEvent[] = []
    const watching = watchFromPast(g.connection, new Layout(ns), 'k', { event: (e) => events.push(e), error: () => {} }, r.revision + 1)
    await new Promise((res) => setTimeout(res, 100))
    const during = await a.commit([], [{ type: 'set', key: 'k', value: 3 }])
    await new Promise((res) => setTimeout(res, 100))
    g.open()
    const stop = await watching
    if (!before.ok || !during.ok) throw new Error('commit failed')
    await until(() => events.length >= 2)
    await new Promise((res) => setTimeout(res, 300))
    stop()
    expect(events.map((e) => [e.value, e.revision])).toEqual([
      [2, before.revision],
      [3, during.revision],
    ])
  })
})

/**
 * The connection as watchFromPast sees it, with its parts in the test's
 * hands: etcd watchers counted and stopped as made, the watcher from now
 * optionally started `lag` revisions early (as a member behind would), its
 * sink kept, and the watcher from the past held until `openPast()`.
 */
function instrumented(options: { lag?: number } = {}) {
  let openPast!: () => void
  const pastGate = new Promise<void>((resolve) => (openPast = resolve))
  const made: Array<{ from: number; stopped: boolean }> = []
  let nowSink: import('zaris').WatchSink | undefined
  const c = Object.create(connection) as Connection
  // The connection's own methods read its private fields: called on it, not on this stand-in.
  c.txn = (what, req) => connection.txn(what, req)
  const watches = Object.create(connection.watches) as Connection['watches']
  watches.subscribe = async (layout, prefix, sink, from, timeout, started) => {
    const record = { from, stopped: false }
    made.push(record)
    if (from === 0) nowSink = sink
    else await pastGate
    const lagged = from === 0 && options.lag !== undefined ? connection.seen + 1 - options.lag : from
    const stop = await connection.watches.subscribe(layout, prefix, sink, lagged, timeout, started)
    return () => {
      record.stopped = true
      stop()
    }
  }
  Object.defineProperty(c, 'watches', { value: watches })
  return { connection: c, made, openPast, nowSink: () => nowSink! }
}

describe('the watcher from now and the watcher from the past', () => {
  test('a quiet window is served by the watcher from now alone, from the revision right after the one asked for', async () => {
    const ns = `wsf${++n}`
    const a = await adapter(ns)
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    if (!r.ok) throw new Error('commit failed')
    const t = instrumented()
    const events: WatchEvent[] = []
    const stop = await watchFromPast(t.connection, new Layout(ns), 'k', { event: (e) => events.push(e), error: () => {} }, r.revision + 1)
    const next = await a.commit([], [{ type: 'set', key: 'k', value: 2 }])
    if (!next.ok) throw new Error('commit failed')
    await until(() => events.length >= 1)
    stop()
    expect(t.made).toEqual([{ from: 0, stopped: true }])
    expect(events.map((e) => e.revision)).toEqual([next.revision])
  })

  test('a watcher from now that starts before the revision asked for (a member behind) delivers nothing before it', async () => {
    const ns = `wsg${++n}`
    const a = await adapter(ns)
    const r1 = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    const r2 = await a.commit([], [{ type: 'set', key: 'k', value: 2 }])
    if (!r1.ok || !r2.ok) throw new Error('commit failed')
    const t = instrumented({ lag: 2 }) // starts at r1's revision
    const events: WatchEvent[] = []
    const stop = await watchFromPast(t.connection, new Layout(ns), 'k', { event: (e) => events.push(e), error: () => {} }, r2.revision + 1)
    const r3 = await a.commit([], [{ type: 'set', key: 'k', value: 3 }])
    if (!r3.ok) throw new Error('commit failed')
    await until(() => events.some((e) => e.revision === r3.revision))
    stop()
    expect(events.map((e) => e.revision)).toEqual([r3.revision])
  })

  test('on a change in the window, the watcher from now is stopped and what reaches it meanwhile is not delivered twice', async () => {
    const ns = `wsh${++n}`
    const a = await adapter(ns)
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    const before = await a.commit([], [{ type: 'set', key: 'k', value: 2 }])
    if (!r.ok || !before.ok) throw new Error('commit failed')
    const t = instrumented()
    const events: WatchEvent[] = []
    const errors: Error[] = []
    const watching = watchFromPast(t.connection, new Layout(ns), 'k', { event: (e) => events.push(e), error: (e) => errors.push(e) }, r.revision + 1)
    await until(() => t.made.length === 2) // the look found the change; the watcher from the past waits on the gate
    const during = await a.commit([], [{ type: 'set', key: 'k', value: 3 }])
    if (!during.ok) throw new Error('commit failed')
    await new Promise((res) => setTimeout(res, 100)) // the watcher from now hears it
    t.nowSink().error(new Error('the watcher from now failed after it was dropped')) // not the caller's
    t.openPast()
    const stop = await watching
    await until(() => events.length >= 2)
    await new Promise((res) => setTimeout(res, 200))
    stop()
    expect(t.made).toEqual([
      { from: 0, stopped: true },
      { from: r.revision + 1, stopped: true },
    ])
    expect(events.map((e) => e.revision)).toEqual([before.revision, during.revision])
    expect(errors).toEqual([])
  })

  test('an error, a reconnection and events of the watcher from now reach the caller once it is live', async () => {
    const ns = `wsi${++n}`
    const a = await adapter(ns)
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    if (!r.ok) throw new Error('commit failed')
    const t = instrumented()
    const seen: string[] = []
    const stop = await watchFromPast(
      t.connection,
      new Layout(ns),
      'k',
      { event: (e) => seen.push(`event ${e.revision}`), error: (e) => seen.push(`error ${e.message}`), reconnecting: () => seen.push('reconnecting') },
      r.revision + 1,
    )
    t.nowSink().reconnecting!()
    t.nowSink().error(new Error('stream gone'))
    stop()
    expect(seen).toEqual(['reconnecting', 'error stream gone'])
  })

  test('a sink without reconnecting (it is optional) is not told of a reconnection', async () => {
    const ns = `wsk${++n}`
    const a = await adapter(ns)
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    if (!r.ok) throw new Error('commit failed')
    const t = instrumented()
    const stop = await watchFromPast(t.connection, new Layout(ns), 'k', { event: () => {}, error: () => {} }, r.revision + 1)
    expect(() => t.nowSink().reconnecting!()).not.toThrow()
    stop()
  })

  test('an error of the watcher from now while the look is under way reaches the caller after the events held before it', async () => {
    const ns = `wsj${++n}`
    const a = await adapter(ns)
    const r = await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
    if (!r.ok) throw new Error('commit failed')
    await elsewhere(0) // a window to look at: the look is made
    const t = instrumented()
    const g = Object.create(t.connection) as Connection
    let openLook!: () => void
    const look = new Promise<void>((resolve) => (openLook = resolve))
    g.txn = async (what, req) => {
      await look
      return connection.txn(what, req)
    }
    const seen: string[] = []
    const watching = watchFromPast(g, new Layout(ns), 'k', { event: (e) => seen.push(`event ${e.value}`), error: (e) => seen.push(`error ${e.message}`), reconnecting: () => seen.push('reconnecting') }, r.revision + 1)
    await until(() => t.made.length === 1 && t.nowSink() !== undefined)
    await new Promise((res) => setTimeout(res, 50))
    await a.commit([], [{ type: 'set', key: 'k', value: 2 }])
    await new Promise((res) => setTimeout(res, 100))
    t.nowSink().reconnecting!() // not told: the watch has not begun for the caller yet
    t.nowSink().error(new Error('stream gone'))
    t.nowSink().error(new Error('a second one'))
    expect(seen).toEqual([])
    openLook()
    const stop = await watching
    stop()
    expect(seen).toEqual(['event 2', 'error stream gone'])
  })
})
