/**
 * The local adapter's own rules for a parked commit (src/adapters/kit/local-adapter.ts),
 * on a real LocalStore and the system clock: how long `waitChange` keeps a
 * commit parked (whole ms, cut to a day), and that other ways
 * (`CommitOptions.orElse`) count only with `keepParked`, as the contract says.
 * The adapter's close ends every parked wait, also one a backend parks
 * only after an await (neither real backend does: a fake one, named so,
 * wraps the LocalStore to show it).
 */
import { describe, expect, test } from 'vitest'
import type { Check, CommitResult, Op } from 'zaris'
import type { LocalBackend } from '../../src/adapters/kit/local-adapter'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { localAdapter, MAX_PARK_MS } from '../../src/adapters/kit/local-adapter'
import { systemClock } from '../../src/core/time/clock'

const set = (key: string, owner: string): Op => ({ type: 'set', key, value: null, owner })
const absent = (key: string): Check => ({ key, revision: null })

function setup() {
  const store = new LocalStore({ clock: systemClock })
  const adapter = localAdapter('memory', store)
  const held = store.commit([absent('a')], [set('a', 'holder')]) as Extract<CommitResult, { ok: true }>
  return { store, adapter, token: held.entries[0]!.created }
}

describe('the local adapter parks a commit', () => {
  test('for its waitChange: unchanged, it is answered with its failure once that passes, not later', async () => {
    const { adapter } = setup()
    const t0 = performance.now()
    const r = await adapter.commit([absent('a')], [set('a', 'w')], { waitChange: 40, keepParked: true })
    const took = performance.now() - t0
    expect(r.ok).toBe(false)
    expect(took).toBeGreaterThanOrEqual(35)
    expect(took).toBeLessThan(5_000)
    await adapter.close()
  })

  test('past a day (MAX_PARK_MS) it still waits: cut to a day, not to nothing, and goes through when the key frees', async () => {
    const { adapter, token } = setup()
    expect(MAX_PARK_MS).toBe(86_400_000)
    let parked = false
    const take = adapter.commit([absent('a')], [set('a', 'w')], { waitChange: 10 * MAX_PARK_MS, keepParked: true, onParked: () => (parked = true) })
    await new Promise((r) => setTimeout(r, 30))
    expect(parked).toBe(true)
    await adapter.commit([{ key: 'a', created: token }], [{ type: 'delete', key: 'a' }])
    expect(await take).toMatchObject({ ok: true, entries: [{ key: 'a', owner: 'w' }] })
    await adapter.close()
  })

  test('other ways (orElse) count only with keepParked: without it the commit is judged on its own checks', async () => {
    const { adapter, store } = setup()
    const orElse = [{ checks: [absent('b')], ops: [set('b', 'w')] }]
    const r = await adapter.commit([absent('a')], [set('a', 'w')], { waitChange: 30, orElse })
    expect(r.ok).toBe(false)
    expect(store.get('b')).toBeUndefined()
    // With keepParked the free way goes through at the first try.
    const kept = await adapter.commit([absent('a')], [set('a', 'w')], { waitChange: 30, keepParked: true, orElse })
    expect(kept).toMatchObject({ ok: true, entries: [{ key: 'b', owner: 'w' }] })
    await adapter.close()
  })
})

describe('the local adapter parks a commit only with a wait', () => {
  test.each([undefined, 0, -5, Number.NaN])('waitChange %s: a failing commit is answered at once and never parks', async (waitChange) => {
    const { adapter, store } = setup()
    let parked = false
    const r = await adapter.commit([absent('a')], [set('a', 'w')], { waitChange, keepParked: true, onParked: () => (parked = true) })
    expect(r.ok).toBe(false)
    expect(parked).toBe(false)
    expect(store.parked).toBe(0)
    await adapter.close()
  })

  test('a fraction of a ms is a whole one: it parks', async () => {
    const { adapter } = setup()
    let parked = false
    const r = await adapter.commit([absent('a')], [set('a', 'w')], { waitChange: 0.4, keepParked: true, onParked: () => (parked = true) })
    expect([r.ok, parked]).toEqual([false, true])
    await adapter.close()
  })
})

/** A fake backend (neither real one parks after an await): the LocalStore's, parking a turn later; counts each call of a wait's end. */
function laterBackend(store: LocalStore) {
  const seen = { ends: 0 }
  const backend: LocalBackend = {
    get: (key) => store.get(key),
    list: (prefix, after, limit) => store.list(prefix, after, limit),
    history: (prefix, after, limits) => store.history(prefix, after, limits),
    watch: (prefix, sink, from) => store.watch(prefix, sink, from),
    async commit(checks, ops, seenRev, requestId, park) {
      await new Promise((r) => setTimeout(r, 0))
      const stop = park?.stop
      return store.commit(checks, ops, seenRev, requestId, park && stop && { ...park, stop: (end) => stop(() => (seen.ends++, end())) })
    },
  }
  return { backend, seen }
}

describe('the local adapter closes', () => {
  test('a wait a backend parks after the close began ends at once, answered with its failure (fake backend: parks a turn later)', async () => {
    const { store } = setup()
    const { backend } = laterBackend(store)
    const adapter = localAdapter('later', backend)
    const take = adapter.commit([absent('a')], [set('a', 'w')], { waitChange: 60_000, keepParked: true })
    await adapter.close()
    const answer = await Promise.race([take, new Promise((r) => setTimeout(() => r('still parked'), 2_000))])
    expect(answer).toMatchObject({ ok: false })
    expect(store.parked).toBe(0)
  })

  test('a wait that is over is not ended again by the close (fake backend: counts the ends)', async () => {
    const { store, token } = setup()
    const { backend, seen } = laterBackend(store)
    const adapter = localAdapter('later', backend)
    let parked = false
    const take = adapter.commit([absent('a')], [set('a', 'w')], { waitChange: 60_000, keepParked: true, onParked: () => (parked = true) })
    await expect.poll(() => parked).toBe(true)
    store.commit([{ key: 'a', created: token }], [{ type: 'delete', key: 'a' }])
    expect(await take).toMatchObject({ ok: true })
    await adapter.close()
    expect(seen.ends).toBe(0)
  })
})
