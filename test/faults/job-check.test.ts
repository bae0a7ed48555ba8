/**
 * The fleet checker (job-check.ts) on histories written by hand: a clean
 * run with a kill and its retry passes, and each broken promise is named.
 */
import { describe, expect, test } from 'vitest'
import type { JobRecord } from 'zaris'
import type { HistoryRecord } from './checker'
import { checkFleet, type Instance } from './job-check'

const JOB = 'job'
const note = (text: string, at: number, extra: Record<string, unknown>): HistoryRecord => ({ type: 'note', client: 'x', text, at, ...extra })
const fire = (slot: string, at = 0) => note('job-fire', at, { slot })
const run = (slot: string, token: number, at: number) => note('job-run', at, { slot, token })
const result = (slot: string, status: string, token: number, at: number) => note('job-result', at, { slot, status, token })
const write = (slot: string, token: number, revision: number, invokedAt: number): HistoryRecord => ({
  type: 'write',
  client: 'x',
  resource: `res:${JOB}@${slot}`,
  lock: `${JOB}@${slot}`,
  token,
  outcome: 'accepted',
  revision,
  invokedAt,
  at: invokedAt + 1,
})
const done = (by: string, token: number, attempt = 1): JobRecord => ({ state: 'done', by, token, attempt })

/** Two instances: `a` ran slot s with token 10 (two writes) and was killed; `b` retried it with token 20. */
function killedAndRetried(): { instances: Instance[]; finals: Map<string, JobRecord | undefined> } {
  const a: Instance = { name: 'a', killedAt: 150, records: [fire('s'), run('s', 10, 100), write('s', 10, 11, 110), write('s', 10, 12, 120)] }
  const b: Instance = { name: 'b', records: [fire('s', 130), run('s', 20, 2_200), write('s', 20, 21, 2_210), write('s', 20, 22, 2_220), result('s', 'ran', 20, 2_300)] }
  return { instances: [a, b], finals: new Map([['s', done('b', 20, 2)]]) }
}

const check = (instances: Instance[], finals: Map<string, JobRecord | undefined>) => checkFleet({ instances, finals, writes: 2, retries: 1 }, JOB)

describe('the fleet checker', () => {
  test('passes a kill and its retry, and counts them', () => {
    const { instances, finals } = killedAndRetried()
    const verdict = check(instances, finals)
    expect(verdict.violations).toEqual([])
    expect(verdict.stats).toMatchObject({ slots: 1, runs: 2, retried: 1, killedMidRun: 1, failedSlots: 0, results: { ran: 1 } })
  })

  test('unsettled: a fired slot with no record, or still started', () => {
    const { instances } = killedAndRetried()
    expect(check(instances, new Map()).violations).toEqual([expect.stringMatching(/^unsettled: slot s: record undefined/)])
    expect(check(instances, new Map([['s', { state: 'started', by: 'b', token: 20, attempt: 2 }]])).violations).toEqual([expect.stringMatching(/^unsettled: slot s: record \{"state":"started"/)])
  })

  test('attempts: a third run, or a record past 1 + retries', () => {
    const { instances } = killedAndRetried()
    instances[1]!.killedAt = 2_250
    instances.push({ name: 'c', records: [run('s', 30, 4_300), write('s', 30, 31, 4_310), write('s', 30, 32, 4_320)] })
    const violations = check(instances, new Map([['s', done('c', 30, 3)]])).violations
    expect(violations).toContainEqual(expect.stringMatching(/^attempts: slot s: 3 runs \(tokens 10, 20, 30\), record attempt 3/))
    expect(check(killedAndRetried().instances, new Map([['s', done('b', 20, 3)]])).violations).toEqual([expect.stringMatching(/^attempts: slot s: 2 runs .* record attempt 3/)])
  })

  test('retry-without-failure: a second run after a first that was neither killed nor failed', () => {
    const { instances, finals } = killedAndRetried()
    delete instances[0]!.killedAt
    expect(check(instances, finals).violations).toEqual([expect.stringMatching(/^retry-without-failure: slot s: run 10 was followed by run 20/)])
    instances[0]!.records.push(result('s', 'failed', 10, 1_000))
    expect(check(instances, finals).violations).toEqual([])
  })

  test('ran-twice: two calls resolved ran, or the one that did is not the run the record names', () => {
    const { instances, finals } = killedAndRetried()
    instances[0]!.records.push(result('s', 'ran', 10, 140))
    expect(check(instances, finals).violations).toEqual([expect.stringMatching(/^ran-twice: slot s: 2 calls resolved ran \(tokens 10, 20\)/)])
    const other = killedAndRetried()
    expect(check(other.instances, new Map([['s', done('a', 10, 2)]])).violations).toContainEqual(expect.stringMatching(/^ran-twice: slot s: 1 calls resolved ran \(tokens 20\)/))
  })

  test('done-incomplete: the run the record calls done has writes missing', () => {
    const { instances, finals } = killedAndRetried()
    instances[1]!.records = instances[1]!.records.filter((r) => !(r.type === 'write' && r.revision === 22))
    expect(check(instances, finals).violations).toEqual([expect.stringMatching(/^done-incomplete: slot s: the record says run 20 is done, with 1 of 2 writes accepted/)])
  })

  test('interleaved: an earlier run wrote after a later run did (by revision)', () => {
    const { instances, finals } = killedAndRetried()
    instances[0]!.records.push(write('s', 10, 23, 140))
    expect(check(instances, finals).violations).toEqual([expect.stringMatching(/^interleaved: slot s: run 10 wrote at revision 23 after run 20 at 22/)])
  })

  test('overlap: an earlier run wrote, accepted, after the later run started', () => {
    const { instances, finals } = killedAndRetried()
    instances[0]!.killedAt = 2_500
    instances[0]!.records.push(write('s', 10, 13, 2_205))
    expect(check(instances, finals).violations).toEqual([expect.stringMatching(/^overlap: slot s: run 10's write sent 5.0 ms after run 20 started was accepted \(revision 13\)/)])
  })

  test('foreign-write: an accepted write with a token that is no run of the slot', () => {
    const { instances, finals } = killedAndRetried()
    instances[1]!.records.push(write('s', 99, 30, 2_400))
    expect(check(instances, finals).violations).toEqual([expect.stringMatching(/^foreign-write: slot s: a write with token 99 accepted at revision 30/)])
  })
})
