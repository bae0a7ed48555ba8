/**
 * The wire protocol between the HTTP adapter and a zaris node, as zod
 * schemas: the node validates every request body with them; the adapter
 * reads answers and watch events with hand-written checks held to these
 * schemas (`./answers`, so a page's client chunk carries no zod), and the
 * names both ends share live in `./wire`. JSON over HTTP:
 *
 * ```
 * POST /v1/<ns>/get     { key }                       -> { entry: Entry | null }
 * POST /v1/<ns>/list    { prefix, after?, limit? }    -> { entries: Entry[], more }
 *      (one page, sorted by key, after the key `after`; the node caps its size in entries and bytes)
 * POST /v1/<ns>/commit  { checks, ops, requestId?, seen?, waitChange?, keepParked? } -> CommitResult   (seen: CommitOptions.seen)
 *      (waitChange: ms; a commit whose check fails is tried once more when a checked key
 *       changes, and answered with that try; with no change in time, with the first;
 *       keepParked: answered only by a try that goes through or fails where the first held;
 *       parkOrder: parked commits are tried in its order; wakeOwner: also answered
 *       by a try that fails at a key this owner holds; orElse: [{ checks, ops }], other ways
 *       a kept commit may go through (refused by a node whose store takes none);
 *       answerOn: a filtered watch stream of this client on this node: a commit that parks is
 *       answered { parked: true } at once, and its outcome later on that stream as an `answer`
 *       event; no such stream, and it does not wait)
 * GET  /v1/<ns>/watch?prefix=P[&from=R][&epoch=E]     -> text/event-stream
 *      (Last-Event-ID: R resumes after revision R; each change event's id is its revision;
 *       epoch E, from the stream's `ready` event, makes a resume fail plainly if the store was reset)
 * GET  /v1/<ns>/watch?prefixes=["P1","P2"][&from=R][&epoch=E]   -> text/event-stream, filtered
 *      (only the changes under P1, P2...; `ready` names the stream, `progress` events move
 *       its resume point; POST filter replaces its prefixes while it runs)
 * POST /v1/<ns>/filter  { stream, version, prefixes, after? } -> { revision, version, history? }
 *      (from this answer on, the stream carries every change after `revision` under the new
 *       prefixes; a version not above the stream's is answered with the stream's own)
 * GET  /v1/<ns>/events?after=R[&prefix=P][&epoch=E]   -> { events, through, more }
 *      (the history after R, one page: complete for every revision up to `through`)
 * GET  /healthz, GET /metrics
 * any error                                           -> 4xx/5xx { error: { code, message } }
 * ```
 *
 * Framed connection (what the adapter's Node transport uses for get, list and
 * commit; browsers and tools keep to plain HTTP). The client asks once:
 *
 * ```
 * GET /v1/frames  Connection: Upgrade, Upgrade: zaris-frames/1 [, Authorization]
 *   -> 101 Switching Protocols (or any HTTP error: the client then stays on HTTP)
 * ```
 *
 * The node checks the token and the Host on that request exactly as on any
 * other. From then on the socket carries one JSON object per line (UTF-8,
 * `\n` ends a frame; JSON text never holds a raw newline), requests
 * pipelined and answered in any order, matched by `id`:
 *
 * ```
 * client: {"id":7,"path":"/v1/<ns>/commit","body":{ same body as the POST }}
 * node:   {"id":7,"status":200,"body":{ same answer as the HTTP response }}
 * ```
 *
 * `path` is the POST's path (`get`, `list` or `commit`), and each frame goes
 * through the same validation, replay cache and metrics as the POST; or
 * `/v1/ping`, answered `{}` at once. The 101 answer says (header
 * `zaris-idle-timeout`, ms) how long the node keeps a connection that sends
 * nothing; the client pings well within it. A frame
 * the node cannot read (not JSON, no usable id, invalid UTF-8, longer than
 * the node's body limit and 1 KiB of envelope) is answered with `id: null` and the connection is
 * closed. A connection has at most {@link FRAMES_MAX_PENDING} requests in
 * flight: past it the node stops reading, and the client sends over HTTP.
 *
 * @module
 */
import { z } from 'zod'
import type { Check, CommitResult, Entry, Op, Value, WatchEvent } from '../core/contract/adapter'
import { InvalidArgumentError, type ErrorCode } from '../core/contract/errors'
import { checkValue, isOwnerId as isOwner, keyProblem, MAX_KEY_LENGTH, MAX_OWNER_LENGTH, MAX_TTL } from '../core/contract/validate'
import { MAX_OPS, WAIT_CHANGE_MAX, fastCommitRequest, fastCommitResponse, fastGetRequest, fastGetResponse, fastListRequest } from '../adapters/http/fast-checks'
import { MAX_OR_ELSE } from '../core/contract/limits'

