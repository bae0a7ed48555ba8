/**
 * The fault suite's checker on hand-made histories: a clean one passes, and
 * each kind of bad history is caught, with the records that show it — the
 * piecemeal checks kept for measuring stores that do not keep the contract,
 * and assertHistory, what every fault test calls.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import { HistoryBuilder } from '../lincheck/builder'
import { againOnClockStep, assertHistory, checkHistory, CLOCK_STEP_MS, formatViolations, type HistoryRecord } from './checker'

/** A clean run: two holders in turn, each writes once fenced, a watcher sees everything. */
function clean(): HistoryRecord[] {
  return [
    { type: 'watch-start', client: 'w', watch: 'main', prefix: '', from: 0, at: 0 },
    { type: 'acquire', client: 'a', lock: 'lock:r', token: 1, invokedAt: 1, at: 2 },
    { type: 'write', client: 'a', resource: 'r', lock: 'lock:r', token: 1, outcome: 'accepted', revision: 2, invokedAt: 3, at: 4 },
    { type: 'write', client: 'a', resource: 'r', lock: 'lock:r', token: 1, outcome: 'accepted', revision: 3, invokedAt: 5, at: 6 },
    { type: 'release', client: 'a', lock: 'lock:r', token: 1, released: true, invokedAt: 7, at: 8 },
    { type: 'acquire', client: 'b', lock: 'lock:r', token: 5, invokedAt: 3, at: 12 },
    { type: 'write', client: 'b', resource: 'r', lock: 'lock:r', token: 5, outcome: 'accepted', revision: 6, invokedAt: 13, at: 14 },
    { type: 'write', client: 'a', resource: 'r', lock: 'lock:r', token: 1, outcome: 'refused', invokedAt: 15, at: 16 },
    { type: 'loss', client: 'b', lock: 'lock:r', token: 5, reason: 'EXPIRED', at: 30 },
    // 4 is a release (a delete), 7 an expiry: revisions the history does not know of, delivered anyway.
    ...[1, 2, 3, 4, 5, 6, 7].map((revision): HistoryRecord => ({ type: 'watch-event', client: 'w', watch: 'main', key: revision === 2 || revision === 3 || revision === 6 ? 'r' : 'lock:r', kind: 'put', revision, at: 20 + revision })),
    { type: 'watch-end', client: 'w', watch: 'main', reason: 'closed', through: 7, at: 40 },
    { type: 'final', resource: 'r', revision: 6, token: 5, at: 50 },
  ]
}

function kinds(history: HistoryRecord[]): string[] {
  return checkHistory(history).violations.map((v) => v.kind)
}

