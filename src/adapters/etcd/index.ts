/**
 * The etcd adapter, `etcd://host:2379[,host2:2379,…]/<ns>` (and `etcds://`
 * for TLS): a zaris store in an etcd v3 cluster, for locks that must survive
 * the loss of any minority of its members. Node only; the etcd client,
 * `etcd3`, is an optional peer dependency loaded when this adapter is first
 * used.
 *
 * What each part of the contract is on etcd:
 *
 * - revision: etcd's own store revision. It rises with every commit, and
 *   also with writes outside this namespace, so zaris revisions on etcd have
 *   gaps (the contract allows them). Tokens are create revisions: unique and
 *   rising across the whole cluster.
 * - commit: one etcd transaction with compares (`txn.ts`); `created` is the
 *   create revision of the key's live slot, and a new life writes the other
 *   slot (`layout.ts`), since etcd keeps a key's create revision across
 *   overwrites and refuses two ops on one key in a transaction.
 * - TTLs: etcd leases, shared and rounded up to whole seconds (`leases.ts`):
 *   an entry never frees before its TTL, and frees up to
 *   `capabilities.ttlGranularity` ms after it (plus one lease TTL after a
 *   leader change).
 * - watch: etcd watches from a revision (`watch.ts`); an expiry is told from
 *   a user delete by the tombstone a user delete writes (`events.ts`). A
 *   watch from a past revision starts from now when one read shows nothing
 *   under it changed since, so that etcd serves it at once rather than from
 *   its 100 ms catch-up loop (`watch-start.ts`).
 * - add: a read and a compare-and-swap, retried (`commit.ts`).
 * - failover: calls go to any member of the list, again elsewhere when one
 *   fails or hangs; a commit sent again is answered, not applied twice.
 *
 * @module
 */
import type { IOptions } from 'etcd3'
import type { Adapter, Capabilities, Check, CommitOptions, CommitResult, Entry, ListOptions, ListPage, Op, Unsubscribe, WatchSink } from '../../core/contract/adapter'
import { InvalidArgumentError } from '../../core/contract/errors'
import { randomId } from '../../core/contract/ids'
import { checkKey, checkListOptions, checkOptions, checkPrefix, checkRequestId, checkWatchArgs, describe } from '../../core/contract/validate'
import { AdapterLife } from '../kit/life'
import { planCommit, runCommit } from './commit'
import { shareConnection, type Connection } from './connection'
import { entryOf, Layout, type RawKv } from './layout'
import { parseEtcdUrl, redactEtcdUrl } from './url'
import { watchFromPast } from './watch-start'

export { parseEtcdUrl } from './url'

/** Options of {@link etcdAdapter}. */
export interface EtcdAdapterOptions {
  /** `etcd://host:2379[,host2:2379…]/<ns>` or `etcds://…`. Give this or `hosts`. */
  url?: string
  /** The members, as `http://host:2379` or `https://host:2379`. Give this or `url`. */
  hosts?: string[]
  /** The zaris namespace: stores with different namespaces never see each other. Default: the URL's, else `default`. */
  namespace?: string
  /** etcd user and password (also read from the URL's `user:pass@`). */
  auth?: { username: string; password: string }
  /** TLS material for `etcds://` members signed by your own CA (etcd3's `credentials`). */
  credentials?: IOptions['credentials']
  /** How long one call may wait on one member before it is sent to another, in ms. Default 2 000. */
  callTimeout?: number
  /** How long an operation keeps trying while the cluster cannot answer, in ms. Default 15 000. */
  timeout?: number
  /** How long a commit's request key is kept, so a commit sent again is answered, not applied twice (ms). Default 120 000. */
  requestRetention?: number
}

/**
 * The etcd adapter: the five members of the contract, plus `position()`.
 *
 * @example
 * const adapter = await etcdAdapter({ url: 'etcd://127.0.0.1:2379/jobs' })
 * const { revision, epoch } = await adapter.position()
 */
export interface EtcdAdapter extends Adapter {
  /** etcd's current revision, and the cluster's id (what a zaris node in front of etcd tells watchers). */
  position(): Promise<{ revision: number; epoch: string }>
}

const NAMESPACE = /^[A-Za-z0-9._~-]{1,128}$/

