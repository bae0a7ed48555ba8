/**
 * The Redis adapter, `redis://[user:pass@]host:port[/db]?ns=NAME` (and
 * `rediss://` for TLS): a zaris store in a Redis that many processes and
 * machines share. Node only; the Redis client library (ioredis, node-redis
 * or iovalkey: `client.ts`) is an optional peer dependency loaded when this
 * adapter is first used.
 *
 * Every operation is one Lua script (see `scripts.ts`), so checks, writes,
 * the store-wide revision, TTL deadlines and the watch log change together or
 * not at all. TTLs run on Redis's clock. Watches follow a capped Redis Stream.
 *
 * @module
 */
import type { Adapter, Capabilities, Check, CommitOptions, CommitResult, Entry, ListOptions, ListPage, Op, Unsubscribe, Value, WatchSink } from '../../core/contract/adapter'
import { InternalError, InvalidArgumentError, RevisionExhaustedError, UnavailableError } from '../../core/contract/errors'
import { randomId } from '../../core/contract/ids'
import { checkCommitArgs, checkKey, checkListOptions, checkOptions, checkOrElse, checkPrefix, checkRequestId, checkValue, checkWatchArgs, describe } from '../../core/contract/validate'
import { AdapterLife } from '../kit/life'
import { added } from '../kit/write'
import { decodeEntry } from './codec'
import type { LibraryOptions, RedisClient } from './client'
import { parseRedisUrl, shareClient, shareUrl, type SharedConnection } from './connection'
import { Space } from './space'
import type { ScriptName } from './scripts'

export type { IoredisClient, LibraryOptions, NodeRedisClient, RedisClient, RedisLibrary } from './client'

/** Options of {@link redisAdapter}. */
export interface RedisAdapterOptions {
  /**
   * `redis://[user:pass@]host:port[/db]?ns=NAME&client=LIBRARY` or `rediss://…`. Give this or `client`.
   * `client` is `ioredis`, `redis` (node-redis) or `iovalkey`; without it, the first of these installed.
   */
  url?: string
  /**
   * A client you opened yourself: an ioredis or iovalkey `Redis` or `Cluster`, or a
   * node-redis `createClient()` or `createCluster()`, connected. The adapter uses it
   * as it is, and a duplicate of it for watches; `close()` leaves it open.
   */
  client?: RedisClient
  /** The zaris namespace: stores with different namespaces never see each other. Default: the URL's `ns`, else `default`. */
  namespace?: string
  /**
   * Options of the client library for the connection opened from `url`: ioredis's
   * `RedisOptions` (for example `tls`), or node-redis's `createClient` options.
   */
  redis?: LibraryOptions
  /** How many recent revisions of events are kept for watches that resume from a revision. Default 10 000. */
  historySize?: number
  /** How long (ms) a commit's answer is kept, so a retried request is answered instead of applied twice. Default 120 000. */
  requestRetention?: number
}

const NAMESPACE = /^[A-Za-z0-9._~-]{1,128}$/
/** The store hands over: parked commits are kept in Redis and tried in the script of the change (handover.ts). */
const CAPABILITIES: Capabilities = Object.freeze({ commitOnChange: true, keepParked: true, handover: true, orElse: true })

/**
 * The Redis adapter: the five members of the contract, plus `position()`.
 *
 * @example
 * const adapter = await redisAdapter({ url: 'redis://127.0.0.1:6379/0?ns=jobs' })
 * const { revision, epoch } = await adapter.position()
 */
export interface RedisAdapter extends Adapter {
  /**
   * The store's current revision, and its epoch: an id of this life of the
   * store, which changes only if Redis lost everything (a restart without
   * persistence, a flush). What a zaris node in front of Redis tells watchers.
   */
  position(): Promise<{ revision: number; epoch: string }>
}

/**
 * Opens a zaris store in Redis. Resolves once Redis answers.
 *
 * @example
 * import { Client } from 'zaris'
 * import { redisAdapter } from 'zaris/redis'
 * const client = new Client(await redisAdapter({ url: 'redis://127.0.0.1:6379/0', namespace: 'jobs' }))
 */
