/**
 * The Node transport's framed connection, against real nodes: one
 * connection pipelines every get, list and commit; a node or proxy that
 * refuses the upgrade is served over HTTP; the token travels on the
 * upgrade; a connection that stops answering is given up and reopened, but
 * one request timing out on a live connection does not take the others down;
 * a node that restarts or goes away is reconnected to or failed over from;
 * close() closes the socket, and a process with an idle client exits.
 */
import { spawn } from 'node:child_process'
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { afterEach, describe, expect, test } from 'vitest'
import { Client, isZarisError, type Adapter } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { memoryAdapter } from 'zaris/memory'
import { createHandler, listen, memoryBackend, type HandlerOptions, type Listening } from 'zaris/server'
import { FaultProxy } from '../faults/proxy'
import { root } from '../server/node-process'

const cleanup: Array<() => Promise<unknown> | unknown> = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

interface Served {
  node: Listening
  /** Upgrade requests the node saw. */
  upgrades: () => number
  /** HTTP requests (not upgrades) the node saw, by path end. */
  posts: () => number
  /** Server-side sockets of framed connections still open. */
  openFrames: () => number
  metric: (name: string) => number
}

async function serve(extra: Partial<HandlerOptions> = {}, port = 0): Promise<Served> {
  const backend = memoryBackend()
  const handler = createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf, log: () => {}, ...extra })
  const node = await listen(handler, { port })
  let upgrades = 0
  let posts = 0
  const sockets = new Set<Duplex>()
  node.server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => {
    upgrades++
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  node.server.on('request', (req: IncomingMessage) => {
    if (req.method === 'POST') posts++
  })
  cleanup.push(async () => {
    await node.close()
    await backend.close()
  })
  return {
    node,
    upgrades: () => upgrades,
    posts: () => posts,
    openFrames: () => sockets.size,
    metric: (name) => Number(new RegExp(`^${name.replace(/[{}"=]/g, '\\$&')} (\\d+)$`, 'm').exec(handler.metrics.render({ watchers: 0, locksHeld: 0, namespaces: 0 }))?.[1] ?? 0),
  }
}

function client(endpoints: string[], options: Partial<Parameters<typeof httpAdapter>[0]> = {}): Client {
  const c = new Client(httpAdapter({ endpoints, namespace: 'fr', ...options }))
  cleanup.push(() => c.close())
  return c
}

async function until(check: () => boolean, ms = 5_000, what = 'the condition'): Promise<void> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

