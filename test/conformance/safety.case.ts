/**
 * The safety rules of issues 12, 16 and 19 on every adapter: the new-life
 * rule (a write that changes a key's owner starts a new life, so no plain
 * write can leave a lock's token alive), how holds learn they ended, the
 * `add` op (counters in one commit), and the one key rule (well-formed
 * UTF-16, length in UTF-16 code units, refused by the raw adapter too).
 * Runs in Node and the browser.
 */
import { expect } from 'vitest'
import { Client, type Adapter, type Lease, type Lock, type WatchEvent } from 'zaris'
import { commitCounter } from './counting'
import type { FixtureFactory, StoreFixture } from './fixture'
import { onFreshStore, rule, sleep, until, type Named } from './util'

const codeOf = (hold: Lock | Lease) => (hold.signal.reason as { code?: string } | undefined)?.code

/** Resolves the error `p` rejects with (fails if it resolves). */
async function refusal(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p
  } catch (err) {
    return err as { code?: string; message: string }
  }
  throw new Error('expected a rejection')
}

export function safetyCases(factory: FixtureFactory, t: Named): void {
  const withStore = onFreshStore(factory)
  const withAdapter = (fn: (a: Adapter) => Promise<void>) => withStore(async (f) => fn(await f.adapter()))

  t.group('safety: a plain write kills a lock token', () => {
    t('a plain put over a held lock: fenced writes FENCED, the holder LOST, the key keeps the plain value', withStore(async (f) => {
      const a = await f.connect({ id: 'a' })
      const b = await f.connect({ id: 'b' })
      const lock = (await a.locks.acquire('lock:1', { ttl: 200, autoRenew: false }))!
      await b.put('lock:1', 'clobbered')
      await expect(a.put('data', 'x', { fence: lock })).rejects.toMatchObject({ code: 'FENCED' })
      expect(lock.held).toBe(false)
      expect(lock.signal.aborted).toBe(true)
      expect(codeOf(lock)).toBe('LOST')
      await sleep(400) // past the TTL: the plain value has none
      await expect(a.put('data', 'y', { fence: lock })).rejects.toMatchObject({ code: 'FENCED' })
      expect(await a.get('data')).toBeUndefined()
      expect((await b.get('lock:1'))?.value).toBe('clobbered')
      // The key holds a plain value: nobody holds the lock, and nobody can take it until the value goes.
      expect(await b.locks.holder('lock:1')).toBeUndefined()
      expect(await b.locks.acquire('lock:1', { autoRenew: false })).toBeNull()
      expect(await b.delete('lock:1')).toBe(true)
      const next = (await b.locks.acquire('lock:1', { autoRenew: false }))!
      expect(next.token).toBeGreaterThan(lock.token)
      expect(await a.locks.holder('lock:1')).toMatchObject({ owner: 'b', token: next.token })
      await b.put('data', 'z', { fence: next })
    }))

    t('a plain delete of a held lock: fenced writes FENCED, the holder LOST, the next acquire works', withStore(async (f) => {
      const a = await f.connect({ id: 'a' })
      const b = await f.connect({ id: 'b' })
      const lock = (await a.locks.acquire('lock:1', { ttl: 5_000, autoRenew: false }))!
      expect(await b.delete('lock:1')).toBe(true)
      await expect(a.put('data', 'x', { fence: lock })).rejects.toMatchObject({ code: 'FENCED' })
      expect(lock.held).toBe(false)
      expect(codeOf(lock)).toBe('LOST')
      const next = (await b.locks.acquire('lock:1', { autoRenew: false }))!
      expect(next.token).toBeGreaterThan(lock.token)
      await expect(a.delete('data', { fence: lock })).rejects.toMatchObject({ code: 'FENCED' })
      expect(await lock.release()).toBe(false)
      expect(next.held).toBe(true)
    }))

    t('a plain put over a lease: its fenced writes FENCED, the lease LOST', withStore(async (f) => {
      const a = await f.connect({ id: 'a' })
      const b = await f.connect({ id: 'b' })
      const lease = (await a.leases.grant('presence:a', { ttl: 5_000, autoRenew: false, value: { tab: 'a' } }))!
      await b.put('presence:a', { tab: 'b' })
      await expect(a.put('data', 'x', { fence: lease })).rejects.toMatchObject({ code: 'FENCED' })
      expect(lease.held).toBe(false)
      expect(codeOf(lease)).toBe('LOST')
      expect(await lease.revoke()).toBe(false)
      expect((await b.get('presence:a'))?.value).toEqual({ tab: 'b' })
    }))

    t('a plain put over an election term: the leader is deposed (LOST), its fenced writes FENCED', withStore(async (f) => {
      const a = await f.connect({ id: 'a' })
      const b = await f.connect({ id: 'b' })
      const ea = a.election('leader:x', { ttl: 5_000, candidate: 'A' })
      const term = (await ea.campaign())!
      const deposed = new Promise((resolve) => ea.addEventListener('deposed', resolve, { once: true }))
      await b.put('leader:x', 'clobbered')
      await expect(a.put('data', 'x', { fence: term })).rejects.toMatchObject({ code: 'FENCED' })
      await deposed
      expect(ea.isLeader).toBe(false)
      expect(codeOf(term)).toBe('LOST')
      // Nobody leads while the plain value is there; once it goes, a candidate wins a newer term.
      const eb = b.election('leader:x', { ttl: 5_000, candidate: 'B' })
      const winning = eb.campaign()
      await sleep(100)
      expect(eb.isLeader).toBe(false)
      await b.delete('leader:x')
      const next = (await winning)!
      expect(next.token).toBeGreaterThan(term.token)
      await ea.close()
      await eb.close()
    }))

    t('a stolen lock: release and renew resolve false with STOLEN; the thief is untouched', withStore(async (f) => {
      const a = await f.connect({ id: 'a' })
      const b = await f.connect({ id: 'b' })
      const first = (await a.locks.acquire('lock:s', { ttl: 5_000, autoRenew: false }))!
      const second = (await a.locks.acquire('lock:t', { ttl: 5_000, autoRenew: false }))!
      const thief = (await b.locks.acquire('lock:s', { steal: true, autoRenew: false }))!
      const thief2 = (await b.locks.acquire('lock:t', { steal: true, autoRenew: false }))!
      expect(await first.release()).toBe(false)
      expect(codeOf(first)).toBe('STOLEN')
      expect(await second.renew()).toBe(false)
      expect(codeOf(second)).toBe('STOLEN')
      expect(first.held || second.held).toBe(false)
      expect(thief.held && thief2.held).toBe(true)
      expect(await a.locks.holder('lock:s')).toMatchObject({ owner: 'b', token: thief.token })
      await b.put('data', 1, { fence: thief })
      expect(await thief.renew()).toBe(true)
      expect(await thief.release()).toBe(true)
      expect(await thief2.release()).toBe(true)
    }))
  })

  t.group('safety: the new-life rule on the raw adapter', () => {
    t('a set keeps created only over the same owner; a change of owner either way starts a new life', withAdapter(async (a) => {
      const created = async (op: { value: number; owner?: string; fresh?: boolean }) => {
        const r = await a.commit([], [{ type: 'set', key: 'k', ...op }])
        if (!r.ok) throw new Error('commit failed')
        return [r.revision, r.entries[0]!.created, r.entries[0]!.owner] as const
      }
      const [r1, c1] = await created({ value: 1, owner: 'o1' })
      expect(c1, rule('new-life', 'a set on an absent key starts a life')).toBe(r1)
      const [, c2, o2] = await created({ value: 2, owner: 'o1' })
      expect([c2, o2], rule('new-life', 'a set by the same owner keeps created')).toEqual([c1, 'o1'])
      const [r3, c3] = await created({ value: 3, owner: 'o2' })
      expect(c3, rule('new-life', 'a set by another owner starts a new life')).toBe(r3)
      const [r4, c4, o4] = await created({ value: 4 })
      expect([c4, o4], rule('new-life', 'an ownerless set over an owned entry starts a new life')).toEqual([r4, undefined])
      const [, c5] = await created({ value: 5 })
      expect(c5, rule('new-life', 'an ownerless set over an ownerless entry keeps created')).toBe(c4)
      const [r6, c6] = await created({ value: 6, owner: 'o1' })
      expect(c6, rule('new-life', 'an owned set over an ownerless entry starts a new life')).toBe(r6)
      const [r7, c7] = await created({ value: 7, owner: 'o1', fresh: true })
      expect(c7, rule('new-life', 'a set with fresh starts a new life')).toBe(r7)
      expect(await a.get('k')).toMatchObject({ value: 7, created: r7, owner: 'o1' })
      // A fence on the first life no longer holds.
      expect((await a.commit([{ key: 'k', created: c1 }], [{ type: 'set', key: 'x', value: 1 }])).ok, rule('checks', 'a check on created passed for a life that ended')).toBe(false)
    }))

    t('watchers see the new life: a put whose created is its own revision', withAdapter(async (a) => {
      const events: WatchEvent[] = []
      const unwatch = await a.watch('nl/', { event: (e) => events.push(e), error: () => {} })
      await a.commit([], [{ type: 'set', key: 'nl/k', value: null, ttl: 5_000, owner: 'holder' }])
      await a.commit([], [{ type: 'set', key: 'nl/k', value: 'plain' }])
      await until(() => events.length >= 2)
      unwatch()
      expect(events[1]).toMatchObject({ type: 'put', key: 'nl/k', value: 'plain', created: events[1]!.revision })
      expect(events[1]!.owner).toBeUndefined()
      expect(events[0]!.created).toBe(events[0]!.revision)
    }))
  })

  t.group('safety: counters in one commit (the add op)', () => {
    t('add creates at 0 + delta, and over a live entry changes only the value: created, owner and TTL stay', withAdapter(async (a) => {
      const events: WatchEvent[] = []
      const unwatch = await a.watch('n/', { event: (e) => events.push(e), error: () => {} })
      const r1 = await a.commit([], [{ type: 'add', key: 'n/fresh', delta: 5 }])
      if (!r1.ok) throw new Error('commit failed')
      expect(r1.entries).toEqual([{ key: 'n/fresh', value: 5, revision: r1.revision, created: r1.revision }])
      const set = await a.commit([], [{ type: 'set', key: 'n/held', value: 10, ttl: 5_000, owner: 'o' }])
      if (!set.ok) throw new Error('commit failed')
      const r2 = await a.commit([], [{ type: 'add', key: 'n/held', delta: -3 }])
      if (!r2.ok) throw new Error('commit failed')
      expect(r2.entries[0]).toMatchObject({ key: 'n/held', value: 7, revision: r2.revision, created: set.revision, owner: 'o' })
      expect(r2.entries[0]!.ttl).toBeGreaterThan(3_000)
      expect(r2.entries[0]!.ttl).toBeLessThanOrEqual(5_000)
      const e = await a.get('n/held')
      expect(e).toMatchObject({ value: 7, created: set.revision, owner: 'o' })
      expect(e!.ttl).toBeGreaterThan(3_000)
      await until(() => events.length >= 3)
      unwatch()
      expect(events[2]).toMatchObject({ type: 'put', key: 'n/held', value: 7, revision: r2.revision, created: set.revision, owner: 'o' })
      // The lock-style fence on the entry's life still holds after the add.
      expect((await a.commit([{ key: 'n/held', created: set.revision }], [{ type: 'add', key: 'n/held', delta: 1 }])).ok).toBe(true)
    }))

    t('add over a non-number, or past the safe-integer range, throws INVALID_ARGUMENT naming the key and writes nothing', withAdapter(async (a) => {
      await a.commit([], [{ type: 'set', key: 'text', value: 'abc' }, { type: 'set', key: 'big', value: Number.MAX_SAFE_INTEGER }, { type: 'set', key: 'low', value: -Number.MAX_SAFE_INTEGER }])
      const text = await refusal(a.commit([], [{ type: 'set', key: 'other', value: 1 }, { type: 'add', key: 'text', delta: 1 }]))
      expect(text.code).toBe('INVALID_ARGUMENT')
      expect(text.message).toContain('"text"')
      const big = await refusal(a.commit([], [{ type: 'add', key: 'big', delta: 1 }]))
      expect(big).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('"big"') })
      expect(await refusal(a.commit([], [{ type: 'add', key: 'low', delta: -1 }]))).toMatchObject({ code: 'INVALID_ARGUMENT' })
      expect(await refusal(a.commit([], [{ type: 'add', key: 'x', delta: 1.5 }]))).toMatchObject({ code: 'INVALID_ARGUMENT' })
      expect(await a.get('other')).toBeUndefined()
      expect((await a.get('text'))?.value).toBe('abc')
      expect((await a.get('big'))?.value).toBe(Number.MAX_SAFE_INTEGER)
      const ok = await a.commit([], [{ type: 'add', key: 'big', delta: -1 }])
      expect(ok.ok && ok.entries[0]!.value).toBe(Number.MAX_SAFE_INTEGER - 1)
      // A failed check is a failed commit, not a refusal: checks come first.
      expect((await a.commit([{ key: 'text', revision: null }], [{ type: 'add', key: 'text', delta: 1 }])).ok).toBe(false)
    }))

    t('100 concurrent increments from 5 clients: exact, exactly 100 commits, none refused', withStore(async (f) => {
      const counted = await Promise.all(Array.from({ length: 5 }, async () => commitCounter(await f.adapter())))
      const clients = counted.map((c, i) => new Client(c.adapter, { id: `inc${i}` }))
      const values = await Promise.all(Array.from({ length: 100 }, (_, i) => clients[i % 5]!.counters.increment('jobs:done')))
      expect(await clients[0]!.counters.get('jobs:done')).toBe(100)
      expect(new Set(values).size).toBe(100)
      expect(Math.max(...values)).toBe(100)
      expect(counted.reduce((n, c) => n + c.commits(), 0)).toBe(100)
      expect(counted.reduce((n, c) => n + c.refused() + c.threw(), 0)).toBe(0)
      await expect(clients[1]!.counters.increment('jobs:done', Number.MAX_SAFE_INTEGER)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      await Promise.all(clients.map((c) => c.close()))
    }), 6)
  })

  t.group('safety: one key rule everywhere', () => {
    const lone = 'lock:\uD800x'
    t('a key with a lone surrogate is refused with INVALID_ARGUMENT by the raw adapter, for every member', withAdapter(async (a) => {
      const refused = async (p: Promise<unknown>) => expect((await refusal(p)).code).toBe('INVALID_ARGUMENT')
      await refused(a.get(lone))
      await refused(a.list('p:\uDC00'))
      await refused(a.commit([{ key: lone, revision: null }], []))
      await refused(a.commit([], [{ type: 'set', key: lone, value: null, ttl: 1_000, owner: 'o' }]))
      await refused(a.commit([], [{ type: 'delete', key: lone }]))
      await refused(a.commit([], [{ type: 'add', key: lone, delta: 1 }]))
      await refused(a.commit([], [{ type: 'set', key: 'k', value: 1, owner: 'o\uD800' }]))
      await refused(a.watch('w:\uD83D', { event: () => {}, error: () => {} }))
      expect(await a.list('')).toEqual({ entries: [], more: false })
    }))

    t('a key with a lone surrogate is refused by the client: no lock, no second holder', withStore(async (f) => {
      const c = await f.connect()
      await expect(c.locks.acquire(lone)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      await expect(c.put(lone, 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      expect(await c.list('lock:')).toEqual([])
    }))

    t('key length is counted in UTF-16 code units: 1024 are kept unchanged, 1025 refused', withAdapter(async (a) => {
      const key = '\u{1F600}'.repeat(512) // 512 code points, 1024 UTF-16 code units
      const r = await a.commit([], [{ type: 'set', key, value: 1 }])
      expect(r.ok).toBe(true)
      expect((await a.get(key))?.key).toBe(key)
      expect((await a.list('\u{1F600}')).entries.map((e) => e.key)).toEqual([key])
      expect((await refusal(a.commit([], [{ type: 'set', key: key + 'x', value: 1 }]))).code).toBe('INVALID_ARGUMENT')
      expect((await refusal(a.get(key + 'x'))).code).toBe('INVALID_ARGUMENT')
    }))
  })
}
