/**
 * Liveness in real Chromium, one page (src/adapters/indexeddb/liveness.ts):
 * the Web Locks a client holds while alive, the words closing tabs post, and
 * how a listener for an owner's end (the reaper's, a waiter's `ownerGone`)
 * weighs them. Registrations and words are made by hand (by-hand.ts), so a
 * test can end them as a crash would and post what a broken tab might.
 */
import { describe, expect, it } from 'vitest'
import { Client, ClosedError } from 'zaris'
import { Liveness, listenersIn } from '../../src/adapters/indexeddb/liveness'
import { adapterOn, cleanUpAfterEach, clientOn, namespace, otherTab, probing, realQuery, record, registration, say, sleep, track, until, followed } from './by-hand'

cleanUpAfterEach()

const setUp = followed // a recorder, a reaper, and each owner's entry `lock:<owner>`, followed

/** Makes `navigator.locks.query()` wait until `free()` (a slow lock manager, by hand); `calls` counts the calls. */
function slowQuery(): { calls: () => number; free(): void; restore(): void } {
  const locks = navigator.locks as LockManager & { query: LockManager['query'] }
  const waiting: Array<() => void> = []
  let calls = 0
  let held = true
  locks.query = () => {
    calls++
    return held ? new Promise((resolve) => waiting.push(() => resolve(realQuery()))) : realQuery()
  }
  return {
    calls: () => calls,
    free() {
      held = false
      for (const w of waiting.splice(0)) w()
    },
    restore() {
      this.free()
      delete (locks as { query?: unknown }).query
    },
  }
}

