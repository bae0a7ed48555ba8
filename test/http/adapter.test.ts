/**
 * The HTTP adapter's own behaviour, against real nodes over real HTTP:
 * unreachable nodes, failover, a lost answer retried without acting twice,
 * watch resume across a node restart (Last-Event-ID), compaction, both
 * transports, and the fetch handler embedded without any server.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { Client, connect, isZarisError, type WatchEvent } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { createHandler, listen, memoryBackend } from 'zaris/server'
import { startNode, type NodeProcess } from '../server/node-process'

const dir = mkdtempSync(join(tmpdir(), 'zaris-http-'))
const cleanup: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {})
  rmSync(dir, { recursive: true, force: true })
})

async function node(args: string[] = []): Promise<NodeProcess> {
  const n = await startNode(args)
  cleanup.push(() => n.kill9())
  return n
}

/** A port nothing listens on. */
async function deadPort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const port = (s.address() as AddressInfo).port
  await new Promise((r) => s.close(r))
  return port
}

/**
 * A proxy in front of a node that forwards everything but, for requests
 * `drop` picks, lets the node answer and then hangs up on the client: the
 * answer is lost on the way back.
 */
async function lossyProxy(target: string, drop: (req: IncomingMessage, body: string) => boolean): Promise<{ url: string; dropped: () => number; server: Server }> {
  let dropped = 0
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (d) => (body += d))
    req.on('end', () => {
      const u = new URL(req.url!, target)
      const up = httpRequest(u, { method: req.method, headers: req.headers }, (upRes) => {
        if (drop(req, body)) {
          dropped++
          upRes.resume()
          upRes.on('end', () => req.socket.destroy())
          return
        }
        res.writeHead(upRes.statusCode!, upRes.headers)
        upRes.pipe(res)
      })
      up.on('error', () => res.destroy())
      up.end(body)
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  cleanup.push(() => new Promise((r) => { server.closeAllConnections(); server.close(r) }))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, dropped: () => dropped, server }
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1])
}

describe('reaching nodes', () => {
  test('an unreachable node gives UnavailableError, for calls and for watches', async () => {
    const port = await deadPort()
    const client = new Client(httpAdapter({ endpoints: [`http://127.0.0.1:${port}`], namespace: 'x', retries: 1 }))
    await expect(client.get('k')).rejects.toSatisfy((e) => isZarisError(e, 'UNAVAILABLE'))
    await expect(client.put('k', 1)).rejects.toSatisfy((e) => isZarisError(e, 'UNAVAILABLE'))
    await expect(client.locks.acquire('lock:x')).rejects.toSatisfy((e) => isZarisError(e, 'UNAVAILABLE'))
    await expect(client.watch('k').ready).rejects.toSatisfy((e) => isZarisError(e, 'UNAVAILABLE'))
    await client.close()
  })

  test('a node that never answers gets 3 attempts of a commit, however many rounds a refused connection gets', async () => {
    // A listener that reads requests and answers none: each attempt runs out its timeout.
    let requests = 0
    const silent = createServer((req) => {
      requests++
      req.resume()
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    cleanup.push(() => new Promise((r) => { silent.closeAllConnections(); silent.close(r) }))
    const client = new Client(httpAdapter({ endpoints: [`http://127.0.0.1:${(silent.address() as AddressInfo).port}`], namespace: 'x', timeout: 300 }))
    await expect(client.put('k', 1)).rejects.toSatisfy((e) => isZarisError(e, 'UNAVAILABLE'))
    expect(requests).toBe(3)
    await client.close()
  })

  test('several addresses fail over in order and stay with the one that answers', async () => {
    const dead = await deadPort()
    const a = await node()
    const b = await node()
    const client = await connect(`zaris://127.0.0.1:${dead},127.0.0.1:${a.port},127.0.0.1:${b.port}/fo`)
    const first = await client.put('k', 'via a')
    expect(first.revision).toBe(1)
    expect((await client.get('k'))?.value).toBe('via a') // a served it, not b
    await a.kill9()
    // a is gone: the next call goes on to b (a separate store, so k is not there).
    expect(await client.get('k')).toBeUndefined()
    expect((await client.put('k', 'via b')).value).toBe('via b')
    await client.close()
  }, 30_000)

  test('a commit whose answer was lost is retried with its request id and acts once', async () => {
    const n = await node()
    let commits = 0
    const proxy = await lossyProxy(n.url, (req) => req.url!.endsWith('/commit') && ++commits === 1)
    const client = new Client(httpAdapter({ endpoints: [proxy.url], namespace: 'idem' }))
    expect(await client.counters.increment('jobs:done', 5)).toBe(5)
    expect(proxy.dropped()).toBe(1)
    expect(await client.counters.get('jobs:done')).toBe(5) // not 10
    expect(await metric(n.url, 'zaris_commit_replays_total')).toBe(1)

    // A lock whose grant was lost: the retry gets the same grant, not a refusal.
    commits = 0
    const lock = await client.locks.acquire('lock:idem', { ttl: 10_000 })
    expect(proxy.dropped()).toBe(2)
    expect(lock).not.toBeNull()
    expect(await client.locks.holder('lock:idem')).toMatchObject({ owner: client.id, token: lock!.token })
    expect(await lock!.release()).toBe(true)
    await client.close()
  }, 30_000)

  test('a --data node remembers request ids across a crash', async () => {
    const file = join(dir, 'ids.db')
    const n1 = await node(['--data', file])
    const body = JSON.stringify({ checks: [{ key: 'c', revision: null }], ops: [{ type: 'set', key: 'c', value: 1 }], requestId: 'retry-after-crash-1' })
    const post = (url: string) => fetch(`${url}/v1/ids/commit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then((r) => r.json())
    const original = await post(n1.url)
    expect(original).toMatchObject({ ok: true, revision: 1 })
    await n1.kill9()
    const n2 = await node(['--data', file])
    // The same commit again: the first answer, not a failed check and not a second write.
    expect(await post(n2.url)).toEqual(original)
    const other = await fetch(`${n2.url}/v1/ids/commit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ checks: [], ops: [{ type: 'set', key: 'd', value: 1 }] }) }).then((r) => r.json())
    expect(other.revision).toBe(2)
  }, 30_000)
})

