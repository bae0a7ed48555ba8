/**
 * A seeded fuzzer for the node's HTTP API. `invalidRequests` yields requests
 * that are each wrong in at least one way the node must refuse — bad JSON,
 * deep nesting, bodies over the limit, invalid UTF-8, `__proto__` and
 * `constructor` in the wrong places, NaN and huge numbers, wrong types,
 * unknown fields, bad paths, methods and content types, bad watch queries.
 * The node must answer each with a 4xx (or 429/503 under overload), change
 * nothing, and keep `Object.prototype` clean. `hostileRequests` yields valid
 * requests full of `__proto__`/`constructor` keys, which must be stored and
 * read back as plain data.
 *
 * Requests go as raw HTTP/1.1 bytes over TCP, to a node served in the test's
 * own process (`createHandler` + `listen`, where the prototypes can be
 * inspected) and to a `zaris serve` process (where a crash would show).
 */
import { connect as tcpConnect } from 'node:net'
import { Random } from './scale'

/** One request, as bytes go on the wire. */
export interface FuzzRequest {
  /** What kind of wrong it is, for the report. */
  kind: string
  method: string
  /** Path and query, sent as they are (not normalised). */
  path: string
  headers: Record<string, string>
  body?: Uint8Array
  /** The namespace it names, if any (for the state checks). */
  namespace?: string
}

export const FUZZ_NS = 'fuzz'
const enc = new TextEncoder()
const json = (v: unknown) => enc.encode(JSON.stringify(v))
const JSON_TYPE = { 'content-type': 'application/json' }

/** Bodies the node's limit (64 KiB) refuses, up to this many bytes. */
const MAX_HUGE = 1024 * 1024

type Gen = (r: Random) => FuzzRequest

const OPS = ['get', 'list', 'commit'] as const
const post = (op: string, body: Uint8Array, kind: string, ns = FUZZ_NS, headers: Record<string, string> = JSON_TYPE): FuzzRequest => ({
  kind,
  method: 'POST',
  path: `/v1/${ns}/${op}`,
  headers,
  body,
  namespace: ns,
})

/** A body that would be valid for `op`. */
function validBody(r: Random, op: (typeof OPS)[number]): Record<string, unknown> {
  if (op === 'get') return { key: r.str() }
  if (op === 'list') return { prefix: r.str(4) }
  return { checks: [{ key: 'lock:fuzz', revision: null }], ops: [{ type: 'set', key: r.str(), value: r.str(), ttl: 1000 }] }
}

/** Nested arrays `depth` deep around `inner`. */
const nest = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth)

const BAD_JSON = [
  '',
  '{',
  '}',
  '{"key":',
  '{"key":"a"',
  '{"key":"a"}}',
  '{"key":"a"} x',
  "{'key':'a'}",
  '{key:"a"}',
  '{"key":"a",}',
  '{"key":NaN}',
  '{"key":Infinity}',
  '{"key":-Infinity}',
  '{"key":undefined}',
  '{"key":"a" /* c */}',
  '{"key":"\\x41"}',
  '{"key":"a\u0000"',
  'null',
  'true',
  '"key"',
  '123',
  '[]',
  '[{"key":"a"}]',
  '\ufeff{"key":"a"}x',
  '{"key":"a"}\u0000',
  '{"checks":[],"ops":[],}',
  '{"checks":[,],"ops":[]}',
  '{"checks":[] "ops":[]}',
  '{"ttl":01}',
  '{"ttl":1e}',
  '{"ttl":.5}',
  '{"ttl":+1}',
  '{"ttl":0x10}',
]

