/**
 * The client's hand-written answer checks (src/adapters/http/answers.ts)
 * against the zod schemas of the protocol, which the node's answers are
 * written to: on thousands of generated answers, valid and wrong in one or
 * several ways, each check accepts exactly what its schema accepts and
 * builds what the schema's output becomes in the core's shapes; what it
 * refuses, it refuses with a BadAnswer naming a field. Then a node that
 * answers nonsense, for real over HTTP: the client's calls reject with an
 * INTERNAL ZarisError naming the node and the operation.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, test } from 'vitest'
import type { z } from 'zod'
import { isZarisError } from '../../src/core/contract/errors'
import { BadAnswer, readCommit, readError, readEvent, readEvents, readFilter, readGet, readList, readProgress, readReady } from '../../src/adapters/http/answers'
import { httpAdapter } from '../../src/adapters/http/client'
import {
  commitResponse,
  errorBody,
  eventsResponse,
  fromCommitResponse,
  getResponse,
  listResponse,
  readyEvent,
  progressEvent,
  filterResponse,
  stripEntry,
  stripEvent,
  watchEvent,
} from '../../src/server/protocol'
import { prng } from '../faults/scale'

const r = prng(16_016)
const int = (n: number) => Math.floor(r() * n)
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!

const nested = (depth: number): unknown => (depth === 0 ? 1 : { a: nested(depth - 1) })
const values: unknown[] = [1, 'x', true, null, { n: 1 }, [1, [2]], { owner: 'o', list: [1, 2, { d: null }] }, nested(40), nested(70), undefined, JSON.parse('{"__proto__":{"x":1}}')]
const keys: unknown[] = ['k', 'lock:a', 'x'.repeat(1024), 'x'.repeat(1025), '\u{1F600}'.repeat(512), 'lock:\uD800x', '', 5, null, undefined, ['k']]
const revisions: unknown[] = [0, 1, 42, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, -1, 1.5, '3', null, undefined]
const ttls: unknown[] = [1, 30_000, 0.5, 2_147_483_647, 2_147_483_648, 0, -1, '100', undefined]

function entry(valid: boolean): Record<string, unknown> {
  if (valid) {
    const e: Record<string, unknown> = { key: 'lock:a', value: { n: int(9) }, revision: 1 + int(100), created: 1 }
    if (r() < 0.5) e.owner = 'abc'
    if (r() < 0.5) e.ttl = int(30_000)
    return e
  }
  const e: Record<string, unknown> = { key: pick(keys), value: pick(values), revision: pick(revisions), created: pick(revisions) }
  if (r() < 0.5) e.owner = pick(['me', '', 'o'.repeat(257), 5])
  if (r() < 0.5) e.ttl = pick([0, 100, -1, '5', 2.5])
  return e
}

function event(valid: boolean): Record<string, unknown> {
  const e: Record<string, unknown> = { type: valid ? pick(['put', 'delete', 'expire']) : pick(['put', 'delete', 'set', 5]), key: valid ? 'k' : pick(keys), revision: valid ? 1 + int(99) : pick(revisions) }
  if (r() < 0.5) e.value = valid ? { n: 1 } : pick(values)
  if (r() < 0.4) e.created = valid ? 1 : pick(revisions)
  if (r() < 0.4) e.owner = valid ? 'me' : pick(['me', '', 5])
  if (r() < 0.4) e.ttl = valid ? 1_000 : pick(ttls)
  return e
}

/** Wrong in some way: a key dropped, added or retyped, __proto__ smuggled in, or a member made wrong in turn. */
function mutate(o: unknown): unknown {
  if (typeof o !== 'object' || o === null) return pick([undefined, null, 'x', 1, []])
  const copy: any = Array.isArray(o) ? [...o] : { ...o }
  const ks = Object.keys(copy)
  switch (int(5)) {
    case 0:
      if (ks.length) delete copy[pick(ks)]
      break
    case 1:
      copy[pick(['extra', 'constructor', 'toString', '__proto__'])] = 1
      break
    case 2:
      if (ks.length) copy[pick(ks)] = pick([...values, ...keys, ...revisions])
      break
    case 3:
      return JSON.parse(JSON.stringify(copy).replace(/^\{(.)/, (_, next: string) => `{"__proto__":{"a":1}${next === '}' ? '' : ','}${next}`))
    default:
      if (ks.length) copy[pick(ks)] = mutate(copy[pick(ks)])
  }
  return copy
}

const maybeWrong = (valid: boolean, body: unknown) => (valid ? body : r() < 0.5 ? mutate(body) : body)
const list = <T>(n: number, f: () => T) => Array.from({ length: n }, f)

type Case = [name: string, schema: z.ZodType, read: (json: unknown) => unknown, out: (data: any) => unknown, make: (valid: boolean) => unknown]
const cases: Case[] = [
  ['get', getResponse, readGet, (d) => (d.entry === null ? undefined : stripEntry(d.entry)), (v) => maybeWrong(v, { entry: r() < 0.2 ? null : entry(v) })],
  ['list', listResponse, readList, (d) => ({ entries: d.entries.map(stripEntry), more: d.more }), (v) => maybeWrong(v, { entries: list(int(3), () => entry(v)), more: v ? r() < 0.5 : pick([true, 'no', null]) })],
  [
    'commit',
    commitResponse,
    readCommit,
    fromCommitResponse,
    (v) =>
      maybeWrong(
        v,
        r() < 0.6
          ? { ok: v ? true : pick([true, 'true', 1]), revision: v ? 5 : pick(revisions), entries: list(int(3), () => entry(v)), deleted: v ? ['k'] : [pick(keys)] }
          : { ok: false, failed: list(1 + int(2), () => ({ key: v ? 'k' : pick(keys), entry: r() < 0.3 ? null : entry(v) })) },
      ),
  ],
  ['watch event', watchEvent, readEvent, stripEvent, (v) => maybeWrong(v, event(v))],
  ['events', eventsResponse, readEvents, (d) => ({ events: d.events.map(stripEvent), through: d.through, more: d.more }), (v) => maybeWrong(v, { events: list(int(3), () => event(v)), through: v ? 9 : pick(revisions), more: v ? false : pick([false, 0]) })],
  [
    'ready',
    readyEvent,
    readReady,
    (d) => Object.fromEntries(Object.entries(d).filter(([, x]) => x !== undefined)),
    (v) => maybeWrong(v, { heartbeat: v ? 15_000 : pick([15_000, 0, -1, 1.5, '5']), ...(r() < 0.5 ? { revision: v ? 3 : pick(revisions) } : {}), ...(r() < 0.5 ? { epoch: v ? 'e_1' : pick(['e_1', '', 'x'.repeat(65), 'a b', 7]) } : {}), ...(r() < 0.5 ? { stream: v ? 'a-1_b' : pick(['s', '', 'x'.repeat(65), 'a/b', 7]) } : {}) }),
  ],
  ['progress', progressEvent, readProgress, (d) => d.revision, (v) => maybeWrong(v, { revision: v ? 12 : pick(revisions) })],
  [
    'filter',
    filterResponse,
    readFilter,
    (d) => (d.history ? { ...d, history: { ...d.history, events: d.history.events.map(stripEvent) } } : d),
    (v) =>
      maybeWrong(v, {
        revision: v ? 7 : pick(revisions),
        version: v ? 2 : pick([2, -1, 1.5, '2']),
        ...(r() < 0.5 ? { history: { after: v ? 3 : pick(revisions), events: list(int(3), () => event(v)), through: 7, more: v ? false : pick([false, 'no']) } } : {}),
      }),
  ],
  ['error', errorBody, readError, (d) => d.error, (v) => maybeWrong(v, { error: { code: v ? 'FENCED' : pick(['FENCED', '', 'x'.repeat(65), 5]), message: v ? 'no' : pick(['no', 'm'.repeat(4_097), null]) } })],
]

for (const [name, schema, read, out, make] of cases) {
  test(`${name} answer: the hand-written check accepts what the schema accepts, and builds the same`, () => {
    let accepted = 0
    for (let i = 0; i < 3_000; i++) {
      const made = make(i % 3 === 0)
      // Answers come out of JSON.parse; a value JSON cannot carry never reaches a check.
      const json = made === undefined ? undefined : JSON.parse(JSON.stringify(made) ?? 'null')
      const z = schema.safeParse(json)
      let mine: { ok: true; data: unknown } | { ok: false; error: unknown }
      try {
        mine = { ok: true, data: read(json) }
      } catch (error) {
        mine = { ok: false, error }
      }
      if (name === 'error' && mine.ok) mine = mine.data === undefined ? { ok: false, error: new BadAnswer('none') } : mine
      expect(mine.ok, `${JSON.stringify(json)?.slice(0, 300)}: schema ${z.success ? 'accepts' : 'refuses'}`).toBe(z.success)
      if (mine.ok && z.success) {
        accepted++
        expect(mine.data).toEqual(out(z.data))
      } else if (!mine.ok) {
        expect(mine.error).toBeInstanceOf(BadAnswer)
        if (name !== 'error') expect((mine.error as Error).message).toMatch(/^[\w.]+: /)
      }
    }
    expect(accepted).toBeGreaterThan(800)
  })
}

let server: Server
let endpoint: string
/** What the fake node answers each operation: fixed nonsense, so the client's checks are what is tried. */
const answers: Record<string, string> = {
  get: '{"entry":{"key":"k","value":1,"revision":-4,"created":1}}',
  list: '{"entries":[],"more":"perhaps"}',
  commit: 'not json at all',
}

beforeAll(async () => {
  // A fake node (the test's subject is the client facing a node that answers nonsense; a real node never does).
  server = createServer((req, res) => {
    req.resume()
    const op = req.url!.split('?')[0]!.split('/').pop()!
    res.writeHead(200, { 'content-type': 'application/json' }).end(answers[op] ?? '{}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

test('a fake node that answers nonsense: each call rejects with an INTERNAL ZarisError naming the node, the operation and the field', async () => {
  const adapter = httpAdapter({ endpoints: [endpoint], namespace: 'bad', transport: 'fetch', retries: 0 })
  try {
    const failures = await Promise.all([
      adapter.get('k').catch((e: unknown) => e),
      adapter.list('').catch((e: unknown) => e),
      adapter.commit([], [{ type: 'set', key: 'k', value: 1 }]).catch((e: unknown) => e),
    ])
    for (const e of failures) expect(isZarisError(e, 'INTERNAL'), String(e)).toBe(true)
    const [get, list, commit] = failures.map((e) => (e as Error).message)
    expect(get).toBe(`${endpoint} sent an invalid get response: entry.revision: must be a revision (an integer >= 0)`)
    expect(list).toBe(`${endpoint} sent an invalid list response: more: expected a boolean`)
    expect(commit).toBe(`${endpoint} answered commit with something that is not JSON; is it a zaris node?`)
  } finally {
    await adapter.close()
  }
})
