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
const until = async (cond: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 10))
  }
}
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
    const written: number[] = []
    let writing = true
    const writes = (async () => {
      for (let i = 0; writing; i++) {
        // Mostly writes elsewhere, so that many watches find their window quiet; now and then the watched key.
        const key = i % 4 === 0 ? 'k' : `other/${i}`
        const r = await writer.commit([], [{ type: 'set', key, value: i }])
        if (r.ok && key === 'k') written.push(r.revision)
      }
    })()
    const watches: Array<{ from: number; seen: number[] }> = []
    for (let w = 0; w < 30; w++) {
      await new Promise((res) => setTimeout(res, 5))
      const from = written.at(-1) ?? 0
      const seen: number[] = []
      watches.push({ from, seen })
      await reader.watch('k', { event: (e) => seen.push(e.revision), error: () => {} }, from)
    }
    writing = false
    await writes
    // One write of the key after every watch began, so that each has one to wait for.
    const r = await writer.commit([], [{ type: 'set', key: 'k', value: -1 }])
    if (!r.ok) throw new Error('commit failed')
    written.push(r.revision)
    await until(() => watches.every((w) => w.seen.at(-1) === r.revision)).catch(() => {}) // else the comparison below says what is missing
    for (const w of watches) expect(w.seen).toEqual(written.filter((rev) => rev > w.from))
  })

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
