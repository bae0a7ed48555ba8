/**
 * Nodes that restart under connected clients, as real processes killed with
 * kill -9 (issues 12 and 19):
 * - a memory node forgets everything; a client that stayed connected still
 *   never gets a token at or below one it has seen (it tells the node the
 *   highest revision it saw, and the fresh store starts above it), and its
 *   old holds end as LOST (their entries are gone with the store);
 * - a `--data` node given a key with a lone surrogate refuses it, before and
 *   after a restart, so no second holder can be granted a lock that came back
 *   under another name.
 * - a `--data` node down for a second: the client keeps resending its
 *   commits (same request ids) until it is back, and each is answered once.
 * Plus the revision floor and the revision limit as they cross the wire.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { connect, isZarisError, type WatchEvent } from 'zaris'
import { createHandler, listen } from 'zaris/server'
import { SEEN_REVISION_LIMIT } from '../../src/core/contract/adapter'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { localAdapter } from '../../src/adapters/kit/local-adapter'
import { systemClock } from '../../src/core/time/clock'
import { freePort, startNode, type NodeProcess } from '../server/node-process'

const dir = mkdtempSync(join(tmpdir(), 'zaris-restart-'))
const cleanup: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {})
  rmSync(dir, { recursive: true, force: true })
})

/** A node on a fixed port, so a restart comes back at the same address. */
async function nodeOn(port: number, args: string[] = []): Promise<NodeProcess> {
  const n = await startNode(['--port', String(port), ...args])
  cleanup.push(() => n.kill9())
  return n
}

/** POSTs a raw JSON body, as a client that skips zaris's own checks would. */
async function post(node: NodeProcess, path: string, body: string): Promise<{ status: number; json: { error?: { code: string; message: string } } & Record<string, unknown> }> {
  const res = await fetch(`${node.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  return { status: res.status, json: (await res.json()) as never }
}

describe('a memory node killed with kill -9 and restarted under a connected client', () => {
  test('the client never gets a token at or below one it saw; its old hold ends LOST; a new client starts above it too', async () => {
    const port = await freePort()
    let node = await nodeOn(port)
    const url = `zaris://127.0.0.1:${port}/restart`
    const client = await connect(url, { id: 'holder' })
    const seen: number[] = []
    const lock = (await client.locks.acquire('lock:job', { ttl: 60_000, autoRenew: false }))!
    seen.push(lock.token)
    for (let i = 0; i < 20; i++) seen.push((await client.put('k', i, { fence: lock })).revision)
    const lease = (await client.leases.grant('presence:holder', { ttl: 60_000, autoRenew: false }))!
    seen.push(lease.token)
    // A hold whose signal is read watches its key: after the restart its watch fails (the store was reset), it looks, and ends LOST by itself.
    const watched = (await client.leases.grant('presence:watched', { ttl: 60_000, autoRenew: false }))!
    const watchedEnded = new Promise((resolve) => watched.signal.addEventListener('abort', resolve, { once: true }))
    seen.push(watched.token)
    const highest = Math.max(...seen)
    await new Promise((resolve) => setTimeout(resolve, 50))

    await node.kill9()
    node = await nodeOn(port)
    await watchedEnded
    expect((watched.signal.reason as { code: string }).code).toBe('LOST')

    // Its old hold's renewal finds nothing: LOST (the entry went with the store), not EXPIRED.
    expect(await lock.renew()).toBe(false)
    expect(lock.held).toBe(false)
    expect((lock.signal.reason as { code: string }).code).toBe('LOST')
    await expect(client.put('k', 'stale', { fence: lease })).rejects.toMatchObject({ code: 'FENCED' })
    expect((lease.signal.reason as { code: string }).code).toBe('LOST')

    // The refused renewal already lifted the fresh store: a client that saw nothing starts above it too.
    const stranger = await connect(url, { id: 'stranger' })
    expect((await stranger.put('s', 1)).revision).toBeGreaterThan(highest)

    const again = (await client.locks.acquire('lock:job', { autoRenew: false }))!
    expect(again.token).toBeGreaterThan(highest)
    expect((await client.put('k', 'after', { fence: again })).revision).toBeGreaterThan(again.token)
    console.log(`[memory node restart] tokens seen up to ${highest}; after the restart: ${again.token}`)
    await Promise.all([client.close(), stranger.close()])
  }, 60_000)

  test('a client that only watched counts the revisions of its events too', async () => {
    const port = await freePort()
    let node = await nodeOn(port)
    const url = `zaris://127.0.0.1:${port}/watched`
    const writer = await connect(url, { id: 'writer' })
    const watcher = await connect(url, { id: 'watcher' })
    const events: WatchEvent[] = []
    const watch = watcher.watch('k', {})
    void (async () => {
      try {
        for await (const ev of watch) events.push(ev)
      } catch {
        // the store was reset: the watch ends
      }
    })()
    await watch.ready
    for (let i = 0; i < 30; i++) await writer.put('k', i)
    const deadline = Date.now() + 5_000
    while (events.length < 30 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    const highest = events[events.length - 1]!.revision
    expect(highest).toBeGreaterThanOrEqual(30)
    await writer.close()

    await node.kill9()
    node = await nodeOn(port)
    const lock = (await watcher.locks.acquire('lock:after', { autoRenew: false }))!
    expect(lock.token).toBeGreaterThan(highest)
    watch.close()
    await watcher.close()
  }, 60_000)
})

