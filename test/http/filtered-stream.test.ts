/**
 * Filtered watch streams, against a real `zaris serve` process over real
 * HTTP: the node writes a stream only the changes under the prefixes its
 * client watches, and the client changes that set (`POST filter`) as its
 * watches come and go. What could go wrong, each driven here:
 *
 * - a watch added while the stream runs misses the changes between its
 *   revision and the node taking the new set, or gets one twice;
 * - a prefix removed (and added back) while its events are in flight;
 * - the stream cut (a reconnect resumes with the set of that moment), the
 *   node killed and restarted under it (its stream ids are gone);
 * - a quiet stream whose last change is older than the node's history: its
 *   resume must not fail for lack of changes it never carried;
 * - a watch from a revision the history no longer has (CompactedError);
 * - bad or oversized sets (TOO_LARGE, INVALID_ARGUMENT), and a client that
 *   asks for the whole namespace as before.
 *
 * Every watch's deliveries and every commit go into one history, judged by
 * test/lincheck (linearizability of the commits, and each watch: in order,
 * none twice, none skipped after its revision).
 */
import { Socket, createServer, type Server } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { isZarisError, type WatchEvent } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { freePort, startNode, type NodeProcess } from '../server/node-process'
import { MemoryHistory, recordingAdapter } from '../lincheck/recorder'
import { verifyHistory } from '../lincheck/verify'
import { watchRecorder } from '../lincheck/watch'

const cleanup: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const c of cleanup.reverse()) await c().catch(() => {})
})

async function node(args: string[] = []): Promise<NodeProcess> {
  const n = await startNode(['--insecure', ...args])
  cleanup.push(() => n.stop())
  return n
}

