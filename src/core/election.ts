/**
 * `client.election(name)`: leader election on a lock. The leader is whoever
 * holds the lease at `name`, whose value names the candidate; campaigning is
 * waiting to acquire it, resigning is releasing it, and a leader that stops
 * renewing (a crashed process, a closed tab) loses it at its TTL — at once,
 * where the adapter can tell that its client is gone.
 *
 * The leader's fencing token comes with leadership: pass it (`fence`) to
 * writes that only the leader may make, so a deposed leader that has not yet
 * noticed cannot make them.
 *
 * Events (an `EventTarget`): `elected` when this candidate becomes leader,
 * `deposed` when it stops being leader, `leader` (a `CustomEvent` whose
 * `detail` is the new {@link Leader}, or `null` while nobody leads) on every
 * change seen.
 *
 * This module is the facade an app always carries: it checks its arguments
 * at once and loads the body (election/body.ts, which has the campaign and
 * the rule of one truth per candidate) on the first `campaign` or `observe`,
 * in one chunk with the acquire it campaigns through (taking.ts).
 * Until then nobody campaigned here, so there is no term and no leader seen.
 *
 * @module
 */
import type { Context } from './context'
import { InvalidArgumentError } from './contract/errors'
import type { Lease } from './hold/lease'
import { ElectionBody, type Leader } from './election/body'
import { checkUserKey, checkOptions, checkSignal, checkTtl } from './contract/validate'

export type { Leader }

/** Options of `client.election`. */
export interface ElectionOptions {
  /** The leader's lease TTL in ms: how long a crashed leader can block. Default: the client's `ttl`. */
  ttl?: number
  /** How this candidate is shown to others. Default: the client's id. */
  candidate?: string
}


/**
 * One election, seen from one candidate.
 *
 * @example
 * const election = client.election('leader:sync', { ttl: 5_000, candidate: 'tab-1' })
 * election.addEventListener('elected', () => startSync())
 * await election.campaign()
 */
export class Election extends EventTarget implements AsyncDisposable {
  /** The key the leader's lease lives at. */
  readonly name: string
  /** This candidate's name. */
  readonly candidate: string

  readonly #ctx: Context
  readonly #ttl: number
  #body: ElectionBody | undefined
  #loading: Promise<ElectionBody> | undefined
  #closed = false

  /** @internal Created by `client.election`. */
  constructor(ctx: Context, name: string, rawOptions?: ElectionOptions) {
    super()
    const options = checkOptions<ElectionOptions>(rawOptions)
    this.name = checkUserKey(name, 'name')
    this.#ttl = options.ttl === undefined ? ctx.ttl : checkTtl(options.ttl)
    if (options.candidate !== undefined && (typeof options.candidate !== 'string' || options.candidate === '')) {
      throw new InvalidArgumentError('candidate must be a non-empty string')
    }
    this.candidate = options.candidate ?? ctx.id
    this.#ctx = ctx
  }

  /** True while this candidate leads (its term has not ended by its own deadline). */
  get isLeader(): boolean {
    return this.#body?.isLeader ?? false
  }

  /** The leader as last seen by this candidate, or `undefined`. Kept current once `campaign` or `observe` ran. */
  get leader(): Leader | undefined {
    return this.#body?.leader
  }

  /**
   * The current term's fencing token while this candidate leads.
   *
   * @example
   * await client.put('sync:cursor', 42, { fence: election.term! })
   */
  get term(): Lease<{ candidate: string }> | undefined {
    return this.#body?.term
  }

  /**
   * Resolves when this candidate leads, with its term (a lease whose `signal`
   * aborts when leadership ends). Calling it while leading resolves at once.
   * Resolves `null` when the campaign ends without leadership because the
   * client or this election was closed (as an acquire that did not get the
   * lock resolves `null`), so a campaign nobody awaits never becomes an
   * unhandled rejection on `client.close()`. Rejects with `signal.reason`
   * when your signal aborts it, and with the store's error when the store
   * fails (unreachable, refused).
   *
   * @example
   * const term = await election.campaign({ signal: AbortSignal.timeout(60_000) })
   * if (term) term.signal.addEventListener('abort', stopSync)
   */
  async campaign(options?: { signal?: AbortSignal }): Promise<Lease<{ candidate: string }> | null> {
    const signal = checkSignal(checkOptions<{ signal: AbortSignal }>(options).signal)
    // Closed (before the body loaded, or while it did): the answer is known, and no acquire should start.
    if (this.#closed) return null
    // Once loaded, the campaign starts within this call, as it did before the body was split off.
    const body = this.#body ?? (await this.#load())
    return this.#closed ? null : body.campaign(signal)
  }

  /**
   * Gives up leadership (if held) so another candidate can take over at once.
   * Resolves true if this candidate was leading.
   *
   * @example
   * await election.resign()
   */
  async resign(): Promise<boolean> {
    // No body yet, or still loading: no campaign has won here.
    return this.#body ? this.#body.resign() : false
  }

  /**
   * Every change of leader, starting with the current one (`undefined` while
   * nobody leads). Ends when `signal` aborts or the client closes.
   *
   * @example
   * for await (const leader of election.observe()) console.log('leader:', leader?.candidate)
   */
  async *observe(options?: { signal?: AbortSignal }): AsyncGenerator<Leader | undefined> {
    const signal = checkSignal(checkOptions<{ signal: AbortSignal }>(options).signal)
    yield* (await this.#load()).observe(signal)
  }

  /** Ends a campaign under way (it resolves `null`), resigns and stops observing. */
  async close(): Promise<void> {
    this.#closed = true
    // A body still loading needs nothing: a campaign waiting for it sees the election closed and resolves `null`.
    await this.#body?.close()
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  /** The body, loaded once (again after a failed load: a chunk the network lost may come next time). */
  #load(): Promise<ElectionBody> {
    this.#loading ??= Promise.resolve().then(() => (this.#body = new ElectionBody(this, this.#ctx, this.#ttl)))
    return this.#loading
  }
}
