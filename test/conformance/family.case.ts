/**
 * The lock family on one adapter, with contending clients: shared and
 * exclusive locks, semaphores, `run`, `query` and several keys at once.
 * Safety is judged from a recorded history: what each client was told by
 * its acquires, releases, renewals and fenced writes
 * (test/lincheck/family-recorder.ts), checked for linearizability against
 * the lock family's models (test/lincheck/family.ts: at most `limit` live
 * permits, shared holds never beside an exclusive one, tokens rising, no
 * fenced write accepted outside its hold, no hold freed before its TTL).
 * Every test also asserts that what it measures happened (shared holds did
 * overlap, the semaphore did fill up), so a test that raced nothing fails.
 */
import { expect } from 'vitest'
import type { Client, Lock, LockMode, Permit } from 'zaris'
import { isZarisError } from 'zaris'
import { checkHistory, formatResult } from '../lincheck/check'
import { FamilyRecorder, heldAtOnce } from '../lincheck/family-recorder'
import type { HistoryEvent } from '../lincheck/history'
import { MemoryHistory } from '../lincheck/recorder'
import type { FixtureFactory, StoreFixture } from './fixture'
import { late, onFreshStore, sleep, until, type Named } from './util'

/** A history of the lock family on one store, and its recorder. */
function recorded(): { rec: FamilyRecorder; events: HistoryEvent[] } {
  const history = new MemoryHistory(() => performance.now())
  return { rec: new FamilyRecorder(history), events: history.events }
}

/**
 * The history is linearizable against the lock family's models. `slack`
 * for timer rounding between the test's clock and the store's; entries may
 * live past their TTL by the store's granularity (etcd's whole seconds).
 */
function expectLinearizable(events: HistoryEvent[], client: Client): void {
  const r = checkHistory(events, { slack: 5, lateExpiry: late(client), maxMs: 60_000 })
  expect(r.verdict, formatResult(r)).toBe('ok')
  expect(r.operations).toBeGreaterThan(0)
}

