/**
 * One event stream per HTTP adapter, against real nodes over real HTTP:
 * every watch and lock waiter of an adapter shares it; a watch from a
 * revision older than the stream gets the node's history spliced to it with
 * nothing lost or doubled, also past the ring and across pages; a stream cut
 * between two events of one commit resumes with the rest of that commit; a
 * restarted memory node fails the old watches and not the new; the stream
 * closes after its last watch and never keeps an idle process alive; and the
 * `events` endpoint itself.
 */
import { spawn } from 'node:child_process'
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, test } from 'vitest'
import { Client, connect, isZarisError, type WatchEvent } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { createHandler, listen, memoryBackend, type Handler } from 'zaris/server'
import { root, startNode } from '../server/node-process'

const cleanup: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {})
})

/** A node in this process (real HTTP on loopback), with its handler to count open streams. */
async function serve(options: { historySize?: number } = {}): Promise<{ url: string; handler: Handler }> {
  const backend = memoryBackend({ historySize: options.historySize })
  const handler = createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf })
  const node = await listen(handler, { port: 0 })
  cleanup.push(async () => {
    await node.close()
    await backend.close()
  })
  return { url: node.url, handler }
}

/** One `GET /events` exchange the proxy passed on: the revision asked after, and the page's end. */
interface HistoryExchange {
  after: number
  through: number
  more: boolean
}

/** A proxy in front of `target` that holds each answer of `GET /events` back for `ms`, and records each one. */
async function slowHistory(target: string, ms: number): Promise<{ url: string; histories: HistoryExchange[] }> {
  const histories: HistoryExchange[] = []
  const proxy = createServer((req, res) => {
    // A filter answer may carry the first history page of the prefixes it adds: a history exchange too.
    const history = req.url!.includes('/events') || req.url!.includes('/filter')
    const up = httpRequest(new URL(req.url!, target), { method: req.method, headers: req.headers }, (upRes) => {
      if (!history) {
        res.writeHead(upRes.statusCode!, upRes.headers)
        return void upRes.pipe(res)
      }
      const chunks: Buffer[] = []
      upRes.on('data', (c: Buffer) => chunks.push(c))
      upRes.on('end', () => {
        const body = Buffer.concat(chunks)
        const answer = JSON.parse(body.toString('utf8')) as { through: number; more: boolean; history?: { after: number; through: number; more: boolean } }
        if (req.url!.includes('/events')) {
          const after = Number(new URL(req.url!, target).searchParams.get('after'))
          histories.push({ after, through: answer.through, more: answer.more })
        } else if (answer.history) histories.push({ after: answer.history.after, through: answer.history.through, more: answer.history.more })
        setTimeout(() => {
          res.writeHead(upRes.statusCode!, upRes.headers)
          res.end(body)
        }, ms)
      })
    })
    up.on('error', () => res.destroy())
    req.pipe(up)
  })
  // No framed connection through the proxy: refused at once, so the adapter's POSTs (filter) go as plain HTTP.
  proxy.on('upgrade', (_req, socket) => socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n'))
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  cleanup.push(() => new Promise((r) => { proxy.closeAllConnections(); proxy.close(r) }))
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, histories }
}