describe('liveness (IndexedDB, one page): the probe and the words', () => {
  it("another tab's probe for the same owner, queued behind this page's, does not hold up the verdict", async () => {
    const ns = namespace('live')
    const reg = registration(ns, 'x')
    const { ended } = await setUp(ns, { x: [reg] })
    // Another tab's prober: an exclusive request of the same name, queued behind ours, held once granted.
    const stop = new AbortController()
    let rivalHolds = false
    const rival = navigator.locks
      .request(`zaris:${ns}:owner:x`, { mode: 'exclusive', signal: stop.signal }, () => {
        rivalHolds = true
        return new Promise<void>((r) => stop.signal.addEventListener('abort', () => r()))
      })
      .catch(() => {})
    try {
      reg.release()
      // Granted first, ours sees only an exclusive request behind it: no registration, so the owner is gone.
      await until(() => ended('x'), 2_000)
      await until(() => rivalHolds, 2_000) // and it let the name go at once
    } finally {
      stop.abort()
      await rival
    }
  })

  it('a word whose nonce is no string makes nobody heard: an entry of an owner never seen registered keeps its TTL', async () => {
    const ns = namespace('live')
    const { raw, events } = await setUp(ns, {}) // a reaper, listening to the channel
    say(ns, { owner: 'ghost', nonce: 7 })
    say(ns, { owner: 'ghost' })
    await sleep(100)
    expect((await raw.commit([], [{ type: 'set', key: 'lock:ghost', value: null, ttl: 60_000, owner: 'ghost' }])).ok).toBe(true)
    await sleep(500) // the reaper's look: not registered, and (rightly) never heard
    expect(events.filter((e) => e.key === 'lock:ghost').map((e) => e.type)).toEqual(['put'])
  })

  it('a word is remembered for a minute, not longer (the clock moved by hand): a later entry of that owner keeps its TTL', async () => {
    const ns = namespace('live')
    const { raw, events } = await setUp(ns, {}) // a reaper, listening to the channel
    say(ns, { owner: 'late', nonce: 'n1' })
    await sleep(100)
    // The clock moves on for the rest of the test, so a late word is weighed in it whenever it arrives.
    const realNow = Date.now
    Date.now = () => realNow() + 61_000
    const ear = new BroadcastChannel(`zaris:idb:${ns}:gone`)
    try {
      let delivered = false
      ear.onmessage = () => (delivered = true)
      say(ns, { owner: 'other', nonce: 'n2' }) // hearing a word forgets those heard over a minute ago
      await until(() => delivered, 2_000)
      await sleep(50)
      expect((await raw.commit([], [{ type: 'set', key: 'lock:late', value: null, ttl: 60_000, owner: 'late' }])).ok).toBe(true)
      await sleep(500)
      expect(events.filter((e) => e.key === 'lock:late').map((e) => e.type)).toEqual(['put'])
    } finally {
      ear.close()
      Date.now = realNow
    }
  })

  it("a word for one owner does not make this page forget another's heard a moment before", async () => {
    const ns = namespace('live')
    const { raw, events } = await setUp(ns, {}) // a reaper, listening to the channel
    say(ns, { owner: 'late', nonce: 'n1' })
    await sleep(50)
    say(ns, { owner: 'other', nonce: 'n2' })
    await sleep(50)
    // A write of the gone client that was still on its way: still ended.
    expect((await raw.commit([], [{ type: 'set', key: 'lock:late', value: null, ttl: 60_000, owner: 'late' }])).ok).toBe(true)
    await until(() => events.some((e) => e.key === 'lock:late' && e.type === 'expire'), 2_000)
  })

  it("two listeners for one owner in this page (the reapers and a waiter's ownerGone) all hear one word", async () => {
    const ns = namespace('live')
    const reg = registration(ns, 'x')
    const { ended } = await setUp(ns, { x: [reg] })
    const waiter = adapterOn(ns, otherTab())
    let told = false
    void waiter.ownerGone!('x', new AbortController().signal).then(() => (told = true))
    await sleep(300) // its look at the lock manager answered
    try {
      say(ns, { owner: 'x', nonce: reg.nonce })
      await until(() => told && ended('x'), 2_000)
    } finally {
      reg.release()
    }
  })

  it('a word heard while a listener still waits for its look at the lock manager counts once the look answers', async () => {
    const ns = namespace('live')
    const reg = registration(ns, 'x')
    await setUp(ns, { x: [reg] })
    const waiter = adapterOn(ns, otherTab())
    await sleep(300) // its reaper's looks are done
    const slow = slowQuery()
    try {
      let told = false
      const before = slow.calls()
      void waiter.ownerGone!('x', new AbortController().signal).then(() => (told = true))
      expect(slow.calls()).toBe(before + 1) // its look, held
      say(ns, { owner: 'x', nonce: reg.nonce })
      await sleep(300)
      expect(told, 'no look yet: it cannot know the word covers every registration').toBe(false)
      slow.free()
      await until(() => told, 2_000)
    } finally {
      slow.restore()
      reg.release()
    }
  })

  it("pagehide of a discarded page posts each open registration's word once, and nothing else", async () => {
    const ns = namespace('live')
    const [a, b, c] = [clientOn(ns, 'a'), clientOn(ns, 'b', otherTab()), clientOn(ns, 'c', otherTab())]
    await Promise.all([a.get('k'), b.get('k'), c.get('k')]) // all registered
    await c.adapter.close() // its word went out as it closed: pagehide does not say it again
    const heard: unknown[] = []
    const channel = new BroadcastChannel(`zaris:idb:${ns}:gone`) // what another tab hears
    channel.onmessage = (e) => heard.push(e.data)
    try {
      dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false }))
      await until(() => heard.length >= 2, 2_000)
      await sleep(300)
      expect(heard.map((w) => (w as { owner: string }).owner).sort()).toEqual(['a', 'b'])
      for (const w of heard) expect(w).toEqual({ owner: expect.any(String), nonce: expect.stringMatching(/^[0-9a-f]{24}$/) })
    } finally {
      channel.close()
    }
  })
})