export function familyCases(factory: FixtureFactory, t: Named): void {
  const withStore = onFreshStore(factory)
  const clientsOf = (f: StoreFixture, n: number, base = 'c') => Promise.all(Array.from({ length: n }, (_, i) => f.connect({ id: `${base}${i}` })))
  const code = (s: AbortSignal) => (s.reason as { code?: string } | undefined)?.code

  /**
   * A client takes a hold that it does not renew, then "dies" (its adapter
   * goes, no release is sent); another client waiting for it gets it at the
   * hold's TTL — or at once, on a store that knows the client is gone.
   */
  async function freedAtTtl(f: StoreFixture, take: (rec: FamilyRecorder, c: Client, ttl: number) => Promise<Lock | Permit | null>, retake: (rec: FamilyRecorder, c: Client) => Promise<Lock | Permit | null>) {
    const [a, b] = await clientsOf(f, 2)
    const { rec, events } = recorded()
    const raw = await f.adapter()
    const ttl = 600
    // Timed from before the take: the store starts the TTL somewhere between the call and its answer, and a slow answer (a loaded machine) must not make the hold look freed early.
    const taken = performance.now()
    const first = await take(rec, a!, ttl)
    expect(first).not.toBeNull()
    // A store that knows a client is gone may end its holds at once: the history says so.
    if (raw.capabilities?.ownerGone) rec.ownerGone(a!.id, performance.now())
    await a!.adapter.close()
    const next = await retake(rec, b!)
    const elapsed = performance.now() - taken
    expect(next).not.toBeNull()
    expect(next!.token).toBeGreaterThan(first!.token)
    expect(elapsed).toBeLessThan(ttl + 3_000)
    if (!raw.capabilities?.ownerGone) expect(elapsed).toBeGreaterThanOrEqual(ttl * 0.9)
    expect(await rec.release(next!)).toBe(true)
    // Not freed before its TTL (or the owner's end), the new hold's token above the old.
    expectLinearizable(events, b!)
  }

  t.group('shared locks', () => {
    t('shared holders overlap and never overlap an exclusive one (6 clients, mixed modes)', withStore(async (f) => {
      const clients = await clientsOf(f, 6)
      const { rec, events } = recorded()
      const told: boolean[] = []
      await Promise.all(clients.map(async (c, i) => {
        for (let r = 0; r < 12; r++) {
          const mode: LockMode = (i + r) % 4 === 0 ? 'exclusive' : 'shared'
          const lock = await rec.lock(c, 'rw', { mode, ttl: 20_000, wait: 60_000, autoRenew: false })
          if (!lock) throw new Error(`${c.id} waited in vain`)
          expect(lock.mode).toBe(mode)
          told.push(await rec.fenced(c, lock, 'rw:data', `${c.id}:${r}`))
          await sleep(3 + ((i * 7 + r * 3) % 10))
          told.push(await rec.release(lock))
        }
      }))
      // The history first (it says why), then what each holder was told: every fenced write accepted, every release true.
      expectLinearizable(events, clients[0]!)
      expect(told.every(Boolean)).toBe(true)
      const most = heldAtOnce(events, 'rw')
      expect(most.shared).toBeGreaterThanOrEqual(2)
      expect(most.exclusive).toBe(1)
      expect(events.filter((e) => e.type === 'ok' && e.f === 'lock-acquire')).toHaveLength(72)
      // The last shared holder out ended the group: the lock key is free.
      expect(await clients[0]!.get('rw')).toBeUndefined()
    }), 12)

    t('an exclusive waiter is served while new shared requests keep arriving', withStore(async (f) => {
      const readers = await clientsOf(f, 4, 'r')
      const [writer] = await clientsOf(f, 1, 'w')
      const { rec, events } = recorded()
      let stop = false
      let tries = 0
      let granted = 0
      const stream = readers.map(async (c, i) => {
        await sleep(i * 15)
        while (!stop) {
          tries++
          const lock = await rec.lock(c, 'feed', { mode: 'shared', ttl: 20_000, wait: 20_000, autoRenew: false })
          if (!lock) throw new Error('a reader waited in vain')
          granted++
          await sleep(40)
          await rec.release(lock)
        }
      })
      await until(() => granted >= 4)
      const triesBefore = tries
      const started = performance.now()
      const lock = await rec.lock(writer!, 'feed', { ttl: 20_000, wait: 15_000, autoRenew: false })
      expect(lock).not.toBeNull() // without the intent the readers would hold the key until the wait ran out
      const waited = performance.now() - started
      expect(await rec.fenced(writer!, lock!, 'feed:data', 'written')).toBe(true)
      await sleep(20)
      expect(await rec.release(lock!)).toBe(true)
      const sharedAfter = granted
      await until(() => granted >= sharedAfter + 2)
      stop = true
      await Promise.all(stream)
      expect(tries - triesBefore).toBeGreaterThan(2) // shared requests kept coming while it waited
      expect(waited).toBeLessThan(10_000)
      expectLinearizable(events, writer!)
    }), 6)

    t('a fenced write with a shared hold is refused once that hold is gone; a steal ends every shared hold', withStore(async (f) => {
      const [a, b, c] = await clientsOf(f, 3)
      const { rec, events } = recorded()
      // What each holder is told, judged after the history (which says why when it is wrong).
      const told: Array<[string, boolean]> = []
      const sa = (await rec.lock(a!, 'doc', { mode: 'shared', ttl: 20_000, autoRenew: false }))!
      const sb = (await rec.lock(b!, 'doc', { mode: 'shared', ttl: 20_000, autoRenew: false }))!
      expect(sb.token).toBeGreaterThan(sa.token)
      told.push(['a fenced write with a live shared hold', await rec.fenced(a!, sa, 'doc:body', 'read by a')])
      told.push(['its release', await rec.release(sa)])
      told.push(['a fenced write with the released hold', await rec.fenced(a!, sa, 'doc:body', 'stale')])
      const signal = sb.signal
      const thief = (await rec.lock(c!, 'doc', { steal: true, ttl: 20_000, autoRenew: false }))!
      told.push(['a fenced write with a stolen shared hold', await rec.fenced(b!, sb, 'doc:body', 'stale')])
      await until(() => signal.aborted)
      told.push(['a renewal of the stolen shared hold', await rec.renew(sb, 20_000)])
      expect(await c!.locks.holder('doc')).toMatchObject({ owner: 'c2', token: thief.token, mode: 'exclusive' })
      told.push(["the thief's fenced write", await rec.fenced(c!, thief, 'doc:body', 'by the thief')])
      told.push(["the thief's release", await rec.release(thief)])
      expectLinearizable(events, a!)
      expect(told).toEqual([
        ['a fenced write with a live shared hold', true],
        ['its release', true],
        ['a fenced write with the released hold', false],
        ['a fenced write with a stolen shared hold', false],
        ['a renewal of the stolen shared hold', false],
        ["the thief's fenced write", true],
        ["the thief's release", true],
      ])
      expect(code(signal)).toBe('STOLEN')
      await expect(a!.locks.acquire('doc', { mode: 'shared', steal: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    }))

    t('a shared holder that stops renewing frees its share at its TTL (at once where the store knows its client is gone)', withStore(async (f) => {
      await freedAtTtl(f, (rec, c, ttl) => rec.lock(c, 'crash', { mode: 'shared', ttl, autoRenew: false }), (rec, c) => rec.lock(c, 'crash', { ttl: 20_000, wait: 10_000, autoRenew: false }))
    }), 3)
  })

  t.group('semaphores', () => {
    t('a semaphore never has more than limit live permits (8 clients, limit 3)', withStore(async (f) => {
      const clients = await clientsOf(f, 8)
      const { rec, events } = recorded()
      const told: boolean[] = []
      // The first holders keep their permits until three are out at once (or 10 s pass): on a loaded
      // machine the short holds alone may never overlap three deep, and the test must see it full.
      let out = 0
      let most = 0
      await Promise.all(clients.map(async (c, i) => {
        for (let r = 0; r < 8; r++) {
          const permit = await rec.permit(c, 'uploads', { limit: 3, ttl: 20_000, wait: 60_000, autoRenew: false })
          if (!permit) throw new Error(`${c.id} waited in vain`)
          most = Math.max(most, ++out)
          told.push(await rec.fenced(c, permit, 'uploads:data', `${c.id}:${r}`))
          await sleep(3 + ((i * 5 + r * 3) % 10))
          if (r === 0) await until(() => most >= 3, 10_000).catch(() => {})
          out--
          told.push(await rec.release(permit))
        }
      }))
      expectLinearizable(events, clients[0]!)
      expect(told.every(Boolean)).toBe(true)
      expect(heldAtOnce(events, 'uploads').permits).toBe(3)
      expect(await clients[0]!.semaphores.holders('uploads')).toEqual([])
    }), 12)

    t('permits: null when full, holders by slot, a freed permit goes to the waiter, a fenced write with a permit', withStore(async (f) => {
      const [a, b, c] = await clientsOf(f, 3)
      const { rec, events } = recorded()
      const pa = (await rec.permit(a!, 'sem', { limit: 2, ttl: 20_000, autoRenew: false }))!
      const pb = (await rec.permit(b!, 'sem', { limit: 2, ttl: 20_000, autoRenew: false }))!
      expect(await rec.permit(c!, 'sem', { limit: 2, ttl: 20_000, autoRenew: false })).toBeNull()
      expect(await c!.semaphores.holders('sem')).toMatchObject([
        { owner: 'c0', slot: 0, limit: 2, token: pa.token },
        { owner: 'c1', slot: 1, limit: 2, token: pb.token },
      ])
      const waiting = rec.permit(c!, 'sem', { limit: 2, ttl: 20_000, wait: 10_000, autoRenew: false })
      await sleep(100)
      expect(await rec.fenced(c!, pa, 'sem:res', 1)).toBe(true)
      expect(await rec.release(pa)).toBe(true)
      const pc = (await waiting)!
      expect(pc.token).toBeGreaterThan(pb.token)
      expect(await rec.fenced(a!, pa, 'sem:res', 2)).toBe(false)
      // A client asking with limit 1 takes only slot 0, which is held: it waits (the rule for mixed limits).
      expect(await rec.permit(a!, 'sem', { limit: 1, ttl: 20_000, autoRenew: false })).toBeNull()
      expect(await rec.release(pb)).toBe(true)
      expect(await rec.release(pc)).toBe(true)
      expectLinearizable(events, a!)
      await expect(a!.semaphores.acquire('sem', { limit: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    }))

    t('a permit holder that stops renewing frees its permit at its TTL (at once where the store knows its client is gone)', withStore(async (f) => {
      await freedAtTtl(f, (rec, c, ttl) => rec.permit(c, 'crash-sem', { limit: 1, ttl, autoRenew: false }), (rec, c) => rec.permit(c, 'crash-sem', { limit: 1, ttl: 20_000, wait: 10_000, autoRenew: false }))
    }), 3)
  })

  t.group('run', () => {
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

  t.group('query', () => {
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
    }), 3)
  })

  t.group('several keys', () => {
    t('multi-key acquires of overlapping key sets by 8 clients finish with no deadlock and no overlap', withStore(async (f) => {
      const clients = await clientsOf(f, 8)
      const keys = ['m:0', 'm:1', 'm:2', 'm:3', 'm:4']
      const { rec, events } = recorded()
      const told: boolean[] = []
      let done = 0
      await Promise.all(clients.map(async (c, i) => {
        for (let r = 0; r < 6; r++) {
          // Overlapping sets, named in different orders: [i, i+1] or [i+2, i, i+1] (mod 5).
          const want = (r % 2 === 0 ? [i, i + 1] : [i + 2, i, i + 1]).map((n) => keys[n % keys.length]!)
          const set = await rec.lock(c, want, { ttl: 20_000, wait: 60_000, autoRenew: false })
          if (!set) throw new Error(`${c.id} waited in vain`)
          expect(set.keys).toEqual(want)
          expect(new Set(set.locks.map((l) => l.token)).size).toBe(1) // one commit
          await sleep(2 + ((i + r) % 6))
          told.push(await rec.release(set))
        }
        done++
      }))
      expect(done).toBe(8)
      expectLinearizable(events, clients[0]!)
      expect(told.every(Boolean)).toBe(true)
      expect(events.filter((e) => e.type === 'ok' && e.f === 'lock-release')).toHaveLength(8 * 6 * 2.5)
    }), 12)

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

