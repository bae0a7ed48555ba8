/**
 * How the HTTP client sends its calls, seen by a fake node in front of a
 * real one (./front-node; the real node in this process, over real HTTP):
 * a node that answers 502, 503 or 504 is passed over for the next address
 * and any other failure is the caller's; the last error is the cause of
 * UNAVAILABLE; `transport` picks frames or plain fetch; a watch's requests
 * carry the token; every revision the client saw (a get, a list, a failed check, a
 * watch event) goes with its next commit as `seen`.
 */
import { describe, expect, test } from 'vitest'
import { isZarisError, type Adapter, type WatchEvent } from 'zaris'
import { fetchTransport, httpAdapter, type HttpAdapterOptions, type Transport } from 'zaris/http'
import { frontNode, nodeForFile, type Answer, type FrontNode } from './front-node'

const TOKEN = 'a-long-enough-token'
const node = nodeForFile(TOKEN)

async function front(answer?: Parameters<typeof frontNode>[1]): Promise<FrontNode> {
  const f = await frontNode(node.port, answer)
  node.later(() => f.close())
  return f
}

let n = 0
function adapter(endpoints: string[], options: Partial<HttpAdapterOptions> = {}): Adapter {
  const a = httpAdapter({ endpoints, namespace: `calls-${++n}`, token: TOKEN, retries: 0, ...options })
  node.later(() => a.close())
  return a
}

const failing = (status: number): Answer => ({ status, json: { error: { code: 'UNAVAILABLE', message: `down (${status})` } } })
const commits = (f: FrontNode) => f.seen.filter((s) => s.path.endsWith('/commit'))

describe('a node that cannot serve now is passed over; any other failure is the caller\'s (fakes in front of a real node)', () => {
  test.each([502, 503, 504])('%i: the next address answers', async (status) => {
    const [down, up] = [await front(() => failing(status)), await front()]
    const a = adapter([down.url, up.url])
    expect(await a.commit([], [{ type: 'set', key: 'k', value: status }])).toMatchObject({ ok: true })
    expect([commits(down).length, commits(up).length]).toEqual([1, 1])
    // Requests stay with the node that answered.
    await a.get('k')
    expect(down.seen.length).toBe(1)
  })

  test.each([500, 409])('%i: thrown as it came, the next address not asked', async (status) => {
    const [bad, up] = [await front(() => ({ status, json: { error: { code: 'INTERNAL', message: `broken (${status})` } } })), await front()]
    const a = adapter([bad.url, up.url])
    const err = await a.commit([], [{ type: 'set', key: 'k', value: 1 }]).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'INTERNAL', message: `broken (${status})` })
    expect(up.seen.length).toBe(0)
  })

  test.each([
    [401, 'UNAUTHORIZED', 'refused the credentials'],
    [500, 'UNAVAILABLE', 'answered HTTP 500'],
    [418, 'INTERNAL', 'answered HTTP 418; is it a zaris node?'],
  ])('%i with a body that is not a zaris error: %s', async (status, code, words) => {
    const [odd, up] = [await front(() => ({ status, text: 'not json' })), await front()]
    const a = adapter([odd.url, up.url])
    const err = await a.get('k').catch((e: unknown) => e)
    expect(err).toMatchObject({ code })
    expect((err as Error).message).toBe(`${odd.url} ${words}`)
    expect(up.seen.length).toBe(0)
  })

  test('every address down: UNAVAILABLE naming them, the last failure its cause', async () => {
    const [a1, a2] = [await front(() => failing(503)), await front(() => failing(502))]
    const a = adapter([a1.url, a2.url], { retries: 1 })
    const err = await a.get('k').catch((e: unknown) => e)
    expect(isZarisError(err) && err.code).toBe('UNAVAILABLE')
    expect((err as Error).message).toContain(`no zaris node answered get (${a1.url}, ${a2.url})`)
    expect((err as Error).message).toContain('down (502)')
    expect((err as Error).cause).toMatchObject({ message: 'down (502)' })
    // One round and one retry, over both.
    expect([a1.seen.length, a2.seen.length]).toEqual([2, 2])
  })
})

test('a watch that found a node first leads the calls after it there', async () => {
  const [down, up] = [await front(() => failing(503)), await front()]
  const a = adapter([down.url, up.url], { transport: 'fetch' })
  const stop = await a.watch('x', { event() {}, error() {} })
  try {
    const asked = down.seen.length
    expect(await a.commit([], [{ type: 'set', key: 'x', value: 1 }])).toMatchObject({ ok: true })
    expect(down.seen.length).toBe(asked)
  } finally {
    stop()
  }
})