describe('one framed connection', () => {
  test('200 concurrent calls of one client go over one connection, pipelined, none over HTTP POSTs', async () => {
    const s = await serve()
    const c = client([s.node.url])
    await Promise.all(Array.from({ length: 100 }, (_, i) => c.put(`k${i}`, i)))
    const values = await Promise.all(Array.from({ length: 100 }, (_, i) => c.get(`k${i}`)))
    expect(values.map((e) => e?.value)).toEqual(Array.from({ length: 100 }, (_, i) => i))
    expect((await c.list('k')).length).toBe(100)
    const lock = await c.locks.acquire('lock:a', { ttl: 5_000 })
    expect(await lock!.release()).toBe(true)
    expect(s.upgrades()).toBe(1)
    expect(s.posts()).toBe(0)
    expect(s.metric('zaris_requests_total{route="commit",status="200"}')).toBe(102)
  })

  test('a node that refuses the upgrade (a proxy in between) is served over HTTP, and not asked on every call', async () => {
    const s = await serve()
    let asked = 0
    // A proxy that forwards plain requests and answers every upgrade 426.
    const proxy = createServer((req, res) => {
      const up = httpRequest(new URL(req.url!, s.node.url), { method: req.method, headers: req.headers }, (upRes) => {
        res.writeHead(upRes.statusCode!, upRes.headers)
        upRes.pipe(res)
      })
      up.on('error', () => res.destroy())
      req.pipe(up)
    })
    proxy.on('upgrade', (_req, socket: Duplex) => {
      asked++
      socket.end('HTTP/1.1 426 Upgrade Required\r\ncontent-length: 0\r\nconnection: close\r\n\r\n')
    })
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
    cleanup.push(() => new Promise((r) => (proxy.closeAllConnections(), proxy.close(r))))
    const c = client([`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`])
    for (let i = 0; i < 20; i++) await c.put('k', i)
    expect((await c.get('k'))?.value).toBe(19)
    expect(asked).toBe(1)
    expect(s.upgrades()).toBe(0)
    expect(s.posts()).toBe(21)
  })

  test('the token goes with the upgrade; a wrong token is refused as UNAUTHORIZED, as over HTTP', async () => {
    const token = 'frames-token-123'
    const s = await serve({ token })
    const good = client([s.node.url], { token })
    await good.put('k', 1)
    expect((await good.get('k'))?.value).toBe(1)
    expect(s.metric('zaris_requests_total{route="frames",status="101"}')).toBe(1)
    const bad = client([s.node.url], { token: 'not-the-token' })
    await expect(bad.get('k')).rejects.toSatisfy((e) => isZarisError(e, 'UNAUTHORIZED'))
    await expect(bad.put('k', 2)).rejects.toSatisfy((e) => isZarisError(e, 'UNAUTHORIZED'))
    expect(s.metric('zaris_requests_total{route="frames",status="401"}')).toBe(1)
    expect((await good.get('k'))?.value).toBe(1)
  })

  test('a body over the node\'s limit is TOO_LARGE over frames as over HTTP, and the connection goes on', async () => {
    const s = await serve({ maxBodyBytes: 2_048 })
    const c = client([s.node.url])
    await c.put('small', 1)
    await expect(c.put('big', 'x'.repeat(10_000))).rejects.toSatisfy((e) => isZarisError(e, 'TOO_LARGE'))
    expect((await c.get('small'))?.value).toBe(1)
    expect(s.upgrades()).toBe(1)
  })
})

