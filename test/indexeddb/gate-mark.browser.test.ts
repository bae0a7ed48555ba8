/**
 * The mark a commit through a Web Lock gate leaves on its entry, in
 * Chromium (src/adapters/indexeddb/gate.ts, transactions.ts): a take through
 * a held gate is marked, and the next holder of the gate takes the key over
 * it in a new life; a gate asked to wait marks its entry held or not (a
 * waiter's takeover before it steals the gate); an entry written without a
 * gate is one no gate holder may take over.
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
})