export {
  API_PREFIX,
  NAMESPACE_PATTERN,
  SSE_READY,
  SSE_ERROR,
  SSE_PROGRESS,
  FILTER_MAX_PREFIXES,
  FILTER_MAX_CHARS,
  FRAMES_PROTOCOL,
  FRAMES_PATH,
  FRAME_ENVELOPE_BYTES,
  FRAMES_MAX_PENDING,
  FRAMES_IDLE_HEADER,
  FRAMES_PING_PATH,
} from '../adapters/http/wire'

/** A request frame, as read by the node: the envelope only; `body` is validated like a POST body. */
export interface RequestFrame {
  id: number
  /** The route's path; undefined when the frame has none that could be one (answered 400 for its id). */
  path: string | undefined
  body: unknown
}

/**
 * Reads a request frame's envelope, or throws an `InvalidArgumentError`
 * naming what is wrong when it has no id to answer to. Hand-written: it
 * runs for every request.
 *
 * @example
 * const { id, path, body } = parseRequestFrame('{"id":1,"path":"/v1/demo/get","body":{"key":"a"}}')
 */
export function parseRequestFrame(text: string): RequestFrame {
  let frame: unknown
  try {
    frame = JSON.parse(text)
  } catch {
    throw new InvalidArgumentError('frame: malformed JSON')
  }
  if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) throw new InvalidArgumentError('frame: must be a JSON object')
  const { id, path, body } = frame as Record<string, unknown>
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) throw new InvalidArgumentError('frame.id: must be an integer >= 0')
  return { id, path: typeof path === 'string' && path.length <= 512 ? path : undefined, body }
}

/** An answer frame, from a JSON body text (the node's replies are JSON already: no second serialization). */
export function answerFrame(id: number | null, status: number, bodyJson: string): string {
  return `{"id":${id},"status":${status},"body":${bodyJson}}\n`
}


/** A key or prefix by the core's one rule (UTF-16 code units, well-formed), so the wire and every store agree. */
const keyLike = (prefix: boolean) =>
  z.string().superRefine((s, ctx) => {
    const problem = keyProblem(s, prefix)
    if (problem) ctx.addIssue({ code: 'custom', message: problem })
  })
const key = keyLike(false)
const prefix = keyLike(true)
const revision = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)
const ttl = z.number().positive('must be a positive number of milliseconds').max(MAX_TTL, `must be at most ${MAX_TTL} ms`)
const owner = z.string().refine(isOwner, `must be a non-empty, well-formed string of at most ${MAX_OWNER_LENGTH} UTF-16 code units`)
const delta = z.number().refine(Number.isSafeInteger, 'must be a safe integer')

/** A storable value: JSON data, finite numbers, at most 64 levels deep (the core's own rule). */
const value = z.custom<Value>().superRefine((v, ctx) => {
  try {
    checkValue(v, 'value')
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : 'cannot be stored' })
  }
})

/** Exactly one of `revision` and `created`, as the Check type says. */
const check = z
  .strictObject({ key, revision: revision.nullable().optional(), created: revision.nullable().optional() })
  .superRefine((c, ctx) => {
    if ((c.revision === undefined) === (c.created === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'a check has exactly one of revision and created' })
    }
  })
  .transform((c): Check => (c.revision !== undefined ? { key: c.key, revision: c.revision } : { key: c.key, created: c.created! }))

const op = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('set'), key, value, ttl: ttl.optional(), owner: owner.optional(), fresh: z.boolean().optional() }),
  z.strictObject({ type: z.literal('delete'), key }),
  z.strictObject({ type: z.literal('add'), key, delta }),
])

/** A client request id: what makes a retried commit act once. */
export const requestIdSchema = z.string().regex(/^[A-Za-z0-9_-]{8,128}$/, 'must be 8-128 letters, digits, _ or -')