describe('a node that never answers', () => {
  test.each(['node', 'fetch'] as const)('%s: each attempt ends at the timeout, and the call fails UNAVAILABLE saying so', async (transport) => {
    const f = await front(() => 'hang')
    const a = adapter([f.url], { transport, timeout: 150 })
    const t0 = performance.now()
    const err = await a.get('k').catch((e: unknown) => e)
    expect(isZarisError(err) && err.code).toBe('UNAVAILABLE')
    expect((err as Error).message).toContain('no answer within 150 ms')
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140)
  })

  test('however many retries, at most 3 attempts that run out their timeout', async () => {
    const f = await front(() => 'hang')
    const a = adapter([f.url], { timeout: 100, retries: 6 })
    const err = await a.get('k').catch((e: unknown) => e)
    expect(isZarisError(err) && err.code).toBe('UNAVAILABLE')
    // (Two or three: the budget, 3 timeouts, is looked at before each round, after a jittered pause.)
    expect(f.seen.length).toBeGreaterThanOrEqual(2)
    expect(f.seen.length).toBeLessThanOrEqual(3)
  })

  test('a commit that may wait at the node is given its wait on top of the timeout', async () => {
    const f = await front(() => 'hang')
    const a = adapter([f.url], { timeout: 100 })
    const err = await a.commit([{ key: 'k', revision: 1 }], [], { waitChange: 300 }).catch((e: unknown) => e)
    expect((err as Error).message).toContain('no answer within 400 ms')
  })

  test.each(['node', 'fetch'] as const)('%s: a close ends a call in flight with CLOSED', async (transport) => {
    const f = await front(() => 'hang')
    // A timeout of a minute: the call ends by the close, not by the timeout.
    const a = adapter([f.url], { transport, timeout: 60_000 })
    const call = a.get('k').catch((e: unknown) => e)
    await expect.poll(() => f.seen.length).toBe(1)
    await a.close()
    expect(await Promise.race([call, new Promise((r) => setTimeout(() => r('still waiting'), 5_000))])).toMatchObject({ code: 'CLOSED' })
  })

  test.each(['node', 'fetch'] as const)('%s: a node that refuses connections is not taken for one that did not answer', async (transport) => {
    const f = await front()
    await f.close()
    const a = adapter([f.url], { transport })
    const err = await a.get('k').catch((e: unknown) => e)
    expect(isZarisError(err) && err.code).toBe('UNAVAILABLE')
    expect((err as Error).message).not.toContain('no answer within')
  })
})

test('an adapter that made no call closes, and refuses calls after', async () => {
  const a = adapter(['http://127.0.0.1:1'])
  await a.close()
  await a.close()
  expect(await a.get('k').catch((e: unknown) => e)).toMatchObject({ code: 'CLOSED' })
})

describe('transport', () => {
  test('one of the caller\'s own carries every call, and is closed with the adapter', async () => {
    const f = await front()
    const inner = fetchTransport()
    const sent: string[] = []
    let closed = 0
    const own: Transport = { name: 'own', send: (r) => (sent.push(r.url), inner.send(r)), close: () => void closed++ }
    const a = adapter([f.url], { transport: own })
    expect(a.name).toBe('http')
    expect(await a.commit([], [{ type: 'set', key: 'k', value: 1 }])).toMatchObject({ ok: true })
    expect(await a.get('k')).toMatchObject({ value: 1 })
    expect(sent.map((u) => u.split('/').at(-1))).toEqual(['commit', 'get'])
    await a.close()
    expect(closed).toBe(1)
  })

  test.each([
    ['fetch', 0],
    ['node', 1],
    ['auto', 1],
    ['not given', 1],
  ] as const)('%s: asks for frames %i time(s), and works over plain HTTP', async (transport, upgrades) => {
    const f = await front()
    const a = adapter([f.url], transport === 'not given' ? {} : { transport })
    expect(await a.commit([], [{ type: 'set', key: 'k', value: 1 }])).toMatchObject({ ok: true })
    expect(await a.get('k')).toMatchObject({ value: 1 })
    expect(f.upgrades).toBe(upgrades)
  })
})

test.each(['node', 'fetch'] as const)('%s: every call asks for JSON, its token with it', async (transport) => {
  const f = await front()
  const a = adapter([f.url], { transport })
  await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
  await a.get('k')
  await a.list('')
  expect(f.seen.length).toBe(3)
  for (const s of f.seen) expect(s.headers).toMatchObject({ accept: 'application/json', authorization: `Bearer ${TOKEN}` })
})

test.each(['node', 'fetch'] as const)('%s: a node\'s refusal keeps its code and words (frames carry it parsed)', async (transport) => {
  // Straight to the node: over `node`, the answer comes in a frame.
  const a = adapter([node.url], { transport })
  await a.commit([], [{ type: 'set', key: 'n', value: 'text' }])
  const err = await a.commit([], [{ type: 'add', key: 'n', delta: 1 }]).catch((e: unknown) => e)
  expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', message: 'add "n": the key holds "text", not a number' })
})

