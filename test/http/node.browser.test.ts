/**
 * A browser page uses a zaris node: the HTTP adapter over fetch, from a page
 * of another origin (CORS), taking a lock, seeing it refused to another
 * client, and watching its release.
 */
import { expect, inject, test } from 'vitest'
import { connect, isZarisError } from 'zaris'

test('a page acquires a lock on a node, across origins', async () => {
  const node = inject('zarisNodeUrl')
  expect(new URL(node).origin).not.toBe(location.origin)
  const ns = `browser-${Math.random().toString(36).slice(2)}`
  const a = await connect(`${node}/${ns}`)
  const b = await connect(`${node}/${ns}`)
  expect(a.adapter.name).toBe('http')
  const watch = b.watch('lock:page')
  await watch.ready

  const lock = await a.locks.acquire('lock:page', { ttl: 5_000 })
  expect(lock).not.toBeNull()
  expect(await b.locks.acquire('lock:page')).toBeNull()
  expect(await b.locks.holder('lock:page')).toMatchObject({ owner: a.id, token: lock!.token })
  await a.put('page:status', 'done', { fence: lock! })
  expect(await lock!.release()).toBe(true)

  const events = [(await watch.next()).value, (await watch.next()).value]
  expect(events.map((e) => [e?.type, e?.revision])).toEqual([['put', lock!.token], ['delete', lock!.token + 2]])
  const next = await b.locks.acquire('lock:page')
  expect(next!.token).toBeGreaterThan(lock!.token)
  await Promise.all([a.close(), b.close()])
})

test('a page gets the node\'s errors as zaris errors', async () => {
  const node = inject('zarisNodeUrl')
  const client = await connect(`${node}/browser-errors`)
  await expect(client.adapter.commit([], [{ type: 'set', key: 'k', value: 'x'.repeat(70_000) }])).rejects.toSatisfy((e) => isZarisError(e, 'TOO_LARGE'))
  await client.close()
  const dead = await connect('zaris://127.0.0.1:1/browser-errors')
  await expect(dead.get('k')).rejects.toSatisfy((e) => isZarisError(e, 'UNAVAILABLE'))
  await dead.close()
})

test('a page with a dozen watches and lock waiters on one client still has connections for its requests', async () => {
  // A browser gives an origin six HTTP/1.1 connections; one stream per watch used them all up.
  const node = inject('zarisNodeUrl')
  const ns = `browser-many-${Math.random().toString(36).slice(2)}`
  const page = await connect(`${node}/${ns}`)
  const other = await connect(`${node}/${ns}`)
  const watches = Array.from({ length: 12 }, (_, i) => page.watch(`key:${i}`))
  await Promise.all(watches.map((w) => w.ready))
  const held = await Promise.all(Array.from({ length: 4 }, (_, i) => other.locks.acquire(`lock:${i}`, { ttl: 10_000 })))
  const waiting = held.map((_, i) => page.locks.acquire(`lock:${i}`, { ttl: 10_000, wait: 10_000 }))
  for (let i = 0; i < 12; i++) await page.put(`key:${i}`, i)
  expect(await page.get('key:11')).toMatchObject({ value: 11 })
  for (let i = 0; i < 12; i++) expect((await watches[i]!.next()).value).toMatchObject({ key: `key:${i}`, value: i })
  await Promise.all(held.map((l) => l!.release()))
  const got = await Promise.all(waiting)
  expect(got.map((l, i) => l!.token > held[i]!.token)).toEqual([true, true, true, true])
  await Promise.all([page.close(), other.close()])
})
