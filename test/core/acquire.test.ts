/**
 * Taking a hold (src/core/acquire/index.ts): the options every acquire checks and
 * their defaults, what is checked before the client is ready, the keys of a
 * multi-key acquire and the room a shared lock's key has — over the real
 * memory store on a ManualClock.
 */
import { afterEach, describe, expect, test } from 'vitest'
import { Client, InvalidArgumentError, Lock } from 'zaris'
import { acquire } from '../../src/core/acquire'
import { checkAcquire } from '../../src/core/acquire/checks'
import { contextOf, freshStore, staged } from './machine-kit'

const closing: Array<() => unknown> = []
afterEach(async () => {
  for (const c of closing.splice(0).reverse()) await c()
})

function setup() {
  const { clock, raw } = freshStore()
  const store = raw()
  const client = (id: string) => {
    const c = new Client(raw(), { id, clock })
    closing.push(() => c.close())
    return c
  }
  closing.push(() => store.close())
  return { clock, store, client, raw }
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

  test('the error names the key that is wrong by its place in the list', async () => {
    const { client } = setup()
    const err = await rejection(() => client('a').locks.acquire(['lock:a', 'lock:b', '']))
    expect(err.message).toMatch(/^keys\[2\] /)
  })
})

describe('the mode of a lock', () => {
  test('shared and exclusive are the modes; no mode is exclusive; anything else is refused', async () => {
    const { client } = setup()
    const a = client('a')
    const shared = (await a.locks.acquire('lock:m', { mode: 'shared', autoRenew: false }))!
    const another = (await client('b').locks.acquire('lock:m', { mode: 'shared', autoRenew: false }))!
    expect([shared.mode, another.mode]).toEqual(['shared', 'shared'])
    await Promise.all([shared.release(), another.release()])
    const plain = (await a.locks.acquire('lock:m', { autoRenew: false }))!
    expect(plain.mode).toBe('exclusive')
    expect(await client('c').locks.acquire('lock:m', { mode: 'shared' })).toBeNull()
    await plain.release()
    expect((await a.locks.acquire('lock:m', { mode: 'exclusive', autoRenew: false }))!.mode).toBe('exclusive')
    expect(await rejection(() => a.locks.acquire('lock:x', { mode: 'Shared' as never }))).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await rejection(() => a.locks.acquire('lock:x', { mode: 1 as never }))).toMatchObject({ code: 'INVALID_ARGUMENT' })
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
  /** A context whose client is still connecting, and the lock it wants. */
  function connecting() {
    const { clock, raw } = freshStore()
    const store = raw()
    closing.push(() => store.close())
    let ready!: () => void
    const ctx = { ...contextOf(store, clock, 'me'), ready: new Promise<void>((r) => (ready = r)) }
    const want = { kind: 'lock', key: 'lock:k', mode: 'exclusive' } as const
    return { ctx, want, ready: () => ready() }
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
    const { ctx, want, ready } = connecting()
    const c = new AbortController()
    c.abort(new Error('caller gave up'))
    const taking = acquire(ctx, want, checkAcquire(ctx, { signal: c.signal, wait: 1_000, autoRenew: false }))
    taking.catch(() => {})
    expect(await settled(taking)).toBe(true)
    await expect(taking).rejects.toThrow('caller gave up')
    ready()
  })

  test('a closed client rejects at once with CLOSED', async () => {
    const { ctx, want, ready } = connecting()
    ctx.close()
    const taking = acquire(ctx, want, checkAcquire(ctx, { wait: 1_000, autoRenew: false }))
    taking.catch(() => {})
    expect(await settled(taking)).toBe(true)
    await expect(taking).rejects.toMatchObject({ code: 'CLOSED' })
    ready()
  })

  test('otherwise the try waits for the client to be ready', async () => {
    const { ctx, want, ready } = connecting()
    const taking = acquire(ctx, want, checkAcquire(ctx, { autoRenew: false }))
    expect(await settled(taking)).toBe(false)
    ready()
    const lock = (await taking)!
    expect(lock.key).toBe('lock:k')
    await lock.release()
  })
})

describe('a lease', () => {
  const settle = () => new Promise((r) => setTimeout(r, 0))

  test('its waiters stand in line: a revoke wakes the first, and the one behind sends nothing', async () => {
    const { client, raw, clock } = setup()
    const behindStore = staged(raw())
    const behind = new Client(behindStore.adapter, { id: 'behind', clock })
    closing.push(() => behind.close())
    const held = (await client('holder').leases.grant('lease:l', { value: 'h', autoRenew: false }))!
    const firstWaits = client('first').leases.grant('lease:l', { value: 'f', wait: 5_000, autoRenew: false })
    await settle()
    const behindWaits = behind.leases.grant('lease:l', { value: 'b', wait: 5_000, autoRenew: false })
    await settle()
    let commits = 0
    const inner = behindStore.adapter.commit
    behindStore.adapter.commit = (...args) => (commits++, inner(...args))
    await held.revoke()
    const got = (await firstWaits)!
    expect(got.value).toBe('f')
    await settle()
    expect(commits).toBe(0)
    await got.revoke()
    expect((await behindWaits)!.value).toBe('b')
  })

  test('never takes a key over a shared lock\'s group, even one whose holders are all gone', async () => {
    const { client, clock } = setup()
    await client('crashed').locks.acquire('k', { mode: 'shared', ttl: 1_000, autoRenew: false })
    await clock.advance(1_100) // its share expires; the group (no TTL) stays
    expect(await client('a').leases.grant('k', { value: 1 })).toBeNull()
    // A lock takes a drained group over.
    expect(await client('b').locks.acquire('k', { autoRenew: false })).not.toBeNull()
  })
})
