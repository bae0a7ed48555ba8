/**
 * zaris/elect's campaign on its own (src/elect/campaign.ts `win`), in
 * Chromium: each "tab" is a store of its own on one namespace (as another
 * tab's, over the same database, channel and Web Locks). What a campaign
 * must do: take a free key through its gate, wait its turn behind a holder,
 * take over from a holder that stops renewing (past its TTL, stealing the
 * gate) or from a grantee that never takes the key, wait out a plain write,
 * lead early on the grant and say when that lead lapses, give up cleanly on
 * abort, and, without Web Locks, take the key when it is free. Real frozen
 * and closed tabs: test/elect/frozen.test.ts, liveness.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { EXPIRED_GRACE, FREE_GRACE, win, type Run } from '../../src/elect/campaign'
import { gateName, WebLockGate } from '../../src/adapters/indexeddb/gate'
import { TermStore } from '../../src/elect/store'
import { freeze, resume } from '../browser-harness/page-events'
import type { EndCode } from '../../src/elect/term'
import type { CommitResult } from '../../src/core/contract/adapter'
import { dropNamespace } from '../browser-harness/drop-namespace'

let ns = ''
const opened: TermStore[] = []
const gates: WebLockGate[] = []
const stops: AbortController[] = []
afterEach(async () => {
  for (const s of stops.splice(0)) s.abort(new Error('test over'))
  for (const g of gates.splice(0)) g.release()
  for (const s of opened.splice(0)) s.close()
  await dropNamespace(ns)
})

function fresh(): string {
  return (ns = `campaign-${Math.random().toString(36).slice(2, 10)}`)
}

/** A tab's store (with Web Locks unless `locks` is false). */
function tab(locks = true): TermStore {
  const s = new TermStore(ns, locks ? navigator.locks : undefined)
  opened.push(s)
  return s
}

/** A campaign's run: its signal aborts with the test. */
function run(store: TermStore, owner: string, more: Partial<Run> = {}): Run {
  const stop = new AbortController()
  stops.push(stop)
  return { store, name: 'leader', owner, value: owner, ttl: 10_000, signal: stop.signal, ...more }
}

/** What a lead tells (./early's begin and lapse), in order. */
function leadLog(): { log: string[]; lead: NonNullable<Run['lead']> } {
  const log: string[] = []
  return { log, lead: { begin: () => log.push('begin'), lapse: (code: EndCode) => log.push(`lapse:${code}`) } }
}

/** Whether the key's gate is held, and how many wait for it. */
async function gateState(key = 'leader'): Promise<{ held: number; pending: number }> {
  const s = await navigator.locks.query()
  const name = gateName(ns, key)
  return { held: (s.held ?? []).filter((l) => l.name === name).length, pending: (s.pending ?? []).filter((l) => l.name === name).length }
}

/** Holds the key's gate as another tab would, and writes the key through it (a holder that then stops renewing). */
async function holder(store: TermStore, ttl?: number): Promise<{ gate: WebLockGate; token: number }> {
  const gate = new WebLockGate(navigator.locks, ns, 'leader', {})
  gates.push(gate)
  expect(await gate.granted).toBe(true)
  const r = await store.commit([{ key: 'leader', revision: null }], [{ type: 'set', key: 'leader', value: 'old', ttl, owner: 'old' }], WebLockGate.through(gate, ns))
  if (!r.ok) throw new Error('setup: the holder could not take the key')
  return { gate, token: r.entries[0]!.created }
}

/** Runs `fn` once, just before the first commit `store` makes through a gate (the campaign's take). */
function beforeTake(store: TermStore, fn: () => Promise<unknown>): void {
  const real = store.commit.bind(store)
  let done = false
  store.commit = (async (checks, ops, gate) => {
    if (!done && gate) {
      done = true
      await fn()
    }
    return real(checks, ops, gate)
  }) as TermStore['commit']
}

