/**
 * The in-process stores' watch ring: events kept in parallel arrays that wrap
 * at the capacity. Replays from any revision still in the ring come back in
 * order and whole; one from before it gets a CompactedError, never a gap.
 */
import { describe, expect, test } from 'vitest'
import type { WatchEvent } from 'zaris'
import { EventLog } from '../../src/adapters/shared/event-log'

function replay(log: EventLog, prefix: string, from: number): { events: WatchEvent[]; errors: Error[] } {
  const events: WatchEvent[] = []
  const errors: Error[] = []
  const stop = log.subscribe(prefix, { event: (e) => events.push(e), error: (e) => errors.push(e) }, from)
  stop()
  return { events, errors }
}

/** Event `r` of a log where odd revisions are puts of `k:<r % 3>` and even ones deletes or expiries. */
function event(r: number): WatchEvent {
  const key = `${r % 4 === 0 ? 'x' : 'k'}:${r % 3}`
  if (r % 2 === 1) {
    const e: WatchEvent = { type: 'put', key, revision: r, value: { r, list: [r] }, created: r - (r % 5) }
    if (r % 3 === 0) e.owner = `o${r}`
    if (r % 7 === 0) e.ttl = r * 10
    return e
  }
  return { type: r % 6 === 0 ? 'expire' : 'delete', key, revision: r }
}

describe('EventLog ring', () => {
  test.each([1, 2, 5, 7, 64])('capacity %i: replays across many wraps are exact, older ones are compacted', (capacity) => {
    const log = new EventLog(capacity, 0)
    for (let r = 1; r <= 200; r++) {
      const e = event(r)
      if (e.type === 'put') {
        // Puts come in as the store's entry; the log builds the event itself.
        const put = { key: e.key, revision: e.revision, value: e.value!, created: e.created!, ...(e.owner ? { owner: e.owner } : {}), ...(e.ttl ? { ttl: e.ttl } : {}) }
        log.appendPut(put)
      } else log.append(e)
      const oldest = Math.max(1, r - capacity + 1)
      // From the revision just before the oldest kept event: everything kept, in order.
      const ok = replay(log, '', oldest - 1)
      expect(ok.errors).toEqual([])
      expect(ok.events).toEqual(Array.from({ length: r - oldest + 1 }, (_, i) => event(oldest + i)))
      // With a prefix, from the middle.
      const mid = Math.max(oldest - 1, r - 3)
      expect(replay(log, 'k:', mid).events).toEqual(Array.from({ length: r - mid }, (_, i) => event(mid + 1 + i)).filter((e) => e.key.startsWith('k:')))
      if (oldest > 1) {
        const old = replay(log, '', oldest - 2)
        expect(old.events).toEqual([])
        expect(old.errors).toHaveLength(1)
        expect(old.errors[0]).toMatchObject({ code: 'COMPACTED' })
      }
    }
  })

  test('a live put reaches only matching watchers, as one event with its own value copy per replay', () => {
    const log = new EventLog(10, 0)
    const a: WatchEvent[] = []
    const b: WatchEvent[] = []
    log.subscribe('a:', { event: (e) => a.push(e), error: () => {} })
    log.subscribe('b:', { event: (e) => b.push(e), error: () => {} })
    const value = { n: 1 }
    log.appendPut({ key: 'a:1', revision: 1, value, created: 1 })
    expect(a).toEqual([{ type: 'put', key: 'a:1', revision: 1, value: { n: 1 }, created: 1 }])
    expect(b).toEqual([])
    ;(a[0]!.value as { n: number }).n = 2
    expect(replay(log, 'a:', 0).events[0]!.value).toEqual({ n: 1 })
    expect(log.watchers).toBe(2)
  })
})