describe('watch over SSE', () => {
  test('each event id is its revision, and Last-Event-ID replays what came after', async () => {
    const n = await node()
    const client = await connect(`zaris://127.0.0.1:${n.port}/sse`)
    for (let i = 1; i <= 4; i++) await client.put(`k${i}`, i)
    const ac = new AbortController()
    const res = await fetch(`${n.url}/v1/sse/watch?prefix=k`, { headers: { 'last-event-id': '2' }, signal: ac.signal })
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const reader = res.body!.getReader()
    let text = ''
    while (!text.includes('event: ready')) text += new TextDecoder().decode((await reader.read()).value)
    ac.abort()
    expect([...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))).toEqual([3, 4])
    expect(text).toMatch(/event: ready\ndata: \{"revision":4,"epoch":"[0-9a-f]+","heartbeat":15000\}/)
    await client.close()
  })

  test('a watch rides out a kill -9 and restart of a --data node: nothing lost, nothing doubled', async () => {
    const file = join(dir, 'watch.db')
    const n1 = await node(['--data', file])
    const port = n1.port
    const url = `zaris://127.0.0.1:${port}/w`
    const writer = await connect(url)
    const watcher = await connect(url)
    const watch = watcher.watch('job:', { prefix: true })
    await watch.ready
    for (let i = 0; i < 5; i++) await writer.put(`job:${i}`, i)
    await n1.kill9()
    await new Promise((r) => setTimeout(r, 300))
    await node(['--data', file, '--port', String(port)])
    for (let i = 5; i < 10; i++) await writer.put(`job:${i}`, i)
    const seen: WatchEvent[] = []
    for await (const ev of watch) {
      seen.push(ev)
      if (seen.length === 10) break
    }
    expect(seen.map((e) => e.value)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect(seen.map((e) => e.revision)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    await writer.close()
    await watcher.close()
  }, 30_000)

  test('a watch whose node lost its history (a memory node restarted) ends with CompactedError', async () => {
    const n1 = await node()
    const port = n1.port
    const client = await connect(`zaris://127.0.0.1:${port}/gone`)
    const watch = client.watch('k')
    await watch.ready
    await client.put('k', 1)
    await client.put('k', 2)
    expect((await watch.next()).value).toMatchObject({ revision: 1 })
    await n1.kill9()
    await node(['--port', String(port)])
    // Revision 1 here is a different history; the watch must not take it for the one it saw.
    await client.put('k', 'new')
    await expect(watch.next().then(() => watch.next())).rejects.toSatisfy((e) => isZarisError(e, 'COMPACTED'))
    await client.close()
  }, 30_000)

  test('fromRevision older than the node keeps gives CompactedError; within it, a replay', async () => {
    const backend = memoryBackend({ historySize: 3 })
    const handler = createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf })
    const listening = await listen(handler, { port: 0 })
    cleanup.push(async () => {
      await listening.close()
      await backend.close()
    })
    const client = new Client(httpAdapter({ endpoints: [listening.url], namespace: 'h' }))
    for (let i = 1; i <= 6; i++) await client.put('k', i)
    const old = client.watch('k', { fromRevision: 1 })
    await expect(old.next()).rejects.toSatisfy((e) => isZarisError(e, 'COMPACTED'))
    const recent = client.watch('k', { fromRevision: 4 })
    expect([(await recent.next()).value?.revision, (await recent.next()).value?.revision]).toEqual([5, 6])
    await client.close()
  })

  test('the fetch transport does the same as node:http', async () => {
    const n = await node()
    const client = new Client(httpAdapter({ endpoints: [n.url], namespace: 'f', transport: 'fetch' }))
    const watch = client.watch('lock:', { prefix: true })
    await watch.ready
    const lock = await client.locks.acquire('lock:f', { ttl: 5_000 })
    expect(lock).not.toBeNull()
    await lock!.release()
    const events = [(await watch.next()).value, (await watch.next()).value]
    expect(events.map((e) => e?.type)).toEqual(['put', 'delete'])
    await client.close()
  })
})

