/**
 * The protocol's hand-written checks against the zod schemas they stand in
 * for: on thousands of generated inputs, valid and wrong in one or several
 * ways, a hand-written check that accepts must be matched by the schema
 * accepting the same value; and on the shapes clients really send, it must
 * accept (or it would not be the fast path).
 */
import { expect, test } from 'vitest'
import type { z } from 'zod'
import { commitRequest, commitResponse, fastPathOf, getRequest, getResponse, listRequest } from '../../src/server/protocol'
import { prng } from '../faults/scale'

const r = prng(7_001)
const int = (n: number) => Math.floor(r() * n)
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!

const nested = (depth: number): unknown => (depth === 0 ? 1 : { a: nested(depth - 1) })
const values: unknown[] = [1, 'x', true, null, { n: 1 }, [1, [2]], { owner: 'o', list: [1, 2, { d: null }] }, nested(31), nested(40), nested(70), Number.NaN, Infinity, undefined, () => 1, new Date(0), JSON.parse('{"__proto__":{"x":1}}'), Object.create(null), [1, , 3]]
// Keys by the one key rule: UTF-16 code units (512 emoji are 1024), no lone surrogate.
const keys: unknown[] = ['k', 'lock:a', 'x'.repeat(1024), 'x'.repeat(1025), '\u{1F600}'.repeat(512), '\u{1F600}'.repeat(512) + 'x', 'lock:\uD800x', '\uDC00', '', 5, null, undefined, ['k']]
const revisions: unknown[] = [0, 1, 42, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, -1, 1.5, -0, '3', null, undefined, Infinity]
const ttls: unknown[] = [1, 30_000, 0.5, 2_147_483_647, 2_147_483_648, 0, -1, '100', Infinity, undefined]

function entry(): Record<string, unknown> {
  const e: Record<string, unknown> = { key: pick(keys), value: pick(values), revision: pick(revisions), created: pick(revisions) }
  if (r() < 0.5) e.owner = pick(['me', '', 'o'.repeat(257), 5])
  if (r() < 0.5) e.ttl = pick([0, 100, -1, Infinity, '5'])
  return e
}

function validEntry(): Record<string, unknown> {
  const e: Record<string, unknown> = { key: 'lock:a', value: { n: int(9) }, revision: 1 + int(100), created: 1 }
  if (r() < 0.5) e.owner = 'abc'
  if (r() < 0.5) e.ttl = int(30_000)
  return e
}

