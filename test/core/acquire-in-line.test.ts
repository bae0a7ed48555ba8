/**
 * The acquire machine's line-respecting tries (`inLine`, asked for by
 * zaris/web-locks through the internal `IN_LINE` option of
 * `locks.acquire`), one transition at a time over the real memory store on
 * a ManualClock (machine-kit.ts), beside what a plain acquire does in the
 * same state. Kept with the core's tests: they test the core's machine, and
 * the mutation run (test/mutation) counts only test/core and test/memory.
 */
import { afterEach, describe, expect, test } from 'vitest'
import { Client, Lock } from 'zaris'
import { AcquireMachine, type MachineOptions } from '../../src/core/acquire/machine'
import { IN_LINE } from '../../src/core/acquire/checks'
import { claimOf } from '../../src/core/acquire/claim'
import { ExclusivePart } from '../../src/core/acquire/exclusive-part'
import type { HoldInit } from '../../src/core/hold/hold'
import { contextOf, freshStore, staged } from './machine-kit'

const KEY = 'lock:line'
const QUEUE = `\u0001q${KEY}\u0001`
const cleanups: Array<() => unknown> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

function setup(options: Partial<MachineOptions> = {}, key = KEY) {
  const { clock, raw } = freshStore()
  const store = staged(raw())
  const ctx = contextOf(store.adapter, clock, 'waiter')
  const holder = new Client(raw(), { id: 'holder', clock })
  const won: Lock[] = []
  const make = (init: HoldInit<null>) => {
    const l = new Lock(ctx, init)
    won.push(l)
    return l
  }
  const claim = claimOf(ctx, [new ExclusivePart(ctx, key, { value: null, ttl: 10_000, autoRenew: false, make }, { lock: true })], { key, value: 'exclusive' }, ([h]) => h!)
  const m = new AcquireMachine(ctx, claim, { wait: 5_000, ...options })
  cleanups.push(async () => {
    m.stop()
    await Promise.all(won.map((l) => l.release().catch(() => {})))
    await holder.close()
  })
  /** Another client's place in line, as its join would write it. */
  const placeAhead = async () => {
    const k = `${QUEUE}ahead.1`
    const r = await store.adapter.commit([{ key: k, revision: null }], [{ type: 'set', key: k, value: 'exclusive', ttl: 10_000, owner: 'ahead' }])
    if (!r.ok) throw new Error('place taken')
  }
  /** Counts the commits the machine sends from now on. */
  const commits = () => {
    let n = 0
    const inner = store.adapter.commit
    store.adapter.commit = (...args) => {
      n++
      return inner(...args)
    }
    return () => n
  }
  return { m, holder, placeAhead, commits, store, key }
}

describe('open, respecting the line', () => {
  test('a waiter stands in line and the key is free: a plain try takes it, a line-respecting one joins without trying', async () => {
    const plain = setup()
    await plain.placeAhead()
    expect((await plain.m.step({ name: 'open' })).name).toBe('won')

    const inLine = setup({ inLine: {} })
    await inLine.placeAhead()
    const sent = inLine.commits()
    expect(await inLine.m.step({ name: 'open' })).toEqual({ name: 'join', sight: undefined })
    expect(sent()).toBe(0)
    expect(await inLine.store.adapter.get(KEY)).toBeUndefined()
    // In line it stands behind the waiter ahead.
    expect(await inLine.m.step({ name: 'join', sight: undefined })).toMatchObject({ name: 'behind', ahead: { owner: 'ahead' } })
  })

  test('with no time to wait it gives up (ifAvailable gets null), the key still free', async () => {
    const { m, placeAhead, store } = setup({ inLine: {}, wait: 0 })
    await placeAhead()
    expect((await m.step({ name: 'open' })).name).toBe('gave-up')
    expect(await store.adapter.get(KEY)).toBeUndefined()
  })

  test('nobody in line: it tries at once and takes the free key', async () => {
    const { m } = setup({ inLine: {} })
    expect((await m.step({ name: 'open' })).name).toBe('won')
  })

  test('a steal goes ahead of the line, as the Web Locks API\'s does', async () => {
    const { m, placeAhead, holder, store } = setup({ inLine: {}, steal: true })
    await placeAhead()
    const old = (await holder.locks.acquire(KEY, { ttl: 10_000, autoRenew: false }))!
    const s = await m.step({ name: 'open' })
    expect(s.name).toBe('steal')
    expect((await m.step(s)).name).toBe('won')
    expect((await store.adapter.get(KEY))!.created).toBeGreaterThan(old.token)
  })
})

describe('onQueued', () => {
  test('called once, when the place in line is written', async () => {
    let calls = 0
    let placedThen = false
    const { m, holder, store } = setup({
      inLine: {
        onQueued: () => {
          calls++
          void store.adapter.list(QUEUE).then((line) => (placedThen = line.entries.some((e) => e.owner === 'waiter')))
        },
      },
    })
    await holder.locks.acquire(KEY, { ttl: 10_000, autoRenew: false })
    const s = await m.step({ name: 'open' })
    expect(s.name).toBe('join')
    expect(calls).toBe(0)
    expect((await m.step(s)).name).toBe('watch')
    await Promise.resolve()
    expect(calls).toBe(1)
    await m.step({ name: 'join', sight: undefined })
    expect(calls).toBe(1)
    await new Promise((r) => setTimeout(r, 0))
    expect(placedThen).toBe(true)
  })

  test('without a line (a key too long for one): called when it starts to watch', async () => {
    let calls = 0
    const key = `k${'x'.repeat(1019)}`
    const c = new AbortController()
    const { m, holder } = setup({ inLine: { onQueued: () => calls++ }, signal: c.signal }, key)
    await holder.locks.acquire(key, { ttl: 10_000, autoRenew: false })
    expect(m.line).toBeUndefined()
    const s = await m.step({ name: 'open' })
    expect(s.name).toBe('watch')
    expect(calls).toBe(0)
    const watching = m.step(s)
    expect(calls).toBe(1)
    c.abort()
    await expect(watching).rejects.toBeDefined()
  })
})

test('locks.acquire takes the option under its registered symbol: onQueued says when it waits; a free key behind a waiter is not taken', async () => {
  const { clock, raw } = freshStore()
  const a = new Client(raw(), { id: 'a', clock })
  const b = new Client(raw(), { id: 'b', clock })
  cleanups.push(() => Promise.all([a.close(), b.close()]))
  expect(IN_LINE).toBe(Symbol.for('zaris.acquire.inLine'))
  const held = (await a.locks.acquire(KEY, { ttl: 10_000 }))!
  let queued = 0
  const waiting = b.locks.acquire(KEY, { ttl: 10_000, wait: 5_000, [IN_LINE]: { onQueued: () => queued++ } } as object)
  await until(() => queued === 1)
  await held.release()
  const got = (await waiting)!
  expect([got.owner, queued]).toEqual(['b', 1])
  await got.release()
  // A place in line with the key free (a waiter woken, not yet through): the option keeps a's try out.
  const store = raw()
  const place = `${QUEUE}c.1`
  await store.commit([], [{ type: 'set', key: place, value: 'exclusive', ttl: 10_000, owner: 'c' }])
  expect(await a.locks.acquire(KEY, { ttl: 10_000, [IN_LINE]: {} } as object)).toBeNull()
  const barged = (await a.locks.acquire(KEY, { ttl: 10_000 }))!
  expect(barged).not.toBeNull()
  await barged.release()
  await store.close()
})

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5))
  expect(check()).toBe(true)
}