describe("liveness (IndexedDB, one page): a client's registration", () => {
  /** The liveness locks of `owner` in namespace `ns` the lock manager holds or queues. */
  async function locksOf(ns: string, owner: string): Promise<string[]> {
    const state = await realQuery()
    return [...(state.held ?? []), ...(state.pending ?? [])]
      .map((l) => `${l.mode} ${l.name ?? ''}`)
      .filter((n) => n.endsWith(`:${owner}`) && (n.includes(`zaris:${ns}:owner:`) || n.includes(`zaris:${ns}:instance:`)))
  }

  it('holds a shared lock of its id and an exclusive one of its own while its adapter is open, and lets both go when it closes', async () => {
    const ns = namespace('live')
    const c = clientOn(ns, 'x', otherTab())
    await c.get('k')
    expect((await locksOf(ns, 'x')).map((n) => n.split(' ')[0]).sort()).toEqual(['exclusive', 'shared'])
    await c.adapter.close()
    await until(async () => (await locksOf(ns, 'x')).length === 0, 2_000)
  })

  it("a client registering behind a prober's request (its id alive in another tab, a reaper waiting for it) goes ahead: its first acquire does not wait for the prober", async () => {
    const ns = namespace('live')
    const twin = registration(ns, 'x') // another tab's client of id x, alive
    await twin.held
    const stop = new AbortController()
    // A prober waits for x's end: a new registration's shared request queues behind it while the twin lives.
    const probe = navigator.locks.request(`zaris:${ns}:owner:x`, { mode: 'exclusive', signal: stop.signal }, () => {}).catch(() => {})
    try {
      const client = clientOn(ns, 'x', otherTab())
      const outcome = await Promise.race([client.locks.acquire('lock:a', { ttl: 10_000 }).then((l) => (l ? 'held' : 'refused')), sleep(2_000).then(() => 'waited')])
      expect(outcome).toBe('held')
    } finally {
      stop.abort()
      twin.release()
      await probe
    }
  })

  it('an adapter closed before its registration is granted: the next write fails with ClosedError, it does not hang', async () => {
    const ns = namespace('live')
    // Its id's lock held by another tab's prober, and the lock manager slow to say so: the registration waits.
    let free!: () => void
    await new Promise<void>((granted) => void navigator.locks.request(`zaris:${ns}:owner:y`, () => (granted(), new Promise<void>((r) => (free = r)))))
    const slow = slowQuery()
    try {
      const adapter = adapterOn(ns, otherTab())
      const client = new Client(adapter, { id: 'y' }) // it registers at once
      const acquiring = client.locks.acquire('lock:a', { ttl: 10_000 }).then(() => 'acquired', (e: unknown) => e)
      await sleep(100) // the acquire waits for the registration
      await adapter.close()
      expect(await Promise.race([acquiring, sleep(3_000).then(() => 'hung')])).toBeInstanceOf(ClosedError)
    } finally {
      slow.restore()
      free()
    }
  })

  it("a lock manager that refuses the registration (by hand): the client's write fails with its error; the next registers again", async () => {
    const ns = namespace('live')
    const locks = navigator.locks as LockManager & { request: LockManager['request'] }
    const refusal = new DOMException('refused by hand', 'InvalidStateError')
    locks.request = ((name: string, ...rest: unknown[]) =>
      name.startsWith(`zaris:${ns}:owner:`) ? Promise.reject(refusal) : (LockManager.prototype.request as (...a: unknown[]) => Promise<unknown>).call(navigator.locks, name, ...rest)) as LockManager['request']
    const client = clientOn(ns, 'x', otherTab())
    try {
      await expect(client.locks.acquire('lock:a', { ttl: 10_000 })).rejects.toBe(refusal)
    } finally {
      delete (locks as { request?: unknown }).request
    }
    expect(await client.locks.acquire('lock:a', { ttl: 10_000 })).not.toBeNull()
  })
})