export async function redisAdapter(options: RedisAdapterOptions): Promise<RedisAdapter> {
  const o = checkOptions<RedisAdapterOptions>(options)
  if ((o.url === undefined) === (o.client === undefined)) throw new InvalidArgumentError('redisAdapter needs exactly one of url or client')
  const parsed = o.url === undefined ? undefined : parseRedisUrl(checkString(o.url, 'url'))
  const namespace = o.namespace ?? parsed?.namespace ?? 'default'
  if (typeof namespace !== 'string' || !NAMESPACE.test(namespace)) {
    throw new InvalidArgumentError(`namespace must be 1-128 letters, digits or . _ ~ -, got ${describe(namespace)}`)
  }
  const historySize = checkCount(o.historySize ?? 10_000, 'historySize')
  const requestRetention = checkCount(o.requestRetention ?? 120_000, 'requestRetention')
  if (o.redis !== undefined && (typeof o.redis !== 'object' || o.redis === null)) throw new InvalidArgumentError('redis must be an object of options for the client library')
  const connection = parsed ? await shareUrl(parsed.url, parsed.library, o.redis, `zaris:${namespace}`) : shareClient(o.client as object)
  return new NamespaceAdapter(connection, Space.of(connection, namespace, { historySize }), requestRetention)
}

/**
 * Creates the adapter for a parsed `redis://` or `rediss://` URL (used by
 * `connect`); `options.redis` holds the client library's options, for example `tls`.
 *
 * @example
 * const adapter = await fromUrl('redis://127.0.0.1:6379/0?ns=jobs', 'jobs', {})
 */
export function fromUrl(url: string, namespace: string, options: { readonly [option: string]: unknown }): Promise<RedisAdapter> {
  return redisAdapter({ url, namespace, redis: options.redis as LibraryOptions | undefined })
}

/** One adapter: its own closed state and watches, on a namespace shared with the process's other adapters. */
class NamespaceAdapter implements RedisAdapter {
  readonly name = 'redis'
  readonly capabilities = CAPABILITIES
  readonly #connection: SharedConnection
  readonly #space: Space
  readonly #retention: number
  readonly #life = new AdapterLife('redis')
  /** The waits of this adapter's parked commits (ended on close), and their answers. */
  readonly #waits = new Set<() => void>()
  readonly #parkedNow = new Set<Promise<unknown>>()

  constructor(connection: SharedConnection, space: Space, retention: number) {
    this.#connection = connection
    this.#space = space
    this.#retention = retention
  }

