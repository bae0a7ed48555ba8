/**
 * Every way a hold learns that it ended, and the races between them, on the
 * memory store: a renewal's answer, a release's answer, a fenced write
 * refused for its fence, a watch event, a watch that fails (the hold then
 * looks at its key), and its own deadline. The reason says what happened:
 * STOLEN (another holder's entry now carries the key), LOST (a plain write or
 * a delete took it), EXPIRED (its TTL ran out), RELEASED.
 *
 * Races are staged with a wrapper around the real memory adapter that holds
 * a chosen commit before it reaches the store, or holds its answer after
 * (a fake delay, named as such); the store itself is the real one.
 */
import { describe, expect, test } from 'vitest'
import { Client, type Adapter, type Check, type Lock, type Op } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { ManualClock } from 'zaris/testing'

type Match = (checks: Check[], ops: Op[]) => boolean
interface Gate {
  /** Resolves once the matching commit has reached the gate. */
  arrived: Promise<void>
  /** Lets it go on. */
  open(): void
}

/** The memory adapter, with commits that can be held before the store (`before`) or their answers held after it (`after`). */
function gated(inner: Adapter) {
  const gates: Array<{ match: Match; when: 'before' | 'after'; reached(): void; wait: Promise<void> }> = []
  const gate = (when: 'before' | 'after', match: Match): Gate => {
    let reached!: () => void
    let open!: () => void
    const arrived = new Promise<void>((r) => (reached = r))
    const wait = new Promise<void>((r) => (open = r))
    gates.push({ match, when, reached, wait })
    return { arrived, open }
  }
  const take = (when: 'before' | 'after', checks: Check[], ops: Op[]) => {
    const i = gates.findIndex((g) => g.when === when && g.match(checks, ops))
    if (i === -1) return undefined
    const [g] = gates.splice(i, 1)
    g!.reached()
    return g!.wait
  }
  const adapter: Adapter = {
    name: 'memory (commits held on demand: fake delays)',
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
    async commit(checks, ops, options) {
      await take('before', checks, ops)
      const r = await inner.commit(checks, ops, options)
      await take('after', checks, ops)
      return r
    },
  }
  return { adapter, before: (m: Match) => gate('before', m), after: (m: Match) => gate('after', m) }
}

const isRenewal = (key: string): Match => (checks, ops) => ops[0]?.type === 'set' && ops[0].key === key && 'created' in (checks[0] ?? {})
const isRelease = (key: string): Match => (checks, ops) => ops[0]?.type === 'delete' && ops[0].key === key && 'created' in (checks[0] ?? {})

/** Starts a renewal of `lock` and resolves once the gate holds it (`before` the store, or its answer `after`). */
async function renewalAt(g: ReturnType<typeof gated>, lock: Lock, when: 'before' | 'after') {
  const gate = g[when](isRenewal(lock.key))
  const renewing = lock.renew()
  await gate.arrived
  return { renewing, gate }
}

let n = 0
async function setup(options: { clock?: ManualClock } = {}) {
  const ns = `hold-ends-${++n}-${Math.random().toString(36).slice(2)}`
  const g = gated(memoryAdapter({ namespace: ns, clock: options.clock }))
  const holder = new Client(g.adapter, { id: 'holder', clock: options.clock })
  const other = new Client(memoryAdapter({ namespace: ns, clock: options.clock }), { id: 'other', clock: options.clock })
  const close = () => Promise.all([holder.close(), other.close()])
  return { g, holder, other, close }
}

const reason = (lock: Lock) => (lock.signal.reason as { code?: string } | undefined)?.code

