/**
 * The lock family on one adapter, with contending clients: shared and
 * exclusive locks, semaphores, `run`, `query` and several keys at once.
 * Safety is judged from a recorded history of hold windows (windows.ts);
 * every test also asserts that what it measures happened (shared holds did
 * overlap, the semaphore did fill up), so a test that raced nothing fails.
 */
import { describe, expect } from 'vitest'
import { isZarisError, type Client, type Hold, type Lock, type LockMode } from 'zaris'
import type { FixtureFactory, StoreFixture } from './fixture'
import { onFreshStore, sleep, until, type Named } from './util'
import { WindowLog } from './windows'

export function familyCases(factory: FixtureFactory, t: Named): void {
  const withStore = onFreshStore(factory)
  const clientsOf = (f: StoreFixture, n: number, base = 'c') => Promise.all(Array.from({ length: n }, (_, i) => f.connect({ id: `${base}${i}` })))
  const code = (s: AbortSignal) => (s.reason as { code?: string } | undefined)?.code

  /**
   * A client takes a hold that it does not renew, then "dies" (its adapter
   * goes, no release is sent); another client waiting for it gets it at the
   * hold's TTL — or at once, on a store that knows the client is gone.
   */
  async function freedAtTtl(f: StoreFixture, take: (c: Client, ttl: number) => Promise<Hold | null>, retake: (c: Client) => Promise<Hold | null>) {
    const [a, b] = await clientsOf(f, 2)
    const raw = await f.adapter()
    const ttl = 600
    const first = await take(a!, ttl)
    expect(first).not.toBeNull()
    const taken = performance.now()
    await a!.adapter.close()
    const next = await retake(b!)
    const elapsed = performance.now() - taken
    expect(next).not.toBeNull()
    expect(next!.token).toBeGreaterThan(first!.token)
    expect(elapsed).toBeLessThan(ttl + 3_000)
    if (!raw.capabilities?.ownerGone) expect(elapsed).toBeGreaterThanOrEqual(ttl * 0.9)
    await (next as Lock).release()
  }

  describe('shared locks', () => {
    t('shared holders overlap and never overlap an exclusive one (6 clients, mixed modes)', withStore(async (f) => {
      const clients = await clientsOf(f, 6)
      const log = new WindowLog()
      await Promise.all(clients.map(async (c, i) => {
        for (let r = 0; r < 12; r++) {
          const mode: LockMode = (i + r) % 4 === 0 ? 'exclusive' : 'shared'
          const lock = await c.locks.acquire('rw', { mode, ttl: 20_000, wait: 60_000, autoRenew: false })
          if (!lock) throw new Error(`${c.id} waited in vain`)
          expect(lock.mode).toBe(mode)
          const close = log.open('rw', mode, c.id, lock.token)
          await sleep(3 + ((i * 7 + r * 3) % 10))
          close()
          expect(await lock.release()).toBe(true)
        }
      }))
      const report = log.check()
      expect(report.violations).toEqual([])
      expect(report.maxShared).toBeGreaterThanOrEqual(2)
      expect(log.windows.filter((w) => w.mode === 'exclusive')).toHaveLength(18)
      // The last shared holder out ended the group: the lock key is free.
      expect(await clients[0]!.get('rw')).toBeUndefined()
    }), 120_000)

    t('an exclusive waiter is served while new shared requests keep arriving', withStore(async (f) => {
      const readers = await clientsOf(f, 4, 'r')
      const [writer] = await clientsOf(f, 1, 'w')
      const log = new WindowLog()
      let stop = false
      let tries = 0
      const stream = readers.map(async (c, i) => {
        await sleep(i * 15)
        while (!stop) {
          tries++
          const lock = await c.locks.acquire('feed', { mode: 'shared', ttl: 20_000, wait: 20_000 })
          if (!lock) throw new Error('a reader waited in vain')
          const close = log.open('feed', 'shared', c.id, lock.token)
          await sleep(40)
          close()
          await lock.release()
        }
      })
      await until(() => log.windows.length >= 4)
      const triesBefore = tries
      const started = performance.now()
      const lock = await writer!.locks.acquire('feed', { ttl: 20_000, wait: 15_000 })
      expect(lock).not.toBeNull() // without the intent the readers would hold the key until the wait ran out
      const waited = performance.now() - started
      const close = log.open('feed', 'exclusive', writer!.id, lock!.token)
      await sleep(20)
      close()
      await lock!.release()
      const sharedAfter = log.windows.length
      await until(() => log.windows.length >= sharedAfter + 2)
      stop = true
      await Promise.all(stream)
      expect(tries - triesBefore).toBeGreaterThan(2) // shared requests kept coming while it waited
      expect(waited).toBeLessThan(10_000)
      expect(log.check().violations).toEqual([])
    }), 60_000)

    t('a fenced write with a shared hold is refused once that hold is gone; a steal ends every shared hold', withStore(async (f) => {
      const [a, b, c] = await clientsOf(f, 3)
      const sa = (await a!.locks.acquire('doc', { mode: 'shared', ttl: 20_000 }))!
      const sb = (await b!.locks.acquire('doc', { mode: 'shared', ttl: 20_000 }))!
      expect(sb.token).toBeGreaterThan(sa.token)
      await a!.put('doc:body', 'read by a', { fence: sa })
      expect(await sa.release()).toBe(true)
      await expect(a!.put('doc:body', 'stale', { fence: sa })).rejects.toMatchObject({ code: 'FENCED' })
      const signal = sb.signal
      const thief = (await c!.locks.acquire('doc', { steal: true, ttl: 20_000 }))!
      await expect(b!.put('doc:body', 'stale', { fence: sb })).rejects.toMatchObject({ code: 'FENCED' })
      await until(() => signal.aborted)
      expect(code(signal)).toBe('STOLEN')
      expect(await sb.renew()).toBe(false)
      expect(await c!.locks.holder('doc')).toMatchObject({ owner: 'c2', token: thief.token, mode: 'exclusive' })
      await c!.put('doc:body', 'by the thief', { fence: thief })
      await thief.release()
      await expect(a!.locks.acquire('doc', { mode: 'shared', steal: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    }))

    t('a shared holder that stops renewing frees its share at its TTL (at once where the store knows its client is gone)', withStore(async (f) => {
      await freedAtTtl(f, (c, ttl) => c.locks.acquire('crash', { mode: 'shared', ttl, autoRenew: false }), (c) => c.locks.acquire('crash', { ttl: 20_000, wait: 10_000 }))
    }), 30_000)
  })

  describe('semaphores', () => {
    t('a semaphore never has more than limit live permits (8 clients, limit 3)', withStore(async (f) => {
      const clients = await clientsOf(f, 8)
      const log = new WindowLog()
      await Promise.all(clients.map(async (c, i) => {
        for (let r = 0; r < 8; r++) {
          const permit = await c.semaphores.acquire('uploads', { limit: 3, ttl: 20_000, wait: 60_000, autoRenew: false })
          if (!permit) throw new Error(`${c.id} waited in vain`)
          const close = log.open('uploads', 'permit', c.id, permit.token)
          await sleep(3 + ((i * 5 + r * 3) % 10))
          close()
          expect(await permit.release()).toBe(true)
        }
      }))
      const report = log.check(3)
      expect(report.violations).toEqual([])
      expect(report.maxPermits).toBe(3)
      expect(await clients[0]!.semaphores.holders('uploads')).toEqual([])
    }), 120_000)

    t('permits: null when full, holders by slot, a freed permit goes to the waiter, a fenced write with a permit', withStore(async (f) => {
      const [a, b, c] = await clientsOf(f, 3)
      const pa = (await a!.semaphores.acquire('sem', { limit: 2, ttl: 20_000 }))!
      const pb = (await b!.semaphores.acquire('sem', { limit: 2, ttl: 20_000 }))!
      expect(await c!.semaphores.acquire('sem', { limit: 2 })).toBeNull()
      expect(await c!.semaphores.holders('sem')).toMatchObject([
        { owner: 'c0', slot: 0, limit: 2, token: pa.token },
        { owner: 'c1', slot: 1, limit: 2, token: pb.token },
      ])
      const waiting = c!.semaphores.acquire('sem', { limit: 2, ttl: 20_000, wait: 10_000 })
      await sleep(100)
      await c!.put('sem:res', 1, { fence: pa })
      expect(await pa.release()).toBe(true)
      const pc = (await waiting)!
      expect(pc.token).toBeGreaterThan(pb.token)
      await expect(a!.put('sem:res', 2, { fence: pa })).rejects.toMatchObject({ code: 'FENCED' })
      // A client asking with limit 1 takes only slot 0, which is held: it waits (the rule for mixed limits).
      expect(await a!.semaphores.acquire('sem', { limit: 1 })).toBeNull()
      await pb.release()
      await pc.release()
      await expect(a!.semaphores.acquire('sem', { limit: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    }))

    t('a permit holder that stops renewing frees its permit at its TTL (at once where the store knows its client is gone)', withStore(async (f) => {
      await freedAtTtl(f, (c, ttl) => c.semaphores.acquire('crash-sem', { limit: 1, ttl, autoRenew: false }), (c) => c.semaphores.acquire('crash-sem', { limit: 1, ttl: 20_000, wait: 10_000 }))
    }), 30_000)
  })

  describe('run', () => {
    t('run releases on throw, calls back with null when not had, and rejects when the hold ends while it runs', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      let seen: Lock | null = null
      await expect(a!.locks.run('job', { ttl: 20_000 }, async (lock) => {
        seen = lock
        throw new Error('job failed')
      })).rejects.toThrow('job failed')
      expect(code(seen!.signal)).toBe('RELEASED')
      expect(await b!.locks.holder('job')).toBeUndefined()
      expect(await a!.locks.run('job', {}, async (lock) => lock!.token)).toBeGreaterThan(seen!.token)
      const held = (await b!.locks.acquire('job', { ttl: 20_000 }))!
      expect(await a!.locks.run('job', { wait: 50 }, (lock) => (lock === null ? 'skipped' : 'ran'))).toBe('skipped')
      await held.release()
      const stolen = a!.locks.run('job', { ttl: 20_000 }, async (lock) => {
        await b!.locks.acquire('job', { steal: true })
        await until(() => lock!.signal.aborted)
        return 'done'
      })
      await expect(stolen).rejects.toMatchObject({ code: 'STOLEN' })
      expect(await a!.semaphores.run('sem-run', { limit: 1 }, async (p) => p!.limit)).toBe(1)
      expect(await b!.semaphores.holders('sem-run')).toEqual([])
    }))
  })

  describe('query', () => {
    t('query shows who holds and the line in order, with modes', withStore(async (f) => {
      const [h, w1, w2, w3] = await clientsOf(f, 4)
      const lock = (await h!.locks.acquire('q:a', { ttl: 20_000 }))!
      const waits: Array<Promise<Lock | null>> = []
      for (const [c, mode] of [[w1, 'exclusive'], [w2, 'shared'], [w3, 'exclusive']] as const) {
        waits.push(c!.locks.acquire('q:a', { mode, ttl: 20_000, wait: 20_000 }))
        await until(async () => (await h!.locks.query('q:')).pending.length === waits.length)
      }
      const q = await h!.locks.query('q:')
      expect(q.held).toMatchObject([{ key: 'q:a', mode: 'exclusive', owner: 'c0', token: lock.token }])
      expect(q.pending.map((p) => [p.owner, p.mode])).toEqual([['c1', 'exclusive'], ['c2', 'shared'], ['c3', 'exclusive']])
      expect(q.pending.every((p, i) => i === 0 || p.since > q.pending[i - 1]!.since)).toBe(true)
      expect((await h!.locks.query('other:')).pending).toEqual([])
      await lock.release()
      for (const w of waits) await (await w)!.release()
      await until(async () => {
        const after = await h!.locks.query('q:')
        return after.held.length === 0 && after.pending.length === 0
      })
    }), 30_000)
  })

  describe('several keys', () => {
    t('multi-key acquires of overlapping key sets by 8 clients finish with no deadlock and no overlap', withStore(async (f) => {
      const clients = await clientsOf(f, 8)
      const keys = ['m:0', 'm:1', 'm:2', 'm:3', 'm:4']
      const log = new WindowLog()
      let done = 0
      await Promise.all(clients.map(async (c, i) => {
        for (let r = 0; r < 6; r++) {
          // Overlapping sets, named in different orders: [i, i+1] or [i+2, i, i+1] (mod 5).
          const want = (r % 2 === 0 ? [i, i + 1] : [i + 2, i, i + 1]).map((n) => keys[n % keys.length]!)
          const set = await c.locks.acquire(want, { ttl: 20_000, wait: 60_000, autoRenew: false })
          if (!set) throw new Error(`${c.id} waited in vain`)
          expect(set.keys).toEqual(want)
          expect(new Set(set.locks.map((l) => l.token)).size).toBe(1) // one commit
          const closes = set.locks.map((l) => log.open(l.key, 'exclusive', c.id, l.token))
          await sleep(2 + ((i + r) % 6))
          for (const close of closes) close()
          expect(await set.release()).toBe(true)
        }
        done++
      }))
      expect(done).toBe(8)
      expect(log.check().violations).toEqual([])
      expect(log.windows).toHaveLength(8 * 6 * 2.5)
    }), 120_000)

    t('several keys: all or none, one token per key, fenced writes per key, bad key lists refused', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const single = (await b!.locks.acquire('s:2', { ttl: 20_000 }))!
      expect(await a!.locks.acquire(['s:1', 's:2'])).toBeNull()
      expect(await b!.locks.holder('s:1')).toBeUndefined() // none: no partial hold
      await single.release()
      const set = (await a!.locks.acquire(['s:2', 's:1'], { ttl: 20_000 }))!
      expect(set.get('s:1')!.token).toBe(set.get('s:2')!.token)
      await a!.put('s:data', 1, { fence: set.get('s:1')! })
      const shared = (await b!.locks.acquire(['r:1', 'r:2'], { mode: 'shared' }))!
      expect(shared.locks.map((l) => l.mode)).toEqual(['shared', 'shared'])
      expect(await a!.locks.acquire(['r:2', 'r:3'], { mode: 'shared' })).not.toBeNull()
      expect(await a!.locks.acquire(['r:1'])).toBeNull()
      await set.release()
      await expect(a!.put('s:data', 2, { fence: set.get('s:1')! })).rejects.toMatchObject({ code: 'FENCED' })
      await expect(a!.locks.acquire([])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      await expect(a!.locks.acquire(['x', 'x'])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      expect(isZarisError(await a!.locks.acquire(['\u0001q']).catch((e: unknown) => e), 'INVALID_ARGUMENT')).toBe(true)
    }))
  })
}

