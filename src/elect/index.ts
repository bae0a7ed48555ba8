/**
 * zaris/elect: leader election among the tabs of an origin, and nothing
 * else — for a page that only elects. No `Client`, no acquire machine, wait
 * line, reaper or change feed: the browser's Web Locks (`navigator.locks`)
 * keep the line and free a closed tab's place at once, one IndexedDB commit
 * per term keeps the fencing token (it rises with every term), the TTL and
 * the new-life rule, and BroadcastChannel carries the news. A candidate
 * leads from the Web Lock's grant, its term's token following (see
 * {@link TabElection}).
 *
 * It writes the records `client.election(name)` writes over
 * `zaris://idb/<namespace>`, through the IndexedDB adapter's own code, and
 * asks for the same Web Lock: tabs using the full client and tabs using this
 * entry on the same namespace and name take turns in one election.
 *
 * Where `navigator.locks` is missing (an insecure page, an old browser), a
 * campaign waits for the key to be free and takes it in one commit, as the
 * full client does without Web Locks: a closed leader's term then ends at
 * its TTL rather than at once.
 *
 * @module
 */
import type { Value } from '../core/contract/adapter'
import { FencedError, InvalidArgumentError, UnsupportedError } from '../core/contract/errors'
import { randomId } from '../core/contract/ids'
import { checkKey, checkOptions, checkSignal, checkTtl, checkUserKey, checkValue } from '../core/contract/validate'
import { expired } from '../adapters/kit/write'
import type { LogRecord } from '../adapters/indexeddb/schema'
import { EXPIRED_GRACE, win } from './campaign'
import { EarlyLead } from './early'
import { shareStore, unshareStore, type TermStore } from './store'
import { Running, type EndCode, type Leader, type Term } from './term'

export type { Term, EndCode, Leader } from './term'

/** Options of {@link election}. */
export interface TabElectionOptions {
  /** The store: the `zaris://idb/<namespace>` a full client would connect to. Default `default`. */
  namespace?: string
  /** The term's TTL in ms: how long a frozen or hung leader can keep leading. Default 30 000. */
  ttl?: number
  /** How this candidate is shown to others. Default: its id. */
  candidate?: string
  /** The owner id its term is written with (a full client's `id`). Default: random. */
  id?: string
}

/**
 * An election among the tabs of an origin over `zaris://idb/<namespace>`.
 *
 * @example
 * import { election } from 'zaris/elect'
 * const leader = election('leader:sync', { namespace: 'app', ttl: 10_000 })
 * const term = await leader.campaign()
 * await leader.put('sync:cursor', 42, { fence: term! }) // refused once a later term began
 */
export function election(name: string, options?: TabElectionOptions): TabElection {
  return new TabElection(name, options)
}

/**
 * One election, seen from one candidate: `campaign`, `resign`, `observe`,
 * and events `elected`, `deposed` and `leader` (a `CustomEvent` whose
 * `detail` is the {@link Leader}, or `null` while nobody leads).
 *
 * `elected` fires when this candidate starts leading and `deposed` (a
 * `CustomEvent` whose `detail` is the {@link EndCode}) when it stops; they
 * alternate. A candidate leads as soon as the browser grants it the
 * election's Web Lock, if the key is then in a state its take would take
 * over anyway (the last leader closed, resigned or expired): `elected`
 * fires and `isLeader` is true at the grant, before the term's commit lands
 * (a closed leader's successor leads ~2 ms after the close; the commit,
 * overlapping the closed tab's teardown, takes 4-40 ms more). The term — its
 * fencing token — follows: `term` is `undefined` until it lands, and
 * `campaign()` resolves with it then, so a fenced write waits for it
 * (`await e.campaign()`). Should the commit not land within ~80 ms, or be
 * refused, or the lock be taken from this tab meanwhile, that early lead
 * ends at once (`deposed`: `EXPIRED`, `LOST`, `STOLEN`) and the campaign
 * goes on. Why ~80 ms: a tab taking the key without the Web Lock waits
 * 100 ms after seeing it free or expired (a holder frozen past its TTL
 * aside), so nobody else leads within that bound of the grant.
 *
 * @example
 * const e = election('leader:sync', { namespace: 'app' })
 * e.addEventListener('elected', () => startSync()) // at the grant
 * e.addEventListener('deposed', () => stopSync())
 * const term = await e.campaign() // the token, for fenced writes
 */