const generators: Record<string, Gen> = {
  'bad-json': (r) => post(r.pick(OPS), enc.encode(r.pick(BAD_JSON)), 'bad-json'),
  'deep-nesting': (r) => {
    const depth = r.pick([65, 100, 1_000, 10_000, 30_000])
    const where = r.int(4)
    const body =
      where === 0
        ? nest(depth)
        : where === 1
          ? `{"key":${nest(depth, '"a"')}}`
          : where === 2
            ? `{"checks":[],"ops":[{"type":"set","key":"deep","value":${nest(depth)}}]}`
            : `{"checks":[],"ops":[{"type":"set","key":"deep","value":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}]}`
    return post(where >= 2 ? 'commit' : 'get', enc.encode(body), 'deep-nesting')
  },
  huge: (r) => {
    const size = 64 * 1024 + 1 + r.int(MAX_HUGE - 64 * 1024)
    const op = r.pick(OPS)
    const body = op === 'commit' ? `{"checks":[],"ops":[{"type":"set","key":"huge","value":"${'x'.repeat(size)}"}]}` : `{"key":"${'k'.repeat(size)}"}`
    return post(op, enc.encode(body), 'huge')
  },
  'invalid-utf8': (r) => {
    const bad = r.pick([[0xff], [0xfe, 0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80], [0xe2, 0x82]])
    const op = r.pick(OPS)
    const [before, after] =
      op === 'get' ? ['{"key":"k', '"}'] : op === 'list' ? ['{"prefix":"p', '"}'] : ['{"checks":[],"ops":[{"type":"set","key":"utf8-', '","value":1}]}']
    return post(op, new Uint8Array([...enc.encode(before), ...bad, ...enc.encode(after)]), 'invalid-utf8')
  },
  'proto-keys': (r) => {
    const polluter = r.pick(['__proto__', 'constructor', 'prototype'])
    const payload = polluter === 'constructor' ? '{"prototype":{"polluted":true}}' : '{"polluted":true}'
    const op = r.pick(OPS)
    const valid = JSON.stringify(validBody(r, op))
    // An extra field, at the top, in a check or in an op: every object is strict.
    const where = r.int(3)
    let body: string
    if (where === 0 || op !== 'commit') body = `${valid.slice(0, -1)},"${polluter}":${payload}}`
    else if (where === 1) body = `{"checks":[{"key":"lock:fuzz","revision":null,"${polluter}":${payload}}],"ops":[]}`
    else body = `{"checks":[],"ops":[{"type":"set","key":"k","value":1,"${polluter}":${payload}}]}`
    return post(op, enc.encode(body), 'proto-keys')
  },
  numbers: (r) => {
    // Each wrong for its field: a TTL is a positive number of ms up to 2^31-1; a revision a safe integer >= 0.
    if (r.chance(0.5)) {
      const ttl = r.pick(['NaN', '1e309', '-1e309', '1e400', '-1', '0', '-0', '2147483648', '1e21', '"5"', 'null', 'true', '[]', '{}'])
      return post('commit', enc.encode(`{"checks":[{"key":"lock:fuzz","revision":null}],"ops":[{"type":"set","key":"n","value":1,"ttl":${ttl}}]}`), 'numbers')
    }
    const revision = r.pick(['NaN', '1e309', '-1', '1.5', '9007199254740993', '1e21', '-9007199254740993', '"5"', 'true', '[]', '{}'])
    return post('commit', enc.encode(`{"checks":[{"key":"lock:fuzz","${r.pick(['revision', 'created'])}":${revision}}],"ops":[{"type":"set","key":"n","value":1}]}`), 'numbers')
  },
  'wrong-types': (r) => {
    const wrong = r.pick(['123', 'null', '[]', '{}', 'true', '""'])
    const op = r.pick(OPS)
    const variants: string[] =
      op === 'get'
        ? [`{"key":${wrong}}`, '{}', `{"prefix":"a"}`]
        : op === 'list'
          ? [`{"prefix":${wrong === '""' ? '1' : wrong}}`, '{}', `{"key":"a"}`]
          : [
              // ('[]' is the one right type for both.)
              `{"checks":${wrong === '[]' ? '{}' : wrong},"ops":[]}`,
              `{"checks":[],"ops":${wrong === '[]' ? '"[]"' : wrong}}`,
              `{"checks":[]}`,
              `{"ops":[]}`,
              `{"checks":[],"ops":[{"type":"put","key":"a","value":1}]}`,
              `{"checks":[],"ops":[{"type":"set","key":"a"}]}`,
              `{"checks":[],"ops":[{"type":"set","value":1}]}`,
              `{"checks":[],"ops":[{"type":"delete"}]}`,
              `{"checks":[{"key":"a"}],"ops":[]}`,
              `{"checks":[{"key":"a","revision":1,"created":1}],"ops":[]}`,
              `{"checks":[],"ops":[{"type":"set","key":"a","value":1,"owner":""}]}`,
              `{"checks":[],"ops":[{"type":"set","key":"a","value":1,"fresh":"yes"}]}`,
              `{"checks":[],"ops":[{"type":"set","key":"","value":1}]}`,
              `{"checks":[],"ops":[],"requestId":"short"}`,
              `{"checks":[],"ops":[],"requestId":"has spaces in it"}`,
              `{"checks":[],"ops":[{"type":"set","key":"${'k'.repeat(2_000)}","value":1}]}`,
              `{"checks":[],"ops":[${Array.from({ length: 1_001 }, (_, i) => `{"type":"delete","key":"d${i}"}`).join(',')}]}`,
            ]
    return post(op, enc.encode(r.pick(variants)), 'wrong-types')
  },
  'bad-path': (r) => {
    const path = r.pick([
      '/',
      '/v1',
      '/v1/',
      `/v1/${FUZZ_NS}`,
      `/v1/${FUZZ_NS}/`,
      '/v1//get',
      `/v1/${FUZZ_NS}/put`,
      `/v1/${FUZZ_NS}/get/extra`,
      `/v2/${FUZZ_NS}/get`,
      `/V1/${FUZZ_NS}/get`,
      '/v1/na me/get',
      '/v1/na%20me/get',
      '/v1/%zz/get',
      '/v1/%00/get',
      '/v1/..%2f..%2fetc/get',
      '/v1/../../etc/passwd',
      `/v1/${'n'.repeat(129)}/get`,
      '/v1/__proto__%2f/get',
      '/v1/ns%2Fx/get',
      '/healthz/x',
      '/metricsx',
      '//v1/fuzz/get',
      `/v1/${FUZZ_NS}/commit/..`,
      '/v1/%E2%82/get',
      '*',
    ])
    return { kind: 'bad-path', method: 'POST', path, headers: JSON_TYPE, body: json(validBody(r, 'get')) }
  },
  'bad-method': (r) => {
    const op = r.pick([...OPS, 'watch'] as const)
    const method = op === 'watch' ? r.pick(['POST', 'PUT', 'DELETE', 'PATCH']) : r.pick(['GET', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'TRACE', 'FOO', 'OPTIONS', 'post'])
    const body = op === 'watch' || method === 'GET' || method === 'HEAD' ? undefined : json(validBody(r, op))
    return { kind: 'bad-method', method, path: `/v1/${FUZZ_NS}/${op}`, headers: JSON_TYPE, body, namespace: FUZZ_NS }
  },
  'bad-content-type': (r) => {
    const op = r.pick(OPS)
    const type = r.pick(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'json', '', 'application/json-patch+json'])
    return post(op, json(validBody(r, op)), 'bad-content-type', FUZZ_NS, type ? { 'content-type': type } : {})
  },
  'bad-watch': (r) => {
    const query = r.pick(['prefix=a&prefix=b', 'from=abc', 'from=-1', 'from=1.5', 'from=99999999999999999', 'epoch=bad%20epoch', 'nope=1', `prefix=${'p'.repeat(2_000)}`, 'epoch=' + 'e'.repeat(65)])
    return { kind: 'bad-watch', method: 'GET', path: `/v1/${FUZZ_NS}/watch?${query}`, headers: {}, namespace: FUZZ_NS }
  },
  'other-namespace': (r) => {
    // Refused requests to namespaces that do not exist yet must not create anything either.
    const ns = `fz-${r.str(6).replace(/[:/]/g, '_')}`
    const inner = r.pick(Object.keys(generators).filter((k) => !['other-namespace', 'bad-path', 'bad-watch', 'bad-method'].includes(k)))
    const req = generators[inner]!(r)
    return { ...req, kind: `other-namespace/${inner}`, path: req.path.replace(`/v1/${FUZZ_NS}/`, `/v1/${ns}/`), namespace: ns }
  },
}

