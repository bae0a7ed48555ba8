/**
 * One etcd client per process and cluster, shared by every adapter on it
 * (as the Redis adapter shares its connection): the gRPC channels, the lease
 * pool, the watch stream, and the calls, each with a deadline and retried on
 * another member while the cluster cannot answer.
 *
 * Failover: etcd3 sends each call to a member of the endpoints list and,
 * when a member cannot be reached, sends it again to another. A call sent to
 * a paused or partitioned member would wait forever; each call so has a
 * deadline (`callTimeout`), after which it is sent again, elsewhere, until
 * `timeout` has passed. Sending a commit again is safe: its request key makes
 * a commit that was applied answer instead of apply twice (see `txn.ts`).
 *
 * @module
 */
import type { Etcd3 as Etcd3Client, IOptions, ITxnRequest, ITxnResponse } from 'etcd3'
import { systemClock, sleep } from '../../core/time/clock'
import { RevisionExhaustedError, UnavailableError } from '../../core/contract/errors'
import { LeasePool } from './leases'
import { etcdError, isTransient, loadEtcd3 } from './load'
import { WatchHub, type WatchStream } from './watch'

export interface ConnectionOptions {
  hosts: string[]
  auth?: { username: string; password: string }
  /** TLS material for `etcds://` (etcd3's `credentials`). */
  credentials?: IOptions['credentials']
  /** How long one call may take on one member before it is sent to another (ms). */
  callTimeout: number
  /** How long an operation keeps trying while the cluster cannot answer (ms). */
  timeout: number
}

export class Connection {
  readonly client: Etcd3Client
  readonly leases: LeasePool
  readonly watches: WatchHub
  readonly options: ConnectionOptions
  /** The cluster's id, the same from every member: a node's epoch. */
  clusterId = ''
  /** The highest revision etcd has answered with: it must never go back. */
  #seen = 0
  /** Leases of other processes: when each is sure to have lived until (at most 1 000 remembered). */
  readonly #foreign = new Map<string, number>()
  users = 0
  /** Its last user let it go: a new adapter must open a new connection. */
  closed = false
  readonly #forget: () => void

  constructor(client: Etcd3Client, options: ConnectionOptions, forget: () => void) {
    this.client = client
    this.options = options
    this.#forget = forget
    this.leases = new LeasePool(async (seconds) => {
      const g = await this.call('lease grant', (o) => this.client.leaseClient.leaseGrant({ TTL: seconds }, o))
      return { id: String(g.ID), ttl: Number(g.TTL) }
    })
    this.watches = new WatchHub(() => this.client.watchClient.watch() as unknown as Promise<WatchStream>)
  }

  /** Runs `fn` with a per-call deadline, again on another member while etcd cannot answer, until `timeout`. */
  async call<T extends { header?: { revision?: string; cluster_id?: string } }>(what: string, fn: (options: { deadline: Date }) => Promise<T>): Promise<T> {
    const { callTimeout, timeout } = this.options
    const start = systemClock.now()
    let pause = 20
    for (;;) {
      try {
        const res = await fn({ deadline: new Date(Date.now() + callTimeout) })
        this.#saw(res.header)
        return res
      } catch (err) {
        if (!isTransient(err) || systemClock.now() - start + pause > timeout) throw etcdError(err, what)
        await sleep(systemClock, pause)
        pause = Math.min(pause * 2, 500)
      }
    }
  }

  txn(what: string, req: ITxnRequest): Promise<ITxnResponse> {
    return this.call(what, (o) => this.client.kv.txn(req, o))
  }

  /**
   * Milliseconds each lease is sure to live: the pool's own leases from what
   * it knows, others (granted by other processes) asked of etcd once and
   * remembered; 0 for a lease etcd no longer has.
   */
  async leftOf(ids: Iterable<string>): Promise<Map<string, number | undefined>> {
    const out = new Map<string, number | undefined>()
    const ask: string[] = []
    for (const id of new Set(ids)) {
      if (id === '0') continue
      const left = this.leases.left(id) ?? this.#foreignLeft(id)
      if (left === undefined) ask.push(id)
      else out.set(id, left)
    }
    await Promise.all(
      ask.map(async (id) => {
        const sentAt = systemClock.now()
        const r = await this.call('lease time to live', (o) => this.client.leaseClient.leaseTimeToLive({ ID: id }, o))
        // etcd answers whole seconds, rounded down: a lower bound.
        const ttl = Number(r.TTL)
        out.set(id, Math.max(0, ttl * 1000))
        if (ttl >= 0) this.#rememberForeign(id, sentAt + ttl * 1000)
      }),
    )
    return out
  }