/**
 * Opens a zaris store in etcd. Resolves once a member answers.
 *
 * @example
 * import { Client } from 'zaris'
 * import { etcdAdapter } from 'zaris/etcd'
 * const client = new Client(await etcdAdapter({ url: 'etcd://127.0.0.1:2379,127.0.0.1:22379/jobs' }))
 */
export async function etcdAdapter(options: EtcdAdapterOptions): Promise<EtcdAdapter> {
  const o = checkOptions<EtcdAdapterOptions>(options)
  if ((o.url === undefined) === (o.hosts === undefined)) throw new InvalidArgumentError('etcdAdapter needs exactly one of url or hosts')
  if (o.url !== undefined && typeof o.url !== 'string') throw new InvalidArgumentError(`url must be a string, got ${describe(o.url)}`)
  const parsed = o.url === undefined ? undefined : parseEtcdUrl(o.url)
  const hosts = parsed?.hosts ?? o.hosts
  if (!Array.isArray(hosts) || hosts.length === 0 || !hosts.every((h) => typeof h === 'string' && /^https?:\/\/[^/]+$/.test(h))) {
    throw new InvalidArgumentError(`hosts must be a non-empty array of http://host:port or https://host:port, got ${describe(hosts)}`)
  }
  const namespace = o.namespace ?? parsed?.namespace ?? 'default'
  if (typeof namespace !== 'string' || !NAMESPACE.test(namespace)) {
    throw new InvalidArgumentError(`namespace must be 1-128 letters, digits or . _ ~ -, got ${describe(namespace)}`)
  }
  const auth = o.auth ?? parsed?.auth
  if (auth !== undefined && (typeof auth?.username !== 'string' || typeof auth.password !== 'string')) {
    throw new InvalidArgumentError('auth must be { username, password } strings')
  }
  const connection = await shareConnection({
    hosts,
    auth,
    credentials: o.credentials,
    callTimeout: checkMs(o.callTimeout ?? 2_000, 'callTimeout'),
    timeout: checkMs(o.timeout ?? 15_000, 'timeout'),
  })
  return new NamespaceAdapter(connection, new Layout(namespace), checkMs(o.requestRetention ?? 120_000, 'requestRetention'))
}

/**
 * Creates the adapter for an `etcd://` or `etcds://` URL (used by `connect`);
 * `options.etcd` holds more {@link EtcdAdapterOptions}, for example `credentials`.
 *
 * @example
 * const adapter = await fromUrl('etcd://127.0.0.1:2379/jobs', {})
 */
export function fromUrl(url: string, options: { readonly [option: string]: unknown }): Promise<EtcdAdapter> {
  const extra = options.etcd
  if (extra !== undefined && (typeof extra !== 'object' || extra === null)) throw new InvalidArgumentError('options.etcd must be an object of etcd adapter options')
  return etcdAdapter({ ...(extra as EtcdAdapterOptions | undefined), url })
}

/** A URL without its password, for messages and `zaris serve`. */
export const redact = redactEtcdUrl

class NamespaceAdapter implements EtcdAdapter {
  readonly name = 'etcd'
  readonly capabilities: Capabilities
  readonly #connection: Connection
  readonly #layout: Layout
  readonly #retention: number
  readonly #life = new AdapterLife('etcd')

  constructor(connection: Connection, layout: Layout, retention: number) {
    this.#connection = connection
    this.#layout = layout
    this.#retention = retention
    connection.users++
    this.capabilities = { ttlGranularity: connection.leases.granularity }
  }