/** Names a filtered watch stream (its `ready` says it). */
export const streamId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -')
/** Body of `POST /v1/<ns>/get`. */
export const getRequest = z.strictObject({ key })
/** Body of `POST /v1/<ns>/list`: a page after the key `after`, of at most `limit` entries (the node may send fewer). */
export const listRequest = z.strictObject({ prefix, after: key.optional(), limit: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional() })
/** Body of `POST /v1/<ns>/commit`. */
export const commitRequest = z.strictObject({
  checks: z.array(check).max(MAX_OPS, `at most ${MAX_OPS} checks`),
  ops: z.array(op).max(MAX_OPS, `at most ${MAX_OPS} ops`).transform((ops) => ops as Op[]),
  requestId: requestIdSchema.optional(),
  seen: revision.optional(),
  /** Ms the node may keep a commit whose check failed, to try it once more when a checked key changes (the node cuts it to its own bound). */
  waitChange: z.number().int().min(0).max(WAIT_CHANGE_MAX).optional(),
  /** With `waitChange`: answer only a try that goes through, one that fails a check the first try passed, or the wait's end (CommitOptions.keepParked). */
  keepParked: z.boolean().optional(),
  /** With `waitChange`: parked commits are tried in ascending parkOrder (CommitOptions.parkOrder). */
  parkOrder: revision.optional(),
  /** With keepParked: answer also a try that fails at a key now owned by this owner (CommitOptions.wakeOwner). */
  wakeOwner: owner.optional(),
  /** With keepParked: other ways the commit may go through (CommitOptions.orElse); a node whose store takes none refuses it. */
  orElse: z
    .array(z.strictObject({ checks: z.array(check).max(MAX_OPS, `at most ${MAX_OPS} checks`), ops: z.array(op).max(MAX_OPS, `at most ${MAX_OPS} ops`).transform((ops) => ops as Op[]) }))
    .max(MAX_OR_ELSE, `at most ${MAX_OR_ELSE} other ways`)
    .optional(),
  /** With waitChange and requestId: a filtered stream of this node the commit's outcome goes to, once it parks (see the module doc). */
  answerOn: streamId.optional(),
})
/** Names one life of a store: a store that was reset (a memory node restarted) gets a new epoch. */
const epochSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or -')

/** Query of `GET /v1/<ns>/watch` (`from` may also come as `Last-Event-ID`); `prefixes`: a JSON array (see {@link filterPrefixes}). */
export const watchQuery = z.strictObject({
  prefix,
  prefixes: z.string().optional(),
  epoch: epochSchema.optional(),
  from: z
    .string()
    .regex(/^\d{1,16}$/, 'must be a revision (digits)')
    .transform(Number)
    .optional(),
})

/** A filtered stream's prefixes (the count and size bounds are checked apart, the count before this: they are TOO_LARGE, not malformed). */
export const filterPrefixes = z.array(prefix)
/** Body of `POST /v1/<ns>/filter`: the stream's prefixes from now on; versions only move up. */
export const filterRequest = z.strictObject({
  stream: streamId,
  version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  prefixes: filterPrefixes,
  /** Also answer the history after it under the prefixes this request adds (one page), sparing a `GET events`. */
  after: revision.optional(),
})

/** Query of `GET /v1/<ns>/events`: the recorded events after revision `after`. */
export const eventsQuery = z.strictObject({
  prefix,
  epoch: epochSchema.optional(),
  after: z
    .string()
    .regex(/^\d{1,16}$/, 'must be a revision (digits)')
    .transform(Number),
})

export type GetRequest = z.input<typeof getRequest>
export type ListRequest = z.input<typeof listRequest>
export type CommitRequest = z.input<typeof commitRequest>

const entry = z.strictObject({
  key,
  value,
  revision,
  created: revision,
  owner: owner.optional(),
  ttl: z.number().nonnegative().optional(),
})

/** Response of `get`. */
export const getResponse = z.strictObject({ entry: entry.nullable() })
/** Response of `list`: one page; `more` when entries follow (ask again after the last key). */
export const listResponse = z.strictObject({ entries: z.array(entry), more: z.boolean() })
/** Response of `commit`: a {@link CommitResult}, `undefined` entries sent as `null`. */
export const commitResponse = z.discriminatedUnion('ok', [
  z.strictObject({ ok: z.literal(true), revision, entries: z.array(entry), deleted: z.array(key) }),
  z.strictObject({ ok: z.literal(false), failed: z.array(z.strictObject({ key, entry: entry.nullable() })) }),
])

/** A change event of a watch stream (the SSE `data`; its `id` is the revision). */
export const watchEvent = z.strictObject({
  type: z.enum(['put', 'delete', 'expire']),
  key,
  revision,
  value: value.optional(),
  created: revision.optional(),
  owner: owner.optional(),
  ttl: ttl.optional(),
})

/**
 * Response of `GET /v1/<ns>/events`: the events after `after` for the prefix,
 * in revision order, complete for every revision up to `through`; `more` when
 * the page was cut short (ask again after `through`).
 */