/** Runs `fn` with the answer of each commit `store` makes through a gate, before the campaign sees it. */
function afterTake(store: TermStore, fn: (r: CommitResult) => Promise<unknown> | unknown): void {
  const real = store.commit.bind(store)
  store.commit = (async (checks, ops, gate) => {
    const r = await real(checks, ops, gate)
    if (gate) await fn(r)
    return r
  }) as TermStore['commit']
}

/** Another tab steals the key's gate, as a taker without it does. */
async function steal(): Promise<void> {
  const thief = new WebLockGate(navigator.locks, ns, 'leader', { steal: true })
  gates.push(thief)
  await thief.granted
  await tick(20)
}

/** Counts the reads `store` makes from now on. */
function countedReads(store: TermStore): () => number {
  let n = 0
  const real = store.read.bind(store)
  store.read = ((key: string) => (n++, real(key))) as TermStore['read']
  return () => n
}

/** Counts the commits `store` makes from now on. */
function counted(store: TermStore): () => number {
  let n = 0
  const real = store.commit.bind(store)
  store.commit = ((...args: Parameters<TermStore['commit']>) => (n++, real(...args))) as TermStore['commit']
  return () => n
}

const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms))
/** Resolves `'pending'` if `p` has not settled within `ms`. */
const within = <T,>(p: Promise<T>, ms: number) => Promise.race([p, tick(ms).then(() => 'pending' as const)])

