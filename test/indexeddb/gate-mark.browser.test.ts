/**
 * The mark a commit through a Web Lock gate leaves on its entry, in
 * Chromium (src/adapters/indexeddb/gate.ts, transactions.ts): a take through
 * a held gate is marked, and the next holder of the gate takes the key over
 * it in a new life; a gate asked to wait marks its entry held or not (a
 * waiter's takeover before it steals the gate); an entry written without a
 * gate is one no gate holder may take over. Shared gates (a group of
 * readers) take over an exclusive mark but never a reader's own: readers
 * hold beside each other.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Adapter, Op } from 'zaris'
import { indexedDbAdapter } from 'zaris/indexeddb'
import { dropNamespace } from '../browser-harness/drop-namespace'

const opened: Adapter[] = []
let ns = ''
afterEach(async () => {
  await Promise.all(opened.splice(0).map((a) => a.close()))
  await dropNamespace(ns)
})

function adapter(): Adapter {
  const a = indexedDbAdapter({ namespace: ns })
  opened.push(a)
  return a
}

const take = (owner: string): Op[] => [{ type: 'set', key: 'k', value: null, ttl: 60_000, owner }]

/** Holds the Web Lock of the gate of `k` from outside the store until `letGo` is called. */
async function holdGate(): Promise<() => void> {
  let letGo!: () => void
  await new Promise<void>((held) => void navigator.locks.request(`zaris:${ns}:gate:k`, () => (held(), new Promise<void>((r) => (letGo = r)))))
  return letGo
}