describe('the history checker', () => {
  test('passes a clean history and counts it', () => {
    const r = checkHistory(clean())
    expect(r.violations).toEqual([])
    expect(r.ok).toBe(true)
    expect(r.stats).toMatchObject({ acquisitions: 2, accepted: 3, refused: 1, losses: 1, releases: 1, watchEvents: 7, unhandled: 0 })
  })

  test('catches a stale write: an accepted write with a smaller token after a larger one', () => {
    const h = clean().filter((r) => r.type !== 'final')
    h.push({ type: 'write', client: 'a', resource: 'r', lock: 'lock:r', token: 1, outcome: 'accepted', revision: 8, invokedAt: 31, at: 32 })
    const r = checkHistory(h)
    // Both rules see it: a smaller token after a larger one, and a write after the release.
    expect(r.violations.map((v) => v.kind)).toEqual(['stale-write', 'stale-write'])
    expect(r.violations[0]!.message).toContain('token 1 was accepted at revision 8, after b')
    expect(formatViolations(r)).toContain('"revision":8')
  })

  test('the stale check follows store order (revisions), not the order records arrive in', () => {
    const h = clean()
    // Recorded late, but accepted at revision 5 < 6: no violation by itself...
    h.push({ type: 'write', client: 'c', resource: 'r', lock: 'lock:r', token: 4, outcome: 'accepted', revision: 5.5, invokedAt: 9, at: 10 })
    expect(kinds(h)).not.toContain('stale-write')
    // ...while a token 4 accepted after token 5 (revision 7) is one.
    const bad = clean()
    bad.push({ type: 'write', client: 'c', resource: 'r', lock: 'lock:r', token: 4, outcome: 'accepted', revision: 7, invokedAt: 9, at: 31 })
    expect(kinds(bad)).toContain('stale-write')
  })

  test('catches two clients writing with one token', () => {
    const h = clean().filter((r) => r.type !== 'final')
    h.push({ type: 'write', client: 'c', resource: 'r', lock: 'lock:r', token: 5, outcome: 'accepted', revision: 8, invokedAt: 31, at: 32 })
    const r = checkHistory(h)
    expect(r.violations.map((v) => v.kind)).toEqual(['stale-write'])
    expect(r.violations[0]!.message).toContain('two holders with one token')
  })

  test('catches a write accepted after its holder released the lock', () => {
    const h = clean().filter((r) => r.type !== 'final')
    h.push({ type: 'write', client: 'a', resource: 'r2', lock: 'lock:r', token: 1, outcome: 'accepted', revision: 9, invokedAt: 31, at: 32 })
    const r = checkHistory(h)
    expect(r.violations.map((v) => v.kind)).toEqual(['stale-write'])
    expect(r.violations[0]!.message).toContain('after it had released that lock')
  })

  test('catches a token granted twice', () => {
    const h = clean()
    h.push({ type: 'acquire', client: 'c', lock: 'lock:r', token: 5, invokedAt: 11, at: 12 })
    expect(kinds(h)).toContain('double-grant')
  })

  test('catches a token that went backwards, per client and in real time across clients', () => {
    const own = clean()
    own.push({ type: 'acquire', client: 'b', lock: 'lock:other', token: 4, invokedAt: 40, at: 41 })
    expect(kinds(own)).toContain('token-regression')

    // c asked after b had its token 5, and got 4: a store that lost its counter.
    const cross = clean()
    cross.push({ type: 'acquire', client: 'c', lock: 'lock:s', token: 4, invokedAt: 20, at: 21 })
    const r = checkHistory(cross)
    expect(r.violations.map((v) => v.kind)).toEqual(['token-regression'])
    expect(r.violations[0]!.message).toContain('invoked after b had already been granted token 5')

    // Overlapping in time, any order is fine.
    const overlapping = clean()
    overlapping.push({ type: 'acquire', client: 'c', lock: 'lock:s', token: 4, invokedAt: 11, at: 21 })
    expect(kinds(overlapping)).toEqual([])
  })

  test('catches an acknowledged revision that went backwards or repeated', () => {
    const h = clean()
    h.push({ type: 'write', client: 'c', resource: 'other', outcome: 'accepted', revision: 4, invokedAt: 20, at: 21 })
    expect(kinds(h)).toEqual(['revision-regression'])
    const twice = clean()
    twice.push({ type: 'write', client: 'c', resource: 'other', outcome: 'accepted', revision: 6, invokedAt: 13, at: 14 })
    expect(kinds(twice)).toContain('revision-regression')
  })

  test('catches a watch that reordered, doubled or skipped', () => {
    const reordered = clean().map((r) => (r.type === 'watch-event' && (r.revision === 5 || r.revision === 6) ? { ...r, revision: 11 - r.revision } : r))
    expect(kinds(reordered)).toEqual(['watch-reorder'])

    const doubled = clean()
    doubled.splice(doubled.length - 2, 0, { type: 'watch-event', client: 'w', watch: 'main', key: 'r', kind: 'put', revision: 7, at: 31 })
    expect(kinds(doubled)).toEqual(['watch-double'])

    // Revision 3 (an accepted write to r) never reached the watcher.
    const skipped = clean().filter((r) => !(r.type === 'watch-event' && r.revision === 3))
    const r = checkHistory(skipped)
    expect(r.violations.map((v) => v.kind)).toEqual(['watch-skip'])
    expect(r.violations[0]!.message).toContain('never delivered revision 3')

    // Missing events at the end count once the owner said it waited through them.
    const tail = clean().filter((r) => !(r.type === 'watch-event' && r.revision >= 6))
    expect(kinds(tail)).toEqual(['watch-skip'])
    // An honest end (COMPACTED) does not expect what came after it.
    const compacted = tail.map((r) => (r.type === 'watch-end' ? { ...r, reason: 'COMPACTED', through: undefined } : r))
    expect(kinds(compacted)).toEqual([])
  })

  test('a watch on a prefix expects only the keys under it', () => {
    const h = clean().filter((r) => !(r.type === 'watch-event' && [2, 3, 6].includes(r.revision)))
    h.push({ type: 'watch-start', client: 'w', watch: 'locks', prefix: 'lock:', from: 0, at: 0 })
    for (const revision of [1, 5]) h.push({ type: 'watch-event', client: 'w', watch: 'locks', key: 'lock:r', kind: 'put', revision, at: 40 })
    const r = checkHistory(h)
    // 'main' (prefix '') misses 2, 3 and 6; 'locks' misses nothing.
    expect(r.violations.map((v) => [v.kind, v.message.slice(0, 10)])).toEqual([
      ['watch-skip', 'watch w/ma'],
      ['watch-skip', 'watch w/ma'],
      ['watch-skip', 'watch w/ma'],
    ])
  })

  test('catches a lost acknowledged write', () => {
    const h = clean().map((r) => (r.type === 'final' ? { ...r, revision: 3, token: 1 } : r))
    expect(kinds(h)).toEqual(['lost-write'])
    const absent = clean().map((r) => (r.type === 'final' ? { ...r, revision: 0, token: undefined } : r))
    expect(kinds(absent)).toEqual(['lost-write'])
    const replaced = clean().map((r) => (r.type === 'final' ? { ...r, token: 4 } : r))
    expect(kinds(replaced)).toEqual(['lost-write'])
  })

  test('catches an unhandled rejection in a client', () => {
    const h = clean()
    h.push({ type: 'unhandled', client: 'b', error: 'UnavailableError: no zaris node answered commit', at: 33 })
    expect(kinds(h)).toEqual(['unhandled'])
  })

  test('unknown and refused writes never count as accepted', () => {
    const h = clean()
    h.push({ type: 'write', client: 'a', resource: 'r', lock: 'lock:r', token: 1, outcome: 'unknown', invokedAt: 31, at: 32 })
    h.push({ type: 'write', client: 'a', resource: 'r', lock: 'lock:r', token: 1, outcome: 'refused', invokedAt: 33, at: 34 })
    expect(kinds(h)).toEqual([])
  })

  test('a holder paused past its TTL: a fenced write sent after resuming must be refused, and its signal must abort', () => {
    // b holds token 5 with a 10 ms TTL and is paused from 15 to 40 (25 ms); its loss is recorded at 30 in clean().
    const pause: HistoryRecord = { type: 'pause', client: 'b', lock: 'lock:r', token: 5, ttl: 10, at: 15, until: 40 }
    const stale: HistoryRecord = { type: 'write', client: 'b', resource: 'r2', lock: 'lock:r', token: 5, outcome: 'accepted', revision: 9, invokedAt: 41, at: 42 }
    expect(checkHistory([...clean(), pause]).stats.pauses).toBe(1)
    expect(kinds([...clean(), pause])).toEqual([])
    expect(kinds([...clean(), pause, { ...stale, outcome: 'refused', revision: undefined }])).toEqual([])
    const r = checkHistory([...clean(), pause, stale])
    expect(r.violations.map((v) => v.kind)).toEqual(['stale-write'])
    expect(r.violations[0]!.message).toContain('paused 25 ms')
    // Sent before the pause ended (before it was frozen, say): not the pause's business.
    expect(kinds([...clean(), pause, { ...stale, invokedAt: 14 }])).toEqual([])
    // A pause within the TTL proves nothing.
    expect(kinds([...clean(), { ...pause, until: 24 }, stale])).toEqual([])
    // No loss recorded for the paused hold: its signal never aborted.
    expect(kinds([...clean().filter((x) => x.type !== 'loss'), pause])).toEqual(['missed-loss'])
  })
})

