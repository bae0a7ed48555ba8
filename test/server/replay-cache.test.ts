/**
 * The node's memory of request ids: a retry gets the first answer, a failed
 * commit is not remembered, and the three bounds (count, bytes, age) forget
 * the oldest ids first, also after many ids came and went.
 */
import { expect, test } from 'vitest'
import { ReplayCache } from '../../src/server/replay-cache'

const answer = (body: string) => async () => body

test('a retry gets the first answer, and one arriving while the first still runs waits for it', async () => {
  const cache = new ReplayCache()
  let release!: (v: string) => void
  const first = cache.run('a', 'req', () => new Promise<string>((r) => (release = r)))
  const retry = cache.run('a', 'req', answer('second'))
  release('first')
  expect(await first).toEqual({ body: 'first', replayed: false })
  expect(await retry).toEqual({ body: 'first', replayed: true })
})

test('a failed apply is not remembered: its retry runs again, and an old queue entry of it does not evict the new one', async () => {
  const cache = new ReplayCache({ maxEntries: 2 })
  await expect(cache.run('a', 'req', () => Promise.reject(new Error('store down')))).rejects.toThrow('store down')
  expect(await cache.run('a', 'req', answer('ok'))).toEqual({ body: 'ok', replayed: false })
  await cache.run('b', 'req', answer('b'))
  expect(await cache.run('a', 'req', answer('again'))).toEqual({ body: 'ok', replayed: true })
  expect(cache.size).toBe(2)
})

test('past maxEntries the oldest ids are forgotten first, through many thousands of ids', async () => {
  const cache = new ReplayCache({ maxEntries: 100 })
  for (let i = 0; i < 20_000; i++) await cache.run(`id-${i}`, 'req', answer(String(i)))
  expect(cache.size).toBe(100)
  expect(await cache.run('id-19999', 'req', answer('x'))).toEqual({ body: '19999', replayed: true })
  expect(await cache.run('id-19900', 'req', answer('x'))).toEqual({ body: '19900', replayed: true })
  expect(await cache.run('id-19899', 'req', answer('new'))).toEqual({ body: 'new', replayed: false })
})

test('past maxBytes and past the age limit, ids are forgotten', async () => {
  let now = 0
  const cache = new ReplayCache({ maxBytes: 100, ttlMs: 1_000, now: () => now })
  await cache.run('a', 'req', answer('x'.repeat(30))) // 60 bytes
  await cache.run('b', 'req', answer('y'.repeat(30))) // 120 in all: a goes
  expect(cache.size).toBe(1)
  expect((await cache.run('a', 'req', answer('again'))).replayed).toBe(false)
  now = 2_000
  expect((await cache.run('b', 'req', answer('later'))).replayed).toBe(false)
})

test('a request given as a function: a fresh id reads it after apply started (the commit first), a retry reads it to compare', async () => {
  const cache = new ReplayCache()
  const seen: string[] = []
  const request = (text: string) => () => (seen.push(text), text)
  expect(await cache.run('a', request('r1'), async () => (seen.push('apply'), 'ok'))).toEqual({ body: 'ok', replayed: false })
  expect(seen).toEqual(['apply', 'r1'])
  expect(await cache.run('a', request('r1'), answer('x'))).toEqual({ body: 'ok', replayed: true })
  await expect(cache.run('a', request('another'), answer('x'))).rejects.toThrow(/already used for another commit/)
})