describe('indexeddb gate marks', () => {
  it('a take through a held gate is marked: the next holder of the gate takes the key over it, in a new life', async () => {
    ns = `mark-${Math.random().toString(36).slice(2, 10)}`
    const a = adapter()
    const plain = a.gate!('k', { ifAvailable: true })
    expect(await plain.granted).toBe(true)
    const r = await a.commit([{ key: 'k', revision: null }], take('a'), { gate: plain })
    expect(r.ok).toBe(true)
    plain.release()
    const next = a.gate!('k')
    expect(await next.granted).toBe(true)
    const over = await a.commit([{ key: 'k', revision: null }], take('b'), { gate: next })
    expect(over.ok && over.entries[0]!.created).toBeGreaterThan(r.ok ? r.revision : Infinity)
    next.release()
  })

  it('an entry written without a gate is not taken over by a gate holder', async () => {
    ns = `mark-${Math.random().toString(36).slice(2, 10)}`
    const a = adapter()
    expect((await a.commit([{ key: 'k', revision: null }], take('a'))).ok).toBe(true)
    const next = a.gate!('k')
    expect(await next.granted).toBe(true)
    const over = await a.commit([{ key: 'k', revision: null }], take('b'), { gate: next })
    expect(over.ok).toBe(false)
    next.release()
  })

  it('a take through a waiting gate that is not held yet is marked (a takeover before its steal)', async () => {
    ns = `mark-${Math.random().toString(36).slice(2, 10)}`
    const a = adapter()
    await a.get('warm')
    const letGo = await holdGate()
    const waiting = a.gate!('k')
    const r = await a.commit([{ key: 'k', revision: null }], take('a'), { gate: waiting })
    expect(r.ok).toBe(true)
    waiting.release()
    letGo()
    const next = a.gate!('k')
    expect(await next.granted).toBe(true)
    const over = await a.commit([{ key: 'k', revision: null }], take('b'), { gate: next })
    expect(over.ok).toBe(true)
    next.release()
  })

  it('a shared gate does not take over the mark of another shared holder (readers hold beside each other)', async () => {
    ns = `mark-${Math.random().toString(36).slice(2, 10)}`
    const a = adapter()
    const first = a.gate!('k', { mode: 'shared' })
    expect(await first.granted).toBe(true)
    const r = await a.commit([{ key: 'k', revision: null }], take('a'), { gate: first })
    expect(r.ok).toBe(true)
    const second = a.gate!('k', { mode: 'shared' })
    expect(await second.granted).toBe(true)
    const over = await a.commit([{ key: 'k', revision: null }], take('b'), { gate: second })
    expect(over.ok).toBe(false)
    if (!over.ok) expect(over.failed[0]!.entry?.owner).toBe('a')
    // Let go by the first reader, its entry is still another reader's mark to the second: not taken over.
    first.release()
    expect((await a.commit([{ key: 'k', revision: null }], take('b'), { gate: second })).ok).toBe(false)
    second.release()
  })

  it('a shared gate takes over an exclusive mark, and an exclusive gate a shared one, each in a new life', async () => {
    ns = `mark-${Math.random().toString(36).slice(2, 10)}`
    const a = adapter()
    const writer = a.gate!('k')
    expect(await writer.granted).toBe(true)
    const w = await a.commit([{ key: 'k', revision: null }], take('w'), { gate: writer })
    expect(w.ok).toBe(true)
    writer.release()
    const reader = a.gate!('k', { mode: 'shared' })
    expect(await reader.granted).toBe(true)
    const r = await a.commit([{ key: 'k', revision: null }], take('r'), { gate: reader })
    expect(r.ok && r.entries[0]!.created).toBeGreaterThan(w.ok ? w.revision : Infinity)
    reader.release()
    const next = a.gate!('k')
    expect(await next.granted).toBe(true)
    const x = await a.commit([{ key: 'k', revision: null }], take('x'), { gate: next })
    expect(x.ok && x.entries[0]!.created).toBeGreaterThan(r.ok ? r.revision : Infinity)
    next.release()
  })

  it('a take over a marked entry is a new life even by the same owner, and only a check that the key is free is taken over', async () => {
    ns = `mark-${Math.random().toString(36).slice(2, 10)}`
    const a = adapter()
    const first = a.gate!('k')
    expect(await first.granted).toBe(true)
    const r = await a.commit([{ key: 'k', revision: null }], take('a'), { gate: first })
    expect(r.ok).toBe(true)
    first.release()
    const next = a.gate!('k')
    expect(await next.granted).toBe(true)
    // A check of another revision at the key is judged as it stands, gate or not.
    const stale = await a.commit([{ key: 'k', revision: 999 }], take('a'), { gate: next })
    expect(stale.ok).toBe(false)
    const again = await a.commit([{ key: 'k', revision: null }], take('a'), { gate: next })
    expect(again.ok && again.entries[0]!.created, 'the old token must die').toBeGreaterThan(r.ok ? r.entries[0]!.created : Infinity)
    next.release()
  })

  it('a renewal without the gate keeps the mark; a new life written without it carries none', async () => {
    ns = `mark-${Math.random().toString(36).slice(2, 10)}`
    const a = adapter()
    const holder = a.gate!('k')
    expect(await holder.granted).toBe(true)
    const r = await a.commit([{ key: 'k', revision: null }], take('a'), { gate: holder })
    if (!r.ok) throw new Error('the take failed')
    // The holder renews as a hold does, without its gate, then is frozen past its gate's release.
    const created = r.entries[0]!.created
    expect((await a.commit([{ key: 'k', created }], take('a'))).ok).toBe(true)
    holder.release()
    const next = a.gate!('k')
    expect(await next.granted).toBe(true)
    const over = await a.commit([{ key: 'k', revision: null }], take('b'), { gate: next })
    expect(over.ok, 'the renewed entry lost its mark').toBe(true)
    if (!over.ok) return
    // A plain write of a new life over it (no gate): no gate holder may take that over.
    const plain = await a.commit([{ key: 'k', created: over.entries[0]!.created }], [{ ...take('p')[0]!, fresh: true } as Op])
    expect(plain.ok).toBe(true)
    expect((await a.commit([{ key: 'k', revision: null }], take('c'), { gate: next })).ok).toBe(false)
    next.release()
  })

  it("a key's gate takes over a marked entry at its own key only", async () => {
    ns = `mark-${Math.random().toString(36).slice(2, 10)}`
    const a = adapter()
    const ofJ = a.gate!('j')
    expect(await ofJ.granted).toBe(true)
    expect((await a.commit([{ key: 'j', revision: null }], [{ type: 'set', key: 'j', value: null, ttl: 60_000, owner: 'a' }], { gate: ofJ })).ok).toBe(true)
    ofJ.release()
    const ofK = a.gate!('k')
    expect(await ofK.granted).toBe(true)
    const both = await a.commit([{ key: 'k', revision: null }, { key: 'j', revision: null }], take('b'), { gate: ofK })
    expect(both.ok).toBe(false)
    if (!both.ok) expect(both.failed.map((f) => f.key)).toEqual(['j'])
    ofK.release()
  })

  it("a commit through a key's gate marks only that key's entry", async () => {
    ns = `mark-${Math.random().toString(36).slice(2, 10)}`
    const a = adapter()
    const gate = a.gate!('k')
    expect(await gate.granted).toBe(true)
    const ops: Op[] = [...take('a'), { type: 'set', key: 'j', value: null, ttl: 60_000, owner: 'a' }]
    expect((await a.commit([{ key: 'k', revision: null }], ops, { gate })).ok).toBe(true)
    gate.release()
    const ofJ = a.gate!('j')
    expect(await ofJ.granted).toBe(true)
    const over = await a.commit([{ key: 'j', revision: null }], [{ type: 'set', key: 'j', value: null, ttl: 60_000, owner: 'b' }], { gate: ofJ })
    expect(over.ok).toBe(false)
    ofJ.release()
  })
})