/** Wrong in some way: a key dropped, added, retyped, or __proto__ / constructor smuggled in. */
function mutate(o: unknown): unknown {
  if (typeof o !== 'object' || o === null) return pick([undefined, null, 'x', 1, []])
  const copy: any = Array.isArray(o) ? [...o] : { ...o }
  const ks = Object.keys(copy)
  switch (int(6)) {
    case 0:
      if (ks.length) delete copy[pick(ks)]
      break
    case 1:
      copy[pick(['extra', 'constructor', 'toString', 'hasOwnProperty'])] = 1
      break
    case 2:
      if (ks.length) copy[pick(ks)] = pick([...values, ...keys, ...revisions])
      break
    case 3:
      return JSON.parse(JSON.stringify(copy).replace(/^\{(.)/, (_, next: string) => `{"__proto__":{"a":1}${next === '}' ? '' : ','}${next}`))
    case 4:
      if (ks.length) copy[pick(ks)] = mutate(copy[pick(ks)])
      break
    default:
      return Object.assign(Object.create(null), copy)
  }
  return copy
}

function commitReq(valid: boolean): unknown {
  const check = () => (valid ? (r() < 0.5 ? { key: 'lock:a', revision: r() < 0.5 ? null : int(9) } : { key: 'k', created: int(9) }) : { key: pick(keys), revision: pick(revisions), ...(r() < 0.3 ? { created: pick(revisions) } : {}) })
  const op = () => {
    if (valid) {
      const x = r()
      return x < 0.6 ? { type: 'set', key: 'lock:a', value: { n: 1 }, ...(r() < 0.5 ? { ttl: 30_000, owner: 'me' } : {}), ...(r() < 0.3 ? { fresh: true } : {}) } : x < 0.8 ? { type: 'delete', key: 'lock:a' } : { type: 'add', key: 'jobs:done', delta: pick([1, -5, 0, Number.MAX_SAFE_INTEGER]) }
    }
    return pick([
      { type: 'set', key: pick(keys), value: pick(values), ttl: pick(ttls), owner: pick(['me', '', 5, 'o\uD800', 'o'.repeat(257)]), fresh: pick([true, 'yes']) },
      { type: pick(['delete', 'merge', 5]), key: pick(keys) },
      { type: 'add', key: pick(keys), delta: pick([1, 1.5, '1', Number.MAX_SAFE_INTEGER + 2, null, -3]) },
    ])
  }
  const body: Record<string, unknown> = { checks: Array.from({ length: int(3) }, check), ops: Array.from({ length: 1 + int(3) }, op) }
  if (r() < 0.7) body.requestId = valid ? `abcdef01-${int(1e6)}` : pick(['short', 'has space!!', 5, 'x'.repeat(129), 'ok_ok_ok_ok'])
  if (r() < 0.5) body.seen = valid ? int(1e6) : pick(revisions)
  // Other ways (a permit waiter's take): each a commit's checks and ops; up to 32.
  if (r() < 0.3) {
    const way = () => ({ checks: Array.from({ length: 1 + int(2) }, check), ops: Array.from({ length: 1 + int(2) }, op) })
    body.orElse = valid ? Array.from({ length: int(4) }, way) : pick([Array.from({ length: 33 }, way), [way(), { checks: [] }], [{ ...way(), extra: 1 }], 'x', [null], [way()]])
  }
  return valid ? body : r() < 0.5 ? mutate(body) : body
}

function commitRes(valid: boolean): unknown {
  const body = r() < 0.6 ? { ok: true, revision: valid ? 5 : pick(revisions), entries: Array.from({ length: int(3) }, valid ? validEntry : entry), deleted: valid ? ['k'] : [pick(keys)] } : { ok: false, failed: Array.from({ length: 1 + int(2) }, () => ({ key: valid ? 'k' : pick(keys), entry: r() < 0.3 ? null : valid ? validEntry() : entry() })) }
  return valid ? body : r() < 0.5 ? mutate(body) : body
}

function listReq(valid: boolean): unknown {
  if (valid) {
    const body: Record<string, unknown> = { prefix: r() < 0.5 ? '' : 'lock:' }
    if (r() < 0.5) body.after = 'lock:a'
    if (r() < 0.5) body.limit = 1 + int(2_000)
    return body
  }
  const body: Record<string, unknown> = { prefix: pick([...keys, 'x'.repeat(1024)]) }
  if (r() < 0.5) body.after = pick([...keys, '', 5])
  if (r() < 0.5) body.limit = pick([0, -1, 1.5, '10', null, 2 ** 53, ...revisions])
  return mutate(body)
}

const cases: Array<[string, z.ZodType, (valid: boolean) => unknown]> = [
  ['commit request', commitRequest, commitReq],
  ['commit response', commitResponse, commitRes],
  ['get request', getRequest, (v) => (v ? { key: 'lock:a' } : mutate({ key: pick(keys) }))],
  ['list request', listRequest, listReq],
  ['get response', getResponse, (v) => (v ? { entry: r() < 0.2 ? null : validEntry() } : mutate({ entry: r() < 0.2 ? null : entry() }))],
]

for (const [name, schema, make] of cases) {
  test(`${name}: the hand-written check never accepts what the schema refuses, and returns what the schema returns`, () => {
    const fast = fastPathOf(schema)!
    expect(fast).toBeTypeOf('function')
    let fastAccepted = 0
    let schemaAccepted = 0
    for (let i = 0; i < 4_000; i++) {
      const input = make(i % 4 === 0)
      // As on the wire: what parseWith sees came out of JSON.parse, except the odd non-JSON value that must be refused.
      const viaJson = i % 8 === 1 ? input : safeRoundTrip(input)
      const f = fast(viaJson)
      const z = schema.safeParse(viaJson)
      if (z.success) schemaAccepted++
      if (f === undefined) continue
      fastAccepted++
      expect(z.success, `accepted by the hand-written check only: ${JSON.stringify(viaJson)?.slice(0, 300)}`).toBe(true)
      // Off the wire (JSON) the very same value; a value JSON cannot carry (an array with a named property) only the same data.
      if (viaJson === input && i % 8 === 1) expect(JSON.stringify(f)).toBe(JSON.stringify(z.data))
      else expect(f, JSON.stringify(viaJson)).toEqual(z.data)
    }
    expect(fastAccepted).toBeGreaterThan(500)
    console.log(`[figure] ${name}: schema accepted ${schemaAccepted}, hand-written check ${fastAccepted} of 4000`)
  })

  test(`${name}: the shapes clients send take the fast path`, () => {
    const fast = fastPathOf(schema)!
    for (let i = 0; i < 200; i++) {
      const input = JSON.parse(JSON.stringify(make(true)))
      expect(fast(input), JSON.stringify(input)).toBeDefined()
    }
  })
}

function safeRoundTrip(v: unknown): unknown {
  try {
    const text = JSON.stringify(v)
    return text === undefined ? v : JSON.parse(text)
  } catch {
    return v
  }
}
