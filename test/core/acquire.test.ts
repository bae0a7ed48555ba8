/**
 * Taking a hold (src/core/acquire.ts): the options every acquire checks and
 * their defaults, what is checked before the client is ready, the keys of a
 * multi-key acquire and the room a shared lock's key has — over the real
 * memory store on a ManualClock.
 */
import { afterEach, describe, expect, test } from 'vitest'
import { Client, InvalidArgumentError } from 'zaris'
import { freshStore } from './machine-kit'

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