describe("zaris/elect's campaign", () => {
  it('a free key: taken through the gate at once; the won term carries its gate, the token is the entry life, the entry is marked as the gate\'s', async () => {
    fresh()
    const s = tab()
    const t0 = performance.now()
    const won = await win(run(s, 'a'))
    expect(won.gate?.held).toBe(true)
    expect(won.sentAt).toBeGreaterThanOrEqual(t0)
    expect(won.sentAt).toBeLessThanOrEqual(performance.now())
    const e = await s.read('leader')
    expect(e?.owner).toBe('a')
    expect(e?.created).toBe(won.token)
    expect(e?.revision).toBe(won.revision)
    expect(e?.ttl).toBe(10_000)
    expect((e as { gate?: string }).gate).toBeDefined()
    expect(await gateState()).toEqual({ held: 1, pending: 0 })
    // Registered: a full client's reaper can tell when this tab goes (its liveness locks are held).
    const held = ((await navigator.locks.query()).held ?? []).map((l) => `${l.name}/${l.mode}`)
    expect(held).toContain(`zaris:${ns}:owner:a/shared`)
    expect(held.some((n) => n.startsWith(`zaris:${ns}:instance:`) && n.endsWith(':a/exclusive'))).toBe(true)
  })

  it('behind a holder it waits in the gate\'s line; when the holder lets the gate go (a closed tab), it takes over with a new life', async () => {
    fresh()
    const first = tab()
    const old = await holder(first, 10_000)
    const second = tab()
    const commits = counted(second)
    const p = win(run(second, 'b'))
    expect(await within(p, 150)).toBe('pending')
    // The holder renews meanwhile: news, but no reason for a take.
    await first.commit([{ key: 'leader', created: old.token }], [{ type: 'set', key: 'leader', value: 'old', ttl: 10_000, owner: 'old' }], WebLockGate.through(old.gate, ns))
    expect(await within(p, 150)).toBe('pending')
    expect(commits()).toBe(0)
    // Other keys' news is not a reason to look again.
    const reads = countedReads(second)
    for (let i = 0; i < 3; i++) await first.commit([], [{ type: 'set', key: `other-${i}`, value: i }])
    expect(await within(p, 100)).toBe('pending')
    expect(reads()).toBe(0)
    expect(await gateState()).toEqual({ held: 1, pending: 1 })
    old.gate.release()
    const won = await p
    expect(won.token).toBeGreaterThan(old.token)
    expect((await second.read('leader'))?.owner).toBe('b')
  })

  it('a holder that stops renewing (frozen: keeps its gate) loses the key at its TTL + grace, and its gate is stolen', async () => {
    fresh()
    const first = tab()
    const old = await holder(first, 400)
    let lost = false
    old.gate.onLost(() => (lost = true))
    const b = tab()
    const reads = countedReads(b)
    const t0 = performance.now()
    const won = await win(run(b, 'b'))
    const ms = performance.now() - t0
    // It looks at the entry, then once past its deadline, then takes: no polling meanwhile.
    expect(reads()).toBeLessThanOrEqual(4)
    // Not at the deadline itself: EXPIRED_GRACE after it (the holder's last renewal may still be landing).
    expect(ms).toBeGreaterThanOrEqual(400 + EXPIRED_GRACE - 30)
    expect(ms).toBeLessThan(400 + EXPIRED_GRACE + 1_000)
    expect(won.token).toBeGreaterThan(old.token)
    expect(won.gate?.held).toBe(true)
    await tick(50)
    expect(lost).toBe(true)
    expect(old.gate.held).toBe(false)
  })

  it('a grantee that holds the gate and never takes the key: after FREE_GRACE the key is taken without the gate, and the gate stolen', async () => {
    fresh()
    const gate = new WebLockGate(navigator.locks, ns, 'leader', {})
    gates.push(gate)
    expect(await gate.granted).toBe(true)
    const t0 = performance.now()
    const won = await win(run(tab(), 'b'))
    const ms = performance.now() - t0
    expect(ms).toBeGreaterThanOrEqual(FREE_GRACE - 50)
    expect(ms).toBeLessThan(FREE_GRACE + 1_500)
    expect(won.gate?.held).toBe(true)
    expect(gate.held).toBe(false)
  })

  it('an expired entry with the gate held by its writer: taken after EXPIRED_GRACE, not FREE_GRACE', async () => {
    fresh()
    const first = tab()
    await holder(first, 50)
    await tick(150)
    const t0 = performance.now()
    const won = await win(run(tab(), 'b'))
    const ms = performance.now() - t0
    expect(ms).toBeLessThan(FREE_GRACE - 500)
    expect(won.gate?.held).toBe(true)
  })

  it('a plain write at the key (not through a gate) with the gate free: the grant cannot take it over; the campaign waits for its TTL, then takes it', async () => {
    fresh()
    const s = tab()
    const plain = await s.commit([], [{ type: 'set', key: 'leader', value: 'plain', ttl: 500, owner: 'plain' }])
    if (!plain.ok) throw new Error('setup')
    const { log, lead } = leadLog()
    const b = tab()
    const commits = counted(b)
    const t0 = performance.now()
    const won = await win(run(b, 'b', { lead }))
    const ms = performance.now() - t0
    // One refused take, then one after the entry's TTL (not a try before it, nor a loop of them).
    expect(commits()).toBe(2)
    expect(ms).toBeGreaterThanOrEqual(450)
    expect(ms).toBeLessThan(500 + 1_500)
    expect(won.token).toBeGreaterThan(plain.entries[0]!.created)
    // A live plain entry is not one the gated take takes over: no early lead on that grant.
    expect(log.filter((l) => l === 'begin').length).toBeLessThanOrEqual(1)
    expect(log).not.toContain('lapse:LOST')
  })

  it('a plain write with no TTL: held gate, refused take; a delete of it lets the campaign through', async () => {
    fresh()
    const s = tab()
    await s.commit([], [{ type: 'set', key: 'leader', value: 'plain', owner: 'plain' }])
    const b = tab()
    const commits = counted(b)
    const p = win(run(b, 'b'))
    expect(await within(p, 400)).toBe('pending')
    // It waits for a change: one refused take, not a loop of them.
    expect(commits()).toBe(1)
    expect(await gateState()).toEqual({ held: 1, pending: 0 })
    await s.commit([], [{ type: 'delete', key: 'leader' }])
    const won = await p
    expect(won.gate?.held).toBe(true)
  })

  it('a free key: the term follows the grant at once; an early lead, if the grant woke a look, never lapses', async () => {
    fresh()
    const { log, lead } = leadLog()
    const won = await win(run(tab(), 'a', { lead }))
    expect(log.filter((l) => l !== 'begin')).toEqual([])
    expect(log.length).toBeLessThanOrEqual(1)
    expect(won.gate?.held).toBe(true)
  })

  it("leads early over the key a gone holder wrote through the gate; over a live holder's entry it waits for the grant", async () => {
    fresh()
    const first = tab()
    const old = await holder(first, 10_000)
    const { log, lead } = leadLog()
    const p = win(run(tab(), 'b', { lead }))
    await tick(200)
    expect(log).toEqual([])
    old.gate.release()
    await p
    expect(log).toEqual(['begin'])
  })

  it('an early lead whose take is refused (a plain write landed meanwhile) lapses as LOST, and the campaign goes on to win later', async () => {
    fresh()
    const s = tab()
    const old = await holder(tab(), 10_000)
    const { log, lead } = leadLog()
    // The take of b is refused: a plain write is made between the grant's read and the take.
    const other = tab()
    beforeTake(s, () => other.commit([], [{ type: 'set', key: 'leader', value: 'plain', ttl: 600, owner: 'plain' }]))
    const p = win(run(s, 'b', { lead }))
    await tick(200)
    old.gate.release()
    for (let i = 0; i < 100 && log.length < 2; i++) await tick(10)
    // Its gate stolen while it waits out the plain write: no lead to lapse any more.
    const thief = new WebLockGate(navigator.locks, ns, 'leader', { steal: true })
    gates.push(thief)
    await thief.granted
    await tick(100)
    thief.release()
    const won = await p
    // (A grant over the plain entry once expired leads early again.)
    expect(log.slice(0, 2)).toEqual(['begin', 'lapse:LOST'])
    expect(log.filter((l) => l.startsWith('lapse'))).toEqual(['lapse:LOST'])
    expect(won.gate?.held).toBe(true)
    expect((await s.read('leader'))?.owner).toBe('b')
  })

  it('an early lead whose gate is stolen before the take lands lapses as STOLEN', async () => {
    fresh()
    const s = tab()
    const old = await holder(tab(), 10_000)
    const { log, lead } = leadLog()
    beforeTake(s, steal)
    const stop = new AbortController()
    const p = win(run(s, 'b', { lead, signal: stop.signal }))
    await tick(200)
    old.gate.release()
    await tick(300)
    expect(log.slice(0, 2)).toEqual(['begin', 'lapse:STOLEN'])
    // Its take refused, it asks again behind the thief and waits there: no busy loop of takes.
    expect(await gateState()).toEqual({ held: 1, pending: 1 })
    const commits = counted(s)
    await tick(300)
    expect(commits()).toBe(0)
    stop.abort(new Error('enough'))
    await p.catch(() => {})
  })

  it('a gate stolen during a take that led nothing early: nothing lapses (a lapse is only ever of a lead begun)', async () => {
    fresh()
    const s = tab()
    const { log, lead } = leadLog()
    beforeTake(s, steal)
    // The key is free: the take goes at once (a plain write through a gate not held takes a free key), and the gate is stolen back.
    await win(run(s, 'a', { lead }))
    expect(log.filter((l) => l.startsWith('lapse')).length).toBeLessThanOrEqual(log.filter((l) => l === 'begin').length)
  })

  it('a grant over an empty key (the holder let the gate go without writing): leads early', async () => {
    fresh()
    const gate = new WebLockGate(navigator.locks, ns, 'leader', {})
    gates.push(gate)
    expect(await gate.granted).toBe(true)
    const { log, lead } = leadLog()
    const p = win(run(tab(), 'b', { lead }))
    await tick(200)
    gate.release()
    const won = await p
    expect(log).toEqual(['begin'])
    expect(won.gate?.held).toBe(true)
  })

  it("a grant over a live plain entry (not the gate's): no early lead; the campaign waits for the entry to end", async () => {
    fresh()
    const gate = new WebLockGate(navigator.locks, ns, 'leader', {})
    gates.push(gate)
    expect(await gate.granted).toBe(true)
    const other = tab()
    await other.commit([], [{ type: 'set', key: 'leader', value: 'plain', ttl: 700, owner: 'plain' }])
    const { log, lead } = leadLog()
    const p = win(run(tab(), 'b', { lead }))
    await tick(150)
    gate.release()
    const won = await p
    expect(log).toEqual([])
    expect(won.gate?.held).toBe(true)
  })

  it('aborted while it waits: rejects with the reason, withdraws from the line and leaves the key alone', async () => {
    fresh()
    const first = tab()
    await holder(first, 10_000)
    const stop = new AbortController()
    const p = win(run(tab(), 'b', { signal: stop.signal }))
    await tick(200)
    expect(await gateState()).toEqual({ held: 1, pending: 1 })
    const reason = new Error('gave up')
    const t0 = performance.now()
    stop.abort(reason)
    await expect(p).rejects.toBe(reason)
    // At the abort, not at the next look.
    expect(performance.now() - t0).toBeLessThan(1_000)
    await tick(50)
    expect(await gateState()).toEqual({ held: 1, pending: 0 })
    expect((await first.read('leader'))?.owner).toBe('old')
  })

  it('aborted before it starts: rejects with the reason and holds nothing', async () => {
    fresh()
    const stop = new AbortController()
    const reason = new Error('never mind')
    stop.abort(reason)
    const s = tab()
    await expect(win(run(s, 'a', { signal: stop.signal }))).rejects.toBe(reason)
    await tick(50)
    expect(await gateState()).toEqual({ held: 0, pending: 0 })
    expect(await s.read('leader')).toBeUndefined()
  })

  it('aborted while its take is in flight: the gate goes at once, the take leaves no entry, the reason is thrown', async () => {
    fresh()
    const s = tab()
    const old = await holder(tab(), 10_000)
    const stop = new AbortController()
    const reason = new Error('resigned at once')
    const realCommit = s.commit.bind(s)
    let atAbort: { held: number; pending: number } | undefined
    s.commit = (async (checks, ops, gate) => {
      if (gate && !stop.signal.aborted) {
        // Once the campaign is waiting for its take (a resign then, as the election's).
        await Promise.resolve()
        stop.abort(reason)
        // The gate goes at the abort, before the take lands (the next in line need not wait for it).
        await tick(20)
        atAbort = await gateState()
      }
      return realCommit(checks, ops, gate)
    }) as typeof s.commit
    const { log, lead } = leadLog()
    const p = win(run(s, 'a', { signal: stop.signal, lead }))
    await tick(200)
    old.gate.release()
    await expect(p).rejects.toBe(reason)
    await tick(100)
    // The take, sent through a gate let go meanwhile, was refused (or, landed first, undone): no entry of the campaign's is left.
    expect((await s.read('leader'))?.owner).not.toBe('a')
    expect(await gateState()).toEqual({ held: 0, pending: 0 })
    expect(atAbort).toEqual({ held: 0, pending: 0 })
    expect(log[0]).toBe('begin')
  })

  it('aborted as its take lands: the landed take is deleted, the gate let go, the reason thrown', async () => {
    fresh()
    const s = tab()
    const stop = new AbortController()
    const reason = new Error('resigned as it landed')
    afterTake(s, (r) => r.ok && stop.abort(reason))
    await expect(win(run(s, 'a', { signal: stop.signal }))).rejects.toBe(reason)
    await tick(100)
    expect(await s.read('leader')).toBeUndefined()
    expect(await gateState()).toEqual({ held: 0, pending: 0 })
  })

  it('once won after an early lead, the campaign signal aborting later leaves the term its gate', async () => {
    fresh()
    const gate = new WebLockGate(navigator.locks, ns, 'leader', {})
    gates.push(gate)
    expect(await gate.granted).toBe(true)
    const { log, lead } = leadLog()
    const stop = new AbortController()
    const p = win(run(tab(), 'b', { lead, signal: stop.signal }))
    await tick(200)
    gate.release()
    const won = await p
    expect(log).toEqual(['begin'])
    stop.abort(new Error('the election closed later'))
    await tick(50)
    expect(won.gate?.held).toBe(true)
    expect(await gateState()).toEqual({ held: 1, pending: 0 })
  })

  it("aborted as its take lands, with another tab's new life at the key already: that entry is left alone", async () => {
    fresh()
    const s = tab()
    const other = tab()
    const stop = new AbortController()
    afterTake(s, async (r) => {
      if (!r.ok) return
      await other.commit([], [{ type: 'set', key: 'leader', value: 'z', ttl: 10_000, owner: 'z' }])
      stop.abort(new Error('resigned'))
    })
    await expect(win(run(s, 'a', { signal: stop.signal }))).rejects.toThrow('resigned')
    await tick(100)
    expect((await s.read('leader'))?.owner).toBe('z')
  })

  it('a grant after the page froze and resumed while it waited: no early lead (a taker without the gate may have moved meanwhile)', async () => {
    fresh()
    const old = await holder(tab(), 10_000)
    const { log, lead } = leadLog()
    const p = win(run(tab(), 'b', { lead }))
    await tick(150)
    freeze()
    old.gate.release()
    await tick(50)
    resume()
    const won = await p
    expect(log).toEqual([])
    expect(won.gate?.held).toBe(true)
  })

  it("the holder's entry deleted while it keeps its gate: taken without the gate after EXPIRED_GRACE, not FREE_GRACE", async () => {
    fresh()
    const first = tab()
    const old = await holder(first, 10_000)
    const p = win(run(tab(), 'b'))
    await tick(150)
    const t0 = performance.now()
    await first.commit([{ key: 'leader', created: old.token }], [{ type: 'delete', key: 'leader' }])
    const won = await p
    expect(performance.now() - t0).toBeLessThan(FREE_GRACE / 2)
    expect(won.gate?.held).toBe(true)
    expect(old.gate.held).toBe(false)
  })

  it('a free key whose gate a grantee keeps: a wake of the page meanwhile does not cut FREE_GRACE short', async () => {
    fresh()
    const gate = new WebLockGate(navigator.locks, ns, 'leader', {})
    gates.push(gate)
    expect(await gate.granted).toBe(true)
    const p = win(run(tab(), 'b'))
    await tick(300)
    freeze()
    resume()
    const t0 = performance.now()
    await p
    expect(performance.now() - t0).toBeGreaterThanOrEqual(FREE_GRACE - 100)
  })

  it('a lock manager that refuses every request (a fake): the campaign fails UNAVAILABLE naming the gate, not a loop', async () => {
    fresh()
    const refusing = { request: () => Promise.reject(new DOMException('refused', 'SecurityError')), query: () => navigator.locks.query() } as unknown as LockManager
    const s = new TermStore(ns, refusing)
    opened.push(s)
    const err = await win(run(s, 'a')).catch((e: unknown) => e as { code?: string; message?: string })
    expect(err).toMatchObject({ code: 'UNAVAILABLE' })
    expect((err as { message: string }).message).toContain('"leader"')
  })

  it('a campaign through waits, a refused take and a takeover leaves no listener on its signal', async () => {
    fresh()
    const first = tab()
    const old = await holder(first, 400)
    const stop = new AbortController()
    const signal = stop.signal
    let listening = 0
    const add = signal.addEventListener.bind(signal)
    const remove = signal.removeEventListener.bind(signal)
    const fns = new Set<unknown>()
    // Counts the 'abort' listeners on the signal (the browser keeps one per function and type).
    signal.addEventListener = ((type: string, fn: EventListener, o?: AddEventListenerOptions) => {
      if (type === 'abort' && !fns.has(fn)) listening++
      if (type === 'abort') fns.add(fn)
      add(type, fn, o)
    }) as typeof signal.addEventListener
    signal.removeEventListener = ((type: string, fn: EventListener, o?: EventListenerOptions) => {
      if (type === 'abort' && fns.delete(fn)) listening--
      remove(type, fn, o)
    }) as typeof signal.removeEventListener
    const b = tab()
    const p = win(run(b, 'b', { signal }))
    await tick(100)
    // A plain write lands in the way meanwhile (news, and a refused take later).
    await first.commit([], [{ type: 'set', key: 'other', value: 1 }])
    await p
    expect(old.gate.held).toBe(false)
    expect(listening).toBe(0)
  })

  it('aborted while a refused take is in flight (no early lead): rejects at once, not at the entry\'s end', async () => {
    fresh()
    const s = tab()
    await tab().commit([], [{ type: 'set', key: 'leader', value: 'plain', owner: 'plain' }])
    const stop = new AbortController()
    const reason = new Error('closed')
    afterTake(s, () => stop.abort(reason))
    const t0 = performance.now()
    await expect(win(run(s, 'a', { signal: stop.signal }))).rejects.toBe(reason)
    expect(performance.now() - t0).toBeLessThan(1_000)
    await tick(50)
    expect(await gateState()).toEqual({ held: 0, pending: 0 })
  })

  describe('without Web Locks', () => {
    it('a free key is taken at once with no gate, and no early lead (there is no grant)', async () => {
      fresh()
      const s = tab(false)
      const { log, lead } = leadLog()
      const t0 = performance.now()
      const won = await win(run(s, 'a', { lead }))
      expect(performance.now() - t0).toBeLessThan(FREE_GRACE / 2)
      expect(log).toEqual([])
      expect(won.gate).toBeUndefined()
      expect((await s.read('leader'))?.owner).toBe('a')
      expect(await gateState()).toEqual({ held: 0, pending: 0 })
    })

    it('a held key: waits for its delete (heard from another tab) or its TTL, then takes it with a new life', async () => {
      fresh()
      const a = tab(false)
      const first = await win(run(a, 'a', { ttl: 10_000 }))
      const b = tab(false)
      const p = win(run(b, 'b'))
      expect(await within(p, 300)).toBe('pending')
      await a.commit([{ key: 'leader', created: first.token }], [{ type: 'delete', key: 'leader' }])
      const second = await p
      expect(second.token).toBeGreaterThan(first.token)
      // And at a TTL nobody announces.
      const c = tab(false)
      await b.commit([{ key: 'leader', created: second.token }], [{ type: 'set', key: 'leader', value: 'b', ttl: 300, owner: 'b' }])
      const t0 = performance.now()
      const third = await win(run(c, 'c'))
      expect(performance.now() - t0).toBeGreaterThanOrEqual(250)
      expect(third.token).toBeGreaterThan(second.token)
    })

    it("a free key taken by another tab before its take lands: it waits for that entry's end, then takes it", async () => {
      fresh()
      const a = tab(false)
      const other = tab(false)
      const real = a.commit.bind(a)
      let once = false
      a.commit = (async (checks, ops, gate) => {
        if (!once) {
          once = true
          await other.commit([], [{ type: 'set', key: 'leader', value: 'z', ttl: 300, owner: 'z' }])
        }
        return real(checks, ops, gate)
      }) as typeof a.commit
      const t0 = performance.now()
      const won = await win(run(a, 'a'))
      expect(performance.now() - t0).toBeGreaterThanOrEqual(250)
      expect((await a.read('leader'))?.created).toBe(won.token)
    })

    it('aborted while it waits: rejects with the reason', async () => {
      fresh()
      const a = tab(false)
      await win(run(a, 'a'))
      const stop = new AbortController()
      const p = win(run(tab(false), 'b', { signal: stop.signal }))
      await tick(100)
      const reason = new Error('stop')
      const t0 = performance.now()
      stop.abort(reason)
      await expect(p).rejects.toBe(reason)
      expect(performance.now() - t0).toBeLessThan(1_000)
    })
  })
})