/** `count` invalid requests from `seed`, every kind in turn at random. */
export function* invalidRequests(seed: number, count: number): Generator<FuzzRequest> {
  const r = new Random(seed)
  const kinds = Object.keys(generators)
  for (let i = 0; i < count; i++) yield generators[r.pick(kinds)]!(r)
}

/** Valid requests whose keys and values are full of prototype names; each pairs a write with the value to read back. */
export function* hostileRequests(seed: number, count: number, ns: string): Generator<{ write: FuzzRequest; key: string; value: unknown }> {
  const r = new Random(seed)
  const names = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '__defineGetter__', 'valueOf']
  for (let i = 0; i < count; i++) {
    const key = r.chance(0.5) ? r.pick(names) : `${r.pick(names)}:${r.pick(names)}`
    const value = JSON.parse(`{"${r.pick(names)}":{"polluted":true,"${r.pick(names)}":{"prototype":{"polluted":true}}},"list":[{"__proto__":null}]}`)
    yield { write: post('commit', json({ checks: [], ops: [{ type: 'set', key, value }] }), 'hostile', ns), key, value }
  }
}

/** An answer: the status, or 0 when the connection closed without one. */
export interface FuzzAnswer {
  status: number
  body: string
}

/** Sends `req` as raw HTTP/1.1 bytes on a new connection to `port`. */
export function viaSocket(port: number, req: FuzzRequest, timeoutMs = 10_000): Promise<FuzzAnswer> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port })
    const chunks: Buffer[] = []
    let done = false
    const finish = () => {
      if (done) return
      done = true
      socket.destroy()
      const text = Buffer.concat(chunks).toString('latin1')
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text)
      const at = text.indexOf('\r\n\r\n')
      resolve({ status: m ? Number(m[1]) : 0, body: at >= 0 ? text.slice(at + 4, at + 2_000) : '' })
    }
    socket.setTimeout(timeoutMs, finish)
    socket.on('data', (d: Buffer) => {
      chunks.push(d)
      // Enough to judge once the headers and a short body are in; a watch stream would never end.
      const text = Buffer.concat(chunks).toString('latin1')
      const at = text.indexOf('\r\n\r\n')
      const length = /\r\ncontent-length: (\d+)/i.exec(text)
      if (at >= 0 && length && text.length >= at + 4 + Number(length[1])) finish()
      else if (at >= 0 && /\r\ncontent-type: text\/event-stream/i.test(text)) finish()
    })
    socket.on('error', finish)
    socket.on('close', finish)
    socket.on('connect', () => {
      const body = req.body ?? new Uint8Array()
      const headers = { host: `127.0.0.1:${port}`, ...req.headers, ...(req.body ? { 'content-length': String(body.byteLength) } : {}), connection: 'close' }
      const head = `${req.method} ${req.path} HTTP/1.1\r\n${Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('')}\r\n`
      socket.write(Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)]))
    })
  })
}

/** True for the answers a refused request may get. */
export function refusedStatus(status: number): boolean {
  return (status >= 400 && status < 500) || status === 503
}

/** What `Object.prototype` and friends hold now, to compare before and after. */
export function prototypeState(): string {
  const names = (o: object) => Object.getOwnPropertyNames(o).sort().join(',')
  return [Object.prototype, Array.prototype, Function.prototype, String.prototype].map(names).join('|')
}