export const eventsResponse = z.strictObject({ events: z.array(watchEvent), through: revision, more: z.boolean() })
/** Response of `filter`: the stream carries every change under its prefixes after `revision`; `history`: as asked. */
export const filterResponse = z.strictObject({
  revision,
  version: z.number().int().min(0),
  history: z.strictObject({ after: revision, events: z.array(watchEvent), through: revision, more: z.boolean() }).optional(),
})

/**
 * The first event of every watch stream, sent once the node delivers every
 * later change: the store's revision then (when the store can tell) and the
 * heartbeat interval, so the client can tell a dead stream from a quiet one.
 */
export const readyEvent = z.strictObject({
  revision: revision.optional(),
  epoch: epochSchema.optional(),
  heartbeat: z.number().int().positive(),
  /** Only on a filtered stream: the id `filter` requests name. */
  stream: streamId.optional(),
})
/** A filtered stream's `progress` event. */
export const progressEvent = z.strictObject({ revision })

/** Every error body the node sends. */
export const errorBody = z.strictObject({ error: z.strictObject({ code: z.string().min(1).max(64), message: z.string().max(4_096) }) })

/** Wire form of a get response. */
export function toGetResponse(e: Entry | undefined): z.output<typeof getResponse> {
  return { entry: e ?? null }
}

/** Wire form of a commit result (JSON has no `undefined`). */
export function toCommitResponse(r: CommitResult): z.output<typeof commitResponse> {
  return r.ok ? r : { ok: false, failed: r.failed.map((f) => ({ key: f.key, entry: f.entry ?? null })) }
}

/** Rebuilds a commit result from its wire form. */
export function fromCommitResponse(r: z.output<typeof commitResponse>): CommitResult {
  if (r.ok) return { ok: true, revision: r.revision, entries: r.entries.map(stripEntry), deleted: r.deleted }
  return { ok: false, failed: r.failed.map((f) => ({ key: f.key, entry: f.entry === null ? undefined : stripEntry(f.entry) })) }
}

/** An entry without the optional members zod may leave as `undefined`. */
export function stripEntry(e: z.output<typeof entry>): Entry {
  const out: Entry = { key: e.key, value: e.value, revision: e.revision, created: e.created }
  if (e.owner !== undefined) out.owner = e.owner
  if (e.ttl !== undefined) out.ttl = e.ttl
  return out
}

/** A watch event without `undefined` members. */
export function stripEvent(e: z.output<typeof watchEvent>): WatchEvent {
  const out: WatchEvent = { type: e.type, key: e.key, revision: e.revision }
  if (e.value !== undefined) out.value = e.value
  if (e.created !== undefined) out.created = e.created
  if (e.owner !== undefined) out.owner = e.owner
  if (e.ttl !== undefined) out.ttl = e.ttl
  return out
}

/**
 * Parses `input` with `schema`, or throws an `InvalidArgumentError` whose
 * message names the field at fault (`ops.0.ttl: must be at most …`).
 *
 * @example
 * const body = parseWith(commitRequest, JSON.parse(text), 'body')
 */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const fast = FAST.get(schema)?.(input)
  if (fast !== undefined) return fast as z.output<S>
  const r = schema.safeParse(input)
  if (r.success) return r.data
  const issue = r.error.issues[0]!
  const path = issue.path.length > 0 ? issue.path.map(String).join('.') : what
  throw new InvalidArgumentError(`${path}: ${issue.message}`)
}

/** The hand-written check of each schema that has one. */
const FAST = new Map<z.ZodType, (input: unknown) => unknown>([
  [commitRequest, fastCommitRequest],
  [getRequest, fastGetRequest],
  [listRequest, fastListRequest],
  [commitResponse, fastCommitResponse],
  [getResponse, fastGetResponse],
])

/**
 * The hand-written check of `schema`, for tests that hold it against the
 * schema; undefined for a schema without one.
 *
 * @internal
 */
export function fastPathOf(schema: z.ZodType): ((input: unknown) => unknown) | undefined {
  return FAST.get(schema)
}

/** The HTTP status of each error code, shared so both ends agree. */
export function statusOf(code: ErrorCode | string): number {
  switch (code) {
    case 'INVALID_ARGUMENT':
    case 'INVALID_URL':
      return 400
    case 'UNAUTHORIZED':
      return 401
    case 'CONFLICT':
    case 'FENCED':
      return 409
    case 'COMPACTED':
      return 410
    case 'TOO_LARGE':
      return 413
    case 'UNSUPPORTED':
      return 415
    case 'RATE_LIMITED':
      return 429
    case 'REVISION_EXHAUSTED':
      return 507 // Insufficient Storage: no node of this store could take the write
    case 'UNAVAILABLE':
    case 'CLOSED':
      return 503
    default:
      return 500
  }
}