describe("liveness (IndexedDB, one page): a waiter's ownerGone and its probe", () => {
  /** The exclusive requests (probes) waiting for `owner`'s registration lock. */
  async function probes(ns: string, owner: string): Promise<number> {
    return (await realQuery()).pending!.filter((l) => l.name === `zaris:${ns}:owner:${owner}` && l.mode === 'exclusive').length
  }

  it('an already aborted signal rejects at once with its reason; an abort later rejects with that reason', async () => {
    const ns = namespace('live')
    const reg = registration(ns, 'x')
    await reg.held
    const waiter = adapterOn(ns, otherTab())
    const reason = new Error('given up')
    await expect(waiter.ownerGone!('x', AbortSignal.abort(reason))).rejects.toBe(reason)
    const stop = new AbortController()
    const waiting = waiter.ownerGone!('x', stop.signal)
    await sleep(100)
    stop.abort(reason)
    await expect(waiting).rejects.toBe(reason)
    reg.release()
  })

  it("listeners for one owner share one probe; the last one leaving withdraws it after a linger (~2 s), a listener arriving meanwhile keeps it", async () => {
    const ns = namespace('live')
    const reg = registration(ns, 'x')
    await reg.held
    const waiter = adapterOn(ns, otherTab(), true)
    const [one, two] = [new AbortController(), new AbortController()]
    for (const c of [one, two]) void waiter.ownerGone!('x', c.signal).catch(() => {})
    await until(async () => (await probes(ns, 'x')) > 0)
    await sleep(100)
    expect(await probes(ns, 'x')).toBe(1)
    one.abort()
    two.abort()
    await sleep(1_000)
    expect(await probes(ns, 'x'), 'lingers for the next waiter').toBe(1)
    const three = new AbortController()
    void waiter.ownerGone!('x', three.signal).catch(() => {})
    await sleep(1_500) // past the first linger's end
    expect(await probes(ns, 'x')).toBe(1)
    three.abort()
    await until(async () => (await probes(ns, 'x')) === 0, 4_000)
    reg.release()
  })

  it('a probe that saw its owner gone is not used again: a later registration of that id is waited for', async () => {
    const ns = namespace('live')
    const first = registration(ns, 'x')
    await first.held
    const waiter = adapterOn(ns, otherTab())
    const gone = waiter.ownerGone!('x', new AbortController().signal)
    await until(async () => (await probes(ns, 'x')) > 0)
    first.release()
    await gone
    const second = registration(ns, 'x') // the id starts again (a reload with a fixed id)
    await second.held
    let told = false
    void waiter.ownerGone!('x', new AbortController().signal).then(() => (told = true))
    await sleep(300)
    expect(told).toBe(false)
    second.release()
    await until(() => told, 2_000)
  })

  it('closing one of two adapters of a namespace in this page leaves the other hearing words', async () => {
    const ns = namespace('live')
    const reg = registration(ns, 'x')
    await reg.held
    const tab = otherTab()
    const [closing, staying] = [adapterOn(ns, tab), adapterOn(ns, otherTab())]
    await closing.close()
    let told = false
    void staying.ownerGone!('x', new AbortController().signal).then(() => (told = true))
    await sleep(300)
    say(ns, { owner: 'x', nonce: reg.nonce })
    await until(() => told, 2_000)
    reg.release()
  })
})