test('a commit that may wait longer than the timeout is still tried again after a node that could not serve', async () => {
  // Its budget of attempts counts its wait: 3 x (timeout + wait), not 3 x timeout (here less than one wait).
  let first = true
  const f = await front((s) => (s.path.endsWith('/commit') && first ? ((first = false), failing(503)) : undefined))
  const a = adapter([f.url], { timeout: 200, retries: 2 })
  const r = await a.commit([{ key: 'free', revision: null }], [{ type: 'set', key: 'free', value: 1 }], { waitChange: 1_000 })
  expect(r).toMatchObject({ ok: true })
  expect(commits(f).length).toBe(2)
})

test('a watch from an older revision, with the stream open, gets what it missed: its GET and POSTs carry the token', async () => {
  const f = await front()
  const a = adapter([f.url], { transport: 'fetch' })
  // The stream opens now: a watch from an older revision then reads what it missed from the history.
  const stopOther = await a.watch('other', { event() {}, error() {} })
  const first = await a.commit([], [{ type: 'set', key: 'w', value: 1 }])
  if (!first.ok) throw new Error('not written')
  await a.commit([], [{ type: 'set', key: 'w', value: 2 }])
  const events: WatchEvent[] = []
  const errors: unknown[] = []
  const stop = await a.watch('w', { event: (e) => void events.push(e), error: (e) => void errors.push(e) }, first.revision - 1)
  try {
    await expect.poll(() => events.map((e) => e.type === 'put' && e.value)).toEqual([1, 2])
  } finally {
    stop()
    stopOther()
  }
  expect(errors).toEqual([])
  expect(f.seen.filter((s) => s.method === 'GET').length).toBe(1)
})

test('a watch whose missed history is longer than a page reads the rest with GETs that carry the token', async () => {
  const f = await front()
  const a = adapter([f.url], { transport: 'fetch' })
  // The stream open first: a later watch's missed history then comes with its filter answer and, past a page, by GET.
  const stopOther = await a.watch('other', { event() {}, error() {} })
  const big = 'x'.repeat(60_000)
  const first = await a.commit([], [{ type: 'set', key: 'big', value: `${big}0` }])
  if (!first.ok) throw new Error('not written')
  // ~1.2 MB of history after it: more than one page (the node's pages are ~1 MB).
  for (let i = 1; i < 20; i++) await a.commit([], [{ type: 'set', key: 'big', value: `${big}${i}` }])
  const seen: string[] = []
  const stop = await a.watch('big', { event: (e) => void seen.push(e.type === 'put' ? String(e.value).slice(60_000) : e.type), error() {} }, first.revision - 1)
  try {
    await expect.poll(() => seen.length).toBe(20)
  } finally {
    stop()
    stopOther()
  }
  expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => String(i)))
  const gets = f.seen.filter((s) => s.method === 'GET' && s.path.includes('/events'))
  expect(gets.length).toBeGreaterThan(0)
  for (const g of gets) {
    expect(g.headers.authorization).toBe(`Bearer ${TOKEN}`)
    expect(g.body).toBeUndefined()
    // After a revision, in the life (epoch) of the node the stream is on: a node restarted since must not answer another history.
    const query = new URL(g.path, f.url).searchParams
    expect([query.get('prefix'), Number(query.get('after')) >= first.revision - 1, query.get('epoch')?.length]).toEqual(['big', true, expect.any(Number)])
  }
})

describe('every revision the client saw goes with its next commit as `seen`', () => {
  async function seenAfter(saw: (a: Adapter, writer: Adapter) => Promise<unknown>): Promise<{ sent: unknown; revision: number }> {
    const f = await front()
    const a = adapter([f.url])
    const ns = `calls-${n}`
    const writer = httpAdapter({ endpoints: [node.url], namespace: ns, token: TOKEN })
    node.later(() => writer.close())
    for (let i = 0; i < 5; i++) await writer.commit([], [{ type: 'set', key: `filler${i}`, value: i }])
    const w = await writer.commit([], [{ type: 'set', key: 'k', value: 'v', owner: 'o' }])
    if (!w.ok) throw new Error('not written')
    await saw(a, writer)
    await a.commit([], [{ type: 'set', key: 'mine', value: 1 }])
    return { sent: commits(f).at(-1)!.body!.seen, revision: w.revision }
  }

  test('from a get', async () => {
    const { sent, revision } = await seenAfter((a) => a.get('k'))
    expect(sent).toBe(revision)
  })

  test('from a list', async () => {
    const { sent, revision } = await seenAfter((a) => a.list('k'))
    expect(sent).toBe(revision)
  })

  test('from a failed check', async () => {
    const { sent, revision } = await seenAfter((a) => a.commit([{ key: 'k', revision: null }], []))
    expect(sent).toBe(revision)
  })

  test('the highest: a later read of an older entry does not lower it', async () => {
    const { sent, revision } = await seenAfter(async (a) => {
      await a.get('k')
      await a.get('filler0')
    })
    expect(sent).toBe(revision)
  })

  test('nothing seen: no `seen` sent', async () => {
    const { sent } = await seenAfter(async () => {})
    expect(sent).toBeUndefined()
  })
})