describe('assertHistory: the store operations through the linearizability checker, the observations through what remains here', () => {
  // Failing histories are written to files: here, to a directory of this test's own.
  const dir = mkdtempSync(join(tmpdir(), 'zaris-checker-test-'))
  const before = process.env.ZARIS_HISTORY_DIR
  beforeAll(() => void (process.env.ZARIS_HISTORY_DIR = dir))
  afterAll(() => {
    if (before === undefined) delete process.env.ZARIS_HISTORY_DIR
    else process.env.ZARIS_HISTORY_DIR = before
    rmSync(dir, { recursive: true, force: true })
  })
  const ops = () =>
    new HistoryBuilder()
      .grant(1, [0, 1], 'lock:r', 1_000, 1)
      .fenced(1, [2, 3], 'lock:r', 1, 'res:r', 'a', 2)
      .release(1, [4, 5], 'lock:r', 1, 3)
      .grant(2, [6, 7], 'lock:r', 1_000, 4)
  const observed: HistoryRecord[] = [{ type: 'acquire', client: 'c1', lock: 'lock:r', token: 1, invokedAt: 0, at: 1 }]

  test('a clean run passes, with its figures', () => {
    const stats = assertHistory(observed, ops().events)
    expect(stats.operations).toBe(4)
    expect(stats.unknownOutcome).toBe(0)
  })

  test('a stale fenced write among the operations fails it, naming the history file', () => {
    const bad = ops().fenced(1, [8, 9], 'lock:r', 1, 'res:r', 'stale', 5).events
    expect(() => assertHistory(observed, bad)).toThrow(/NOT linearizable[\s\S]*fenced put res:r="stale" by lock:r token 1[\s\S]*the history \(Jepsen shape\): \S+\.jsonl/)
  })

  test('a watcher that skipped a revision fails it', () => {
    const watch: HistoryRecord[] = [
      { type: 'watch-start', client: 'w', watch: 'main', prefix: 'res:', from: 0, at: 0 },
      { type: 'watch-end', client: 'w', watch: 'main', reason: 'closed', through: 4, at: 10 },
    ]
    expect(() => assertHistory([...observed, ...watch], ops().events)).toThrow(/watch-skip: .*never delivered revision 2 \(res:r\)/)
  })

  test('a holder paused past its TTL that was never told fails it (missed-loss); an unhandled rejection fails it', () => {
    const pause: HistoryRecord = { type: 'pause', client: 'c1', lock: 'lock:r', token: 1, ttl: 100, at: 10, until: 500 }
    expect(() => assertHistory([...observed, pause], ops().events)).toThrow(/missed-loss/)
    expect(() => assertHistory([...observed, { type: 'unhandled', client: 'c1', error: 'boom', at: 3 }], ops().events)).toThrow(/unhandled: c1: boom/)
  })

  test('acquisitions with no recorded operations are refused: a client was not recorded', () => {
    expect(() => assertHistory(observed, [])).toThrow(/no store operations/)
  })
})

