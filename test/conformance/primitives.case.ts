/**
 * Every client feature on one adapter: key-value, locks, leases, counters,
 * watch and election, including the races a lock library must survive.
 * Runs in Node and the browser, on real time with short TTLs.
 */
import { expect } from 'vitest'
import { Client, isZarisError, type Lock, type WatchEvent } from 'zaris'
import { countingAdapter } from './counting'
import type { FixtureFactory, StoreFixture } from './fixture'
import { collect, late, onFreshStore, sleep, until, type Named } from './util'

export interface PrimitiveOptions {
  /** Multiplies the round counts of the heavy race tests (1 = the full acceptance figures). */
  scale?: number
}

export function primitiveCases(factory: FixtureFactory, t: Named, options: PrimitiveOptions = {}): void {
  const scale = options.scale ?? 1
  const rounds = (n: number) => Math.max(5, Math.round(n * scale))
  const withStore = onFreshStore(factory)
  const clientsOf = (f: StoreFixture, n: number) => Promise.all(Array.from({ length: n }, (_, i) => f.connect({ id: `c${i}` })))

  t.group('key-value', () => {
    t('put, get, list and delete', withStore(async (f) => {
      const c = await f.connect()
      const e = await c.put('kv/a', { n: 1 })
      expect(e).toMatchObject({ key: 'kv/a', value: { n: 1 } })
      await c.put('kv/b', 'two')
      expect((await c.get('kv/a'))?.value).toEqual({ n: 1 })
      expect((await c.list('kv/')).map((x) => x.key)).toEqual(['kv/a', 'kv/b'])
      expect(await c.delete('kv/a')).toBe(true)
      expect(await c.delete('kv/a')).toBe(false)
      expect(await c.get('kv/a')).toBeUndefined()
    }))

    t('ifRevision writes only over the expected revision', withStore(async (f) => {
      const c = await f.connect()
      const first = await c.put('cas', 1, { ifRevision: null })
      await expect(c.put('cas', 2, { ifRevision: null })).rejects.toMatchObject({ code: 'CONFLICT' })
      const second = await c.put('cas', 2, { ifRevision: first.revision })
      await expect(c.put('cas', 3, { ifRevision: first.revision })).rejects.toMatchObject({ code: 'CONFLICT' })
      await expect(c.delete('cas', { ifRevision: first.revision })).rejects.toMatchObject({ code: 'CONFLICT' })
      expect((await c.get('cas'))?.value).toBe(2)
      expect(await c.delete('cas', { ifRevision: second.revision })).toBe(true)
    }))

    t('put with a ttl expires', withStore(async (f) => {
      const c = await f.connect()
      await c.put('temp', 'x', { ttl: 60 })
      expect((await c.get('temp'))?.value).toBe('x')
      await until(async () => (await c.get('temp')) === undefined, 150 + late(c))
    }))

    t('a stored value is a copy: mutating the original changes nothing', withStore(async (f) => {
      const c = await f.connect()
      const value = { list: [1, 2] }
      await c.put('copy', value)
      value.list.push(3)
      expect((await c.get('copy'))?.value).toEqual({ list: [1, 2] })
    }))
  })

  t.group('locks', () => {
    t('acquire is non-blocking: null while another client holds the lock', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const lock = await a!.locks.acquire('lock:x', { ttl: 5_000 })
      expect(lock).not.toBeNull()
      expect(await b!.locks.acquire('lock:x', { ttl: 5_000 })).toBeNull()
      expect(await a!.locks.acquire('lock:x')).toBeNull() // not reentrant
      expect(await b!.locks.holder('lock:x')).toMatchObject({ owner: 'c0', token: lock!.token })
      expect(await lock!.release()).toBe(true)
      expect(await lock!.release()).toBe(false)
      expect(await b!.locks.holder('lock:x')).toBeUndefined()
      const next = await b!.locks.acquire('lock:x', { ttl: 5_000 })
      expect(next!.token).toBeGreaterThan(lock!.token)
      await next!.release()
    }))

    t('await using releases the lock, also when the block throws', withStore(async (f) => {
      const c = await f.connect()
      let seen: AbortSignal | undefined
      await expect(
        (async () => {
          await using held = (await c.locks.acquire('lock:using'))!
          seen = held.signal
          throw new Error('job failed')
        })(),
      ).rejects.toThrow('job failed')
      expect(seen?.aborted).toBe(true)
      expect((seen?.reason as { code?: string }).code).toBe('RELEASED')
      expect(await c.locks.holder('lock:using')).toBeUndefined()
    }))

    t('token stays the same across renewals and fenced writes keep working', withStore(async (f) => {
      const c = await f.connect()
      const lock = (await c.locks.acquire('lock:r', { ttl: 1_000, autoRenew: false }))!
      expect(await lock.renew()).toBe(true)
      expect(await lock.renew(2_000)).toBe(true)
      expect((await c.locks.holder('lock:r'))?.token).toBe(lock.token)
      await c.put('res', 'v', { fence: lock })
      expect((await c.get('res'))?.value).toBe('v')
      await lock.release()
    }))

    t('a holder that stops renewing loses the lock after its TTL: renew false, signal aborted', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      // The TTL runs from the store's write, somewhere between the ask and the answer: timed from
      // the ask, an early expiry shows, and a slow answer (a loaded machine) does not look like one.
      const asked = Date.now()
      const old = (await a!.locks.acquire('lock:ttl', { ttl: 200, autoRenew: false }))!
      const signal = old.signal
      const next = await b!.locks.acquire('lock:ttl', { ttl: 5_000, wait: 3_000 + late(b!) })
      expect(next).not.toBeNull()
      expect(Date.now() - asked).toBeGreaterThanOrEqual(150)
      expect(next!.token).toBeGreaterThan(old.token)
      expect(await old.renew()).toBe(false)
      expect(signal.aborted).toBe(true)
      expect(isZarisError(signal.reason)).toBe(true)
      expect(['EXPIRED', 'STOLEN']).toContain((signal.reason as { code: string }).code)
      expect(old.held).toBe(false)
      await next!.release()
    }))

    t('a fenced put after the lock was lost is rejected and writes nothing', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const old = (await a!.locks.acquire('lock:f', { ttl: 150, autoRenew: false }))!
      await a!.put('guarded', 'by-old', { fence: old })
      const next = (await b!.locks.acquire('lock:f', { ttl: 5_000, wait: 3_000 + late(b!) }))!
      await b!.put('guarded', 'by-new', { fence: next })
      await expect(a!.put('guarded', 'stale', { fence: old })).rejects.toMatchObject({ code: 'FENCED' })
      await expect(a!.delete('guarded', { fence: old })).rejects.toMatchObject({ code: 'FENCED' })
      expect((await b!.get('guarded'))?.value).toBe('by-new')
      await next.release()
    }))

    t('release after loss does not remove the new holder\'s lock', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const old = (await a!.locks.acquire('lock:rel', { ttl: 150, autoRenew: false }))!
      const next = (await b!.locks.acquire('lock:rel', { ttl: 5_000, wait: 3_000 + late(b!) }))!
      expect(await old.release()).toBe(false)
      expect(await b!.locks.holder('lock:rel')).toMatchObject({ owner: 'c1', token: next.token })
      expect(next.held).toBe(true)
      await next.release()
    }))

    t('steal takes the lock over: the old holder\'s fenced writes fail and its signal aborts', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const old = (await a!.locks.acquire('lock:s', { ttl: 10_000 }))!
      const signal = old.signal
      const thief = (await b!.locks.acquire('lock:s', { ttl: 10_000, steal: true }))!
      expect(thief.token).toBeGreaterThan(old.token)
      await expect(a!.put('stolen-res', 1, { fence: old })).rejects.toMatchObject({ code: 'FENCED' })
      await until(() => signal.aborted, 3_000)
      expect((signal.reason as { code: string }).code).toBe('STOLEN')
      expect(await old.renew()).toBe(false)
      expect(await old.release()).toBe(false)
      expect(await b!.locks.holder('lock:s')).toMatchObject({ owner: 'c1', token: thief.token })
      await thief.release()
    }))

    t('autoRenew keeps a lock past several TTLs', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      // Three TTLs; a TTL long enough that a loaded machine's slow round trip is not a lost lock.
      const lock = (await a!.locks.acquire('lock:auto', { ttl: 1_000 }))!
      await sleep(3_000)
      expect(lock.held).toBe(true)
      expect(lock.signal.aborted).toBe(false)
      expect(await b!.locks.acquire('lock:auto')).toBeNull()
      await lock.release()
    }))

    t('a waiter gets the lock as soon as it is released', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const lock = (await a!.locks.acquire('lock:w', { ttl: 30_000 }))!
      const waiting = b!.locks.acquire('lock:w', { ttl: 30_000, wait: 10_000 })
      await sleep(50)
      const released = Date.now()
      await lock.release()
      const next = await waiting
      expect(next).not.toBeNull()
      expect(Date.now() - released).toBeLessThan(5_000) // woken by the release, not by the 30 s TTL
      await next!.release()
    }))

    t('wait gives up with null, and an aborted wait rejects with the signal\'s reason', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const lock = (await a!.locks.acquire('lock:abort', { ttl: 30_000 }))!
      expect(await b!.locks.acquire('lock:abort', { wait: 100 })).toBeNull()
      const controller = new AbortController()
      const waiting = b!.locks.acquire('lock:abort', { wait: 10_000, signal: controller.signal })
      setTimeout(() => controller.abort(new Error('user gave up')), 50)
      await expect(waiting).rejects.toThrow('user gave up')
      await expect(b!.locks.acquire('lock:abort', { signal: AbortSignal.abort(new Error('already')) })).rejects.toThrow('already')
      await lock.release()
    }))

    t('client.close releases what the client holds', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const lock = (await a!.locks.acquire('lock:close', { ttl: 30_000 }))!
      await a!.close()
      expect(lock.signal.aborted).toBe(true)
      expect((lock.signal.reason as { code: string }).code).toBe('CLOSED')
      expect(await b!.locks.holder('lock:close')).toBeUndefined()
      await expect(a!.get('x')).rejects.toMatchObject({ code: 'CLOSED' })
    }))

    // The wait queue (src/core/acquire/line.ts): entries under U+0001 "q" + key + U+0001.
    const queueOf = (key: string) => `\u0001q${key}\u0001`
    /** A client on a raw adapter of the store that counts its tries at `key`. */
    const countingClient = async (f: StoreFixture, id: string, key: string) => {
      const inner = await f.adapter()
      const counted = countingAdapter(inner, (k) => k === key)
      return { client: new Client(counted.adapter, { id }), tries: counted.count, inner }
    }

    t('waiters get the lock in the order they came, with one try each after their first', withStore(async (f) => {
      const [holder] = await clientsOf(f, 1)
      let lock = (await holder!.locks.acquire('lock:line', { ttl: 30_000 }))!
      const waiters = await Promise.all(['w0', 'w1', 'w2', 'w3', 'w4'].map((id) => countingClient(f, id, 'lock:line')))
      const order: string[] = []
      const raw = waiters[0]!.inner
      const line = async () => (await raw.list(queueOf('lock:line'))).entries.map((e) => e.owner)
      const done: Array<Promise<void>> = []
      for (const [i, w] of waiters.entries()) {
        done.push((async () => {
          const got = await w.client.locks.acquire('lock:line', { ttl: 30_000, wait: 30_000 })
          if (!got) throw new Error(`${w.client.id} waited in vain`)
          order.push(w.client.id)
          await sleep(20)
          await got.release()
        })())
        // The next comes once this one stands in line, so that the arrival order is known.
        await until(async () => (await line()).length === i + 1)
      }
      expect(await line()).toEqual(['w0', 'w1', 'w2', 'w3', 'w4'].sort())
      await lock.release()
      await Promise.all(done)
      expect(order).toEqual(['w0', 'w1', 'w2', 'w3', 'w4'])
      // One failed try on arrival, one winning try when first in line.
      const tries = waiters.map((w) => w.tries())
      expect(tries.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2 * waiters.length + 1)
      await until(async () => (await raw.list(queueOf('lock:line'))).entries.length === 0)
      lock = (await holder!.locks.acquire('lock:line', { ttl: 1_000 }))!
      expect(lock).not.toBeNull()
      await lock.release()
      await Promise.all(waiters.map((w) => w.client.close()))
    }), 6)

    t('a waiter that gives up or aborts leaves the line; the next one is served', withStore(async (f) => {
      const [a, b, c, d] = await clientsOf(f, 4)
      const lock = (await a!.locks.acquire('lock:leave', { ttl: 30_000 }))!
      const controller = new AbortController()
      const aborted = b!.locks.acquire('lock:leave', { wait: 30_000, signal: controller.signal })
      aborted.catch(() => {})
      await sleep(100)
      const gaveUp = c!.locks.acquire('lock:leave', { wait: 300 })
      await sleep(100)
      const served = d!.locks.acquire('lock:leave', { wait: 30_000 })
      await sleep(100)
      controller.abort(new Error('no longer needed'))
      await expect(aborted).rejects.toThrow('no longer needed')
      expect(await gaveUp).toBeNull()
      const raw = await f.adapter()
      await until(async () => (await raw.list(queueOf('lock:leave'))).entries.length === 1)
      expect((await raw.list(queueOf('lock:leave'))).entries[0]!.owner).toBe('c3')
      await lock.release()
      const next = await served
      expect(next).not.toBeNull()
      await next!.release()
      await until(async () => (await raw.list(queueOf('lock:leave'))).entries.length === 0)
    }))

    t('a waiter that died in line does not stop the line: the next waiter takes the free lock', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const raw = await f.adapter()
      const lock = (await a!.locks.acquire('lock:ghost', { ttl: 30_000 }))!
      // A waiter whose process died: its place stays until its TTL (a minute here).
      const ghost = `${queueOf('lock:ghost')}ghost.1`
      expect((await raw.commit([{ key: ghost, revision: null }], [{ type: 'set', key: ghost, value: null, ttl: 60_000, owner: 'ghost' }])).ok).toBe(true)
      const waiting = b!.locks.acquire('lock:ghost', { ttl: 30_000, wait: 20_000 })
      await sleep(100)
      await lock.release()
      const next = await waiting
      expect(next).not.toBeNull() // found free on a patrol, long before the ghost's place expires
      await next!.release()
      // A store that can tell dead owners (IndexedDB: no tab registered as "ghost") drops the place when a waiter behind
      // asks after it; others leave it to expire. A store that hands over parks the take instead, and asks nobody:
      // the file store drops the places of processes it finds dead, not of an owner that never registered.
      const tells = raw.capabilities?.ownerGone === true && raw.capabilities.handover !== true
      expect((await raw.list(queueOf('lock:ghost'))).entries.map((e) => e.owner)).toEqual(tells ? [] : ['ghost'])
    }), 3)

    t('wait-queue entries are not user data: hidden from list and prefix watch, refused as keys', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const events: WatchEvent[] = []
      const controller = new AbortController()
      const watch = a!.watch('', { prefix: true, signal: controller.signal })
      const reading = (async () => { for await (const ev of watch) events.push(ev) })()
      await watch.ready
      const lock = (await a!.locks.acquire('lock:hidden', { ttl: 30_000 }))!
      const waiting = b!.locks.acquire('lock:hidden', { wait: 30_000 })
      const raw = await f.adapter()
      await until(async () => (await raw.list(queueOf('lock:hidden'))).entries.length === 1)
      expect((await a!.list('')).map((e) => e.key)).toEqual(['lock:hidden'])
      await lock.release()
      await (await waiting)!.release()
      // Taken, released, taken, released: 4 events, or 3 where the release hands the lock over in the next holder's take.
      await until(() => events.filter((e) => e.key === 'lock:hidden').length >= 3 && events.at(-1)?.type !== 'put')
      controller.abort()
      await reading
      expect(events.every((e) => e.key === 'lock:hidden')).toBe(true)
      await expect(a!.put(`${queueOf('lock:hidden')}x`, 1)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      await expect(a!.locks.acquire('\u0001qanything')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    }))

    t(`20 acquirers x ${rounds(200)} rounds: never two holders, every token larger than the last`, withStore(async (f) => {
      const clients = await clientsOf(f, 20)
      const perClient = rounds(200)
      let inside = 0
      let maxInside = 0
      let lastToken = 0
      const acquiredBy = new Array<number>(clients.length).fill(0)
      const tokens: number[] = []
      await Promise.all(clients.map(async (c, i) => {
        for (let r = 0; r < perClient; r++) {
          const lock: Lock | null = await c.locks.acquire('lock:contended', { ttl: 30_000, wait: 60_000, autoRenew: false })
          if (!lock) throw new Error('wait ran out')
          inside++
          maxInside = Math.max(maxInside, inside)
          expect(lock.token).toBeGreaterThan(lastToken)
          lastToken = lock.token
          tokens.push(lock.token)
          await c.put('contended:last', lock.token, { fence: lock })
          inside--
          acquiredBy[i]!++
          expect(await lock.release()).toBe(true)
        }
      }))
      expect(maxInside).toBe(1)
      expect(tokens).toHaveLength(20 * perClient)
      expect(collect(tokens)).toEqual({ increasing: true, unique: 20 * perClient })
      expect(acquiredBy.every((n) => n === perClient)).toBe(true)
    }), 12)
  })

  t.group('leases', () => {
    t('grant creates the key with its value, null while held, revoke deletes it', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const lease = (await a!.leases.grant('presence:a', { ttl: 5_000, value: { tab: 'a' } }))!
      expect(lease.value).toEqual({ tab: 'a' })
      expect(await b!.get('presence:a')).toMatchObject({ value: { tab: 'a' }, owner: 'c0' })
      expect(await b!.leases.grant('presence:a', { value: 'x' })).toBeNull()
      expect(await lease.revoke()).toBe(true)
      expect(await b!.get('presence:a')).toBeUndefined()
    }))

    t('a lease that is not kept alive disappears at its TTL', withStore(async (f) => {
      const c = await f.connect()
      const lease = (await c.leases.grant('presence:gone', { ttl: 100, autoRenew: false, value: 1 }))!
      await until(async () => (await c.get('presence:gone')) === undefined, 250 + late(c))
      expect(lease.held).toBe(false)
    }))
  })

  t.group('counters', () => {
    t(`10 clients x ${rounds(100)} increments give exactly ${10 * rounds(100)}`, withStore(async (f) => {
      const clients = await clientsOf(f, 10)
      const n = rounds(100)
      const results = await Promise.all(clients.map(async (c) => {
        const seen: number[] = []
        for (let i = 0; i < n; i++) seen.push(await c.counters.increment('jobs:done'))
        return seen
      }))
      expect(await clients[0]!.counters.get('jobs:done')).toBe(10 * n)
      // Every increment saw a distinct value: none was lost or applied twice.
      expect(new Set(results.flat()).size).toBe(10 * n)
      expect(await clients[0]!.counters.increment('jobs:done', -5)).toBe(10 * n - 5)
    }), 12)
  })

  t.group('watch', () => {
    t('client.watch sees put, delete and expire in revision order', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const watch = b!.watch('job:', { prefix: true })
      await watch.ready
      await a!.put('job:1', 'queued')
      await a!.put('job:2', 'ttl', { ttl: 60 })
      await a!.put('other', 1)
      await a!.delete('job:1')
      const events: WatchEvent[] = []
      for await (const ev of watch) {
        events.push(ev)
        if (events.length === 4) break
      }
      // The expiry may land before or after the delete (a slow store), but each event comes once, in revision order.
      expect(events.slice(0, 2).map((e) => [e.type, e.key])).toEqual([['put', 'job:1'], ['put', 'job:2']])
      expect(events.slice(2).map((e) => `${e.type} ${e.key}`).sort()).toEqual(['delete job:1', 'expire job:2'])
      expect(collect(events.map((e) => e.revision)).increasing).toBe(true)
    }))

    t('a prefix watch delivers every key of a multi-key commit once', withStore(async (f) => {
      const c = await f.connect()
      const watch = c.watch('multi/', { prefix: true })
      await watch.ready
      const r = await c.adapter.commit([], [{ type: 'set', key: 'multi/a', value: 1 }, { type: 'set', key: 'multi/b', value: 2 }])
      const keys: string[] = []
      for await (const ev of watch) {
        keys.push(ev.key)
        expect(ev.revision).toBe(r.ok ? r.revision : -1)
        if (keys.length === 2) break
      }
      expect(keys.sort()).toEqual(['multi/a', 'multi/b'])
    }))

    t('an exact-key watch ignores other keys; an aborted watch ends quietly', withStore(async (f) => {
      const c = await f.connect()
      const controller = new AbortController()
      const watch = c.watch('exact', { signal: controller.signal })
      await watch.ready
      await c.put('exact-not', 1)
      await c.put('exact', 2)
      const seen: string[] = []
      for await (const ev of watch) {
        seen.push(ev.key)
        controller.abort()
      }
      expect(seen).toEqual(['exact'])
    }))

    t('watch fromRevision replays history', withStore(async (f) => {
      const c = await f.connect()
      const first = await c.put('hist', 1)
      await c.put('hist', 2)
      await c.put('hist', 3)
      const watch = c.watch('hist', { fromRevision: first.revision })
      const values: unknown[] = []
      for await (const ev of watch) {
        values.push(ev.value)
        if (values.length === 2) break
      }
      expect(values).toEqual([2, 3])
    }))
  })

  t.group('election', () => {
    t('N candidates elect exactly one leader; resign hands over', withStore(async (f) => {
      const clients = await clientsOf(f, 4)
      const elections = clients.map((c, i) => c.election('leader:sync', { ttl: 2_000, candidate: `cand-${i}` }))
      const campaigns = elections.map((e) => e.campaign())
      const first = await Promise.race(campaigns.map((p, i) => p.then(() => i)))
      await sleep(100)
      expect(elections.filter((e) => e.isLeader)).toHaveLength(1)
      expect(elections[first]!.isLeader).toBe(true)
      await until(() => elections.every((e) => e.leader?.candidate === `cand-${first}`))
      const firstToken = elections[first]!.leader!.token

      await elections[first]!.resign()
      const second = (await Promise.race(campaigns.filter((_, i) => i !== first).map((p) => p.then((term) => term))))!
      expect(second.token).toBeGreaterThan(firstToken)
      await until(() => elections.filter((e) => e.isLeader).length === 1)
      const leaderIndex = elections.findIndex((e) => e.isLeader)
      expect(leaderIndex).not.toBe(first)
      await until(() => elections.every((e) => e.leader?.candidate === `cand-${leaderIndex}`))
      for (const e of elections) await e.close()
    }))

    t('a leader that stops renewing is replaced after its TTL; observe reports each change', withStore(async (f) => {
      const [a, b] = await clientsOf(f, 2)
      const ea = a!.election('leader:exp', { ttl: 300, candidate: 'A' })
      const eb = b!.election('leader:exp', { ttl: 300, candidate: 'B' })
      const seen: Array<string | undefined> = []
      const controller = new AbortController()
      const observing = (async () => {
        for await (const leader of eb.observe({ signal: controller.signal })) seen.push(leader?.candidate)
      })()
      // observe reports from its first read (nobody leads yet): before it, A's whole term could pass unseen.
      await until(() => seen.length > 0)
      const termA = (await ea.campaign())!
      const deposed = new Promise((resolve) => ea.addEventListener('deposed', resolve, { once: true }))
      const bWins = eb.campaign()
      // A leads until its adapter closes: observe reports A first (on a busy machine, a close right after the
      // campaign could end A's term before observe's next read).
      await until(() => seen.includes('A'))
      // A's process "hangs": its adapter stops answering, so its renewals fail.
      await a!.adapter.close()
      const termB = (await bWins)!
      expect(termB.token).toBeGreaterThan(termA.token)
      await deposed
      expect(ea.isLeader).toBe(false)
      expect(eb.isLeader).toBe(true)
      await until(() => seen.includes('B'))
      controller.abort()
      await observing
      expect(seen.filter((s) => s !== undefined)).toEqual(['A', 'B'])
      await eb.close()
    }))
  })

  t.group('client', () => {
    t('two clients with distinct ids coordinate through one store', withStore(async (f) => {
      const [a, b]: Client[] = await clientsOf(f, 2)
      expect(a!.id).not.toBe(b!.id)
      await a!.put('shared', 1)
      expect((await b!.get('shared'))?.value).toBe(1)
    }))
  })
}
