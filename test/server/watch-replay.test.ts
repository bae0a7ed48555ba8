/**
 * A watch from an old revision follows its reader: the node writes history a
 * page at a time, the next only once the socket has taken the last. Driven
 * through the handler with a stand-in for the socket (a sink that reports
 * "wait for drain" and drains only when the test says), over a real store.
 */
import { expect, test } from 'vitest'
import type { WatchEvent } from 'zaris'
import { createHandler, memoryBackend, type Exchange, type StreamSink } from 'zaris/server'

function get(path: string, headers: Record<string, string> = {}): Exchange {
  return {
    method: 'GET',
    url: new URL(path, 'http://node.invalid'),
    header: (name) => headers[name] ?? null,
    body: async () => '',
  }
}

/** A stand-in socket: every write asks to wait; `drain()` lets the next page come. */
function slowSocket() {
  let written = 0
  let chunks: string[] = []
  let waiting: Array<() => void> = []
  let ended = false
  const sink: StreamSink = {
    write(chunk) {
      written += chunk.length
      chunks.push(chunk)
      return false
    },
    drain(fn) {
      waiting.push(fn)
    },
    end() {
      ended = true
    },
  }
  return {
    sink,
    written: () => written,
    ended: () => ended,
    take: () => {
      const c = chunks
      chunks = []
      return c.join('')
    },
    drain: async () => {
      const w = waiting
      waiting = []
      for (const fn of w) fn()
      await new Promise((r) => setTimeout(r, 5))
    },
    waiting: () => waiting.length,
  }
}

const eventsOf = (text: string): WatchEvent[] =>
  text
    .split('\n\n')
    .filter((block) => block.startsWith('id: '))
    .map((block) => JSON.parse(block.slice(block.indexOf('data: ') + 6)) as WatchEvent)

test('a watch from revision 0 over 20 MB of history holds one page while its reader does not read, and gets all of it as it does', async () => {
  // History limits above the 20 MB written, so it is all kept.
  const backend = memoryBackend({ historySize: 10_000, historyBytes: 64 * 1024 * 1024, maxHistoryBytes: 64 * 1024 * 1024 })
  const handler = createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf })
  const adapter = await backend.adapterFor('big')
  const value = 'v'.repeat(20 * 1024)
  for (let r = 1; r <= 1_000; r++) await adapter.commit([], [{ type: 'set', key: `k/${r % 50}`, value: `${r}:${value}` }])
  const reply = await handler.handle(get('/v1/big/watch?prefix=k/&from=0'))
  expect(reply.status).toBe(200)
  if (!('stream' in reply)) throw new Error('not a stream')
  const socket = slowSocket()
  const stop = reply.stream(socket.sink)
  await new Promise((r) => setTimeout(r, 50))
  // One page of about 256 KiB (of 20 KiB events) went out, and the watch waits for the socket.
  const firstPage = socket.written()
  expect(firstPage).toBeGreaterThan(100 * 1024)
  expect(firstPage).toBeLessThan(600 * 1024)
  expect(socket.waiting()).toBe(1)
  await new Promise((r) => setTimeout(r, 100))
  expect(socket.written()).toBe(firstPage)
  // Drained page by page, it delivers every event once, in order, then `ready`, then live events.
  let text = socket.take()
  for (let pages = 0; socket.waiting() > 0; pages++) {
    await socket.drain()
    text += socket.take()
    expect(pages).toBeLessThan(1_000)
  }
  expect(eventsOf(text).map((e) => e.revision)).toEqual(Array.from({ length: 1_000 }, (_, i) => i + 1))
  expect(text).toContain('event: ready')
  await adapter.commit([], [{ type: 'set', key: 'k/live', value: 'live' }])
  expect(eventsOf(socket.take())).toMatchObject([{ key: 'k/live', revision: 1_001 }])
  expect(handler.watchers).toBe(1)
  stop()
  expect(handler.watchers).toBe(0)
  expect(socket.ended()).toBe(true)
  await handler.close()
  await backend.close()
})

test('a reader so slow that the history moves past it gets CompactedError in the stream', async () => {
  const backend = memoryBackend({ historySize: 100 })
  const handler = createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf })
  const adapter = await backend.adapterFor('moving')
  const value = 'v'.repeat(10 * 1024)
  for (let r = 1; r <= 60; r++) await adapter.commit([], [{ type: 'set', key: 'k', value }])
  const reply = await handler.handle(get('/v1/moving/watch?from=0'))
  if (!('stream' in reply)) throw new Error('not a stream')
  const socket = slowSocket()
  reply.stream(socket.sink)
  await new Promise((r) => setTimeout(r, 20))
  // While it waits, 200 more commits push its place out of the kept 100 events.
  for (let r = 0; r < 200; r++) await adapter.commit([], [{ type: 'set', key: 'k', value: r }])
  for (let i = 0; i < 50 && !socket.ended(); i++) await socket.drain()
  expect(socket.ended()).toBe(true)
  expect(socket.take()).toMatch(/event: error\ndata: \{"code":"COMPACTED"/)
  expect(handler.watchers).toBe(0)
  await handler.close()
  await backend.close()
})

test('history already gone is the HTTP answer: 410 before any stream', async () => {
  const backend = memoryBackend({ historySize: 5 })
  const handler = createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf })
  const adapter = await backend.adapterFor('gone')
  for (let r = 1; r <= 20; r++) await adapter.commit([], [{ type: 'set', key: 'k', value: r }])
  const reply = await handler.handle(get('/v1/gone/watch', { 'last-event-id': '3' }))
  expect(reply.status).toBe(410)
  expect(handler.watchers).toBe(0)
  await handler.close()
  await backend.close()
})