export class TabElection extends EventTarget implements AsyncDisposable {
  /** The key of the term's entry. */
  readonly name: string
  /** This candidate's name. */
  readonly candidate: string
  /** The owner id this candidate's terms are written with. */
  readonly id: string
  /** The store: `zaris://idb/<namespace>`'s IndexedDB database. */
  readonly namespace: string
  readonly #ttl: number
  #store: TermStore | undefined
  #term: Running | undefined
  /** Leading on the grant, before the term's token came. */
  #early: EarlyLead | undefined
  #campaign: Promise<Term | null> | undefined
  /** Aborts the campaign under way when the candidate resigns while leading on the grant. */
  #resigned: AbortController | undefined
  #closer = new AbortController()
  #leader: Leader | undefined
  #seen = 0
  #unlisten: (() => void) | undefined
  /** The token of the last take this election's campaign made: an entry of this id with another token is another writer's. */
  #took: number | undefined
  #expiry: ReturnType<typeof setTimeout> | undefined

  constructor(name: string, rawOptions?: TabElectionOptions) {
    super()
    const g = globalThis as { indexedDB?: unknown; BroadcastChannel?: unknown }
    if (!g.indexedDB || !g.BroadcastChannel) {
      throw new UnsupportedError('zaris/elect needs IndexedDB and BroadcastChannel (a page): elsewhere, use client.election() from zaris')
    }
    const options = checkOptions<TabElectionOptions>(rawOptions)
    this.name = checkUserKey(name, 'name')
    this.namespace = checkKey(options.namespace ?? 'default', 'namespace')
    this.#ttl = options.ttl === undefined ? 30_000 : checkTtl(options.ttl)
    this.id = options.id === undefined ? randomId() : checkKey(options.id, 'id')
    if (options.candidate !== undefined && (typeof options.candidate !== 'string' || options.candidate === '')) {
      throw new InvalidArgumentError('candidate must be a non-empty string')
    }
    this.candidate = options.candidate ?? this.id
  }

