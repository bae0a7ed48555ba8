/**
 * The IndexedDB store's watch feed on its own (src/adapters/indexeddb/feed.ts),
 * in Node: its source is an in-memory log standing in for the `log` object
 * store (the feed sees the store only through `FeedSource`; the real one is
 * in test/indexeddb/adapter.browser.test.ts and the conformance suite). What
 * it must show: every watcher sees each revision once, in order, whatever
 * order the records arrive in (own commits, other tabs' announcements, the
 * log); replay from the ring and from the log; history gone said plainly;
 * prefixes, copies, a sink that throws, unsubscribe and clear.
 */
import { describe, expect, it } from 'vitest'
import type { WatchEvent, WatchSink } from 'zaris'
import { Feed, type FeedSource } from '../../src/adapters/indexeddb/feed'
import type { LogRecord } from '../../src/adapters/indexeddb/schema'

/** An in-memory change log of `historySize` revisions: what the feed reads, and how often. */
class MemoryLog {
  records: LogRecord[] = []
  reads: number[] = []
  /** Makes the next reads fail (the database went away). */
  failing = 0
  /** Holds the answers of reads until `release()`. */
  #held: Array<() => void> | undefined
  readonly source: FeedSource
  constructor(readonly historySize: number) {
    this.source = { historySize, log: (after) => this.#log(after) }
  }

  get revision(): number {
    return this.records.at(-1)?.revision ?? 0
  }

  /** Commits one record of a put at `key` with `value`; returns it (not announced). */
  commit(key = 'k', value: unknown = this.revision + 1): LogRecord {
    const revision = this.revision + 1
    const record: LogRecord = { revision, events: [{ type: 'put', key, revision, value: value as never, created: revision }] }
    this.records.push(record)
    this.records = this.records.filter((r) => r.revision > revision - this.historySize)
    return record
  }

  hold(): void {
    this.#held = []
  }

  release(): void {
    const held = this.#held ?? []
    this.#held = undefined
    for (const go of held) go()
  }

  async #log(after: number): Promise<{ revision: number; records: LogRecord[] }> {
    {
      this.reads.push(after)
      // Read when asked (a transaction's snapshot), answered when released.
      const read = { revision: this.revision, records: structuredClone(this.records.filter((r) => r.revision > after)) }
      if (this.#held) await new Promise<void>((r) => this.#held!.push(r))
      if (this.failing > 0) {
        this.failing--
        throw new DOMException('the database connection is closing', 'InvalidStateError')
      }
      return read
    }
  }
}

/** A sink that records what it is handed. */
function sink(): WatchSink & { events: WatchEvent[]; errors: Error[]; revisions(): number[] } {
  const events: WatchEvent[] = []
  const errors: Error[] = []
  return { events, errors, event: (e) => events.push(e), error: (e) => errors.push(e), revisions: () => events.map((e) => e.revision) }
}

const settle = () => new Promise((r) => setTimeout(r, 5))

function feedOver(historySize = 100): { log: MemoryLog; feed: Feed } {
  const log = new MemoryLog(historySize)
  return { log, feed: new Feed(log.source) }
}

/** A started feed over an empty log, and a watch of every key from now. */
async function watched(historySize = 100): Promise<{ log: MemoryLog; feed: Feed; s: ReturnType<typeof sink> }> {
  const { log, feed } = feedOver(historySize)
  await feed.start()
  const s = sink()
  await feed.subscribe('', s)
  return { log, feed, s }
}

describe('the IndexedDB watch feed (its log in memory)', () => {
  it('start learns the revision: a watch from now gets what comes after, in order, once each', async () => {
    const { log, feed } = feedOver()
    log.commit()
    log.commit()
    await feed.start()
    expect(feed.head).toBe(2)
    const s = sink()
    await feed.subscribe('', s)
    const a = log.commit()
    const b = log.commit()
    feed.receive([a])
    feed.receive([a, b])
    feed.receive([b])
    expect(s.revisions()).toEqual([3, 4])
    expect(feed.head).toBe(4)
  })

  it('start reads once, and again after a failed read', async () => {
    const { log, feed } = feedOver()
    log.failing = 1
    await expect(feed.start()).rejects.toThrow('closing')
    await feed.start()
    await feed.start()
    expect(log.reads).toEqual([Infinity, Infinity])
  })

  it('records heard before start wait for it: nothing is delivered out of order or twice', async () => {
    const { log, feed } = feedOver()
    log.commit()
    const r2 = log.commit()
    feed.receive([r2])
    feed.poll()
    await settle()
    expect(feed.head).toBe(-1)
    // Nothing is read before start: the revision it reads covers what was heard.
    expect(log.reads).toEqual([])
    const s = sink()
    await feed.subscribe('', s)
    const r3 = log.commit()
    feed.receive([r2, r3])
    feed.receive([log.commit()])
    await settle()
    expect(s.revisions()).toEqual([3, 4])
    expect(log.reads).toEqual([Infinity])
  })

  it('a record heard again, or one older than head, is dropped without a log read', async () => {
    const { log, feed, s } = await watched()
    const r1 = log.commit()
    const r2 = log.commit()
    feed.receive([r1, r2])
    feed.receive([r2])
    feed.receive([r1])
    feed.receive([log.commit()])
    await settle()
    expect(s.revisions()).toEqual([1, 2, 3])
    expect(log.reads).toEqual([Infinity])
  })

  it('a read that covered everything heard meanwhile is not made again (nothing pending, nothing forced)', async () => {
    const { log, feed, s } = await watched()
    log.commit()
    const r2 = log.commit()
    const r3 = log.commit()
    log.hold()
    feed.receive([r3])
    await settle()
    feed.receive([r2])
    log.release()
    await settle()
    expect(s.revisions()).toEqual([1, 2, 3])
    expect(log.reads).toEqual([Infinity, 0])
    // The same for a poll: its read covers the record heard while it waited.
    log.commit()
    const r5 = log.commit()
    log.hold()
    feed.poll()
    await settle()
    feed.receive([r5])
    log.release()
    await settle()
    expect(s.revisions()).toEqual([1, 2, 3, 4, 5])
    expect(log.reads).toEqual([Infinity, 0, 3])
  })

  it('a watch from a revision ahead of the store gets only what comes after it', async () => {
    const { log, feed } = feedOver()
    feed.receive([log.commit(), log.commit()])
    await feed.start()
    const s = sink()
    await feed.subscribe('', s, 4)
    for (let i = 0; i < 4; i++) feed.receive([log.commit()])
    expect(s.revisions()).toEqual([5, 6])
  })

  it('the ring moves past the cursor while a watch reads the log: it reads again, and misses nothing', async () => {
    const { log, feed } = feedOver(10_000)
    for (let i = 0; i < 10; i++) log.commit()
    await feed.start()
    const s = sink()
    log.hold()
    const subscribing = feed.subscribe('', s, 0)
    await settle()
    for (let i = 0; i < 4_001; i++) feed.receive([log.commit()])
    log.release()
    await subscribing
    expect(s.revisions()).toEqual(Array.from({ length: 4_011 }, (_, i) => i + 1))
    expect(log.reads).toEqual([Infinity, 0, 10])
  })

  it('the store closing in the middle of a record (clear from a sink): the rest of that record is not handed on', async () => {
    const { log, feed } = feedOver()
    await feed.start()
    const s = sink()
    await feed.subscribe('', {
      event: (e) => {
        s.event(e)
        feed.clear()
      },
      error: (e) => s.error(e),
    })
    const two: LogRecord = { revision: 1, events: [{ type: 'put', key: 'x', revision: 1, value: 1 }, { type: 'delete', key: 'y', revision: 1 }] }
    log.records.push(two)
    feed.receive([two])
    expect(s.events.map((e) => e.key)).toEqual(['x'])
    expect(s.errors).toEqual([])
  })

  it('a revision heard ahead of one missing waits while the log is read: both delivered in order, none doubled', async () => {
    const { log, feed, s } = await watched()
    log.commit()
    const r2 = log.commit()
    const r3 = log.commit()
    feed.receive([r3])
    expect(s.revisions()).toEqual([])
    await settle()
    expect(log.reads).toEqual([Infinity, 0])
    feed.receive([r2])
    expect(s.revisions()).toEqual([1, 2, 3])
  })

  it('what is heard while the log is read makes it read again from the new head', async () => {
    const { log, feed, s } = await watched()
    log.commit()
    const r2 = log.commit()
    log.hold()
    feed.receive([r2])
    await settle()
    // While the first read waits, r4 is heard, r3 missing: the fill must look again.
    log.commit()
    const r4 = log.commit()
    feed.receive([r4])
    log.release()
    await settle()
    await settle()
    expect(s.revisions()).toEqual([1, 2, 3, 4])
    expect(log.reads).toEqual([Infinity, 0, 2])
  })

  it('poll reads the log for revisions nobody announced; without a change it delivers nothing', async () => {
    const { log, feed, s } = await watched()
    feed.poll()
    await settle()
    expect(s.revisions()).toEqual([])
    log.commit()
    log.commit()
    feed.poll()
    await settle()
    expect(s.revisions()).toEqual([1, 2])
    expect(log.reads).toEqual([Infinity, 0, 0])
  })

  it('a failed log read delivers nothing and breaks nothing: the next poll catches up', async () => {
    const { log, feed, s } = await watched()
    log.commit()
    log.failing = 1
    feed.poll()
    await settle()
    expect(s.revisions()).toEqual([])
    feed.poll()
    await settle()
    expect(s.revisions()).toEqual([1])
  })

  it('a watch from a recent revision replays from memory (no log read), then goes on live', async () => {
    const { log, feed } = feedOver()
    await feed.start()
    for (let i = 0; i < 5; i++) feed.receive([log.commit()])
    const reads = log.reads.length
    const s = sink()
    await feed.subscribe('', s, 2)
    expect(s.revisions()).toEqual([3, 4, 5])
    expect(log.reads.length).toBe(reads)
    feed.receive([log.commit()])
    expect(s.revisions()).toEqual([3, 4, 5, 6])
  })

  it('a watch from before what memory holds reads the log, then memory: each revision once, in order', async () => {
    const { log, feed } = feedOver()
    log.commit()
    log.commit()
    await feed.start()
    for (let i = 0; i < 3; i++) feed.receive([log.commit()])
    const s = sink()
    await feed.subscribe('', s, 0)
    expect(s.revisions()).toEqual([1, 2, 3, 4, 5])
    expect(log.reads.at(-1)).toBe(0)
    feed.receive([log.commit()])
    expect(s.revisions()).toEqual([1, 2, 3, 4, 5, 6])
  })

  it('a watch from before the history the log keeps fails with COMPACTED, naming the revisions', async () => {
    const { log, feed } = feedOver(3)
    for (let i = 0; i < 10; i++) log.commit()
    await feed.start()
    const s = sink()
    await feed.subscribe('', s, 2)
    expect(s.events).toEqual([])
    expect(s.errors).toHaveLength(1)
    expect(s.errors[0]).toMatchObject({ code: 'COMPACTED', message: expect.stringContaining('watch from revision 2: history up to revision 7 is gone') })
    // From the oldest revision kept, it replays.
    const ok = sink()
    await feed.subscribe('', ok, 7)
    expect(ok.revisions()).toEqual([8, 9, 10])
  })

  it('memory promises no more than the log keeps: a watch from before the log history fails even if memory has it', async () => {
    const { log, feed } = feedOver(3)
    await feed.start()
    for (let i = 0; i < 6; i++) feed.receive([log.commit()])
    const s = sink()
    await feed.subscribe('', s, 1)
    expect(s.errors[0]).toMatchObject({ code: 'COMPACTED' })
    const ok = sink()
    await feed.subscribe('', ok, 3)
    expect(ok.revisions()).toEqual([4, 5, 6])
  })

  it('a page that slept through more history than the log keeps: its watchers fail with COMPACTED, and the feed goes on from the store revision', async () => {
    const { log, feed, s } = await watched(3)
    for (let i = 0; i < 10; i++) log.commit()
    feed.poll()
    await settle()
    expect(s.events).toEqual([])
    expect(s.errors).toHaveLength(1)
    expect(s.errors[0]).toMatchObject({ code: 'COMPACTED', message: expect.stringContaining('watch fell behind: history up to revision 7 is gone') })
    expect(feed.head).toBe(10)
    const reads = log.reads.length
    const next = sink()
    await feed.subscribe('', next)
    feed.receive([log.commit()])
    expect(next.revisions()).toEqual([11])
    const from10 = sink()
    await feed.subscribe('', from10, 10)
    expect(from10.revisions()).toEqual([11])
    expect(log.reads.length).toBe(reads)
    expect(s.errors).toHaveLength(1)
  })

  it('a watch of a prefix gets only its keys; each watcher its own copy of a value', async () => {
    const { log, feed } = feedOver()
    await feed.start()
    const a = sink()
    const b = sink()
    await feed.subscribe('a:', a)
    await feed.subscribe('', b)
    feed.receive([log.commit('a:1', { n: 1 }), log.commit('b:1', 'x')])
    expect(a.events.map((e) => e.key)).toEqual(['a:1'])
    expect(b.events.map((e) => e.key)).toEqual(['a:1', 'b:1'])
    ;(a.events[0]!.value as { n: number }).n = 99
    expect(b.events[0]!.value).toEqual({ n: 1 })
    a.events[0]!.key = 'changed'
    expect(b.events[0]!.key).toBe('a:1')
    const del: LogRecord = { revision: 3, events: [{ type: 'delete', key: 'a:1', revision: 3 }] }
    log.records.push(del)
    feed.receive([del])
    expect(Object.keys(a.events[1]!).sort()).toEqual(['key', 'revision', 'type'])
  })

  it('a sink that throws stops neither its own later events nor the other watchers', async () => {
    const { log, feed } = feedOver()
    await feed.start()
    const seen: number[] = []
    await feed.subscribe('', {
      event: (e) => {
        seen.push(e.revision)
        throw new Error('bad sink')
      },
      error: () => {},
    })
    const s = sink()
    await feed.subscribe('', s)
    feed.receive([log.commit(), log.commit()])
    expect(seen).toEqual([1, 2])
    expect(s.revisions()).toEqual([1, 2])
  })

  it('unsubscribe stops a watcher at once, in the middle of a record too; clear ends every watcher quietly', async () => {
    const { log, feed } = feedOver()
    await feed.start()
    const first = sink()
    let stop: () => void = () => {}
    const stopping: WatchSink = {
      event: (e) => {
        first.event(e)
        stop()
      },
      error: (e) => first.error(e),
    }
    stop = await feed.subscribe('', stopping)
    const two: LogRecord = { revision: 1, events: [{ type: 'put', key: 'x', revision: 1, value: 1 }, { type: 'delete', key: 'y', revision: 1 }] }
    log.records.push(two)
    feed.receive([two])
    expect(first.events.map((e) => e.key)).toEqual(['x'])
    const s = sink()
    await feed.subscribe('', s)
    feed.clear()
    feed.receive([log.commit()])
    expect([s.events, s.errors]).toEqual([[], []])
    expect(feed.head).toBe(2)
  })

  it('keeps up to 4 000 records in memory, then the last 2 000: a watch from before them reads the log', async () => {
    const { log, feed } = feedOver(10_000)
    await feed.start()
    const fromMemory = async (from: number, count: number) => {
      const reads = log.reads.length
      const s = sink()
      await feed.subscribe('', s, from)
      expect(s.events).toHaveLength(count)
      return log.reads.length === reads
    }
    for (let i = 0; i < 3_000; i++) feed.receive([log.commit()])
    expect(await fromMemory(0, 3_000)).toBe(true)
    for (let i = 0; i < 1_000; i++) feed.receive([log.commit()])
    expect(await fromMemory(0, 4_000)).toBe(true)
    feed.receive([log.commit()])
    expect(await fromMemory(2_001, 2_000)).toBe(true)
    expect(await fromMemory(2_000, 2_001)).toBe(false)
    const old = sink()
    await feed.subscribe('', old, 100)
    expect(old.revisions()[0]).toBe(101)
    expect(old.events).toHaveLength(3_901)
  })
})
