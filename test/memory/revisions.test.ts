/**
 * The ends of the revision range in the local store (memory adapter, the
 * node's memory and SQLite stores): a store at Number.MAX_SAFE_INTEGER
 * refuses writes with RevisionExhaustedError instead of losing order, and a
 * store that lost its state moves above the revision a client says it has
 * seen, but never past SEEN_REVISION_LIMIT because a client said so.
 */
import { describe, expect, test } from 'vitest'
import { Client, RevisionExhaustedError, isZarisError, type WatchEvent } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { SEEN_REVISION_LIMIT } from '../../src/core/contract/adapter'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { localAdapter } from '../../src/adapters/kit/local-adapter'

const MAX = Number.MAX_SAFE_INTEGER

function storeAt(revision: number, clock = new ManualClock()) {
  return { clock, store: new LocalStore({ clock, initial: { revision, entries: [] } }) }
}

describe('a store at the end of its revisions', () => {
  test('takes commits up to Number.MAX_SAFE_INTEGER, then refuses with REVISION_EXHAUSTED and writes nothing', () => {
    const { store } = storeAt(MAX - 2)
    const events: WatchEvent[] = []
    store.watch('', { event: (e) => events.push(e), error: () => {} })
    const r1 = store.commit([], [{ type: 'set', key: 'a', value: 1 }])
    const r2 = store.commit([], [{ type: 'add', key: 'n', delta: 1 }])
    expect(r1.ok && r1.revision).toBe(MAX - 1)
    expect(r2.ok && r2.revision).toBe(MAX)
    let caught: unknown
    try {
      store.commit([], [{ type: 'set', key: 'b', value: 2 }])
    } catch (err) {
      caught = err
    }
    expect(caught).toBeInstanceOf(RevisionExhaustedError)
    expect(caught).toMatchObject({ code: 'REVISION_EXHAUSTED', message: expect.stringMatching(/largest safe integer/) })
    expect(store.get('b')).toBeUndefined()
    expect(store.revision).toBe(MAX)
    expect(events.map((e) => e.revision)).toEqual([MAX - 1, MAX])
    // A failed check is still answered: only a write needs a revision.
    expect(store.commit([{ key: 'a', revision: 1 }], [{ type: 'delete', key: 'a' }]).ok).toBe(false)
  })

  test('an exhausted store keeps answering reads; a due entry stays (its expiry would need a revision), no timer spins', async () => {
    const { clock, store } = storeAt(MAX - 1)
    store.commit([], [{ type: 'set', key: 'lock', value: null, ttl: 100, owner: 'o' }])
    await clock.advance(200)
    expect(store.get('lock')).toMatchObject({ owner: 'o', ttl: 0 })
    expect(store.list('').entries).toHaveLength(1)
    expect(clock.pending).toBe(0)
  })

  test('through a client: the error crosses as a typed ZarisError', async () => {
    const { store } = storeAt(MAX)
    const client = new Client(localAdapter('memory', store))
    const err = await client.put('k', 1).catch((e: unknown) => e)
    expect(isZarisError(err, 'REVISION_EXHAUSTED')).toBe(true)
    await expect(client.locks.acquire('lock:x')).rejects.toMatchObject({ code: 'REVISION_EXHAUSTED' })
    await client.close()
  })
})

describe('the seen-revision floor', () => {
  test('a commit from a client that saw revision 500 lands above it, even when its checks fail', () => {
    const { store } = storeAt(0)
    expect(store.commit([{ key: 'lock', created: 420 }], [{ type: 'set', key: 'lock', value: null }], 500).ok).toBe(false)
    expect(store.revision).toBe(500)
    const r = store.commit([], [{ type: 'set', key: 'k', value: 1 }])
    expect(r.ok && r.revision).toBe(501)
    // A floor below the store's revision changes nothing.
    const r2 = store.commit([], [{ type: 'set', key: 'k', value: 2 }], 3)
    expect(r2.ok && r2.revision).toBe(502)
  })

  test('a hostile huge floor moves a store to 2^52 at most: half the range stays for commits', () => {
    const { store } = storeAt(7)
    const r = store.commit([], [{ type: 'set', key: 'k', value: 1 }], MAX - 1)
    expect(r.ok && r.revision).toBe(SEEN_REVISION_LIMIT + 1)
    const again = store.commit([], [{ type: 'set', key: 'k', value: 2 }], MAX)
    expect(again.ok && again.revision).toBe(SEEN_REVISION_LIMIT + 2)
    expect(MAX - SEEN_REVISION_LIMIT).toBeGreaterThan(4e15)
  })

  test('a floor that is not a revision is refused', () => {
    const { store } = storeAt(0)
    for (const bad of [-1, 1.5, Number.NaN, MAX + 1]) {
      expect(() => store.commit([], [{ type: 'set', key: 'k', value: 1 }], bad)).toThrow(/seen must be a revision/)
    }
    expect(store.revision).toBe(0)
  })

  test('watchers of a lifted store see the jump as one more event, in order', () => {
    const { store } = storeAt(0)
    const events: WatchEvent[] = []
    store.commit([], [{ type: 'set', key: 'a', value: 1 }])
    store.watch('', { event: (e) => events.push(e), error: () => {} }, 0)
    store.commit([], [{ type: 'set', key: 'b', value: 1 }], 1_000)
    expect(events.map((e) => [e.key, e.revision])).toEqual([['a', 1], ['b', 1_001]])
  })
})
