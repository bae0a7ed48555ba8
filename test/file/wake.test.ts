/**
 * How a watch of the `file://` store hears of a commit, each way alone:
 * the kernel's note that the write-ahead log was written (fs.watch), the
 * poll of SQLite's data_version, and a commit of another connection of this
 * process. Each test turns the other ways off (`notify`, `pollMs`) and
 * writes the way that way must catch: a raw connection's commit stands for
 * another process's.
 */
import { appendFileSync, writeFileSync } from 'node:fs'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { Tail } from '../../src/adapters/file/tail'
import { collect, newFile, open, rawPut, until } from './helpers'

const HOUR = 3_600_000
afterEach(() => {
  delete process.env.ZARIS_FILE_NO_NOTIFY
})

describe('a watch hears of a commit', () => {
  test('from the kernel (fs.watch on the write-ahead log), with no poll', async () => {
    const path = newFile()
    const a = await open({ path, notify: true, pollMs: HOUR })
    const w = collect()
    await a.watch('', w.sink)
    rawPut(path, 'k')
    await until(() => w.events.length === 1, 2_000)
    expect(w.events[0]).toMatchObject({ type: 'put', key: 'k' })
  })

  test('by default from the kernel: no option, no poll needed', async () => {
    const path = newFile()
    const a = await open({ path, pollMs: HOUR })
    const w = collect()
    await a.watch('', w.sink)
    rawPut(path, 'k')
    await until(() => w.events.length === 1, 2_000)
  })

  test('from the poll alone, when SQLite says another connection committed', async () => {
    const path = newFile()
    const a = await open({ path, notify: false, pollMs: 20 })
    const w = collect()
    await a.watch('', w.sink)
    rawPut(path, 'k1')
    await until(() => w.events.length === 1, 2_000)
    rawPut(path, 'k2')
    await until(() => w.events.length === 2, 2_000)
    expect(w.events.map((e) => e.key)).toEqual(['k1', 'k2'])
  })

  test('ZARIS_FILE_NO_NOTIFY=1 turns the kernel\'s notes off: with no poll, nothing comes', async () => {
    process.env.ZARIS_FILE_NO_NOTIFY = '1'
    const path = newFile()
    const quiet = await open({ path, pollMs: HOUR })
    const w = collect()
    await quiet.watch('', w.sink)
    rawPut(path, 'k')
    await new Promise((r) => setTimeout(r, 300))
    expect(w.events).toEqual([])
  })

  test('from another connection of this process, at once, with neither notes nor poll; every such watch, even when one stopped', async () => {
    const path = newFile()
    const quiet = { path, notify: false, pollMs: HOUR }
    const [writer, b, c] = [await open(quiet), await open(quiet), await open(quiet)]
    const [wb, wc] = [collect(), collect()]
    const stop = await b.watch('', wb.sink)
    await c.watch('', wc.sink)
    await writer.commit([], [{ type: 'set', key: 'k1', value: 1 }])
    await until(() => wb.events.length === 1 && wc.events.length === 1, 1_000)
    stop()
    await writer.commit([], [{ type: 'set', key: 'k2', value: 1 }])
    await until(() => wc.events.length === 2, 1_000)
    expect(wb.events.map((e) => e.key)).toEqual(['k1'])
  })

  test('its own commit, at once, also one made from inside a delivery', async () => {
    const a = await open({ notify: false, pollMs: HOUR })
    const seen: string[] = []
    await a.watch('', {
      event: (ev) => {
        seen.push(ev.key)
        if (ev.key === 'first') void a.commit([], [{ type: 'set', key: 'reaction', value: 1 }])
      },
      error: () => {},
    })
    await a.commit([], [{ type: 'set', key: 'first', value: 1 }])
    await until(() => seen.length === 2, 1_000)
    expect(seen).toEqual(['first', 'reaction'])
  })
})

