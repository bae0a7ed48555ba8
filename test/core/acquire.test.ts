/**
 * Taking a hold (src/core/acquire.ts): the options every acquire checks and
 * their defaults, what is checked before the client is ready, the keys of a
 * multi-key acquire and the room a shared lock's key has — over the real
 * memory store on a ManualClock.
 */
import { afterEach, describe, expect, test } from 'vitest'
import { Client, InvalidArgumentError, Lock } from 'zaris'
import { checkAcquire, take } from '../../src/core/acquire'
import { claimOf } from '../../src/core/claim'
import { ExclusivePart } from '../../src/core/exclusive-part'
import type { HoldInit } from '../../src/core/hold'
import { contextOf, freshStore } from './machine-kit'

const closing: Array<() => unknown> = []
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c()
})

function setup() {
  const { clock, raw } = freshStore()
  const store = raw()
  const client = (id: string, options: { ttl?: number } = {}) => {
    const c = new Client(raw(), { id, clock, ...options })
    closing.push(() => c.close())
    return c
  }
  closing.push(() => store.close())
  return { clock, store, client }
}

/** The error `fn` rejects with (the test fails when it resolves). */
async function rejection(fn: () => Promise<unknown>): Promise<Error> {
  const r = await fn().then(
    () => undefined,
    (err: unknown) => err as Error,
  )
  expect(r, 'expected a rejection').toBeDefined()
  return r!
}

describe('the keys of a multi-key acquire', () => {
  test('64 keys are taken in one acquire; 65 and none are refused', async () => {
    const { client } = setup()
    const a = client('a')
    const keys = Array.from({ length: 64 }, (_, i) => `lock:${i}`)
    const set = (await a.locks.acquire(keys, { autoRenew: false }))!
    expect(set.locks.map((l) => l.key)).toEqual(keys)
    await set.release()
    expect(await rejection(() => a.locks.acquire([...keys, 'lock:64']))).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await rejection(() => a.locks.acquire([]))).toMatchObject({ code: 'INVALID_ARGUMENT' })
  })

  test('a key given twice, or one that is no key, is refused and nothing is taken', async () => {
    const { client, store } = setup()
    const a = client('a')
    expect(await rejection(() => a.locks.acquire(['lock:a', 'lock:b', 'lock:a']))).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await rejection(() => a.locks.acquire(['lock:a', '']))).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await rejection(() => a.locks.acquire(['lock:a', 7 as never]))).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect((await store.list('lock:')).entries).toEqual([])
    // Checked at the call, before anything else: a closed client still names the bad argument.
    await a.close()
    expect(await rejection(() => a.locks.acquire(['lock:a', 'lock:a']))).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await rejection(() => a.locks.acquire(['lock:a', '']))).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await rejection(() => a.locks.acquire(['lock:a']))).toMatchObject({ code: 'CLOSED' })
  })
})

describe('a shared lock\'s key', () => {
  test('the room the error names is the room there is: a key that long is taken shared, one longer is refused', async () => {
    const { client } = setup()
    const a = client('a-client-id')
    const err = await rejection(() => a.locks.acquire('k'.repeat(1024), { mode: 'shared' }))
    expect(err).toBeInstanceOf(InvalidArgumentError)
    const room = Number(/at most (\d+) UTF-16/.exec(err.message)?.[1])
    expect(room).toBeGreaterThan(900)
    expect(room).toBeLessThan(1024)
    const fits = (await a.locks.acquire('k'.repeat(room), { mode: 'shared', autoRenew: false }))!
    expect(fits.mode).toBe('shared')
    await fits.release()
    expect(await rejection(() => a.locks.acquire('k'.repeat(room + 1), { mode: 'shared' }))).toBeInstanceOf(InvalidArgumentError)
    // An exclusive lock has the whole key length.
    const exclusive = (await a.locks.acquire('k'.repeat(1024), { autoRenew: false }))!
    expect(exclusive.mode).toBe('exclusive')
    await exclusive.release()
  })

  test('the room depends on the client\'s id: a longer id leaves less', async () => {
    const { client } = setup()
    const roomOf = async (c: Client) => Number(/at most (\d+) UTF-16/.exec((await rejection(() => c.locks.acquire('k'.repeat(1024), { mode: 'shared' }))).message)?.[1])
    expect((await roomOf(client('ab'))) - (await roomOf(client('abcdef')))).toBe(4)
  })
})

describe('before the client is ready', () => {
  /** A context whose client is still connecting, and a lock claim in it. */
  function connecting() {
    const { clock, raw } = freshStore()
    const store = raw()
    closing.push(() => store.close())
    let ready!: () => void
    const ctx = { ...contextOf(store, clock, 'me'), ready: new Promise<void>((r) => (ready = r)) }
    const spec = { value: null, ttl: 10_000, autoRenew: false, make: (init: HoldInit<null>) => new Lock(ctx, init) }
    const claim = claimOf(ctx, [new ExclusivePart(ctx, 'lock:k', spec, { lock: true })], { key: 'lock:k', value: 'exclusive' }, ([h]) => h!)
    return { ctx, claim, ready: () => ready() }
  }
  /** Whether `p` has settled once pending callbacks ran. */
  async function settled(p: Promise<unknown>): Promise<boolean> {
    let done = false
    p.then(
      () => (done = true),
      () => (done = true),
    )
    await new Promise((r) => setTimeout(r, 0))
    return done
  }

  test('an aborted signal rejects at once with its reason, without waiting for the client', async () => {
    const { ctx, claim, ready } = connecting()
    const c = new AbortController()
    c.abort(new Error('caller gave up'))
    const taking = take(ctx, claim, checkAcquire(ctx, { signal: c.signal, wait: 1_000 }))
    taking.catch(() => {})
    expect(await settled(taking)).toBe(true)
    await expect(taking).rejects.toThrow('caller gave up')
    ready()
  })

  test('a closed client rejects at once with CLOSED', async () => {
    const { ctx, claim, ready } = connecting()
    ctx.close()
    const taking = take(ctx, claim, checkAcquire(ctx, { wait: 1_000 }))
    taking.catch(() => {})
    expect(await settled(taking)).toBe(true)
    await expect(taking).rejects.toMatchObject({ code: 'CLOSED' })
    ready()
  })

  test('otherwise the try waits for the client to be ready', async () => {
    const { ctx, claim, ready } = connecting()
    const taking = take(ctx, claim, checkAcquire(ctx, {}))
    expect(await settled(taking)).toBe(false)
    ready()
    const lock = (await taking)!
    expect(lock.key).toBe('lock:k')
    await lock.release()
  })
})