/** A TCP proxy to `port` whose connections the test can cut at once (the stream's, the frames'). */
async function cutter(port: number): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const upstream = new Socket()
    upstream.connect(port, '127.0.0.1')
    sockets.add(client).add(upstream)
    const drop = () => {
      client.destroy()
      upstream.destroy()
      sockets.delete(client)
      sockets.delete(upstream)
    }
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const close = () => new Promise<void>((r) => {
    for (const s of sockets) s.destroy()
    server.close(() => r())
  })
  cleanup.push(close)
  const { port: own } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${own}`, cut: () => [...sockets].forEach((s) => s.destroy()), close }
}

/** Reads a raw SSE stream: its events (name and data) as they come. */
async function sse(url: string, headers: Record<string, string> = {}) {
  const controller = new AbortController()
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal })
  const events: Array<{ event: string; data: string; id?: string }> = []
  if (res.status === 200) {
    void (async () => {
      const decoder = new TextDecoder()
      let buffer = ''
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buffer += decoder.decode(chunk, { stream: true })
          let end: number
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end)
            buffer = buffer.slice(end + 2)
            const e: { event: string; data: string; id?: string } = { event: 'message', data: '' }
            for (const line of block.split('\n')) {
              if (line.startsWith('event: ')) e.event = line.slice(7)
              else if (line.startsWith('data: ')) e.data = line.slice(6)
              else if (line.startsWith('id: ')) e.id = line.slice(4)
            }
            if (e.data !== '') events.push(e)
          }
        }
      } catch {
        // aborted
      }
    })()
  }
  return { status: res.status, text: res.status === 200 ? '' : await res.text(), events, close: () => controller.abort() }
}

async function until(cond: () => boolean, what: string, timeout = 15_000): Promise<void> {
  const deadline = Date.now() + timeout
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeout} ms: ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: (await r.json()) as Record<string, any> }))

describe('filtered watch streams', () => {
  test('a stream with prefixes carries only their changes, and progress; one without (an older client) carries all; bad sets are refused', async () => {
    const n = await node()
    const base = `${n.url}/v1/f1`
    const writer = httpAdapter({ endpoints: [n.url], namespace: 'f1' })
    const filtered = await sse(`${base}/watch?prefix=&prefixes=${encodeURIComponent(JSON.stringify(['a/', 'b/x']))}`)
    const whole = await sse(`${base}/watch?prefix=`)
    expect([filtered.status, whole.status]).toEqual([200, 200])
    await until(() => filtered.events.some((e) => e.event === 'ready') && whole.events.some((e) => e.event === 'ready'), 'ready')
    const ready = JSON.parse(filtered.events.find((e) => e.event === 'ready')!.data)
    expect(ready.stream).toMatch(/^[A-Za-z0-9_-]{1,64}$/)
    expect(JSON.parse(whole.events.find((e) => e.event === 'ready')!.data).stream).toBeUndefined()
    let last = 0
    for (const key of ['a/1', 'b/1', 'b/x1', 'c/1', 'a/2']) {
      const r = await writer.commit([], [{ type: 'set', key, value: key }])
      if (r.ok) last = r.revision
    }
    const changes = (s: typeof filtered) => s.events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data).key)
    await until(() => changes(whole).length === 5 && changes(filtered).includes('a/2'), 'changes')
    expect(changes(filtered)).toEqual(['a/1', 'b/x1', 'a/2'])
    expect(changes(whole)).toEqual(['a/1', 'b/1', 'b/x1', 'c/1', 'a/2'])

    // The set changes: c/ comes in from the answer's revision on, a/ leaves.
    const answer = await post(`${base}/filter`, { stream: ready.stream, version: 1, prefixes: ['c/'] })
    expect(answer).toEqual({ status: 200, json: { revision: last, version: 1 } })
    // The same version again (a repeated request) gets the first answer; an older one too.
    expect((await post(`${base}/filter`, { stream: ready.stream, version: 1, prefixes: ['a/'] })).json).toEqual({ revision: last, version: 1 })
    await writer.commit([], [{ type: 'set', key: 'a/3', value: 3 }])
    await writer.commit([], [{ type: 'set', key: 'c/2', value: 2 }])
    await until(() => changes(filtered).includes('c/2'), 'c/2')
    expect(changes(filtered)).toEqual(['a/1', 'b/x1', 'a/2', 'c/2'])
    // With `after`, the answer holds the history under the prefixes it adds, complete up to its revision.
    const withHistory = await post(`${base}/filter`, { stream: ready.stream, version: 2, prefixes: ['c/', 'b/'], after: 0 })
    expect(withHistory.json.history.events.map((e: WatchEvent) => e.key)).toEqual(['b/1', 'b/x1'])
    expect(withHistory.json.history.through).toBeGreaterThanOrEqual(withHistory.json.revision)

    // Progress: 300 changes the stream does not carry move its resume point (every 256 filtered out).
    for (let i = 0; i < 300; i++) await writer.commit([], [{ type: 'set', key: `z/${i % 5}`, value: i }])
    await until(() => filtered.events.some((e) => e.event === 'progress'), 'progress')
    expect(JSON.parse(filtered.events.find((e) => e.event === 'progress')!.data).revision).toBeGreaterThan(last + 200)

    // Bounds and bad input: codes, never a crash.
    const many = Array.from({ length: 65 }, (_, i) => `p${i}/`)
    const tooMany = await sse(`${base}/watch?prefix=&prefixes=${encodeURIComponent(JSON.stringify(many))}`)
    expect([tooMany.status, JSON.parse(tooMany.text).error.code]).toEqual([413, 'TOO_LARGE'])
    const long = Array.from({ length: 5 }, (_, i) => `${i}`.padEnd(1000, 'x'))
    expect((await post(`${base}/filter`, { stream: ready.stream, version: 9, prefixes: long })).json.error.code).toBe('TOO_LARGE')
    expect((await post(`${base}/filter`, { stream: ready.stream, version: 9, prefixes: many })).json.error.code).toBe('TOO_LARGE')
    // However many: past the schema's old cap (1 024) it was INVALID_ARGUMENT, the one size bound that was not TOO_LARGE.
    const huge = Array.from({ length: 1025 }, (_, i) => `${i}`)
    const hugeQuery = await sse(`${base}/watch?prefix=&prefixes=${encodeURIComponent(JSON.stringify(huge))}`)
    expect([hugeQuery.status, JSON.parse(hugeQuery.text).error.code]).toEqual([413, 'TOO_LARGE'])
    const hugeFilter = await post(`${base}/filter`, { stream: ready.stream, version: 9, prefixes: huge })
    expect([hugeFilter.status, hugeFilter.json.error.code]).toEqual([413, 'TOO_LARGE'])
    const malformed = await sse(`${base}/watch?prefix=&prefixes=nope`)
    expect([malformed.status, JSON.parse(malformed.text).error.code]).toEqual([400, 'INVALID_ARGUMENT'])
    const both = await sse(`${base}/watch?prefix=a&prefixes=%5B%5D`)
    expect(both.status).toBe(400)
    expect((await post(`${base}/filter`, { stream: ready.stream, version: 0, prefixes: [] })).status).toBe(400)
    expect((await post(`${base}/filter`, { stream: 'no-such-stream', version: 1, prefixes: [] })).json.error.code).toBe('UNAVAILABLE')
    // Another namespace cannot name this stream.
    expect((await post(`${n.url}/v1/other/filter`, { stream: ready.stream, version: 5, prefixes: [] })).json.error.code).toBe('UNAVAILABLE')
    filtered.close()
    whole.close()
    await writer.close()
  })

  test('watches come and go (fresh and from a revision) while commits run and the stream is cut: every watch gets every change once, in order', async () => {
    const n = await node()
    const proxy = await cutter(n.port)
    const history = new MemoryHistory(() => performance.now())
    const keys = Array.from({ length: 8 }, (_, i) => `k/${i}`)
    const writers = [0, 1].map((i) => recordingAdapter(httpAdapter({ endpoints: [n.url], namespace: 'churn' }), history, `writer${i}`))
    const watcher = httpAdapter({ endpoints: [proxy.url], namespace: 'churn', watchLinger: 50 })
    let acknowledged = 0
    let writing = true
    const writes = writers.map(async (w, i) => {
      for (let c = 0; writing; c++) {
        const r = await w.commit([], [{ type: 'set', key: keys[(c * 3 + i) % keys.length]!, value: c }, { type: 'delete', key: keys[(c * 3 + i + 4) % keys.length]! }])
        if (r.ok) acknowledged = Math.max(acknowledged, r.revision)
      }
    })
    interface Open { key: string; rec: ReturnType<typeof watchRecorder>; unwatch: () => void; last: number; errors: Error[] }
    const open: Open[] = []
    let serial = 0
    const start = async (key: string) => {
      const rec = watchRecorder((e) => history.push(e), () => performance.now(), history.newProcess(), `w${serial++}`, 'watcher')
      const from = acknowledged
      rec.start(key, from)
      const o: Open = { key, rec, unwatch: () => {}, last: from, errors: [] }
      o.unwatch = await watcher.watch(key, { event: (ev) => { o.last = ev.revision; rec.event(ev) }, error: (err) => o.errors.push(err) }, from)
      open.push(o)
    }
    for (let round = 0; round < 60; round++) {
      const key = keys[round % keys.length]!
      // Add one, drop one (sometimes the same key at once: removed and added back while its events fly).
      await start(key)
      if (open.length > 4) {
        const o = open.splice(round % open.length, 1)[0]!
        o.unwatch()
        o.rec.end('unwatched')
        if (round % 4 === 0) await start(o.key)
      }
      if (round % 15 === 7) proxy.cut()
      await new Promise((r) => setTimeout(r, 5 + (round % 4) * 5))
    }
    writing = false
    await Promise.all(writes)
    // A last commit to every key: each open watch has everything up to it once it has that.
    const final = await writers[0]!.commit([], keys.map((key) => ({ type: 'set' as const, key, value: 'end' })))
    if (!final.ok) throw new Error('final commit failed')
    await until(() => open.every((o) => o.last >= final.revision), 'every open watch reached the final commit')
    for (const o of open) {
      o.unwatch()
      o.rec.end('done', final.revision)
      expect(o.errors).toEqual([])
    }
    const verdict = verifyHistory(history.events)
    expect(verdict.watch.events).toBeGreaterThan(200)
    expect(verdict.report).toContain('0 violation(s)')
    expect(verdict.ok, verdict.report).toBe(true)
    await Promise.all([...writers.map((w) => w.close()), watcher.close()])
  }, 60_000)

  test('a SQLite node killed under a filtered stream: the stream resumes there with its prefixes, and watches added after see every change', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'zaris-filtered-'))
    cleanup.push(async () => rmSync(dir, { recursive: true, force: true }))
    const port = await freePort()
    const args = ['--data', join(dir, 'node.db'), '--port', String(port)]
    let n = await node(args)
    const writer = httpAdapter({ endpoints: [n.url], namespace: 'restart' })
    const watcher = httpAdapter({ endpoints: [n.url], namespace: 'restart', watchReconnectLimit: 20_000 })
    const a: WatchEvent[] = []
    const errors: Error[] = []
    await watcher.watch('a/', { event: (e) => a.push(e), error: (e) => errors.push(e) })
    await writer.commit([], [{ type: 'set', key: 'a/1', value: 1 }])
    await until(() => a.length === 1, 'a/1')
    await n.kill9()
    n = await node(args)
    // Written while the stream reconnects: it must come, and only a/.
    await writer.commit([], [{ type: 'set', key: 'b/1', value: 1 }])
    const mid = await writer.commit([], [{ type: 'set', key: 'a/2', value: 2 }])
    if (!mid.ok) throw new Error('commit failed')
    await until(() => a.length === 2, 'a/2 after the restart')
    // A watch of a new prefix from before the restart: its history from the node, then live.
    const b: WatchEvent[] = []
    await watcher.watch('b/', { event: (e) => b.push(e), error: (e) => errors.push(e) }, 0)
    await writer.commit([], [{ type: 'set', key: 'b/2', value: 2 }])
    await until(() => b.length === 2, 'b/1 and b/2')
    expect(a.map((e) => e.key)).toEqual(['a/1', 'a/2'])
    expect(b.map((e) => e.key)).toEqual(['b/1', 'b/2'])
    expect(errors).toEqual([])
    await Promise.all([writer.close(), watcher.close()])
  }, 60_000)

  test('a quiet stream resumes after a cut past history it never carried; a watch from history that is gone gets CompactedError', async () => {
    // 64 KiB of history: a few hundred events.
    const n = await node(['--max-history-bytes', '64k'])
    const proxy = await cutter(n.port)
    const writer = httpAdapter({ endpoints: [n.url], namespace: 'quiet' })
    const watcher = httpAdapter({ endpoints: [proxy.url], namespace: 'quiet' })
    const quiet: WatchEvent[] = []
    const errors: Error[] = []
    await watcher.watch('quiet/', { event: (e) => quiet.push(e), error: (e) => errors.push(e) })
    await writer.commit([], [{ type: 'set', key: 'quiet/1', value: 1 }])
    await until(() => quiet.length === 1, 'quiet/1')
    // Far more than the history holds, none of it for this stream.
    for (let i = 0; i < 2_000; i++) await writer.commit([], [{ type: 'set', key: `busy/${i % 7}`, value: 'x'.repeat(100) }])
    // Enough time for the last progress event to arrive, then cut: the resume must be within the history.
    await new Promise((r) => setTimeout(r, 200))
    proxy.cut()
    await writer.commit([], [{ type: 'set', key: 'quiet/2', value: 2 }])
    await until(() => quiet.length === 2, 'quiet/2 after the cut')
    expect(errors).toEqual([])
    // From revision 1, long gone: CompactedError for that watch only.
    const old: Error[] = []
    await watcher.watch('busy/', { event: () => {}, error: (e) => old.push(e) }, 1)
    await until(() => old.length === 1, 'CompactedError')
    expect(isZarisError(old[0], 'COMPACTED')).toBe(true)
    await writer.commit([], [{ type: 'set', key: 'quiet/3', value: 3 }])
    await until(() => quiet.length === 3, 'quiet/3')
    expect(quiet.map((e) => e.key)).toEqual(['quiet/1', 'quiet/2', 'quiet/3'])
    expect(errors).toEqual([])
    await Promise.all([writer.close(), watcher.close()])
  }, 60_000)
})