describe('watches in pages', () => {
  test('a commit of 1 000 keys reaches a watcher (one wake-up, no poll) and a replay whole, in op order, across pages that cut its revision', async () => {
    const path = newFile()
    const quiet = { path, notify: false, pollMs: HOUR }
    const [a, b] = [await open(quiet), await open(quiet)]
    const w = collect()
    await b.watch('', w.sink)
    const keys = Array.from({ length: 1_000 }, (_, i) => `k${String(i).padStart(4, '0')}`)
    await a.commit([], keys.map((key) => ({ type: 'set' as const, key, value: 1 })))
    await until(() => w.events.length === 1_000)
    expect(w.events.map((e) => e.key)).toEqual(keys)
    const replay = collect()
    await b.watch('', replay.sink, 0)
    expect(replay.events.map((e) => e.key)).toEqual(keys)
  })

  test('a watch opened inside a delivery, from a revision, replays up to the event being delivered, then follows: nothing twice', async () => {
    const a = await open()
    await a.commit([], [{ type: 'set', key: 'before', value: 1 }])
    const inner = collect()
    let opened = false
    await a.watch('', {
      event: (ev) => {
        if (opened || ev.key !== 'x1') return
        opened = true
        void a.watch('', inner.sink, 0)
      },
      error: () => {},
    })
    await a.commit([], [{ type: 'set', key: 'x1', value: 1 }, { type: 'set', key: 'x2', value: 1 }])
    await a.commit([], [{ type: 'set', key: 'x3', value: 1 }])
    await until(() => inner.events.length >= 4)
    await new Promise((r) => setTimeout(r, 30))
    expect(inner.events.map((e) => e.key)).toEqual(['before', 'x1', 'x2', 'x3'])
  })

  test('a watch without a revision gets nothing from before it, also when the adapter has not read the log yet', async () => {
    const a = await open()
    await a.commit([], [{ type: 'set', key: 'old', value: 1 }])
    const w = collect()
    await a.watch('', w.sink)
    await a.commit([], [{ type: 'set', key: 'new', value: 1 }])
    expect(w.events.map((e) => e.key)).toEqual(['new'])
    // A second watch of an adapter that has not heard of another process's commit yet.
    const path = newFile()
    const b = await open({ path, notify: false, pollMs: HOUR })
    const first = collect()
    await b.watch('', first.sink)
    rawPut(path, 'unheard')
    const second = collect()
    await b.watch('', second.sink)
    await b.commit([], [{ type: 'set', key: 'after', value: 1 }])
    expect(first.events.map((e) => e.key)).toEqual(['unheard', 'after'])
    expect(second.events.map((e) => e.key)).toEqual(['after'])
  })

  test('a watch opened from a revision inside a delivery stops its replay where the delivery is: the rest comes once', async () => {
    const path = newFile()
    const b = await open({ path, notify: false, pollMs: HOUR })
    const inner = collect()
    let opened = false
    await b.watch('', {
      event: (ev) => {
        if (opened || ev.key !== 'x1') return
        opened = true
        void b.watch('', inner.sink, 0)
      },
      error: () => {},
    })
    // Two commits the adapter has not read yet, then one of its own: all three in one read.
    rawPut(path, 'x1')
    rawPut(path, 'x2')
    await b.commit([], [{ type: 'set', key: 'x3', value: 1 }])
    await until(() => inner.events.length >= 3)
    await new Promise((r) => setTimeout(r, 30))
    expect(inner.events.map((e) => e.key)).toEqual(['x1', 'x2', 'x3'])
  })

  test('when one of two watches ends, the other still hears other processes', async () => {
    const path = newFile()
    const a = await open({ path, notify: false, pollMs: 20 })
    const [w1, w2] = [collect(), collect()]
    const stop = await a.watch('', w1.sink)
    await a.watch('', w2.sink)
    stop()
    rawPut(path, 'k')
    await until(() => w2.events.length === 1, 2_000)
    expect(w1.events).toEqual([])
  })
})

test('watches leave no timers behind once they end', async () => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] })
  try {
    const a = await open()
    const before = vi.getTimerCount()
    const stops = [await a.watch('', collect().sink), await a.watch('x', collect().sink)]
    expect(vi.getTimerCount()).toBe(before + 2) // the poll and the sweep for gone owners
    for (const stop of stops) stop()
    expect(vi.getTimerCount()).toBe(before)
  } finally {
    vi.useRealTimers()
  }
})

// The log read by hand (a real SQLite writer cannot be paused between its last write to the log and the commit's
// publication in the log's shared-memory index): a real kernel note, of a write whose commit is seen only later.
test('a kernel note that comes before its commit can be seen is looked at again: the commit is delivered without the poll (the log read by hand)', async () => {
  const file = newFile()
  writeFileSync(`${file}-wal`, '')
  let published = false
  let seenBefore = -1
  const row = { revision: 1, seq: 1, type: 'put', key: 'k', value: '1', created: 1, owner: null, ttl: null }
  const w = collect()
  // The commit is published 5 ms after the note's first look (timers keep their order on a stalled machine).
  let looked = false
  const tail = new Tail(
    {
      read: (revision) => ({ revision: published ? 1 : 0, compacted: 0, events: published && revision < 1 ? [row] : [] }),
      changed: () => {
        if (!looked) {
          looked = true
          setTimeout(() => ((seenBefore = w.events.length), (published = true)), 5)
        }
        return published
      },
    },
    { file, notify: true, pollMs: HOUR },
    () => {},
    () => {},
  )
  const stop = tail.subscribe('', w.sink)
  try {
    appendFileSync(`${file}-wal`, 'frames')
    await until(() => w.events.length === 1, 2_000)
    expect(seenBefore).toBe(0)
    expect(w.events[0]).toMatchObject({ key: 'k', value: 1, revision: 1 })
  } finally {
    stop()
  }
})