describe('how a hold learns it ended', () => {
  test('renew of a stolen lock resolves false with STOLEN; the thief is untouched', async () => {
    const { holder, other, close } = await setup()
    const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
    const thief = (await other.locks.acquire('lock:a', { steal: true, autoRenew: false }))!
    expect(lock.held).toBe(true) // nothing told it yet
    expect(await lock.renew()).toBe(false)
    expect(lock.held).toBe(false)
    expect(reason(lock)).toBe('STOLEN')
    expect(thief.held).toBe(true)
    expect(await other.locks.holder('lock:a')).toMatchObject({ owner: 'other', token: thief.token })
    await other.put('res', 1, { fence: thief })
    await close()
  })

  test('release of a stolen lock resolves false with STOLEN and frees nothing', async () => {
    const { holder, other, close } = await setup()
    const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
    const thief = (await other.locks.acquire('lock:a', { steal: true, autoRenew: false }))!
    expect(await lock.release()).toBe(false)
    expect(lock.held).toBe(false)
    expect(reason(lock)).toBe('STOLEN')
    expect(await lock.release()).toBe(false) // twice is harmless
    expect(reason(lock)).toBe('STOLEN')
    expect(thief.held).toBe(true)
    expect(await other.locks.holder('lock:a')).toMatchObject({ owner: 'other', token: thief.token })
    expect(await thief.release()).toBe(true)
    await close()
  })

  test('renew after a plain delete, and after a plain overwrite, resolves false with LOST', async () => {
    const { holder, other, close } = await setup()
    const a = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
    await other.delete('lock:a')
    expect(await a.renew()).toBe(false)
    expect(reason(a)).toBe('LOST')
    const b = (await holder.locks.acquire('lock:b', { ttl: 5_000, autoRenew: false }))!
    await other.put('lock:b', 'plain')
    expect(await b.release()).toBe(false)
    expect(reason(b)).toBe('LOST')
    expect((await other.get('lock:b'))?.value).toBe('plain') // the release took nothing of the plain value
    await close()
  })

  test('a fenced write refused for its fence ends the hold at once, with what the store found', async () => {
    const { holder, other, close } = await setup()
    const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
    await other.put('lock:a', 'clobbered')
    expect(lock.held).toBe(true)
    await expect(holder.put('data', 'x', { fence: lock })).rejects.toMatchObject({ code: 'FENCED' })
    expect(lock.held).toBe(false)
    expect(reason(lock)).toBe('LOST')
    const lease = (await holder.leases.grant('lease:a', { ttl: 5_000, autoRenew: false }))!
    await other.leases.grant('lease:a', { steal: true, autoRenew: false })
    await expect(holder.delete('data', { fence: lease })).rejects.toMatchObject({ code: 'FENCED' })
    expect(lease.held).toBe(false)
    expect((lease.signal.reason as { code: string }).code).toBe('STOLEN')
    await close()
  })

  test('a watched hold learns from events: a steal is STOLEN, a plain put or a delete LOST, without any call', async () => {
    const { holder, other, close } = await setup()
    const cases: Array<[string, (key: string) => Promise<unknown>, string]> = [
      ['lock:steal', (k) => other.locks.acquire(k, { steal: true, autoRenew: false }), 'STOLEN'],
      ['lock:put', (k) => other.put(k, 'plain'), 'LOST'],
      ['lock:delete', (k) => other.delete(k), 'LOST'],
    ]
    for (const [key, act, code] of cases) {
      const lock = (await holder.locks.acquire(key, { ttl: 5_000, autoRenew: false }))!
      const ended = new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }))
      await new Promise((resolve) => setTimeout(resolve, 10)) // the watch is established
      await act(key)
      await ended
      expect(lock.held, key).toBe(false)
      expect(reason(lock), key).toBe(code)
    }
    await close()
  })

  test('a hold whose watch fails looks at its key: gone means LOST; still its own means it watches again', async () => {
    const ns = `hold-ends-watchfail-${Math.random().toString(36).slice(2)}`
    const inner = memoryAdapter({ namespace: ns })
    let failWatches = true
    const adapter: Adapter = {
      ...inner,
      name: 'memory (watches fail on demand: a fake fault)',
      get: (k) => inner.get(k),
      list: (p, o) => inner.list(p, o),
      commit: (c, o, opt) => inner.commit(c, o, opt),
      close: () => inner.close(),
      async watch(prefix, sink, from) {
        if (!failWatches) return inner.watch(prefix, sink, from)
        queueMicrotask(() => sink.error(new Error('stream reset (fake)')))
        return () => {}
      },
    }
    const holder = new Client(adapter, { id: 'holder' })
    const other = new Client(memoryAdapter({ namespace: ns }), { id: 'other' })
    const kept = (await holder.locks.acquire('lock:kept', { ttl: 10_000, autoRenew: false }))!
    void kept.signal
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(kept.held).toBe(true) // it looked, found its token, and stays
    failWatches = false
    await new Promise((resolve) => setTimeout(resolve, 1_100)) // it watches again
    await other.delete('lock:kept')
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(reason(kept)).toBe('LOST')

    failWatches = true
    const gone = (await holder.locks.acquire('lock:gone', { ttl: 10_000, autoRenew: false }))!
    await other.delete('lock:gone')
    void gone.signal
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(gone.held).toBe(false)
    expect(reason(gone)).toBe('LOST')
    await Promise.all([holder.close(), other.close()])
  })

  test('at its deadline without a renewal a hold is EXPIRED, and a renewal that landed late frees the entry it extended', async () => {
    const clock = new ManualClock()
    const { g, holder, other, close } = await setup({ clock })
    const lock = (await holder.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false }))!
    const { renewing, gate: late } = await renewalAt(g, lock, 'after') // applied by the store; its answer is held
    await clock.advance(1_000)
    expect(lock.held).toBe(false)
    expect(reason(lock)).toBe('EXPIRED')
    late.open()
    expect(await renewing).toBe(false)
    await new Promise((resolve) => setTimeout(resolve, 10))
    // The holder was told it lost, so the entry its renewal extended is gone: nobody holds a lock nobody knows of.
    expect(await other.locks.holder('lock:a')).toBeUndefined()
    await close()
  })
})