describe('liveness (IndexedDB, one page): one Liveness, by hand', () => {
  /** A Liveness of namespace `ns` in this page, as an adapter or a reaper makes one; closed after the test. */
  function livenessOn(ns: string): Liveness {
    const l = new Liveness(navigator.locks, ns)
    track({ close: async () => l.close() })
    return l
  }

  /** Counts the `abort` listeners added to `signal` and not removed since (a spy on that one signal). */
  function abortListeners(signal: AbortSignal): () => number {
    const live = new Set<unknown>()
    const add = signal.addEventListener.bind(signal)
    const remove = signal.removeEventListener.bind(signal)
    Object.assign(signal, {
      addEventListener(type: string, fn: EventListener, options?: AddEventListenerOptions) {
        if (type === 'abort') live.add(fn)
        add(type, fn, options)
      },
      removeEventListener(type: string, fn: EventListener, options?: EventListenerOptions) {
        if (type === 'abort') live.delete(fn)
        remove(type, fn, options)
      },
    })
    return () => live.size
  }

  /** The exclusive requests (probes) waiting for `owner`'s registration lock. */
  async function probes(ns: string, owner: string): Promise<number> {
    return (await realQuery()).pending!.filter((l) => l.name === `zaris:${ns}:owner:${owner}` && l.mode === 'exclusive').length
  }

  it('a word that is null, or no object, is ignored without an error, and the words after it are heard', async () => {
    const ns = namespace('live')
    const l = livenessOn(ns)
    // (An error thrown in the channel's handler fails the run: vitest reports the page's uncaught errors.)
    for (const junk of [null, 'x', 7, { nonce: 'n1' }]) say(ns, junk)
    say(ns, { owner: 'x', nonce: 'n1' })
    await until(() => l.heard('x'), 2_000)
    await sleep(50)
  })

  it('a word is remembered for a minute to the ms (the clock held by hand): still heard at 60 000 ms, forgotten at 60 001', async () => {
    const ns = namespace('live')
    const l = livenessOn(ns)
    const realNow = Date.now
    const start = realNow()
    let now = start
    Date.now = () => now
    try {
      say(ns, { owner: 'late', nonce: 'n1' })
      await until(() => l.heard('late'), 2_000)
      now = start + 60_000
      say(ns, { owner: 'b', nonce: 'n2' }) // hearing a word forgets those heard over a minute before
      await until(() => l.heard('b'), 2_000)
      expect(l.heard('late')).toBe(true)
      now = start + 60_001
      say(ns, { owner: 'c', nonce: 'n3' })
      await until(() => l.heard('c'), 2_000)
      expect([l.heard('late'), l.heard('b')]).toEqual([false, true])
    } finally {
      Date.now = realNow
    }
  })

  it('a registration asks the lock manager once, for its id\'s shared lock (its own lock is never queued)', async () => {
    const ns = namespace('live')
    const l = livenessOn(ns)
    const locks = navigator.locks as LockManager & { query: LockManager['query'] }
    let calls = 0
    locks.query = () => (calls++, realQuery())
    try {
      await l.register('x')
      await sleep(50)
      expect(calls).toBe(1)
    } finally {
      delete (locks as { query?: unknown }).query
    }
  })

  it('a liveness closed twice closes once: the other liveness of its namespace in this page still hears words', async () => {
    const ns = namespace('live')
    const [closing, staying] = [livenessOn(ns), livenessOn(ns)]
    closing.close()
    closing.close()
    say(ns, { owner: 'x', nonce: 'n1' })
    await until(() => staying.heard('x'), 2_000)
  })

  it('the last liveness of a namespace to close closes its channel and forgets its words; one made after has a new channel that hears', async () => {
    const ns = namespace('live')
    const name = `zaris:idb:${ns}:gone`
    const closed: string[] = []
    const close = BroadcastChannel.prototype.close
    BroadcastChannel.prototype.close = function (this: BroadcastChannel) {
      closed.push(this.name)
      close.call(this)
    }
    try {
      const [first, last] = [livenessOn(ns), livenessOn(ns)]
      say(ns, { owner: 'x', nonce: 'n1' })
      await until(() => last.heard('x'), 2_000)
      closed.length = 0 // (say() closes a channel of that name too)
      first.close()
      expect(closed.filter((n) => n === name)).toEqual([])
      last.close()
      expect(closed.filter((n) => n === name)).toEqual([name])
      expect([last.heard('x'), listenersIn(ns)]).toEqual([false, undefined])
      const next = livenessOn(ns)
      expect(listenersIn(ns)).toBe(0)
      say(ns, { owner: 'y', nonce: 'n2' })
      await until(() => next.heard('y'), 2_000)
    } finally {
      BroadcastChannel.prototype.close = close
    }
  })

  it("pagehide's words go to the other tabs only; a closing liveness's words are heard at once in this page too", async () => {
    const ns = namespace('live')
    const [a, b] = [livenessOn(ns), livenessOn(ns)]
    await a.register('x')
    const heard: unknown[] = []
    const otherTabs = new BroadcastChannel(`zaris:idb:${ns}:gone`)
    otherTabs.onmessage = (e) => heard.push(e.data)
    try {
      dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true }))
      await sleep(200)
      expect(heard, 'kept in the back/forward cache: it may come back alive').toEqual([])
      dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false }))
      await until(() => heard.length > 0, 2_000)
      await sleep(200)
      expect(b.heard('x'), 'the dying page starts no takeover of its own').toBe(false)
      a.close()
      expect(b.heard('x')).toBe(true)
    } finally {
      otherTabs.close()
    }
  })

  it("a waiter leaves nothing behind, whether the probe, a word or an abort ended it: no listener on its caller's signal, none in the hub", async () => {
    const ns = namespace('live')
    const l = livenessOn(ns)
    const [x, y] = [registration(ns, 'x'), registration(ns, 'y')]
    await Promise.all([x.held, y.held])
    const [byProbe, byWord, byAbort] = [new AbortController(), new AbortController(), new AbortController()]
    const left = [byProbe, byWord, byAbort].map((c) => abortListeners(c.signal))
    const waits = [l.gone('x', byProbe.signal), l.gone('y', byWord.signal), l.gone('z', byAbort.signal).catch((e: unknown) => e)]
    expect([left.map((n) => n()), listenersIn(ns)]).toEqual([[1, 1, 1], 3])
    await sleep(300) // the looks at the lock manager answered
    x.release()
    await waits[0]
    say(ns, { owner: 'y', nonce: y.nonce })
    await waits[1]
    byAbort.abort()
    await waits[2]
    expect([left.map((n) => n()), listenersIn(ns)]).toEqual([[0, 0, 0], 0])
    y.release()
  })

  /** A Liveness of a new namespace, client `x` registered, and `gone('x')` asked: its probe queued. */
  async function probingFirst() {
    const ns = namespace('live')
    const l = livenessOn(ns)
    const first = registration(ns, 'x')
    await first.held
    const gone = l.gone('x', new AbortController().signal)
    await until(async () => (await probes(ns, 'x')) > 0)
    return { ns, l, first, gone }
  }

  it("a registration of the id queued behind the probe keeps its owner alive, a shared request of another name does not: the waiter is told once that one goes too", async () => {
    const { ns, first, gone } = await probingFirst()
    let told = false
    void gone.then(() => (told = true))
    const second = registration(ns, 'x') // its shared request queues behind the probe
    // Another name's shared request, queued behind an exclusive holder, for the probe's look to pass over.
    let freeOther!: () => void
    await new Promise<void>((held) => void navigator.locks.request(`other-${ns}`, () => (held(), new Promise<void>((r) => (freeOther = r)))))
    const other = navigator.locks.request(`other-${ns}`, { mode: 'shared' }, () => {})
    try {
      first.release()
      await second.held
      await sleep(300)
      expect(told, 'the id lives on in the registration queued behind the probe').toBe(false)
      second.release()
      await until(() => told, 2_000)
    } finally {
      freeOther()
      await other
    }
  })

  it("a probe's linger after its owner went leaves the probe of the id's next client in place: a waiter arriving later shares it", async () => {
    const { ns, l, first, gone } = await probingFirst()
    first.release()
    await gone // its probe settled; its waiter left: its linger runs ~2 s from now
    const second = registration(ns, 'x')
    await second.held
    const stop = new AbortController()
    void l.gone('x', stop.signal).catch(() => {})
    await until(async () => (await probes(ns, 'x')) === 1)
    await sleep(2_300) // past the first probe's linger
    void l.gone('x', stop.signal).catch(() => {})
    await sleep(200)
    expect(await probes(ns, 'x')).toBe(1)
    stop.abort()
    second.release()
  })

  it("a lock manager that fails the probe's look once granted (by hand): its waiter's ownerGone rejects with that error", async () => {
    const ns = namespace('live')
    const l = livenessOn(ns)
    const x = registration(ns, 'x')
    await x.held
    const failure = new DOMException('refused by hand', 'InvalidStateError')
    const locks = navigator.locks as LockManager & { query: LockManager['query'] }
    locks.query = () => Promise.reject(failure)
    try {
      const waiting = l.gone('x', new AbortController().signal)
      await until(async () => (await probes(ns, 'x')) > 0)
      x.release()
      expect(await Promise.race([waiting.then(() => 'told', (e: unknown) => e), sleep(2_000).then(() => 'waited')])).toBe(failure)
    } finally {
      delete (locks as { query?: unknown }).query
    }
  })
})