  async get(key: string): Promise<Entry | undefined> {
    checkKey(key)
    this.#open()
    const res = await this.#connection.call('get', (o) => this.#connection.client.kv.range(this.#layout.slots(key), o))
    const kv = res.kvs[0] as unknown as RawKv | undefined
    return kv ? (await this.#entries([[key, kv]]))[0] : undefined
  }

  /**
   * A page in the contract's order (UTF-16 code units). etcd orders keys by
   * their UTF-8 bytes, which is the same order unless keys hold characters
   * U+E000..U+FFFF (UTF-8 puts them below U+10000 and up, UTF-16 above): a
   * page is read as a range of etcd's order, and only when it, or `after`,
   * holds such characters is the whole prefix read and sorted instead.
   */
  async list(prefix: string, options?: ListOptions): Promise<ListPage> {
    checkPrefix(prefix)
    const { after, limit } = checkListOptions(options)
    this.#open()
    const range = this.#layout.prefix(prefix)
    const from = after !== undefined && after >= prefix ? after : undefined
    // Keys under the prefix form one range that starts at the prefix: an `after` past it and not in it is past them all.
    if (from !== undefined && !from.startsWith(prefix)) return { entries: [], more: false }
    if (from === undefined || !/[\ud800-\uffff]/.test(from)) {
      const page = await this.#range(from === undefined ? range.key : this.#layout.after(from), range.range_end, limit)
      if (!page.live.some(([key]) => /[\ue000-\uffff]/.test(key))) return { entries: await this.#entries(page.live), more: page.more }
    }
    const all = (await this.#range(range.key, range.range_end, undefined)).live
    const sorted = all.filter(([key]) => from === undefined || key > from).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    const more = limit !== undefined && sorted.length > limit
    return { entries: await this.#entries(more ? sorted.slice(0, limit) : sorted), more }
  }

  /** The live slots of `[key, end)` in etcd's order: the first `limit` (all when undefined), and whether more follow. */
  async #range(key: Buffer, end: Buffer, limit: number | undefined): Promise<{ live: Array<[string, RawKv]>; more: boolean }> {
    const live: Array<[string, RawKv]> = []
    const want = limit === undefined ? Infinity : limit + 1
    for (let from = key; ; ) {
      // Tombstones share the range with the slots: ask for a little more than is left to find.
      const batch = want === Infinity ? 0 : Math.max(16, 2 * (want - live.length))
      const res = await this.#connection.call('list', (o) => this.#connection.client.kv.range({ key: from, range_end: end, limit: batch }, o))
      const kvs = res.kvs as unknown as RawKv[]
      for (const kv of kvs) {
        const part = this.#layout.part(kv.key)
        if (part?.kind === 'slot' && live.push([part.key, kv]) === want) break
      }
      if (live.length >= want || !res.more || kvs.length === 0) break
      from = Buffer.concat([kvs.at(-1)!.key, Buffer.from([0])])
    }
    const more = live.length > (limit ?? Infinity)
    if (more) live.length = limit!
    return { live, more }
  }

  /**
   * One commit, as one etcd transaction. `options.seen` is not used: etcd
   * keeps its revisions through restarts and failovers (and the adapter
   * refuses answers below a revision it has seen).
   */
  async commit(checks: Check[], ops: Op[], options?: CommitOptions): Promise<CommitResult> {
    const plan = planCommit(checks, ops)
    const requestId = checkRequestId(options?.requestId)
    this.#open()
    // Every commit carries a request id, so one sent again after a lost answer is not applied twice.
    return runCommit(this.#connection, this.#layout, plan.checks, plan.ops, requestId ?? randomId(), this.#retention)
  }

  async watch(prefix: string, sink: WatchSink, fromRevision?: number): Promise<Unsubscribe> {
    checkWatchArgs(prefix, sink, fromRevision)
    this.#open()
    // Without a revision: from the newest this process has seen, so a member that lags cannot start the watch in the past.
    const from = fromRevision !== undefined ? fromRevision + 1 : this.#connection.seen > 0 ? this.#connection.seen + 1 : 0
    // From a revision: served at once by a watcher from now when nothing changed meanwhile (watch-start.ts).
    if (fromRevision !== undefined) return this.#life.track(await watchFromPast(this.#connection, this.#layout, prefix, sink, from))
    return this.#life.track(await this.#connection.watches.subscribe(this.#layout, prefix, sink, from, this.#connection.options.timeout))
  }

  async position(): Promise<{ revision: number; epoch: string }> {
    this.#open()
    const res = await this.#connection.call('position', (o) => this.#connection.client.kv.range({ key: this.#layout.entries, count_only: true }, o))
    return { revision: Number(res.header.revision), epoch: this.#connection.clusterId }
  }

  async close(): Promise<void> {
    if (!this.#life.close()) return
    await this.#connection.release()
  }

  /** Entries with the TTL left of their leases (an entry's TTL as written is an upper bound). */
  async #entries(live: Array<[string, RawKv]>): Promise<Entry[]> {
    const left = await this.#connection.leftOf(live.map(([, kv]) => String(kv.lease)))
    return live.map(([key, kv]) => entryOf(key, kv, left.get(String(kv.lease))))
  }

  #open(): void {
    this.#life.assertOpen()
  }
}

function checkMs(n: unknown, name: string): number {
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError(`${name} must be an integer >= 1 (ms), got ${describe(n)}`)
  return n
}
