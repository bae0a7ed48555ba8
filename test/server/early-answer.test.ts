/**
 * A parked take's answer leaves in the release's own step (issue 31): the
 * node reaches the store from a release's frame without waiting a turn, and
 * a memory store tells the node the handed-over take's answer inside that
 * step (`CommitOptions.onAnswer`), so the node writes it before the rest of
 * the step and before the release's own answer. A SQLite store, whose
 * answers wait for the disk, never answers early. Over the wire the take is
 * answered exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, expect, test } from 'vitest'
import { createHandler, listen, memoryBackend, sqliteBackend, type Backend, type FrameSession } from 'zaris/server'
import { frameSocket } from './frame-socket'

const cleanup: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f()
})

const KEY = 'lock:early'
const take = (owner: string, place?: { key: string; created: number }) => ({
  checks: place ? [{ key: KEY, revision: null }, { key: place.key, created: place.created }] : [{ key: KEY, revision: null }],
  ops: place ? [{ type: 'set', key: KEY, value: null, ttl: 30_000, owner }, { type: 'delete', key: place.key }] : [{ type: 'set', key: KEY, value: null, ttl: 30_000, owner }],
  ...(place ? { waitChange: 10_000, keepParked: true, parkOrder: place.created } : {}),
})
const join_ = (owner: string) => {
  const key = `\u0001q${KEY}\u0001${owner}.1`
  return { key, body: { checks: [{ key, revision: null }], ops: [{ type: 'set', key, value: 'exclusive', ttl: 10_000, owner }] } }
}
const frame = (id: number, body: unknown) => JSON.stringify({ id, path: '/v1/early/commit', body })
const bodyOf = (f: string) => JSON.parse(f).body

async function sessions(backend: Backend): Promise<[FrameSession, FrameSession]> {
  const handler = createHandler({ adapterFor: backend.adapterFor, log: () => {} })
  cleanup.push(async () => {
    await handler.close()
    await backend.close()
  })
  const ex = { method: 'GET', url: new URL('http://127.0.0.1/v1/frames'), header: (n: string) => (n === 'upgrade' ? 'zaris-frames/1' : n === 'host' ? '127.0.0.1' : null), body: async () => '' }
  const open = async () => ((await handler.upgrade(ex)) as { session: FrameSession }).session
  return [await open(), await open()]
}

/** The holder takes the lock; the waiter joins the line and parks its take; resolves the take's answer and what was told early. */
async function parkedBehindHolder(holder: FrameSession, waiter: FrameSession): Promise<{ created: number; taken: Promise<string>; early: string[] }> {
  const held = bodyOf((await holder.answer(frame(1, take('holder')))).frame)
  expect(held).toMatchObject({ ok: true })
  const line = join_('waiter')
  const placed = bodyOf((await waiter.answer(frame(1, line.body))).frame)
  const early: string[] = []
  const taken = waiter.answer(frame(2, take('waiter', { key: line.key, created: placed.revision })), (f) => early.push(f)).then((a) => a.frame)
  // Parked: its first try failed and it waits (a turn later it has not been answered).
  await new Promise((r) => setImmediate(r))
  expect(early).toEqual([])
  return { created: held.revision, taken, early }
}

test('memory store: the release hands over in its own step and the take is told before the release call even returns', async () => {
  const [holder, waiter] = await sessions(memoryBackend())
  const { created, taken, early } = await parkedBehindHolder(holder, waiter)
  const released = holder.answer(frame(2, { checks: [{ key: KEY, created }], ops: [{ type: 'delete', key: KEY }] }))
  // No await between: the release's frame reached the store and the take's answer was told, synchronously.
  expect(early).toHaveLength(1)
  expect(bodyOf(early[0]!)).toMatchObject({ ok: true, entries: [{ key: KEY, owner: 'waiter' }] })
  // The settled answer is the same frame, and the release's own answer comes after.
  expect(await taken).toBe(early[0])
  const rel = bodyOf((await released).frame)
  expect(rel).toMatchObject({ ok: true, deleted: [KEY] })
  expect(bodyOf(early[0]!).revision).toBeGreaterThan(rel.revision)
})

test('SQLite store (--data): a parked take is never told early, it is answered once its write is on disk', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'zaris-early-'))
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }))
  const [holder, waiter] = await sessions(await sqliteBackend(join(dir, 'z.db')))
  const { created, taken, early } = await parkedBehindHolder(holder, waiter)
  await holder.answer(frame(2, { checks: [{ key: KEY, created }], ops: [{ type: 'delete', key: KEY }] }))
  expect(bodyOf(await taken)).toMatchObject({ ok: true, entries: [{ key: KEY, owner: 'waiter' }] })
  expect(early).toEqual([])
})

test('over the wire: the handed-over take is answered exactly once, before the release', async () => {
  const backend = memoryBackend()
  const node = await listen(createHandler({ adapterFor: backend.adapterFor, log: () => {} }), { port: 0 })
  cleanup.push(async () => {
    await node.close()
    await backend.close()
  })
  const [h, w] = [await frameSocket(node.port), await frameSocket(node.port)]
  cleanup.push(() => void h.socket.destroy(), () => void w.socket.destroy())
  h.write(`${frame(1, take('holder'))}\n`)
  const held = (await h.next()).body
  const line = join_('waiter')
  w.write(`${frame(1, line.body)}\n`)
  const placed = (await w.next()).body
  w.write(`${frame(2, take('waiter', { key: line.key, created: placed.revision }))}\n`)
  // The take parks: a ping on the waiter's connection is answered while it waits.
  w.write(`${JSON.stringify({ id: 3, path: '/v1/ping', body: {} })}\n`)
  expect(await w.next()).toMatchObject({ id: 3, status: 200 })
  h.write(`${frame(2, { checks: [{ key: KEY, created: held.revision }], ops: [{ type: 'delete', key: KEY }] })}\n`)
  const got = await w.next()
  expect(got).toMatchObject({ id: 2, status: 200, body: { ok: true, entries: [{ owner: 'waiter' }] } })
  expect((await h.next()).body).toMatchObject({ ok: true, deleted: [KEY] })
  // Nothing else for the take: the next answer on the waiter's connection is the next request's.
  w.write(`${JSON.stringify({ id: 4, path: '/v1/ping', body: {} })}\n`)
  expect(await w.next()).toMatchObject({ id: 4, status: 200 })
})