describe('races between the ways a hold ends', () => {
  test('a steal lands while a renewal is on its way: the renewal finds it, STOLEN', async () => {
    const { g, holder, other, close } = await setup()
    const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
    const { renewing, gate: held } = await renewalAt(g, lock, 'before')
    const thief = (await other.locks.acquire('lock:a', { steal: true, autoRenew: false }))!
    held.open()
    expect(await renewing).toBe(false)
    expect(reason(lock)).toBe('STOLEN')
    expect(thief.held).toBe(true)
    expect(await other.locks.holder('lock:a')).toMatchObject({ owner: 'other', token: thief.token })
    await close()
  })

  test('a steal lands after a renewal was applied but before its answer: the watch says STOLEN, the late answer changes nothing', async () => {
    const { g, holder, other, close } = await setup()
    const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
    void lock.signal
    await new Promise((resolve) => setTimeout(resolve, 10))
    const { renewing, gate: answer } = await renewalAt(g, lock, 'after')
    const thief = (await other.locks.acquire('lock:a', { steal: true, autoRenew: false }))!
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(lock.held).toBe(false)
    expect(reason(lock)).toBe('STOLEN')
    answer.open()
    expect(await renewing).toBe(false)
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(thief.held).toBe(true)
    expect(await other.locks.holder('lock:a')).toMatchObject({ owner: 'other', token: thief.token })
    await other.put('res', 1, { fence: thief })
    await close()
  })

  test('release races its own renewal: released either way, and the renewal never brings the entry back', async () => {
    for (const order of ['renewal first', 'release first', 'release applied first, its answer late'] as const) {
      const { g, holder, other, close } = await setup()
      const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
      const { renewing, gate: held } = await renewalAt(g, lock, 'before')
      let releasing: Promise<boolean>
      if (order === 'renewal first') {
        const release = g.before(isRelease('lock:a'))
        releasing = lock.release()
        await release.arrived
        expect(lock.held, order).toBe(false) // not held from the moment release was asked for
        held.open()
        expect(await renewing, order).toBe(false)
        release.open()
      } else if (order === 'release first') {
        releasing = lock.release()
        expect(await releasing, order).toBe(true)
        held.open()
        expect(await renewing, order).toBe(false)
      } else {
        const answer = g.after(isRelease('lock:a'))
        releasing = lock.release()
        await answer.arrived
        held.open()
        expect(await renewing, order).toBe(false) // it found the key empty: the release's answer, not this, decides
        answer.open()
      }
      expect(await releasing, order).toBe(true)
      expect(reason(lock), order).toBe('RELEASED')
      expect(await other.get('lock:a'), order).toBeUndefined()
      expect(await other.locks.acquire('lock:a', { autoRenew: false }), order).not.toBeNull()
      await close()
    }
  })

  test('a release whose check fails because of a steal says STOLEN, even with a renewal in flight', async () => {
    const { g, holder, other, close } = await setup()
    const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
    const { renewing, gate: held } = await renewalAt(g, lock, 'before')
    const thief = (await other.locks.acquire('lock:a', { steal: true, autoRenew: false }))!
    expect(await lock.release()).toBe(false)
    expect(reason(lock)).toBe('STOLEN')
    held.open()
    expect(await renewing).toBe(false)
    expect(reason(lock)).toBe('STOLEN')
    expect(thief.held).toBe(true)
    await close()
  })

  test('a renewal whose answer was lost, then a steal: the next renewal says STOLEN', async () => {
    const { g, holder, other, close } = await setup()
    const lock = (await holder.locks.acquire('lock:a', { ttl: 5_000, autoRenew: false }))!
    const { renewing, gate: lost } = await renewalAt(g, lock, 'after') // applied; the answer never comes back
    await other.locks.acquire('lock:a', { steal: true, autoRenew: false })
    expect(await lock.renew()).toBe(false)
    expect(reason(lock)).toBe('STOLEN')
    lost.open()
    expect(await renewing).toBe(false)
    await close()
  })

  test('auto-renewal learns of a steal within a third of the TTL, without a watch', async () => {
    const { holder, other, close } = await setup()
    const lock = (await holder.locks.acquire('lock:a', { ttl: 300 }))!
    await other.locks.acquire('lock:a', { steal: true, autoRenew: false })
    const until = Date.now() + 1_000
    while (lock.held && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(lock.held).toBe(false)
    expect(reason(lock)).toBe('STOLEN')
    await close()
  })
})