function recorder() {
  const events: WatchEvent[] = []
  const errors: Error[] = []
  return { events, errors, sink: { event: (e: WatchEvent) => events.push(e), error: (e: Error) => errors.push(e) } }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function until(cond: () => boolean, timeout = 10_000): Promise<void> {
  const deadline = Date.now() + timeout
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeout} ms`)
    await sleep(10)
  }
}

const brief = (e: WatchEvent) => `${e.revision} ${e.type} ${e.key}${e.type === 'put' ? `=${JSON.stringify(e.value)}` : ''}`

describe('one stream per adapter', () => {
  test('every watch and lock waiter of an adapter shares one stream, which closes after the last one', async () => {
    const { url, handler } = await serve()
    const client = new Client(httpAdapter({ endpoints: [url], namespace: 'one', watchLinger: 50 }))
    const other = new Client(httpAdapter({ endpoints: [url], namespace: 'one' }))
    const watches = Array.from({ length: 10 }, (_, i) => client.watch(`key:${i}`))
    await Promise.all(watches.map((w) => w.ready))
    expect(handler.watchers).toBe(1)

    const held = await Promise.all(Array.from({ length: 4 }, (_, i) => other.locks.acquire(`lock:${i}`, { ttl: 10_000 })))
    const waiting = Array.from({ length: 4 }, (_, i) => client.locks.acquire(`lock:${i}`, { ttl: 10_000, wait: 10_000 }))
    await sleep(100)
    expect(handler.watchers).toBe(1)

    for (let i = 0; i < 10; i++) await other.put(`key:${i}`, i)
    for (let i = 0; i < 10; i++) expect((await watches[i]!.next()).value).toMatchObject({ key: `key:${i}`, value: i })
    await Promise.all(held.map((l) => l!.release()))
    const got = await Promise.all(waiting)
    expect(got.every((l, i) => l !== null && l.token > held[i]!.token)).toBe(true)
    expect(handler.watchers).toBe(1)

    for (const w of watches) w.close()
    await Promise.all(got.map((l) => l!.release()))
    await until(() => handler.watchers === 0)
    // The next watch opens a new stream.
    const again = client.watch('key:0')
    await again.ready
    expect(handler.watchers).toBe(1)
    await other.put('key:0', 'again')
    expect((await again.next()).value).toMatchObject({ value: 'again' })
    await Promise.all([client.close(), other.close()])
    await until(() => handler.watchers === 0)
  })

  test('a watch from before the stream started gets the node\'s history spliced to the stream, nothing lost or doubled, while writes go on', async () => {
    const { url } = await serve()
    const ns = 'splice'
    const writer = httpAdapter({ endpoints: [url], namespace: ns })
    // The reference: a watch of its own adapter, from before the first write.
    const reference = recorder()
    const refAdapter = httpAdapter({ endpoints: [url], namespace: ns })
    await refAdapter.watch('p/', reference.sink)
    for (let i = 0; i < 20; i++) {
      await writer.commit([], [{ type: 'set', key: `p/${i % 3}`, value: i }, { type: 'set', key: `q/${i}`, value: i }])
    }
    // The history answers come late, so changes certainly reach the stream while a watch catches up.
    const proxy = await slowHistory(url, 80)
    const adapter = httpAdapter({ endpoints: [proxy.url], namespace: ns })
    const other = recorder()
    await adapter.watch('q/', other.sink) // opens the adapter's stream at revision 20

    let writing = true
    let written = 0
    const writes = (async () => {
      // At most 2 000 commits (4 000 events): a quiet machine writes ~8 000 in this test's second, past the
      // node's history of 10 000 events, and a watch still catching up then rightly ends with COMPACTED.
      for (let i = 0; writing && i < 2_000; i++) {
        const r = await writer.commit([], [{ type: 'set', key: `p/${i % 4}`, value: i }, { type: 'delete', key: `p/${(i + 2) % 4}` }])
        if (r.ok) written = r.revision
      }
    })()
    await sleep(30)
    const watches: Array<{ from: number; r: ReturnType<typeof recorder> }> = []
    for (const from of [0, 5, 13, 19]) {
      const r = recorder()
      await adapter.watch('p/', r.sink, from) // from the node's history, then the stream
      watches.push({ from, r })
      await sleep(20)
    }
    await until(() => written > 0)
    const recent = written - 1
    const fromRing = recorder()
    await adapter.watch('p/', fromRing.sink, recent) // within the stream's ring
    watches.push({ from: recent, r: fromRing })
    await sleep(100)
    writing = false
    await writes
    const end = await writer.commit([], [{ type: 'set', key: 'p/end', value: 'end' }])
    if (!end.ok) throw new Error('commit failed')
    const done = (r: ReturnType<typeof recorder>) => r.events.at(-1)?.revision === end.revision
    await until(() => done(reference) && watches.every((w) => done(w.r)))

    expect(reference.events.length).toBeGreaterThan(60)
    // Each watch from before the stream asked once from its revision, and again only to continue a page cut
    // short (more: true; how many depends on how fast the writer got ahead); the watch within the ring asked nothing.
    const continues = (h: HistoryExchange) => proxy.histories.some((p) => p.more && p.through === h.after)
    expect(proxy.histories.filter((h) => !continues(h)).map((h) => h.after).sort((a, b) => a - b)).toEqual([0, 5, 13, 19])
    expect(proxy.histories.every((h) => h.after < recent)).toBe(true)
    for (const { from, r } of watches) {
      expect(r.errors).toEqual([])
      expect(r.events.map(brief)).toEqual(reference.events.filter((e) => e.revision > from).map(brief))
    }
    await Promise.all([writer.close(), refAdapter.close(), adapter.close()])
  })

  test('past the ring, the history comes in pages of whole commits; every event of a commit is delivered', async () => {
    const { url, handler } = await serve()
    const writer = httpAdapter({ endpoints: [url], namespace: 'pages' })
    const adapter = httpAdapter({ endpoints: [url], namespace: 'pages' })
    const live = recorder()
    await adapter.watch('', live.sink)
    for (let c = 0; c < 25; c++) {
      await writer.commit([], Array.from({ length: 100 }, (_, i) => ({ type: 'set' as const, key: `bulk/${c}/${i}`, value: i })))
    }
    await until(() => live.events.length === 2_500)
    // The stream's ring keeps the last 1 024 events; revision 1 is far behind them.
    const old = recorder()
    await adapter.watch('bulk/', old.sink, 1)
    expect(old.events).toHaveLength(2_400)
    expect(old.events.map(brief)).toEqual(live.events.filter((e) => e.revision > 1).map(brief))
    const pages = /^zaris_requests_total\{route="events",status="200"\} (\d+)$/m.exec(handler.metrics.render({ watchers: 0, locksHeld: 0, namespaces: 0 }))
    // Two pages of 1 000 events (ten whole commits each) reach the ring, which gives the rest.
    expect(Number(pages?.[1])).toBe(2)
    await Promise.all([writer.close(), adapter.close()])
  })

  test('a watch from a revision the node no longer keeps ends with CompactedError; within it, a replay', async () => {
    const { url } = await serve({ historySize: 3 })
    const client = new Client(httpAdapter({ endpoints: [url], namespace: 'h' }))
    for (let i = 1; i <= 6; i++) await client.put('k', i)
    const first = client.watch('k') // the stream starts at revision 6: older watches need the node's history
    await first.ready
    const old = client.watch('k', { fromRevision: 1 })
    await old.ready
    await expect(old.next()).rejects.toSatisfy((e) => isZarisError(e, 'COMPACTED'))
    const recent = client.watch('k', { fromRevision: 4 })
    expect([(await recent.next()).value?.revision, (await recent.next()).value?.revision]).toEqual([5, 6])
    await client.put('k', 7)
    expect((await recent.next()).value?.revision).toBe(7)
    expect((await first.next()).value?.revision).toBe(7)
    await client.close()
  })

  test('a stream cut between two events of one commit resumes with the rest of that commit, nothing doubled', async () => {
    const { url } = await serve()
    const resumedFrom: Array<string | undefined> = []
    let streams = 0
    // Passes the first watch stream up to the end of the event of m/a, then hangs up.
    const proxy = createServer((req, res) => {
      const first = req.url!.includes('/watch') && ++streams === 1
      if (req.url!.includes('/watch')) resumedFrom.push(req.headers['last-event-id'] as string | undefined)
      const up = httpRequest(new URL(req.url!, url), { method: req.method, headers: req.headers }, (upRes) => {
        res.writeHead(upRes.statusCode!, upRes.headers)
        if (!first) return void upRes.pipe(res)
        upRes.setEncoding('utf8')
        let seen = ''
        let sent = 0
        upRes.on('data', (chunk: string) => {
          seen += chunk
          const at = seen.indexOf('"key":"m/a"')
          const end = at === -1 ? -1 : seen.indexOf('\n\n', at)
          if (at === -1) {
            res.write(seen.slice(sent))
            sent = seen.length
          } else if (end !== -1) {
            res.write(seen.slice(sent, end + 2))
            sent = seen.length
            setTimeout(() => {
              res.destroy()
              upRes.destroy()
            }, 50)
          }
        })
      })
      up.on('error', () => res.destroy())
      req.pipe(up)
    })
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
    cleanup.push(() => new Promise((r) => { proxy.closeAllConnections(); proxy.close(r) }))
    const adapter = httpAdapter({ endpoints: [`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`], namespace: 'cut' })
    const watched = recorder()
    await adapter.watch('m/', watched.sink)
    const both = await adapter.commit([], [{ type: 'set', key: 'm/a', value: 1 }, { type: 'set', key: 'm/b', value: 2 }])
    if (!both.ok) throw new Error('commit failed')
    await until(() => watched.events.length >= 2)
    await adapter.commit([], [{ type: 'set', key: 'm/c', value: 3 }])
    await until(() => watched.events.length >= 3)
    await sleep(50)
    const r = both.revision
    expect(watched.events.map(brief)).toEqual([`${r} put m/a=1`, `${r} put m/b=2`, `${r + 1} put m/c=3`])
    expect(streams).toBe(2)
    // The resume asked for the whole of the commit that was cut.
    expect(resumedFrom).toEqual([undefined, String(r - 1)])
    expect(watched.errors).toEqual([])
    await adapter.close()
  })

  test('after a memory node restarts, the watches that relied on its history end with CompactedError; a new one works', async () => {
    const n1 = await startNode()
    cleanup.push(() => n1.kill9())
    const client = await connect(`zaris://127.0.0.1:${n1.port}/restart`)
    const before = client.watch('k')
    await before.ready
    await client.put('k', 1)
    expect((await before.next()).value).toMatchObject({ revision: 1 })
    await n1.kill9()
    const n2 = await startNode(['--port', String(n1.port)])
    cleanup.push(() => n2.kill9())
    await client.put('k', 'new life')
    await expect(before.next()).rejects.toSatisfy((e) => isZarisError(e, 'COMPACTED'))
    const after = client.watch('k')
    await after.ready
    await client.put('k', 'seen')
    expect((await after.next()).value).toMatchObject({ value: 'seen' })
    await client.close()
  }, 30_000)

  test('a Node process whose watches ended exits while the adapter\'s stream lingers', async () => {
    const { url, handler } = await serve()
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/http/fixtures/linger.ts', url, 'linger'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout!.on('data', (d) => (out += d))
    child.stderr!.on('data', (d) => (out += d))
    const started = Date.now()
    // With a ref'd socket it would stay for the whole minute of linger (past this test's timeout).
    const code = await new Promise<number | null>((r) => child.once('exit', r))
    expect(out).toContain('saw "seen"; watch closed')
    expect(code).toBe(0)
    console.log(`[figure] a process with a lingering watch stream exited ${Date.now() - started} ms after it started`)
    await until(() => handler.watchers === 0)
  })
})

