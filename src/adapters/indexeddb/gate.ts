/**
 * Gates on the Web Locks API (capability `gates`, see the adapter contract):
 * the gate of key `k` in namespace `ns` is the Web Lock `zaris:ns:gate:k`,
 * which a client holds for as long as its hold of `k` lives. The browser's
 * lock manager then does what it does best for the tabs of an origin —
 * exclusion, the wait line in request order, shared and exclusive modes,
 * and freeing a closed or crashed tab's locks at once — while IndexedDB
 * keeps what Web Locks cannot: the token that rises with every holder,
 * TTLs, fenced writes, the data and the watch history.
 *
 * Facts of Chromium this relies on (real frozen tabs in test/indexeddb/frozen.test.ts): a frozen
 * page keeps the Web Locks it holds, and is granted the ones it waits for
 * (its callback runs only when it resumes); `steal` takes a lock from a
 * frozen page at once, and that page learns it (the request's promise
 * rejects) when it resumes.
 *
 * A page being discarded (`pagehide`, not kept in the back/forward cache)
 * lets go of every gate it holds at once: the next client in line is
 * granted it within a few milliseconds and takes the key over, instead of
 * waiting for the browser to tear the page down.
 *
 * @module
 */
import type { Gate, GateOptions } from '../../core/contract/adapter'
import { UnavailableError } from '../../core/contract/errors'
import type { ThroughGate } from './transactions'

/** The gates this page holds: what `pagehide` lets go. */
const holding = new Set<WebLockGate>()
/** How many requests of this page ask for or hold each gate (by Web Lock name), until released. */
const asking = new Map<string, number>()

/**
 * Whether a client of this page asks for or holds the gate of `key`: it
 * takes the key over a closed tab's entry as soon as it is granted, so the
 * reaper (./reaper) leaves that entry to it rather than put a transaction of
 * its own in front of that take.
 */
export function asked(namespace: string, key: string): boolean {
  return asking.has(gateName(namespace, key))
}
function onPageHide(ev: Event): void {
  // Kept in the back/forward cache: the page may come back, with its holds.
  if ((ev as PageTransitionEvent).persisted) return
  for (const gate of [...holding]) gate.release()
}

/** The Web Lock name of `key`'s gate in `namespace`. */
export function gateName(namespace: string, key: string): string {
  return `zaris:${namespace}:gate:${key}`
}

export class WebLockGate implements Gate {
  readonly key: string
  readonly mode: 'exclusive' | 'shared'
  readonly granted: Promise<boolean>
  readonly #locks: LockManager
  readonly #namespace: string
  readonly #name: string
  readonly #through: ThroughGate
  /** Withdraws the request while it waits in line. */
  readonly #withdraw = new AbortController()
  #held = false
  #done = false
  readonly #released: ((gate: WebLockGate) => void) | undefined
  /** Settles when every request of this gate is over: granted and released, withdrawn, denied or stolen. */
  #settled: Promise<unknown> = Promise.resolve()
  #letGo: (() => void) | undefined
  #onLost: (() => void) | undefined
  #lost = false

  /** `released` is told once, when the gate is let go (its store closes it with the store). */
  constructor(locks: LockManager, namespace: string, key: string, options: GateOptions, released?: (gate: WebLockGate) => void) {
    this.#locks = locks
    this.#released = released
    this.#namespace = namespace
    this.#name = gateName(namespace, key)
    const mode = options.mode ?? 'exclusive'
    this.key = key
    this.mode = mode
    this.#through = { key, mode: mode === 'shared' ? 's' : 'x', held: () => this.#held }
    // A page's, not a worker's (which has no pagehide); one listener, since the same function is added once.
    if ((globalThis as { document?: unknown }).document) addEventListener('pagehide', onPageHide)
    asking.set(this.#name, (asking.get(this.#name) ?? 0) + 1)
    // The Web Locks API takes no signal beside `ifAvailable` or `steal`: those are answered at once anyway.
    const once = options.ifAvailable === true || options.steal === true
    this.granted = this.#request({ mode, ifAvailable: options.ifAvailable === true, steal: options.steal === true, ...(once ? {} : { signal: this.#withdraw.signal }) })
  }

  get held(): boolean {
    return this.#held
  }

  async steal(): Promise<void> {
    if (this.#held) return
    this.#withdraw.abort()
    // Granted before it could be withdrawn: held already, and a steal would take it from ourselves.
    if (await this.granted) return
    if (this.#done || !(await this.#request({ mode: 'exclusive', steal: true }))) {
      throw new UnavailableError(`the gate of ${JSON.stringify(this.#through.key)} was released before it could be stolen`)
    }
  }

  onLost(fn: () => void): void {
    if (this.#lost) fn()
    else this.#onLost = fn
  }

  async taken(): Promise<boolean> {
    try {
      // Once our own request is over (released, or never granted), the lock manager shows only the others'.
      // Held is enough: a request waits only while another holds the lock.
      await this.#settled
      return (await this.#locks.query()).held!.some((l) => l.name === this.#name)
    } catch {
      return false
    }
  }

  /** What a commit made through `gate` tells the store of namespace `namespace`: nothing, unless it is a gate of that store's. */
  static through(gate: Gate | undefined, namespace: string): ThroughGate | undefined {
    return gate instanceof WebLockGate && gate.#namespace === namespace ? gate.#through : undefined
  }

  release(): void {
    if (this.#done) return
    this.#done = true
    this.#released?.(this)
    const n = (asking.get(this.#name) ?? 1) - 1
    if (n > 0) asking.set(this.#name, n)
    else asking.delete(this.#name)
    this.#held = false
    holding.delete(this)
    this.#withdraw.abort()
    const letGo = this.#letGo
    this.#letGo = undefined
    letGo?.()
  }

  /** One Web Locks request; resolves whether it was granted (and is held until {@link release}). */
  #request(options: LockOptions): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const request = this.#locks
        .request(this.#name, options, (lock) => {
          // Denied (`ifAvailable`), or released before it was granted: let go at once.
          if (!lock || this.#done) return resolve(false)
          this.#held = true
          holding.add(this)
          resolve(true)
          return new Promise<void>((r) => (this.#letGo = r))
        })
        .catch(() => {
          // Withdrawn while it waited, or, once held, stolen by another client. Held, it is this request's
          // hold: a steal asks only once the request it withdrew is over.
          if (this.#held) this.#lose()
          resolve(false)
        })
      const before = this.#settled
      this.#settled = Promise.all([before, request])
    })
  }

  #lose(): void {
    this.#held = false
    this.#lost = true
    this.#letGo = undefined
    holding.delete(this)
    const fn = this.#onLost
    this.#onLost = undefined
    fn?.()
  }
}