  #foreignLeft(id: string): number | undefined {
    const end = this.#foreign.get(id)
    return end === undefined ? undefined : Math.max(0, end - systemClock.now())
  }

  #rememberForeign(id: string, end: number): void {
    if (this.#foreign.size >= 1_000) this.#foreign.delete(this.#foreign.keys().next().value!)
    this.#foreign.set(id, end)
  }

  get seen(): number {
    return this.#seen
  }

  #saw(header: { revision?: string; cluster_id?: string } | undefined): void {
    if (!header) return
    if (header.cluster_id) this.clusterId = String(header.cluster_id)
    const revision = Number(header.revision ?? 0)
    if (revision === 0) return
    // etcd counts revisions in 64 bits; past 2^53 - 1 they cannot be told apart as JavaScript numbers.
    if (revision >= Number.MAX_SAFE_INTEGER) {
      throw new RevisionExhaustedError(`etcd is at revision ${header.revision}, beyond the largest safe integer: zaris cannot keep its revisions in order; move the data to a new cluster`)
    }
    // Linearizable reads and transactions answer with at least every revision committed before them.
    if (revision < this.#seen) {
      throw new UnavailableError(`etcd answered at revision ${revision}, below ${this.#seen} it answered before: the cluster lost its data or was replaced`)
    }
    this.#seen = revision
  }

  async release(): Promise<void> {
    if (--this.users > 0) return
    this.closed = true
    this.#forget()
    this.watches.close()
    this.client.close()
  }
}

const COCKATIEL = 'cockatiel'
type Cockatiel = typeof import('cockatiel')

const shared = new Map<string, Promise<Connection>>()

/** The connection to these members with these options, opened (and probed) on first use. */
export async function shareConnection(options: ConnectionOptions): Promise<Connection> {
  const key = JSON.stringify({ ...options, credentials: options.credentials ? Math.random() : undefined })
  let entry = shared.get(key)
  if (!entry) {
    entry = open(options, () => {
      if (shared.get(key) === entry) shared.delete(key)
    })
    shared.set(key, entry)
    entry.catch(() => shared.delete(key))
  }
  const connection = await entry
  // Its last user let it go while this call waited: open a new one.
  if (connection.closed) return shareConnection(options)
  // The adapter counts itself as a user when it is made, in the same tick.
  return connection
}

async function open(options: ConnectionOptions, forget: () => void): Promise<Connection> {
  const { Etcd3, isRecoverableError } = await loadEtcd3()
  // etcd3's own policy library; if a strict installer hides it, etcd3's defaults stay.
  const lib = (await import(/* @vite-ignore */ /* webpackIgnore: true */ COCKATIEL).catch(() => undefined)) as Cockatiel | undefined
  const io: IOptions = {
    hosts: options.hosts,
    dialTimeout: options.callTimeout,
    // Retries are the connection's own (above), with a deadline per call; a member that failed
    // three calls in a row is skipped for a second, not etcd3's default five.
    faultHandling: lib
      ? {
          global: lib.noop,
          host: () => lib.circuitBreaker(lib.handleWhen(isRecoverableError), { halfOpenAfter: 1_000, breaker: new lib.ConsecutiveBreaker(3) }),
        }
      : undefined,
  }
  if (options.auth) io.auth = options.auth
  if (options.credentials) io.credentials = options.credentials
  const connection = new Connection(new Etcd3(io), options, forget)
  try {
    await connection.leases.probe()
  } catch (err) {
    connection.client.close()
    throw err instanceof UnavailableError ? new UnavailableError(`cannot reach etcd at ${options.hosts.join(', ')}: ${err.message}`, { cause: err }) : err
  }
  connection.users = 0
  return connection
}