describe('a --data node killed with kill -9 and back a second later', () => {
  test('commits in flight and sent while it is down are answered once it is back: none lost, none applied twice', async () => {
    const port = await freePort()
    const file = join(dir, 'comeback.db')
    let node = await nodeOn(port, ['--data', file])
    // The default client: how long it keeps resending a commit is what is under test.
    const client = await connect(`zaris://127.0.0.1:${port}/comeback`, { id: 'adder' })
    expect(await client.counters.increment('n', 1)).toBe(1)
    const lock = (await client.locks.acquire('lock:job', { ttl: 60_000, autoRenew: false }))!
    // Each add carries a request id: one the old process applied whose answer the kill cut is
    // answered from the file by the new one, not added again.
    const before = Array.from({ length: 20 }, () => client.counters.increment('n', 1))
    await node.kill9()
    const during = Array.from({ length: 20 }, () => client.counters.increment('n', 1))
    const write = client.put('res:job', 'while down', { fence: lock })
    // Down for 700 ms (plus the start): a client that gave up after ~0.3 s lost every one of them.
    await new Promise((resolve) => setTimeout(resolve, 700))
    node = await nodeOn(port, ['--data', file])
    const settled = await Promise.allSettled([...before, ...during])
    expect(settled.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([])
    expect(await client.counters.get('n')).toBe(41)
    expect((await write).revision).toBeGreaterThan(lock.token)
    expect((await client.get('res:job'))?.value).toBe('while down')
    await client.close()
  }, 60_000)
})

describe('a --data node and a key with a lone surrogate', () => {
  test('refused before and after a restart: no lock, so no second holder', async () => {
    const port = await freePort()
    const file = join(dir, 'surrogate.db')
    let node = await nodeOn(port, ['--data', file])
    const url = `zaris://127.0.0.1:${port}/keys`
    const first = await connect(url, { id: 'first' })
    await expect(first.locks.acquire('lock:\uD800x', { ttl: 60_000 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    // A client that skips zaris's checks: the node refuses the key itself, in get, list and commit.
    const body = JSON.stringify({ checks: [{ key: 'lock:\uD800x', revision: null }], ops: [{ type: 'set', key: 'lock:\uD800x', value: null, ttl: 60_000, owner: 'first' }] })
    expect(body).toContain('\\ud800') // JSON carries the lone surrogate escaped
    const commit = await post(node, '/v1/keys/commit', body)
    expect(commit.status).toBe(400)
    expect(commit.json.error).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/lone surrogate/) })
    expect((await post(node, '/v1/keys/get', JSON.stringify({ key: 'lock:\uD800x' }))).status).toBe(400)
    expect((await post(node, '/v1/keys/list', JSON.stringify({ prefix: 'lock:\uD800' }))).status).toBe(400)

    await node.kill9()
    node = await nodeOn(port, ['--data', file])
    const second = await connect(url, { id: 'second' })
    expect(await second.list('lock:')).toEqual([])
    expect((await post(node, '/v1/keys/commit', body)).status).toBe(400)
    await expect(second.locks.acquire('lock:\uD800x')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(await second.locks.holder('lock:\uFFFDx')).toBeUndefined()
    await Promise.all([first.close(), second.close()])
  }, 60_000)
})

describe('revisions on the wire', () => {
  test('a hostile seen moves a store to 2^52 at most; a seen that is not a revision is refused', async () => {
    const port = await freePort()
    const node = await nodeOn(port)
    const set = (seen: unknown) => JSON.stringify({ checks: [], ops: [{ type: 'set', key: 'k', value: 1 }], seen })
    const huge = await post(node, '/v1/hostile/commit', set(Number.MAX_SAFE_INTEGER))
    expect(huge.status).toBe(200)
    expect(huge.json.revision).toBe(SEEN_REVISION_LIMIT + 1)
    expect((await post(node, '/v1/hostile/commit', set(Number.MAX_SAFE_INTEGER))).json.revision).toBe(SEEN_REVISION_LIMIT + 2)
    for (const bad of [-1, 1.5, '7', Number.MAX_SAFE_INTEGER + 2]) {
      const r = await post(node, '/v1/hostile/commit', set(bad))
      expect(r.status, String(bad)).toBe(400)
      expect(r.json.error?.message).toMatch(/^seen:/)
    }
    // The add op is checked on the wire too.
    const add = await post(node, '/v1/hostile/commit', JSON.stringify({ checks: [], ops: [{ type: 'add', key: 'n', delta: 0.5 }] }))
    expect(add.status).toBe(400)
    expect(add.json.error?.message).toMatch(/ops\.0\.delta/)
  }, 30_000)

  test('a store out of revisions answers 507 REVISION_EXHAUSTED, and the client gets the typed error', async () => {
    const store = new LocalStore({ clock: systemClock, initial: { revision: Number.MAX_SAFE_INTEGER - 1, entries: [] } })
    const node = await listen(createHandler({ adapterFor: () => localAdapter('memory', store) }), { port: 0, host: '127.0.0.1' })
    cleanup.push(() => node.close())
    const client = await connect(`zaris://127.0.0.1:${node.port}/full`)
    expect((await client.put('k', 1)).revision).toBe(Number.MAX_SAFE_INTEGER)
    const err = await client.put('k', 2).catch((e: unknown) => e)
    expect(isZarisError(err, 'REVISION_EXHAUSTED')).toBe(true)
    expect((err as Error).name).toBe('RevisionExhaustedError')
    expect((await client.get('k'))?.value).toBe(1)
    const res = await fetch(`http://127.0.0.1:${node.port}/v1/full/commit`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ checks: [], ops: [{ type: 'delete', key: 'k' }] }),
    })
    expect(res.status).toBe(507)
    await client.close()
  }, 30_000)
})

