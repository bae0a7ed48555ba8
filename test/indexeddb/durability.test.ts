/**
 * Which IndexedDB durability each kind of commit asks for (docs/browser.md,
 * "Durability"): whatever may start an owned life — its revision becomes a
 * fencing token, which must never go back across an OS crash — is strict; a
 * commit that only deletes is relaxed; anything else keeps the browser's
 * default. The transactions a real client makes are checked in Chromium
 * (durability.browser.test.ts).
 */
import { describe, expect, it } from 'vitest'
import type { Op } from '../../src/core/contract/adapter'
import { durabilityOf } from '../../src/adapters/indexeddb/transactions'

const take: Op = { type: 'set', key: 'lock:a', value: null, ttl: 30_000, owner: 'me' }
const put: Op = { type: 'set', key: 'data', value: 1 }
const del: Op = { type: 'delete', key: 'lock:a' }
const add: Op = { type: 'add', key: 'n', delta: 1 }

describe('durabilityOf', () => {
  it('is strict for a take, a renewal or a place in line (a set with an owner), wherever it is in the batch', () => {
    expect(durabilityOf([{ ops: [take] }])).toBe('strict')
    expect(durabilityOf([{ ops: [del, put, take] }])).toBe('strict')
    expect(durabilityOf([{ ops: [del] }, { ops: [put] }, { ops: [take] }])).toBe('strict')
    // An owner given as the empty string is still an owner.
    expect(durabilityOf([{ ops: [{ ...take, owner: '' }] }])).toBe('strict')
  })

  it('is relaxed for deletes only: releases, places in line left', () => {
    expect(durabilityOf([{ ops: [del] }])).toBe('relaxed')
    expect(durabilityOf([{ ops: [del, { type: 'delete', key: 'line:a' }] }, { ops: [del] }])).toBe('relaxed')
    // A commit that writes nothing (checks only) gives nothing up either.
    expect(durabilityOf([{ ops: [] }])).toBe('relaxed')
  })

  it("keeps the browser's default for data: a put without an owner, a counter, mixed with deletes", () => {
    expect(durabilityOf([{ ops: [put] }])).toBe('default')
    expect(durabilityOf([{ ops: [add] }])).toBe('default')
    expect(durabilityOf([{ ops: [del] }, { ops: [put] }])).toBe('default')
    expect(durabilityOf([{ ops: [put, del] }])).toBe('default')
    expect(durabilityOf([{ ops: [del, add] }])).toBe('default')
  })
})
