/**
 * The entry helpers every JavaScript store shares (src/adapters/kit/write.ts):
 * when an entry counts as expired, what a read hands out, and the floor a
 * store that may have lost its state moves up to. The memory store's tests
 * cover them through commits; these pin the parts only other stores use
 * (IndexedDB reads `expired`, and calls the helpers without a copy).
 */
import { expect, test } from 'vitest'
import { expired, floorRevision, toEntry, written, type Stored } from '../../src/adapters/kit/write'

const entry = (over: Partial<Stored> = {}): Stored => ({ key: 'k', value: { n: 1 }, revision: 5, created: 3, ...over })

test('an entry expires at its deadline, not before; one without a TTL never does', () => {
  expect(expired(entry(), 1e15)).toBe(false)
  expect(expired(entry({ expiresAt: 100 }), 99)).toBe(false)
  expect(expired(entry({ expiresAt: 100 }), 100)).toBe(true)
  expect(expired(entry({ expiresAt: 100 }), 101)).toBe(true)
})

test('without a copy function, a read and a write hand the value through as it is', () => {
  const e = entry({ owner: 'c1', expiresAt: 150 })
  expect(toEntry(e, 100)).toEqual({ key: 'k', value: { n: 1 }, revision: 5, created: 3, owner: 'c1', ttl: 50 })
  expect(toEntry(e, 200).ttl).toBe(0)
  const w = written({ type: 'set', key: 'k', value: 'v', owner: 'c1' }, e, 6, 100)
  expect(w).toMatchObject({ value: 'v', revision: 6, created: 3, owner: 'c1' }) // same owner: the same life
})

test('the floor after a client says it has seen a revision: never below the store, 0 is a revision', () => {
  expect(floorRevision(7, undefined)).toBe(7)
  expect(floorRevision(7, 0)).toBe(7)
  expect(floorRevision(0, 0)).toBe(0)
  expect(floorRevision(7, 12)).toBe(12)
  expect(() => floorRevision(7, -1)).toThrow(/seen must be a revision/)
})