describe('the fetch handler, embedded', () => {
  test('serves Request -> Response with no server at all, streams watches, hides internal errors', async () => {
    const backend = memoryBackend()
    const logged: string[] = []
    const handler = createHandler({
      adapterFor: (ns) => {
        if (ns === 'broken') throw new Error('secret internal detail')
        return backend.adapterFor(ns)
      },
      positionOf: backend.positionOf,
      log: (line) => logged.push(line),
    })
    const call = (op: string, body: unknown, ns = 'emb') =>
      handler.fetch(new Request(`http://embedded/v1/${ns}/${op}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }))
    expect(await (await handler.fetch(new Request('http://embedded/healthz'))).json()).toEqual({ ok: true })
    const watchRes = await handler.fetch(new Request('http://embedded/v1/emb/watch?prefix=k'))
    const reader = watchRes.body!.getReader()
    const put = await (await call('commit', { checks: [], ops: [{ type: 'set', key: 'k', value: 'v' }] })).json()
    expect(put).toMatchObject({ ok: true, revision: 1 })
    let text = ''
    while (!text.includes('id: 1')) text += new TextDecoder().decode((await reader.read()).value)
    expect(text).toContain('data: {"type":"put","key":"k","revision":1,"value":"v","created":1}')
    await reader.cancel()
    expect(handler.watchers).toBe(0)
    const broken = await call('get', { key: 'k' }, 'broken')
    expect(broken.status).toBe(500)
    const body = await broken.text()
    expect(JSON.parse(body)).toEqual({ error: { code: 'INTERNAL', message: 'internal error' } })
    expect(body).not.toContain('secret')
    expect(logged.join('\n')).toContain('secret internal detail')
    const big = await call('commit', { checks: [], ops: [{ type: 'set', key: 'k', value: 'x'.repeat(70_000) }] })
    expect(big.status).toBe(413)
    await handler.close()
    await backend.close()
  })
})

describe('dead streams and metrics', () => {
  test('a watch stream that goes quiet (no heartbeat) is dropped and resumed', async () => {
    const backend = memoryBackend()
    const listening = await listen(createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf, heartbeatMs: 100 }), { port: 0 })
    cleanup.push(async () => {
      await listening.close()
      await backend.close()
    })
    // A proxy that passes the first watch stream up to its `ready` event and then holds it silent.
    let watches = 0
    const proxy = createServer((req, res) => {
      const first = req.url!.includes('/watch') && ++watches === 1
      const up = httpRequest(new URL(req.url!, listening.url), { method: req.method, headers: req.headers }, (upRes) => {
        res.writeHead(upRes.statusCode!, upRes.headers)
        let seen = ''
        upRes.on('data', (chunk) => {
          if (first && seen.includes('event: ready')) return // silence from here on
          seen += chunk
          res.write(chunk)
        })
        upRes.on('end', () => res.end())
      })
      req.pipe(up)
    })
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
    cleanup.push(() => new Promise((r) => { proxy.closeAllConnections(); proxy.close(r) }))
    const client = new Client(httpAdapter({ endpoints: [`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`], namespace: 'quiet' }))
    const watch = client.watch('k')
    await watch.ready
    await client.put('k', 'after the silence')
    expect((await watch.next()).value).toMatchObject({ value: 'after the silence', revision: 1 })
    expect(watches).toBe(2) // the silent stream was given up on and a new one opened
    await client.close()
  })

  test('/metrics counts commits, conflicts, watchers and locks held', async () => {
    const n = await node()
    const client = await connect(`zaris://127.0.0.1:${n.port}/m`)
    const lock = await client.locks.acquire('lock:m', { ttl: 10_000, autoRenew: false })
    expect(await client.locks.acquire('lock:m')).toBeNull()
    const watch = client.watch('x')
    await watch.ready
    const text = await (await fetch(`${n.url}/metrics`)).text()
    expect(text).toMatch(/^zaris_commits_total 1$/m)
    expect(text).toMatch(/^zaris_commit_conflicts_total 1$/m)
    expect(text).toMatch(/^zaris_watchers 1$/m)
    expect(text).toMatch(/^zaris_locks_held 1$/m)
    expect(text).toMatch(/^zaris_request_duration_seconds_count\{route="commit"\} 2$/m)
    expect(text).toMatch(/^# TYPE zaris_request_duration_seconds histogram$/m)
    await lock!.release()
    await client.close()
  })

  test('/metrics locks held counts locks, not the entries of the wait line', async () => {
    const n = await node()
    const holder = await connect(`zaris://127.0.0.1:${n.port}/line`)
    const waiters = await Promise.all([1, 2].map(() => connect(`zaris://127.0.0.1:${n.port}/line`)))
    const lock = await holder.locks.acquire('lock:line', { ttl: 10_000 })
    const waiting = waiters.map((w) => w.locks.acquire('lock:line', { ttl: 10_000, wait: 10_000 }))
    const locksHeld = async () => Number(/^zaris_locks_held (\d+)$/m.exec(await (await fetch(`${n.url}/metrics`)).text())![1])
    // The wait line keeps one owned entry per waiter, under the reserved prefix U+0001 q.
    const lineEntries = async () => ((await (await fetch(`${n.url}/v1/line/list`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prefix: '\u0001q' }) })).json()) as { entries: Array<{ owner?: string }> }).entries
    for (let i = 0; i < 200 && (await lineEntries()).length < 2; i++) await new Promise((r) => setTimeout(r, 20))
    expect((await lineEntries()).filter((e) => e.owner !== undefined)).toHaveLength(2)
    expect(await locksHeld()).toBe(1)
    await lock!.release()
    const next = await Promise.race(waiting)
    expect(await locksHeld()).toBe(1)
    await next!.release()
    for (const l of await Promise.all(waiting)) await l?.release()
    await Promise.all([holder, ...waiters].map((c) => c.close()))
  })

  test('/metrics locks held counts as locks.query() does: each shared holder, not the group, the intent, the line or permits', async () => {
    const n = await node()
    const url = `zaris://127.0.0.1:${n.port}/family`
    const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map(() => connect(url)))
    const readers = await Promise.all([a, b].map((x) => x!.locks.acquire('doc', { mode: 'shared', ttl: 10_000 })))
    const writer = c!.locks.acquire('doc', { ttl: 10_000, wait: 10_000 }) // waits: a line entry and an intent
    const lease = await d!.locks.acquire('lease', { ttl: 10_000 })
    const permit = await d!.semaphores.acquire('sem', { limit: 2, ttl: 10_000 })
    // The store holds more owned entries than locks.query() lists: the group, two shares, the line, the intent, a permit.
    // The writer writes its intent a step after its place in line (once it sees itself first): wait for both.
    const owned = async () => ((await (await fetch(`${n.url}/v1/family/list`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prefix: '' }) })).json()) as { entries: Array<{ owner?: string }> }).entries.filter((e) => e.owner !== undefined).length
    for (let i = 0; i < 200 && ((await a!.locks.query()).pending.length < 1 || (await owned()) < 7); i++) await new Promise((r) => setTimeout(r, 20))
    const query = await a!.locks.query()
    expect(query.pending).toHaveLength(1)
    expect(query.held.map((h) => h.mode).sort()).toEqual(['exclusive', 'shared', 'shared'])
    expect(await owned()).toBeGreaterThanOrEqual(7)
    const locksHeld = async () => Number(/^zaris_locks_held (\d+)$/m.exec(await (await fetch(`${n.url}/metrics`)).text())![1])
    expect(await locksHeld()).toBe(query.held.length)
    for (const r of readers) await r!.release()
    const w = await writer
    expect(await locksHeld()).toBe((await a!.locks.query()).held.length)
    expect(await locksHeld()).toBe(2)
    await w!.release()
    await lease!.release()
    await permit!.release()
    await Promise.all([a, b, c, d].map((x) => x!.close()))
  })
})