  async get(key: string): Promise<Entry | undefined> {
    checkKey(key)
    const [now, , raw] = (await this.#script('get', 'get', key)) as [string, string, unknown]
    if (typeof raw !== 'string') return undefined
    const entry = decodeEntry(key, raw, Number(now))
    this.#space.see(entry.revision)
    return entry
  }

  async list(prefix: string, options?: ListOptions): Promise<ListPage> {
    checkPrefix(prefix)
    const { after, limit } = checkListOptions(options)
    // Keys under the prefix form one range that starts at the prefix: an `after` past it and not in it is past them all.
    const from = after !== undefined && after >= prefix ? after : ''
    if (from !== '' && !from.startsWith(prefix)) return { entries: [], more: false }
    const [now, , pairs, more] = (await this.#script('list', 'list', prefix, from, limit ?? 0)) as [string, string, string[], number]
    const entries: Entry[] = []
    for (let i = 0; i + 1 < pairs.length; i += 2) entries.push(decodeEntry(pairs[i]!, pairs[i + 1]!, Number(now)))
    for (const e of entries) this.#space.see(e.revision)
    return { entries, more: more === 1 }
  }

  /**
   * One commit, as one script. `options.seen` is not used: this adapter
   * keeps its own highest revision seen (per process and namespace) and
   * passes it with every script, and a revision moved by a client's word
   * would look like lost history to every watcher of the stream.
   */
  async commit(checks: Check[], ops: Op[], options?: CommitOptions): Promise<CommitResult> {
    checkCommitArgs(checks, ops)
    const requestId = checkRequestId(options?.requestId)
    // Every commit carries a request id, so ioredis may resend one cut off by a dropped connection.
    const request = requestId ?? randomId()
    const ms = waitOf(options?.waitChange)
    if (ms > 0) return this.#parking(checks, ops, request, ms, options!)
    const lone = ops.length === 1 ? ops[0]! : undefined
    let encoded: EncodedOp[]
    let reply: Promise<unknown[]>
    if (lone?.type === 'add' && checks.length === 0) {
      // A counter's increment: the short script, same effects, positional arguments.
      encoded = [{ type: 'add', key: lone.key, json: '', delta: lone.delta, args: [] }]
      reply = this.#script('commit', 'add', request, this.#retention, lone.key, String(lone.delta))
    } else if (lone && lone.type !== 'add' && checks.length === 1 && checks[0]!.key === lone.key) {
      // A lock's take, renewal or release: the short script, same effects, positional arguments.
      const e = encodeOp(lone, 'ops[0]')
      encoded = [e]
      const [, kind, want] = encodeCheck(checks[0]!)
      reply = this.#script('commit', 'lock', request, this.#retention, lone.key, kind!, want!, e.args[0]!, ...e.args.slice(2))
    } else {
      const generic = genericArgs(checks, ops)
      encoded = generic.encoded
      reply = this.#script('commit', 'commit', request, this.#retention, ...generic.args)
    }
    return this.#answer((await reply) as Reply, encoded)
  }

  /**
   * A commit that may wait (capability `handover`): sent with the park
   * arguments; if it parks, its answer comes on the space's channel (its
   * waiter is registered first: the answer may overtake the reply), or from
   * `unpark` at its deadline, its caller's abort or this adapter's close.
   */
  async #parking(checks: Check[], ops: Op[], request: string, ms: number, options: CommitOptions): Promise<CommitResult> {
    const answers = this.#space.parked
    await answers.ready()
    const { args, encoded } = genericArgs(checks, ops)
    args.push(ms, options.keepParked ? '1' : '0', options.parkOrder ?? '', options.wakeOwner ?? '', answers.channel)
    // Other ways (with keepParked only): each as checks and ops are sent; an answer names the one that went through.
    checkOrElse(options.orElse)
    const orElse = options.keepParked ? (options.orElse ?? []) : []
    const ways: EncodedOp[][] = []
    args.push(orElse.length)
    for (const way of orElse) {
      checkCommitArgs(way.checks, way.ops)
      const w = genericArgs(way.checks, way.ops)
      args.push(...w.args)
      ways.push(w.encoded)
    }
    const waiter = answers.expect(request)
    let reply: Reply
    try {
      reply = (await this.#script('commit', 'commit', request, this.#retention, ...args)) as Reply
    } finally {
      if (reply! === undefined || reply[0] !== 'parked') waiter.cancel()
    }
    if (reply[0] !== 'parked') return this.#answer(reply, encoded, ways)
    options.onParked?.()
    // The deadline, the caller's signal and this adapter's close end the wait: then it is unparked
    // (at the deadline with one last try, as any commit; else never applied).
    let last = ''
    const timer = setTimeout(() => {
      last = 'last'
      waiter.cancel()
    }, ms + UNPARK_SLACK_MS)
    const signal = options.signal
    signal?.addEventListener('abort', waiter.cancel, { once: true })
    if (signal?.aborted) waiter.cancel()
    this.#waits.add(waiter.cancel)
    const done = waiter.answer.finally(() => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', waiter.cancel)
      this.#waits.delete(waiter.cancel)
    })
    this.#parkedNow.add(done)
    const answer = await done
    this.#parkedNow.delete(done)
    if (answer) return this.#fromText(answer.text, answer.now, encoded, ways)
    // Answered meanwhile (the message was lost or crossed), or taken out of park now: what unpark says.
    const after = (await this.#space.script('commit', 'unpark', request, last)) as Reply
    if (after[0] === 'fail' && (after[3] as unknown[]).length === 0) {
      // Neither parked nor answered: Redis lost both (restarted without its data), so it was never
      // applied in the state Redis has now. At the deadline it gets its one last try, as any commit;
      // an abort or a close must not apply it, and its outcome in the lost state cannot be told.
      if (last) return this.commit(checks, ops, { ...options, waitChange: undefined, requestId: request })
      throw new UnavailableError('Redis lost a waiting commit (it restarted without its data); it may have applied before')
    }
    return this.#answer(after, encoded, ways)
  }

  /** A commit script's reply as the commit's answer. */
  #answer([status, now, , payload]: Reply, encoded: EncodedOp[], ways?: EncodedOp[][]): CommitResult {
    if (status === 'fail') return failedOf(payload as unknown[], Number(now))
    // A waiting take whose checks held, kept behind a waiter's turn (handover.ts): nothing failed.
    if (status === 'behind') return { ok: false, failed: [] }
    if (status === 'bad') throw refusedAdd(payload as [string, string], encoded)
    if (status === 'exhausted') throw exhausted(String(payload))
    return this.#fromText(String(payload), Number(now), encoded, ways)
  }

  /** A commit's answer as kept (`dup`) or published: its success, or (a parked commit's) its failure (handover.ts). */
  #fromText(text: string, now: number, encoded: EncodedOp[], ways?: EncodedOp[][]): CommitResult {
    if (text.startsWith('@')) {
      // It went through its other way w (`@<w> <answer>`): that way's ops were applied.
      const space = text.indexOf(' ')
      return this.#fromText(text.slice(space + 1), now, ways![Number(text.slice(1, space)) - 1]!)
    }
    if (text.startsWith('F')) return failedOf(JSON.parse(text.slice(1)) as unknown[], now)
    if (text.startsWith('B')) throw refusedAdd(JSON.parse(text.slice(1)) as [string, string], encoded)
    if (text === 'X') throw exhausted('the largest safe integer')
    const answer = text.split(' ')
    const revision = Number(answer[0])
    this.#space.see(revision)
    const entries: Entry[] = []
    const deleted: string[] = []
    encoded.forEach((op, i) => {
      const a = answer[i + 1]!
      if (op.type === 'delete') {
        if (a === 'd1') deleted.push(op.key)
      } else if (op.type === 'add') {
        entries.push(addedEntry(op.key, revision, a, now))
      } else {
        const entry: Entry = { key: op.key, value: JSON.parse(op.json) as Value, revision, created: Number(a) }
        if (op.owner !== undefined) entry.owner = op.owner
        if (op.ttl !== undefined) entry.ttl = op.ttl
        entries.push(entry)
      }
    })
    return { ok: true, revision, entries, deleted }
  }

