/**
 * The watch checker on small histories, around the case that made it key
 * commits by store life: a store without persistence that lost its state
 * (`store-restart`) gives a revision a watcher already received to another
 * client's commit (DESIGN.md allows it: that client never saw it). The
 * event must still be matched against the commit that wrote it, and a real
 * mismatch (an event no commit of its life wrote) must still be caught.
 */
import { describe, expect, test } from 'vitest'
import { HistoryBuilder } from './builder'
import { pairHistory, type HistoryEvent } from './history'
import { checkWatches, watchRecorder } from './watch'

/** A history: the builder's operations and one watch of `res:` from 0, with `events` delivered at their times (ms). */
function judge(h: HistoryBuilder, events: Array<{ at: number; key: string; revision: number; value?: unknown; type?: 'put' | 'delete' | 'expire' }>, end?: { at: number; reason: string; through?: number }) {
  const watch: HistoryEvent[] = []
  let now = 0
  const rec = watchRecorder((e) => watch.push(e), () => now, 9, 'w', 'observer')
  rec.start('res:', 0)
  for (const e of events) {
    now = e.at
    rec.event({ type: e.type ?? 'put', key: e.key, revision: e.revision, value: e.value })
  }
  if (end) {
    now = end.at
    rec.end(end.reason, end.through)
  }
  const { operations, standalone } = pairHistory([...h.events, ...watch])
  return checkWatches(standalone, operations).violations.map((v) => `${v.kind}: ${v.message}`)
}

/** Only the violations of one kind (a history made for a mismatch may also have skips, which are right). */
const only = (kind: string, found: string[]) => found.filter((v) => v.startsWith(`${kind}:`))

// c1 writes res:a at 5 and the watcher receives it; Redis is killed (8-9 ms) and comes back empty; c2, which never saw 5, is given 5 again for a lock.
const reuse = () => new HistoryBuilder().put(1, [0, 1], 'res:a', 'one', 5).fault('store-restart', 9, { start: 8e6 }).grant(2, [10, 11], 'lock:x', 1_000, 5)

describe('watch events at a revision a store that lost its state gave out again', () => {
  test('the event matches the commit of its own store life, not the later one at the same revision', () => {
    expect(judge(reuse(), [{ at: 2, key: 'res:a', revision: 5, value: 'one' }], { at: 12, reason: 'COMPACTED' })).toEqual([])
  })

  test('so it does when the later commit was in flight across the restart, or the event arrived after the kill', () => {
    const inFlight = new HistoryBuilder().put(1, [0, 1], 'res:a', 'one', 5).fault('store-restart', 9, { start: 8e6 }).grant(2, [7, 11], 'lock:x', 1_000, 5)
    expect(judge(inFlight, [{ at: 2, key: 'res:a', revision: 5, value: 'one' }])).toEqual([])
    expect(judge(reuse(), [{ at: 8.5, key: 'res:a', revision: 5, value: 'one' }])).toEqual([])
  })

  test('without the restart the same history is two commits at one revision, and is reported', () => {
    const h = new HistoryBuilder().put(1, [0, 1], 'res:a', 'one', 5).grant(2, [10, 11], 'lock:x', 1_000, 5)
    expect(judge(h, [{ at: 2, key: 'res:a', revision: 5, value: 'one' }])).toEqual([expect.stringMatching(/^watch-mismatch: .*two acknowledged commits at revision 5 in one store life/)])
  })

  test("a durable store's restart keeps one life: a revision given twice across it is reported", () => {
    const h = new HistoryBuilder().put(1, [0, 1], 'res:a', 'one', 5).fault('store-restart', 9, { start: 8e6, durable: true }).grant(2, [10, 11], 'lock:x', 1_000, 5)
    expect(judge(h, [{ at: 2, key: 'res:a', revision: 5, value: 'one' }])).toEqual([expect.stringMatching(/^watch-mismatch: .*two acknowledged commits at revision 5 in one store life/)])
  })

  test('an event no commit of its life wrote is still a mismatch, restart or not', () => {
    // After the restart c2 writes res:b at 7; the watcher is told res:c at 7.
    const h = reuse().put(2, [12, 13], 'res:b', 'two', 7)
    expect(only('watch-mismatch', judge(h, [{ at: 14, key: 'res:c', revision: 7 }]))).toEqual([expect.stringMatching(/^watch-mismatch: .*a put of res:c at revision 7, which that commit did not write/)])
    // The right key with the wrong value.
    expect(only('watch-mismatch', judge(h, [{ at: 14, key: 'res:b', revision: 7, value: 'three' }]))).toEqual([expect.stringMatching(/^watch-mismatch: .*with value "three"; the commit wrote "two"/)])
    // Before the restart, with a reused revision after it: the event at 5 names a key c1 did not write.
    expect(only('watch-mismatch', judge(reuse(), [{ at: 2, key: 'res:z', revision: 5 }]))).toEqual([expect.stringMatching(/^watch-mismatch: .*a put of res:z at revision 5/)])
    // An expiry at a commit's revision of the same life.
    expect(only('watch-mismatch', judge(reuse(), [{ at: 2, key: 'res:a', revision: 5, type: 'expire' }]))).toEqual([expect.stringMatching(/^watch-mismatch: .*an expiry of res:a at revision 5, the revision of a commit \(c1.s\)/)])
  })

  test('two commits at one revision that are certainly in one life are reported even when a restart is elsewhere in the history', () => {
    const h = reuse().put(3, [12, 13], 'res:b', 'x', 5)
    expect(only('watch-mismatch', judge(h, [{ at: 14, key: 'res:b', revision: 5, value: 'x' }]))).toEqual([expect.stringMatching(/two acknowledged commits at revision 5 in one store life \(c2's and c3's\)/)])
  })

  test("a commit of a later life at a revision below the watcher's last is not a skip; one of the watcher's own life still is", () => {
    // c2 writes res:b at 4 after the restart; the watcher, ended by the restart at 5, cannot have had it.
    const h = reuse().put(2, [12, 13], 'res:b', 'two', 4)
    expect(judge(h, [{ at: 2, key: 'res:a', revision: 5, value: 'one' }], { at: 12, reason: 'COMPACTED' })).toEqual([])
    // A watcher that went on into the new life (it received c2's res:c at 6) and never delivered res:b at 4: a skip.
    const on = h.put(2, [14, 15], 'res:c', 'three', 6)
    expect(judge(on, [{ at: 2, key: 'res:a', revision: 5, value: 'one' }, { at: 16, key: 'res:c', revision: 6, value: 'three' }])).toEqual([
      expect.stringMatching(/^watch-skip: .*never delivered revision 4 \(res:b\)/),
    ])
    // Without the restart, res:b at 4 before the delivered 5 is a skip as it always was.
    const once = new HistoryBuilder().put(1, [0, 1], 'res:a', 'one', 5).put(2, [12, 13], 'res:b', 'two', 4)
    expect(judge(once, [{ at: 2, key: 'res:a', revision: 5, value: 'one' }])).toEqual([expect.stringMatching(/^watch-skip: .*revision 4 \(res:b\)/)])
  })
})
