/**
 * A page's waiting commits (src/adapters/http/stream-answers.ts): the
 * node answers the POST `{ parked: true }` at once and the outcome comes
 * on the client's watch stream. This is the page's path run in Node, and
 * the test names say so: `document` is defined by hand, so the adapter
 * takes itself for a page's (its HTTP is Node's own, over real HTTP to a
 * real node in this process, through a fake in front, ./front-node, that
 * can refuse and cut). In real pages: test/http/node.browser.test.ts.
 */
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import type { Adapter, CommitResult } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { frontNode, nodeForFile, type Answer, type FrontNode, type Seen } from './front-node'

const node = nodeForFile()
const g = globalThis as { document?: unknown }
beforeEach(() => {
  g.document = {}
})
afterEach(() => {
  delete g.document
})

let n = 0
async function setUp(answer?: (seen: Seen) => Answer | 'hang' | undefined, timeout?: number, watchLinger?: number): Promise<{ page: Adapter; other: Adapter; front: FrontNode }> {
  const front = await frontNode(node.port, answer)
  const ns = `page-${++n}`
  const page = httpAdapter({ endpoints: [front.url], namespace: ns, transport: 'fetch', timeout, watchLinger })
  delete g.document
  const other = httpAdapter({ endpoints: [node.url], namespace: ns })
  g.document = {}
  node.later(() => page.close(), () => other.close(), () => front.close())
  return { page, other, front }
}

const posts = (f: FrontNode) => f.seen.filter((s) => s.path.endsWith('/commit')).map((s) => s.body!)
const take = { checks: [{ key: 'lock', revision: null }], ops: [{ type: 'set' as const, key: 'lock', value: 'page', owner: 'page' }] }

async function hold(other: Adapter): Promise<number> {
  const r = await other.commit([{ key: 'lock', revision: null }], [{ type: 'set', key: 'lock', value: 'other', owner: 'other' }])
  if (!r.ok) throw new Error('not held')
  return r.revision
}