describe('GET /v1/<ns>/events', () => {
  test('one page of history after a revision for a prefix; 400, 405 and 410 when it cannot be served', async () => {
    const { url } = await serve({ historySize: 5 })
    const client = new Client(httpAdapter({ endpoints: [url], namespace: 'ev' }))
    for (let i = 1; i <= 8; i++) await client.put(i % 2 ? `e/${i}` : `f/${i}`, i)
    const get = (query: string) => fetch(`${url}/v1/ev/events?${query}`)
    const page = await (await get('after=4&prefix=e/')).json()
    expect(page).toEqual({
      events: [
        { type: 'put', key: 'e/5', revision: 5, value: 5, created: 5 },
        { type: 'put', key: 'e/7', revision: 7, value: 7, created: 7 },
      ],
      through: 8,
      more: false,
    })
    expect((await (await get('after=8')).json())).toEqual({ events: [], through: 8, more: false })
    const gone = await get('after=1')
    expect(gone.status).toBe(410)
    expect((await gone.json()).error.code).toBe('COMPACTED')
    const ahead = await get('after=99')
    expect(ahead.status).toBe(410)
    expect((await ahead.json()).error.message).toMatch(/reset/)
    const otherStore = await get('after=4&epoch=another')
    expect(otherStore.status).toBe(410)
    const missing = await get('prefix=e/')
    expect(missing.status).toBe(400)
    expect((await missing.json()).error.message).toMatch(/^after: /)
    expect((await get('after=x')).status).toBe(400)
    expect((await get('after=1&after=2')).status).toBe(400)
    expect((await fetch(`${url}/v1/ev/events?after=1`, { method: 'POST' })).status).toBe(405)
    await client.close()
  })
})
