/**
 * A term won by the election-only entry, kept while it lasts: renewed every
 * third of its TTL (the entry keeps its life, so the token stays), ended at
 * its own deadline (counted from before the take's request, minus the drift
 * margin every zaris hold keeps) unless renewed, and at once when its gate
 * is stolen (a waiter took over after the TTL, while this tab was frozen) or
 * the key is seen to carry another life.
 *
 * @module
 */
import { HoldEndedError } from '../core/contract/errors'
import type { Value } from '../core/contract/adapter'
import { driftMargin as drift } from '../core/context'
import type { TermStore } from './store'
import type { WebLockGate } from '../adapters/indexeddb/gate'

/** The current leader of an election (as `client.election` names it). */
export interface Leader {
  /** The candidate name of the leader. */
  candidate: string
  /** The leader's fencing token: it rises with every new term. */
  token: number
}

/** The leader's term as the election-only entry hands it out: a fence for writes (`{ key, token }`, as a full client's lease). */
export interface Term {
  /** The election's key. */
  readonly key: string
  /** The fencing token: the revision that started this term; higher than every earlier term's. */
  readonly token: number
  /** Aborts when the term ends; its reason is a `HoldEndedError` whose `code` says why. */
  readonly signal: AbortSignal
}

/** A won term: the token, the revision of the take, when its request was sent (`performance.now()`), and the gate it keeps (none without Web Locks). */
export interface Won {
  token: number
  revision: number
  sentAt: number
  gate: WebLockGate | undefined
}

/** How a resign leaves the key: the term's store, key, token, last write's revision and gate (see ../tabs/leave). */
export type Leave = (store: TermStore, key: string, token: number, written: number, gate: WebLockGate | undefined) => Promise<void>

/** Why a term, or a lead on the grant before its term (see `TabElection`), ended: the `detail` of `deposed`. */
export type EndCode = 'RELEASED' | 'EXPIRED' | 'STOLEN' | 'LOST' | 'CLOSED'

/** The running term: its timers, its gate and its end. */
export class Running implements Term {
  readonly key: string
  readonly token: number
  readonly revision: number
  readonly #controller = new AbortController()
  readonly signal = this.#controller.signal
  readonly #store: TermStore
  readonly #won: Won
  readonly #owner: string
  readonly #value: Value
  readonly #ttl: number
  readonly #onEnd: (term: Running) => void
  #deadline: number
  /** The revision of this term's last write (its take, then each renewal). */
  #written: number
  #deadlineTimer: ReturnType<typeof setTimeout> | undefined
  #renewTimer: ReturnType<typeof setTimeout> | undefined
  readonly #unlisten: () => void

  constructor(store: TermStore, key: string, owner: string, value: Value, ttl: number, won: Won, onEnd: (term: Running) => void) {
    this.#store = store
    this.key = key
    this.token = won.token
    this.revision = won.revision
    this.#written = won.revision
    this.#won = won
    this.#owner = owner
    this.#value = value
    this.#ttl = ttl
    this.#onEnd = onEnd
    this.#deadline = won.sentAt + ttl - drift(ttl)
    won.gate?.onLost(() => this.end('STOLEN'))
    // Another life at the key (a waiter took over past the TTL) ends this term before its next renewal says so.
    this.#unlisten = store.listen((records) => {
      for (const r of records) {
        if (r.revision <= this.revision) continue
        for (const ev of r.events) if (ev.key === key && (ev.type !== 'put' || ev.created !== this.token)) return this.end(ev.type === 'put' ? 'STOLEN' : 'EXPIRED')
      }
    })
    this.#arm(won.sentAt)
  }

  get held(): boolean {
    return !this.signal.aborted && performance.now() < this.#deadline
  }

  /** Ends the term here: stops renewing, lets the gate go (the next in line takes over at once), aborts the signal. */
  end(code: EndCode): void {
    if (this.signal.aborted) return
    clearTimeout(this.#deadlineTimer)
    clearTimeout(this.#renewTimer)
    this.#unlisten()
    this.#won.gate?.release()
    this.#controller.abort(new HoldEndedError(code, `the term ${this.token} of ${JSON.stringify(this.key)} ended: ${code.toLowerCase()}`))
    this.#onEnd(this)
  }

  /**
   * Resigns: lets the gate go first (a waiting tab takes over in one commit),
   * then deletes the entry if it still carries this term — or, with `leave`
   * (zaris/tabs' ../tabs/leave), leaves it to that tab's take.
   */
  async resign(leave?: Leave): Promise<boolean> {
    const was = this.held
    this.end('RELEASED')
    try {
      if (leave) await leave(this.#store, this.key, this.token, this.#written, this.#won.gate)
      else await this.#store.commit([{ key: this.key, created: this.token }], [{ type: 'delete', key: this.key }])
    } catch {
      // Closed or refused: the entry ends at its TTL, or when the next tab takes it over.
    }
    return was
  }

  #arm(sentAt: number): void {
    clearTimeout(this.#deadlineTimer)
    this.#deadlineTimer = setTimeout(() => this.end('EXPIRED'), Math.max(0, this.#deadline - performance.now()))
    clearTimeout(this.#renewTimer)
    this.#renewTimer = setTimeout(() => void this.#renew(), Math.max(0, sentAt + this.#ttl / 3 - performance.now()))
  }

  async #renew(): Promise<void> {
    if (this.signal.aborted) return
    const sentAt = performance.now()
    try {
      const r = await this.#store.commit([{ key: this.key, created: this.token }], [{ type: 'set', key: this.key, value: this.#value, ttl: this.#ttl, owner: this.#owner }])
      if (this.signal.aborted) return
      if (!r.ok) return this.end('LOST')
      this.#written = r.revision
      this.#deadline = sentAt + this.#ttl - drift(this.#ttl)
      this.#arm(sentAt)
    } catch {
      // The store failed this time: try again soon; the deadline stands meanwhile.
      if (!this.signal.aborted) this.#renewTimer = setTimeout(() => void this.#renew(), Math.min(1_000, this.#ttl / 10))
    }
  }
}
