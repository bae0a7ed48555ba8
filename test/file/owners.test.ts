/**
 * The verdicts on registered processes (asked of the system at most every
 * FRESH_MS for a live one, once for a dead one) and the waiters for an
 * owner's end (a first look at once, then every OWNER_POLL_MS).
 */
import { afterEach, expect, test, vi } from 'vitest'
import { FRESH_MS, GoneWaiters, OWNER_POLL_MS, Verdicts } from '../../src/adapters/file/owners'
import type { OwnerRow } from '../../src/adapters/file/schema'

const here = { pid: 1, start: 's', host: 'h' }
const row = (pid: number, owner = `o${pid}`): OwnerRow => ({ owner, nonce: `n${pid}`, pid, start: 's', host: 'h' })

afterEach(() => void vi.useRealTimers())

test('a live process is asked about again once its verdict is FRESH_MS old, or at once when fresh is asked', () => {
  const asked: number[] = []
  const v = new Verdicts(here, (p) => (asked.push(p.pid), true))
  expect(v.gone([row(2), row(3)], 100)).toEqual([])
  expect(asked).toEqual([2, 3])
  expect(v.gone([row(2)], 100 + FRESH_MS - 1)).toEqual([])
  expect(asked).toEqual([2, 3])
  v.gone([row(2)], 100 + FRESH_MS)
  expect(asked).toEqual([2, 3, 2])
  v.gone([row(3)], 100 + FRESH_MS, true)
  expect(asked).toEqual([2, 3, 2, 3])
})

test('a dead process stays dead without asking again; each of its registrations is gone', () => {
  let alive = true
  let asks = 0
  const v = new Verdicts(here, () => (asks++, alive))
  expect(v.gone([row(2)], 0)).toEqual([])
  alive = false
  expect(v.gone([row(2), row(2, 'other')], FRESH_MS)).toEqual([row(2), row(2, 'other')])
  alive = true // a dead process cannot come back: not asked again
  expect(v.gone([row(2)], 10 * FRESH_MS, true)).toEqual([row(2)])
  expect(asks).toBe(2)
})

test('the same pid with another start time or host is another process', () => {
  const v = new Verdicts(here, (p) => p.start === 's')
  expect(v.gone([row(2), { ...row(2), start: 't' }, { ...row(2), host: 'elsewhere' }], 0)).toEqual([{ ...row(2), start: 't' }])
})

test('a look is due FRESH_MS after the last one', () => {
  const v = new Verdicts(here, () => true)
  expect(v.due(0)).toBe(true)
  v.gone([], 50)
  expect(v.due(50 + FRESH_MS - 1)).toBe(false)
  expect(v.due(50 + FRESH_MS)).toBe(true)
})

test('verdicts are bounded: past 4096 processes, they are forgotten and asked again', () => {
  let asks = 0
  const v = new Verdicts(here, () => (asks++, false))
  v.gone(Array.from({ length: 4096 }, (_, i) => row(i + 10)), 0)
  expect(asks).toBe(4096)
  v.gone([row(10)], 0)
  expect(asks).toBe(4096)
  v.gone([row(5000)], 0) // the 4097th: the memory is cleared
  v.gone([row(10)], 0)
  expect(asks).toBe(4098)
})

test('a waiter is looked at once at once, then every OWNER_POLL_MS, and resolves when its owner is gone', async () => {
  vi.useFakeTimers()
  const looks: string[] = []
  let gone = false
  const waiters = new GoneWaiters((owner) => (looks.push(owner), gone))
  let resolved = false
  void waiters.wait('a', new AbortController().signal).then(() => (resolved = true))
  await vi.advanceTimersByTimeAsync(0)
  expect(looks).toEqual(['a'])
  await vi.advanceTimersByTimeAsync(OWNER_POLL_MS)
  expect(looks).toEqual(['a', 'a'])
  gone = true
  await vi.advanceTimersByTimeAsync(OWNER_POLL_MS)
  expect(resolved).toBe(true)
  // Nobody waits: no more looks, no timer.
  expect(vi.getTimerCount()).toBe(0)
  await vi.advanceTimersByTimeAsync(5 * OWNER_POLL_MS)
  expect(looks).toHaveLength(3)
})

test('two waiters for one owner are answered by one look; a waiter for another owner waits on', async () => {
  vi.useFakeTimers()
  const looks: string[] = []
  const waiters = new GoneWaiters((owner) => (looks.push(owner), owner === 'a'))
  const done: string[] = []
  const signal = new AbortController().signal
  void waiters.wait('a', signal).then(() => done.push('a1'))
  void waiters.wait('a', signal).then(() => done.push('a2'))
  void waiters.wait('b', signal).then(() => done.push('b'))
  await vi.advanceTimersByTimeAsync(0)
  expect(done.sort()).toEqual(['a1', 'a2'])
  // Each first look is of its own owner, and none for an owner nobody waits for any more.
  expect(looks).toEqual(['a', 'b'])
  looks.length = 0
  await vi.advanceTimersByTimeAsync(OWNER_POLL_MS)
  expect(looks).toEqual(['b'])
  waiters.close()
  expect(vi.getTimerCount()).toBe(0)
})

test('an aborted wait rejects with the reason, and is looked at no more; a look that throws is tried again', async () => {
  vi.useFakeTimers()
  let calls = 0
  const waiters = new GoneWaiters(() => {
    calls++
    if (calls < 3) throw new Error('busy')
    return true
  })
  const stop = new AbortController()
  const aborted = waiters.wait('x', stop.signal)
  stop.abort(new Error('no longer'))
  await expect(aborted).rejects.toThrow('no longer')
  await expect(waiters.wait('x', AbortSignal.abort(new Error('already')))).rejects.toThrow('already')
  const waiting = waiters.wait('y', new AbortController().signal)
  await vi.advanceTimersByTimeAsync(3 * OWNER_POLL_MS)
  await expect(waiting).resolves.toBeUndefined()
  expect(calls).toBeGreaterThanOrEqual(3)
})
