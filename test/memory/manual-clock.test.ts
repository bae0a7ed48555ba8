/**
 * Deterministic timing with the ManualClock from `zaris/testing`: the
 * holder's deadline, the drift margin, expiry and auto-renewal, without sleeping.
 */
import { describe, expect, test } from 'vitest'
import { connect, type WatchEvent } from 'zaris'
import { ManualClock } from 'zaris/testing'

async function setup() {
  const clock = new ManualClock()
  const ns = `clock-${Math.random().toString(36).slice(2)}`
  const a = await connect(`zaris://inproc/${ns}`, { clock, id: 'a' })
  const b = await connect(`zaris://inproc/${ns}`, { clock, id: 'b' })
  return { clock, a, b }
}

describe('ManualClock', () => {
  test('the holder counts itself lost before the store frees the lock (1% + 2 ms drift margin)', async () => {
    const { clock, a, b } = await setup()
    const lock = (await a.locks.acquire('lock:x', { ttl: 1_000, autoRenew: false }))!
    await clock.advance(987)
    expect(lock.held).toBe(true)
    expect(lock.remaining).toBe(1)
    await clock.advance(1) // 988 = 1000 - (10 + 2)
    expect(lock.held).toBe(false)
    expect((lock.signal.reason as { code: string }).code).toBe('EXPIRED')
    // The store still has it until 1000: nobody else can have it while the holder might think it holds.
    expect(await b.locks.acquire('lock:x')).toBeNull()
    await clock.advance(12)
    const next = await b.locks.acquire('lock:x')
    expect(next?.token).toBeGreaterThan(lock.token)
    await Promise.all([a.close(), b.close()])
  })

  test('auto-renew holds a lock through many TTLs; closing the client frees it at once', async () => {
    const { clock, a, b } = await setup()
    const lock = (await a.locks.acquire('lock:auto', { ttl: 300 }))!
    for (let i = 0; i < 20; i++) await clock.advance(100)
    expect(lock.held).toBe(true)
    expect(await b.locks.acquire('lock:auto')).toBeNull()
    await a.close()
    expect(await b.locks.acquire('lock:auto')).not.toBeNull()
    await b.close()
  })

  test('a waiter is woken by the expiry of a holder that stopped renewing', async () => {
    const { clock, a, b } = await setup()
    const lock = (await a.locks.acquire('lock:w', { ttl: 500, autoRenew: false }))!
    let got: number | undefined
    const waiting = b.locks.acquire('lock:w', { wait: 10_000 }).then((l) => (got = l?.token))
    await clock.advance(499)
    expect(got).toBeUndefined()
    await clock.advance(1)
    await waiting
    expect(got).toBeGreaterThan(lock.token)
    await Promise.all([a.close(), b.close()])
  })

  test('expiry is an event with its own revision, delivered when the clock passes it', async () => {
    const { clock, a, b } = await setup()
    const events: WatchEvent[] = []
    const watch = b.watch('t/', { prefix: true })
    await watch.ready
    const reading = (async () => {
      for await (const ev of watch) events.push(ev)
    })()
    const put = await a.put('t/k', 1, { ttl: 200 })
    await clock.advance(199)
    expect(events.map((e) => e.type)).toEqual(['put'])
    await clock.advance(1)
    expect(events.map((e) => e.type)).toEqual(['put', 'expire'])
    expect(events[1]!.revision).toBe(put.revision + 1)
    watch.close()
    await reading
    await Promise.all([a.close(), b.close()])
  })

  test('a renewal that lands after the deadline passed frees the lock instead of reviving it', async () => {
    const { clock, a, b } = await setup()
    const lock = (await a.locks.acquire('lock:late', { ttl: 100, autoRenew: false }))!
    await clock.advance(99)
    expect(lock.held).toBe(false)
    expect(await lock.renew()).toBe(false)
    await clock.advance(1)
    expect(await b.locks.acquire('lock:late')).not.toBeNull()
    await Promise.all([a.close(), b.close()])
  })
})

describe('renewals with another TTL', () => {
  test('a renewal with a shorter TTL brings the holder\'s deadline forward with the store\'s', async () => {
    const { clock, a, b } = await setup()
    const lock = (await a.locks.acquire('lock:shorter', { ttl: 10_000, autoRenew: false }))!
    await clock.advance(1_000)
    expect(await lock.renew(1_000)).toBe(true)
    expect(lock.ttl).toBe(1_000)
    await clock.advance(988) // 1000 - (10 + 2): the holder lets go first
    expect(lock.held).toBe(false)
    await clock.advance(12)
    expect(await b.locks.acquire('lock:shorter')).not.toBeNull()
    await Promise.all([a.close(), b.close()])
  })
})