describe('faults', () => {
  test('blackholed: the pending call times out, the connection is given up, and after healing a new one serves', async () => {
    const s = await serve()
    const p = await new FaultProxy(s.node.port).start()
    cleanup.push(() => p.stop())
    const c = client([p.url], { timeout: 400, retries: 0 })
    await c.put('k', 1)
    expect(s.upgrades()).toBe(1)
    p.blackhole()
    const cut = await Promise.allSettled([c.get('k'), c.put('k', 2), c.get('other')])
    for (const r of cut) expect(r.status === 'rejected' && isZarisError(r.reason, 'UNAVAILABLE'), String(r.status === 'rejected' && r.reason)).toBe(true)
    // A call while still cut: its upgrade goes nowhere either, and it too fails in time.
    await expect(c.get('k')).rejects.toSatisfy((e) => isZarisError(e, 'UNAVAILABLE'))
    p.heal()
    const after = await c.get('k')
    // The put sent into the blackhole may or may not have reached the node; either way the node answers now.
    expect([1, 2]).toContain(after?.value)
    await until(() => s.upgrades() >= 2, 5_000, 'a second upgrade')
    expect(s.metric('zaris_requests_total{route="frames",status="101"}')).toBeGreaterThanOrEqual(2)
  })

  test('one call timing out on a connection that answers others does not take the connection (or the others) down', async () => {
    let release: (() => void) | undefined
    const slow = (inner: Adapter): Adapter => ({
      name: 'slow get',
      get: async (k) => {
        if (k === 'slow') await new Promise<void>((r) => (release = r))
        return inner.get(k)
      },
      list: (p, o) => inner.list(p, o),
      commit: (c, o, opt) => inner.commit(c, o, opt),
      watch: (p, sink, f) => inner.watch(p, sink, f),
      close: () => inner.close(),
    })
    const s = await serve({ adapterFor: (ns) => slow(memoryAdapter({ namespace: `frames-slow-${ns}-${Math.random()}` })) })
    const c = client([s.node.url], { timeout: 600, retries: 0 })
    await c.put('fast', 1)
    const stuck = c.get('slow').then(
      () => 'answered',
      (e) => (isZarisError(e, 'UNAVAILABLE') ? 'timed out' : String(e)),
    )
    let done = false
    void stuck.then(() => (done = true))
    let fast = 0
    while (!done) {
      expect((await c.get('fast'))?.value).toBe(1)
      fast++
      await new Promise((r) => setTimeout(r, 20))
    }
    expect(await stuck).toBe('timed out')
    expect(fast).toBeGreaterThan(1)
    // The late answer arrives for a call that gave up: dropped, and the connection serves on.
    release?.()
    expect((await c.get('fast'))?.value).toBe(1)
    expect(s.upgrades()).toBe(1)
  })

  test('a node that restarts on its port is reconnected to; a node that goes away is failed over from', async () => {
    const a = await serve()
    const b = await serve()
    const c = client([a.node.url, b.node.url], { timeout: 2_000 })
    await c.put('k', 'on a')
    expect(a.upgrades()).toBe(1)
    const port = a.node.port
    await a.node.close()
    // a is gone: the next calls go on to b (a separate store).
    expect(await c.get('k')).toBeUndefined()
    await c.put('k', 'on b')
    expect(b.upgrades()).toBe(1)
    // The client stays with b; a restarted a is a different store, reached only when b goes.
    const a2 = await serve({}, port)
    await b.node.close()
    expect(await c.get('k')).toBeUndefined()
    await c.put('k', 'on a again')
    expect(a2.upgrades()).toBe(1)
    expect((await c.get('k'))?.value).toBe('on a again')
  })

  test('close() of the client closes its framed connection at the node', async () => {
    const s = await serve()
    const c = new Client(httpAdapter({ endpoints: [s.node.url], namespace: 'fr' }))
    await c.put('k', 1)
    expect(s.openFrames()).toBe(1)
    await c.close()
    await until(() => s.openFrames() === 0, 5_000, 'the node to see the connection close')
    await expect(c.get('k')).rejects.toSatisfy((e) => isZarisError(e, 'CLOSED'))
  })
})

describe('process lifetime', () => {
  const run = (url: string) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/http/fixtures/idle-frames.ts', url, 'idle'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      child.stdout!.on('data', (d) => (out += d))
      child.stderr!.on('data', (d) => (out += d))
      const kill = setTimeout(() => child.kill('SIGKILL'), 25_000)
      child.once('exit', (code) => {
        clearTimeout(kill)
        resolve({ code, out })
      })
    })

  test('a process whose client is idle exits on its own, the framed connection still open', async () => {
    const s = await serve()
    const { code, out } = await run(s.node.url)
    expect(out).toContain('got "v"; client left open')
    expect(code).toBe(0)
    expect(s.upgrades()).toBe(1)
  }, 30_000)

  test('a process waiting for an answer on the framed connection stays until it comes', async () => {
    // Every get takes 1.5 s at the node: the process must not exit meanwhile (code 13, unsettled await).
    const slow = (inner: Adapter): Adapter => ({ ...inner, name: 'slow', get: async (k) => (await new Promise((r) => setTimeout(r, 1_500)), inner.get(k)), list: (p, o) => inner.list(p, o), commit: (c, o, opt) => inner.commit(c, o, opt), watch: (p, sink, f) => inner.watch(p, sink, f), close: () => inner.close() })
    const s = await serve({ adapterFor: (ns) => slow(memoryAdapter({ namespace: `frames-wait-${ns}-${Math.random()}` })) })
    const { code, out } = await run(s.node.url)
    expect(out).toContain('got "v"; client left open')
    expect(code).toBe(0)
  }, 30_000)
})