describe('a page\'s waiting commit, answered on its watch stream (the page\'s path in Node: `document` defined by hand)', () => {
  test('parked at the node: the POST is answered at once, the grant comes on the stream, no second POST', async () => {
    const { page, other, front } = await setUp()
    const held = await hold(other)
    const waiting = page.commit(take.checks, take.ops, { waitChange: 10_000, keepParked: true })
    await expect.poll(() => posts(front).length).toBe(1)
    expect(posts(front)[0]).toMatchObject({ waitChange: 10_000, keepParked: true, answerOn: expect.any(String) })
    await new Promise((r) => setTimeout(r, 50))
    const released = await other.commit([{ key: 'lock', revision: held }], [{ type: 'delete', key: 'lock' }])
    const r = await waiting
    expect(r).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'page' }] })
    if (released.ok && r.ok) expect(r.revision).toBe(released.revision + 1)
    expect(posts(front).length).toBe(1)
  })

  test('once answered, the commit\'s watch of its key ends (with no linger, the stream closes)', async () => {
    const { page, other, front } = await setUp(undefined, undefined, 0)
    const held = await hold(other)
    const waiting = page.commit(take.checks, take.ops, { waitChange: 10_000, keepParked: true })
    await expect.poll(() => posts(front).length).toBe(1)
    expect(front.openWatches()).toBe(1)
    await other.commit([{ key: 'lock', revision: held }], [{ type: 'delete', key: 'lock' }])
    expect(await waiting).toMatchObject({ ok: true })
    await expect.poll(() => front.openWatches()).toBe(0)
  })

  test('a first try that goes through is answered by the POST itself', async () => {
    const { page, front } = await setUp()
    expect(await page.commit(take.checks, take.ops, { waitChange: 10_000, keepParked: true })).toMatchObject({ ok: true })
    expect(posts(front).length).toBe(1)
  })

  test('a commit that checks nothing is sent plain, with no stream', async () => {
    const { page, front } = await setUp()
    expect(await page.commit([], [{ type: 'set', key: 'x', value: 1 }], { waitChange: 1_000 })).toMatchObject({ ok: true })
    expect(posts(front)[0]!.answerOn).toBeUndefined()
    expect(front.seen.some((s) => s.path.includes('/watch'))).toBe(false)
  })

  test('nothing came on the stream in time: the outcome is asked for again with the request id', async () => {
    const { page, other } = await setUp(undefined, 300)
    await hold(other)
    const r = (await page.commit(take.checks, take.ops, { waitChange: 200, keepParked: true })) as Extract<CommitResult, { ok: false }>
    // The wait ended at the node: its first try's failure, as the retry of the request id answers.
    expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'other' } }] })
  })

  test('the stream breaks while the commit is parked: asked for again with its request id, the same commit never applied twice', async () => {
    const { page, other, front } = await setUp()
    await hold(other)
    const waiting = page.commit(take.checks, take.ops, { waitChange: 10_000, keepParked: true })
    await expect.poll(() => posts(front).length).toBe(1)
    const id = posts(front)[0]!.requestId
    front.cutWatches()
    const r = await waiting.catch((e: unknown) => e)
    // Asked again (no stream left to name): the node answers the request id with the wait's first failure.
    expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock' }] })
    expect(posts(front).slice(1).every((b) => b.requestId === id && b.answerOn === undefined)).toBe(true)
  })

  test('an answer on the stream for no commit of this page is passed over: the stream stays, the parked commit still gets its grant there', async () => {
    const { page, other, front } = await setUp()
    const held = await hold(other)
    const waiting = page.commit(take.checks, take.ops, { waitChange: 10_000, keepParked: true })
    await expect.poll(() => posts(front).length).toBe(1)
    front.say(`event: answer\ndata: ${JSON.stringify({ requestId: 'not-mine', result: { ok: true, revision: 1, entries: [] } })}\n\n`)
    await new Promise((r) => setTimeout(r, 50))
    await other.commit([{ key: 'lock', revision: held }], [{ type: 'delete', key: 'lock' }])
    expect(await waiting).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'page' }] })
    expect(posts(front).length).toBe(1)
    expect(front.seen.filter((s) => s.path.includes('/watch')).length).toBe(1)
  })

  test('an answer on the stream that does not read as an outcome: the commit asks for it again at once, with its request id', async () => {
    // Without the re-ask the commit would wait for its wait (3 s) and the call's timeout (10 s) before asking.
    const { page, other, front } = await setUp()
    await hold(other)
    const waiting = page.commit(take.checks, take.ops, { waitChange: 3_000, keepParked: true })
    await expect.poll(() => posts(front).length).toBe(1)
    const id = posts(front)[0]!.requestId
    front.say(`event: answer\ndata: ${JSON.stringify({ requestId: id, result: { ok: 'perhaps' } })}\n\n`)
    await expect.poll(() => posts(front).length, { timeout: 3_000 }).toBe(2)
    expect(posts(front)[1]).toMatchObject({ requestId: id })
    expect(posts(front)[1]!.answerOn).toBeUndefined()
    // Asked again, the node answers the request id when its wait ends: the wait's first failure.
    expect(await waiting).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'other' } }] })
  })

  test('a watch stream the node refuses: the commit goes plain, and its answer comes back', async () => {
    const { page, other, front } = await setUp((s) => (s.path.includes('/watch') ? { status: 403, json: { error: { code: 'PERMISSION_DENIED', message: 'no watching here' } } } : undefined))
    await hold(other)
    const r = await page.commit(take.checks, take.ops, { waitChange: 5_000, keepParked: true })
    expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'other' } }] })
    expect(posts(front).map((b) => b.answerOn)).toEqual([undefined])
  })

  test('an error told on the stream is thrown', async () => {
    const { page, other, front } = await setUp()
    const held = await hold(other)
    await other.commit([], [{ type: 'set', key: 'n', value: 'text' }])
    const waiting = page.commit(take.checks, [{ type: 'add', key: 'n', delta: 1 }], { waitChange: 10_000, keepParked: true })
    await expect.poll(() => posts(front).length).toBe(1)
    // The grant's add meets a value that is not a number: refused at the node, told on the stream.
    await other.commit([{ key: 'lock', revision: held }], [{ type: 'delete', key: 'lock' }])
    const r = await waiting.catch((e: unknown) => e)
    expect(r).toMatchObject({ code: 'INVALID_ARGUMENT', message: 'add "n": the key holds "text", not a number' })
    // Told, not asked for again.
    expect(posts(front).length).toBe(1)
  })

  test('a node that refuses answerOn (older): sent again plain, and the adapter waits no more', async () => {
    const { page, other, front } = await setUp((s) => (s.body?.answerOn !== undefined ? { status: 400, json: { error: { code: 'INVALID_ARGUMENT', message: 'body: Unrecognized key: "answerOn"' } } } : undefined))
    await hold(other)
    const r = await page.commit(take.checks, take.ops, { waitChange: 5_000, keepParked: true })
    expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock' }] })
    expect(posts(front).map((b) => b.answerOn === undefined && b.waitChange === undefined)).toEqual([false, true])
    expect(page.capabilities?.commitOnChange ?? false).toBe(false)
  })

  test('a node whose store takes no other ways: the commit is tried once plain, and orElse never sent again', async () => {
    const { page, other, front } = await setUp((s) => (s.body?.orElse !== undefined ? { status: 400, json: { error: { code: 'INVALID_ARGUMENT', message: 'orElse: this node\'s store (etcd) takes no other ways' } } } : undefined))
    await hold(other)
    const orElse = [{ checks: [{ key: 'spare', revision: null }], ops: [{ type: 'set' as const, key: 'spare', value: 1 }] }]
    const r = await page.commit(take.checks, take.ops, { waitChange: 5_000, keepParked: true, orElse })
    expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock' }] })
    expect(page.capabilities?.orElse ?? false).toBe(false)
    expect(page.capabilities?.commitOnChange).toBe(true)
  })

  test('a node that answers the POST with nonsense: INTERNAL, naming it', async () => {
    const { page, other } = await setUp((s) => (s.body?.answerOn !== undefined ? { status: 200, json: null } : undefined))
    await hold(other)
    const err = await page.commit(take.checks, take.ops, { waitChange: 5_000, keepParked: true }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'INTERNAL', message: expect.stringContaining('sent an invalid commit response') })
  })

  test.each([
    ['a refusal of something else', 400, 'INVALID_ARGUMENT', 'checks[0]: wrong'],
    ['another code whose words name the fields', 409, 'CONFLICT', 'answerOn orElse: busy'],
  ])('%s is thrown as it came, and nothing dropped', async (_, status, code, message) => {
    const { page, other, front } = await setUp((s) => (s.body?.answerOn !== undefined ? { status, json: { error: { code, message } } } : undefined))
    await hold(other)
    const orElse = [{ checks: [{ key: 'spare', revision: null }], ops: [] }]
    const err = await page.commit(take.checks, take.ops, { waitChange: 5_000, keepParked: true, orElse }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code, message })
    expect(posts(front).length).toBe(1)
    expect(page.capabilities).toMatchObject({ commitOnChange: true, keepParked: true, orElse: true })
  })
})