  /** True while this candidate leads: from the grant (see the class doc), then while its term has not reached its own deadline. */
  get isLeader(): boolean {
    return !!(this.#term?.held || this.#early?.held)
  }

  /** The leader as last seen, or `undefined`; kept current once `campaign` or `observe` ran. */
  get leader(): Leader | undefined {
    return this.#leader
  }

  /** The current term while this candidate leads; `undefined` while it leads on the grant and the token has not come yet. */
  get term(): Term | undefined {
    return this.#term?.held ? this.#term : undefined
  }

  /**
   * Resolves with the term once its token is known (at once while it
   * leads with one; after `elected` when this candidate leads on the
   * grant); `null` if the election is closed, or this candidate resigns
   * while leading on the grant, first; rejects with `signal.reason` when
   * `signal` aborts.
   *
   * @example
   * const term = await e.campaign({ signal: AbortSignal.timeout(60_000) })
   * term?.signal.addEventListener('abort', stopSync)
   */
  async campaign(options?: { signal?: AbortSignal }): Promise<Term | null> {
    const signal = checkSignal(checkOptions<{ signal: AbortSignal }>(options).signal)
    if (this.#closer.signal.aborted) return null
    if (this.#term?.held) return this.#term
    return (this.#campaign ??= this.#run(signal).finally(() => (this.#campaign = undefined)))
  }

  async #run(signal: AbortSignal | undefined): Promise<Term | null> {
    const store = this.#open()
    this.#observe()
    const value = { candidate: this.candidate }
    const resigned = (this.#resigned = new AbortController())
    const stop = AbortSignal.any([resigned.signal, this.#closer.signal, ...(signal ? [signal] : [])])
    let over = false
    // Only while this campaign runs: a caller's signal aborting later must not end a later campaign's lead.
    stop.addEventListener('abort', () => over || this.#early?.end(this.#closer.signal.aborted ? 'CLOSED' : 'RELEASED'))
    const lead = {
      begin: () => {
        this.#early = new EarlyLead(EXPIRED_GRACE, (code) => this.dispatchEvent(new CustomEvent('deposed', { detail: code })))
        this.dispatchEvent(new Event('elected'))
      },
      lapse: (code: EndCode) => this.#early?.end(code),
    }
    let won
    try {
      won = await win({ store, name: this.name, owner: this.id, value, ttl: this.#ttl, signal: stop, lead })
    } catch (err) {
      over = true
      this.#early?.end('LOST')
      if ((this.#closer.signal.aborted || resigned.signal.aborted) && !signal?.aborted) return null
      throw err
    }
    over = true
    // Led on the grant until now: the lead goes on into the term, told once.
    const leading = this.#early?.end() ?? false
    this.#early = undefined
    const term = new Running(store, this.name, this.id, value, this.#ttl, won, (t) => this.#ended(t))
    this.#term = term
    this.#setLeader({ candidate: this.candidate, token: term.token }, term.revision)
    if (!leading) this.dispatchEvent(new Event('elected'))
    return term
  }

  /**
   * Gives up leadership (if held), so the next candidate takes over at once;
   * true if this candidate was leading.
   *
   * @example
   * await e.resign()
   */
  async resign(): Promise<boolean> {
    if (this.#early?.held) {
      // The gate goes at once; the campaign answers null once its take landed (and is undone).
      // (Leading on the grant is only ever inside a campaign: both are set.)
      this.#resigned!.abort()
      await this.#campaign!.catch(() => {})
      return true
    }
    const term = this.#term
    return term ? term.resign() : false
  }

  /**
   * Writes `value` at `key` only if `fence` (a term of this election, or a
   * full client's lock or lease) still holds its token; rejects with
   * `FencedError` otherwise, and nothing is written.
   *
   * @example
   * await e.put('sync:cursor', 42, { fence: e.term! })
   */
  async put(key: string, value: Value, options: { fence: { key: string; token: number } }): Promise<void> {
    checkUserKey(key)
    const fence = checkOptions<{ fence: { key: string; token: number } }>(options).fence
    if (typeof fence !== 'object' || fence === null || typeof fence.token !== 'number') throw new InvalidArgumentError('fence must be a term (an object with key and token)')
    const v = checkValue(value)
    const r = await this.#open().commit([{ key: checkUserKey(fence.key, 'fence.key'), created: fence.token }], [{ type: 'set', key, value: structuredClone(v) }])
    if (!r.ok) throw new FencedError(`put ${JSON.stringify(key)} refused: ${JSON.stringify(fence.key)} is no longer held with token ${fence.token}`)
  }

  /**
   * Every change of leader, starting with the current one; ends when
   * `signal` aborts or the election closes.
   *
   * @example
   * for await (const leader of e.observe()) console.log('leader:', leader?.candidate)
   */
  async *observe(options?: { signal?: AbortSignal }): AsyncGenerator<Leader | undefined> {
    const signal = checkSignal(checkOptions<{ signal: AbortSignal }>(options).signal)
    this.#observe()
    const stop = signal ? AbortSignal.any([signal, this.#closer.signal]) : this.#closer.signal
    const queue: Array<Leader | undefined> = []
    let wake: (n?: number) => void = () => {}
    // The event says nobody with `null` (a CustomEvent's detail is never undefined); observe says it with `undefined` throughout.
    const onLeader = (ev: Event) => wake(queue.push((ev as CustomEvent<Leader | null>).detail ?? undefined))
    const onStop = () => wake()
    this.addEventListener('leader', onLeader)
    stop.addEventListener('abort', onStop)
    try {
      await this.#read()
      // A change heard during the read is already in `leader`: queued too, it would be yielded twice.
      queue.length = 0
      yield this.#leader
      while (!stop.aborted) {
        if (queue.length > 0) yield queue.shift()
        else await new Promise<void>((r) => (wake = () => r()))
      }
    } finally {
      this.removeEventListener('leader', onLeader)
      stop.removeEventListener('abort', onStop)
    }
  }

  /** Ends a campaign under way (it resolves `null`), resigns and stops observing. */
  async close(): Promise<void> {
    if (this.#closer.signal.aborted) return
    this.#closer.abort()
    await this.#campaign?.catch(() => {})
    await this.resign()
    this.#unlisten?.()
    clearTimeout(this.#expiry)
    if (this.#store) unshareStore(this.#store)
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close()
  }

  #open(): TermStore {
    return (this.#store ??= shareStore(this.namespace))
  }

  /** Keeps `leader` current from the store's news, once. */
  #observe(): void {
    if (this.#unlisten) return
    this.#unlisten = this.#open().listen((records, local) => (records.length === 0 ? void this.#read() : this.#heard(records, local)))
    void this.#read()
  }

  /** Reads the entry: the leader now (an expired entry names nobody). */
  async #read(): Promise<void> {
    try {
      const seen = this.#seen
      const e = await this.#open().read(this.name)
      // Something newer was heard while the read was under way: it stands.
      if (this.#seen > seen) return
      if (!e || expired(e, Date.now())) return this.#setLeader(undefined, this.#seen)
      this.#setLeader(this.#vouch(leaderOf(e.value, e.created), e.owner), e.revision, e.expiresAt)
    } catch {
      // Closed, or the store failed: `leader` stays as it was.
    }
  }

  #heard(records: LogRecord[], local?: boolean): void {
    for (const r of records) {
      for (const ev of r.events) {
        if (ev.key !== this.name || r.revision <= this.#seen) continue
        // This candidate's own take (this page's, of its id, while it campaigns) is told by its campaign, which sets the term first.
        // Another tab of the same id is another candidate: its takes are news.
        if (ev.type === 'put' && local && ev.owner === this.id && this.#campaign && this.#term?.token !== ev.created) {
          this.#took = ev.created
          continue
        }
        // A delete or an expiry has no value: it names nobody.
        this.#setLeader(this.#vouch(leaderOf(ev.value, ev.created!), ev.owner), r.revision, ev.ttl !== undefined ? Date.now() + ev.ttl : undefined)
      }
    }
  }

  /** An entry this candidate wrote names it only while that term lasts here (another tab of its id names itself). */
  #vouch(leader: Leader | undefined, owner: string | undefined): Leader | undefined {
    if (!leader || owner !== this.id || leader.token !== this.#took) return leader
    return this.#term?.held && this.#term.token === leader.token ? leader : undefined
  }

  #setLeader(leader: Leader | undefined, revision: number, expiresAt?: number): void {
    if (revision < this.#seen) return
    this.#seen = revision
    clearTimeout(this.#expiry)
    // Nobody writes an expiry here: look again when the leader's entry would have expired.
    if (expiresAt !== undefined) this.#expiry = setTimeout(() => void this.#read(), Math.max(0, expiresAt - Date.now()) + 5)
    const before = this.#leader
    // A token is one entry's life, and the entry names its candidate: the same token is the same leader.
    if (before?.token === leader?.token) return
    this.#leader = leader
    this.dispatchEvent(new CustomEvent('leader', { detail: leader }))
  }

  #ended(term: Running): void {
    // (An ended term stays as #term until the next: every use asks whether it is held.)
    // A token is one entry's life: the leader named by it is this term's.
    if (this.#leader?.token === term.token) {
      this.#leader = undefined
      this.dispatchEvent(new CustomEvent('leader'))
    }
    this.dispatchEvent(new CustomEvent('deposed', { detail: (term.signal.reason as { code: EndCode }).code }))
  }
}

function leaderOf(value: Value | undefined, created: number): Leader | undefined {
  const candidate = typeof value === 'object' && value !== null && !Array.isArray(value) ? value.candidate : undefined
  return typeof candidate === 'string' ? { candidate, token: created } : undefined
}