  async watch(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    checkWatchArgs(prefix, sink, fromRevision)
    this.#life.assertOpen()
    return this.#life.track(await this.#space.watch(prefix, sink, fromRevision))
  }

  async position(): Promise<{ revision: number; epoch: string }> {
    const r = (await this.#script('position', 'replay', '', 0)) as [string, string, unknown, unknown, unknown]
    const revision = Number(r[2])
    this.#space.see(revision)
    return { revision, epoch: String(r[4]) }
  }

  async close(): Promise<void> {
    if (this.#life.closed) return
    // Parked commits are taken out of park first (best effort: a parked take's place expires otherwise).
    for (const cancel of [...this.#waits]) cancel()
    await Promise.allSettled([...this.#parkedNow])
    if (!this.#life.close()) return
    this.#space.release()
    await this.#connection.release()
  }

  #script(what: string, name: ScriptName, ...args: Array<string | number>): Promise<unknown[]> {
    this.#life.assertOpen()
    return this.#space.script(what, name, ...args)
  }
}

/** A commit script's reply: its status, Redis's time (µs), the µs to the next deadline, its payload. */
type Reply = [string, string, string, unknown]

/**
 * How much longer than its wait an adapter waits for a parked commit's answer
 * before it unparks it (with one last try). Short: past its deadline (Redis's
 * clock, from when it parked) no change grants it, so only an answer already
 * on its way is waited for, and `unpark` finds one that is late. A long slack
 * delayed a take whose checks held soon after the deadline until the slack's
 * end, and the hold, which counts its TTL from before it sent the take, was
 * born expired (the conformance election case with a 300 ms TTL).
 */
const UNPARK_SLACK_MS = 20
/** The longest a commit parks in Redis (a longer `waitChange` is cut to it). */
const MAX_PARK_MS = 30_000

/** A `waitChange` as the script takes it: whole ms, 0 for none. */
function waitOf(ms: number | undefined): number {
  if (ms === undefined || !(ms > 0)) return 0
  return Math.min(Math.ceil(ms), MAX_PARK_MS)
}

/** The generic commit script's arguments for `checks` and `ops`. */
function genericArgs(checks: Check[], ops: Op[]): { args: Array<string | number>; encoded: EncodedOp[] } {
  const args: Array<string | number> = [checks.length]
  for (const check of checks) args.push(...encodeCheck(check))
  args.push(ops.length)
  const encoded = ops.map((op, i) => {
    const e = encodeOp(op, `ops[${i}]`)
    args.push(...e.args)
    return e
  })
  return { args, encoded }
}

/** A failed commit's answer from `{key, raw|false, ...}`. */
function failedOf(pairs: unknown[], now: number): CommitResult {
  const failed: Array<{ key: string; entry: Entry | undefined }> = []
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const key = pairs[i] as string
    const raw = pairs[i + 1]
    failed.push({ key, entry: typeof raw === 'string' ? decodeEntry(key, raw, now) : undefined })
  }
  return { ok: false, failed }
}

function exhausted(at: string): RevisionExhaustedError {
  return new RevisionExhaustedError(
    `the store is at revision ${at}, the largest safe integer: it can take no more writes without losing the order of its revisions; move its data to a new store`,
  )
}

/** A check as script arguments; checked by `checkCommitArgs` already. */
function encodeCheck(check: Check): string[] {
  const byRevision = 'revision' in check
  const want = byRevision ? check.revision : check.created
  return [check.key, byRevision ? 'r' : 'c', want === null ? '' : String(want)]
}

interface EncodedOp {
  type: Op['type']
  key: string
  json: string
  owner?: string
  ttl?: number
  delta?: number
  args: string[]
}

/** An op as script arguments; its shape was checked by `checkCommitArgs`, its value is checked here. */
function encodeOp(op: Op, name: string): EncodedOp {
  const key = op.key
  if (op.type === 'delete') return { type: 'delete', key, json: '', args: ['d', key, '', '', '', ''] }
  if (op.type === 'add') return { type: 'add', key, json: '', delta: op.delta, args: ['a', key, String(op.delta), '', '', ''] }
  const json = JSON.stringify(checkValue(op.value, `${name}.value`))
  const out: EncodedOp = { type: 'set', key, json, args: [] }
  if (op.ttl !== undefined) out.ttl = op.ttl
  if (op.owner !== undefined) out.owner = op.owner
  out.args = ['s', key, json, out.ttl === undefined ? '' : String(out.ttl), out.owner === undefined ? '' : '=' + out.owner, op.fresh ? '1' : '']
  return out
}

/** The entry an add wrote, from its answer `a<created>:<value>:<deadline|->:<owner as hex>`. */
function addedEntry(key: string, revision: number, answer: string, now: number): Entry {
  const [created, value, deadline, hex] = answer.slice(1).split(':') as [string, string, string, string]
  const entry: Entry = { key, value: Number(value), revision, created: Number(created) }
  if (hex !== '') entry.owner = new TextDecoder().decode(Uint8Array.from(hex.match(/../g)!, (h) => parseInt(h, 16)))
  if (deadline !== '-') entry.ttl = Math.max(0, (Number(deadline) - now) / 1000)
  return entry
}

/** The error of an add the script could not make exactly: the key's value and the op's delta tell which. */
function refusedAdd([key, json]: [string, string], ops: EncodedOp[]): Error {
  const delta = ops.find((o) => o.key === key)?.delta ?? 0
  try {
    added(key, JSON.parse(json) as Value, delta)
  } catch (err) {
    return err as Error
  }
  return new InternalError(`add ${JSON.stringify(key)}: Redis refused ${json} + ${delta}, which zaris can add`)
}

function checkString(s: unknown, name: string): string {
  if (typeof s !== 'string') throw new InvalidArgumentError(`${name} must be a string, got ${describe(s)}`)
  return s
}

function checkCount(n: unknown, name: string): number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError(`${name} must be an integer >= 1, got ${describe(n)}`)
  return n
}