describe('againOnClockStep (the wall clock stepped by a fake Date.now)', () => {
  let offset = 0
  const real = Date.now.bind(Date)
  beforeAll(() => {
    vi.spyOn(Date, 'now').mockImplementation(() => real() + offset)
  })
  afterAll(() => vi.restoreAllMocks())

  test('a failure with no step is thrown at once', async () => {
    const runs: number[] = []
    await expect(againOnClockStep(async (attempt) => (runs.push(attempt), Promise.reject(new Error('not linearizable'))))).rejects.toThrow('not linearizable')
    expect(runs).toEqual([0])
  })

  test('a failure while the wall clock stepped is void: the run goes again, and its pass is the verdict', async () => {
    const runs: number[] = []
    await againOnClockStep(async (attempt) => {
      runs.push(attempt)
      if (attempt === 0) {
        offset += CLOCK_STEP_MS + 25_000
        throw new Error('not linearizable')
      }
    })
    expect(runs).toEqual([0, 1])
  })

  test('a second failure is thrown, with the step when there was one again', async () => {
    const run = againOnClockStep(async () => {
      offset += CLOCK_STEP_MS * 2
      throw new Error('not linearizable')
    })
    await expect(run).rejects.toThrow(/stepped \d+ ms .* again[\s\S]*not linearizable/)
  })
})
