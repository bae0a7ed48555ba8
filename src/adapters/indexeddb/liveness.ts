/**
 * Which clients are alive, from the Web Locks API: a live client holds a
 * lock named for its id in `shared` mode for as long as its adapter is open,
 * and the browser releases it when the tab closes or crashes. Asking for the
 * same name in `exclusive` mode is then granted exactly when no live client
 * of that id is left: that grant is the news that the owner is gone.
 *
 * Shared mode lets two clients of one id (an `id` given to `connect` in two
 * tabs) both count; the prober, once granted, checks that no registration is
 * queued behind it (one that arrived while it waited) before it believes it.
 *
 * A tab that is closing says so first: on `pagehide` with `persisted` false
 * (the page is being discarded, not kept in the back/forward cache) and when
 * an adapter closes, it posts "client X, registration N, is gone" on the
 * namespace's liveness BroadcastChannel, which the other tabs hear well
 * before the browser frees the dying tab's locks. The Web Lock stays the
 * backstop for crashes and frozen pages, which announce nothing.
 *
 * An announcement names an id, and ids can be reused (an `id` given to
 * `connect` again after a reload, or in two tabs at once), so hearing one is
 * not enough: each registration also holds an exclusive lock of its own
 * (`…:instance:<nonce>:<id>`), and a waiter believes announcements only once
 * they cover every registration of that id that `locks.query()` showed
 * after it saw the entry it wants to take over. A client registers before
 * it writes, so the writer of that entry is among them; a registration that
 * comes later did not write it (and if it writes the key, the takeover's
 * revision check fails).
 *
 * @module
 */
import { ClosedError } from '../../core/contract/errors'
import { randomHex } from '../../core/contract/ids'

/** How long a probe stays queued after its last waiter left, in ms. */
const LINGER = 2_000

/** How long an announcement is remembered (for a waiter that reads the dead owner's entry later), in ms. */
const REMEMBER = 60_000

/** Resolves once an exclusive request for `name` is granted with no registration queued behind it. */
async function waitUntilGone(locks: LockManager, name: string, signal: AbortSignal): Promise<void> {
  for (;;) {
    const gone = await locks.request(name, { mode: 'exclusive', signal }, async () => {
      const state = await locks.query()
      return !state.pending!.some((l) => l.name === name && l.mode === 'shared')
    })
    if (gone) return
  }
}

/**
 * One Web Locks request per owner name per page, shared by every waiter for
 * that owner. It is in {@link probes} from its start until it settles (the
 * owner is gone) or is withdrawn (no waiter left for {@link LINGER} ms):
 * never reused after, as a client of the same id may start later.
 */
class Probe {
  /** Resolves once the owner is gone; rejects once withdrawn, or if the lock manager fails. */
  readonly promise: Promise<void>
  readonly #name: string
  readonly #controller = new AbortController()
  readonly #waiters = new Set<object>()
  #linger?: ReturnType<typeof setTimeout>

  /** The probe of `name` in this page, started if there is none, with `waiter` among its waiters until it leaves. */
  static join(locks: LockManager, name: string, waiter: object): Probe {
    let probe = probes.get(name)
    if (!probe) probes.set(name, (probe = new Probe(locks, name)))
    probe.#waiters.add(waiter)
    clearTimeout(probe.#linger) // (a cleared timer never runs, even one due)
    return probe
  }

  private constructor(locks: LockManager, name: string) {
    this.#name = name
    this.promise = waitUntilGone(locks, name, this.#controller.signal)
    const forget = () => this.#forget()
    this.promise.then(forget, forget)
  }

  /**
   * `waiter` left (once more: nothing changes). The last one to leave
   * withdraws the request after {@link LINGER} ms, unless another joins meanwhile.
   */
  leave(waiter: object): void {
    if (!this.#waiters.delete(waiter) || this.#waiters.size > 0) return
    // Waiters come and go with every change of holder: keep the request queued a moment for the next one.
    this.#linger = setTimeout(() => {
      this.#forget()
      this.#controller.abort()
    }, LINGER)
  }

  /**
   * Takes this probe out of the map, unless a successor took its place: a
   * settled probe's linger runs after its waiters leave, when a new probe
   * of the name may have started.
   */
  #forget(): void {
    if (probes.get(this.#name) === this) probes.delete(this.#name)
  }
}

/** The probe of each owner name in this page. */
const probes = new Map<string, Probe>()

/** "Registration `nonce` of client `owner` is gone", as posted on the channel. */
interface Announcement {
  owner: string
  nonce: string
}

function isAnnouncement(data: unknown): data is Announcement {
  const a = data as Partial<Announcement> | null | undefined
  return typeof a?.owner === 'string' && typeof a.nonce === 'string'
}


/** The registrations of one id the lock manager knew of at one moment. */
interface Seen {
  /** The nonces of its registrations' own locks, held or queued. */
  nonces: Set<string>
  /** How many shared registration locks it had, held or queued (a registration of older zaris has no lock of its own). */
  shared: number
}

/** A waiter listening for an owner's death. */
interface Ear {
  owner: string
  onGone(): void
  /** What the lock manager showed after the waiter saw the entry; undefined until the query answers, null if it failed. */
  seen?: Seen | null
}

/**
 * The announcements of one namespace in this page: the channel they travel
 * on, those heard lately, and the waiters listening for them.
 */
class Hub {
  readonly #locks: LockManager
  /** The shared registration lock of an owner is `#ownerPrefix + owner`. */
  readonly #ownerPrefix: string
  /** An owner's registration lock of its own is `#instancePrefix + nonce + ':' + owner`. */
  readonly #instancePrefix: string
  readonly #channel: BroadcastChannel
  readonly #heard = new Map<string, { nonces: Set<string>; at: number }>()
  /** Few (one per owner a waiter or the reaper follows): a word is weighed for each. */
  readonly #ears = new Set<Ear>()
  refs = 0

  constructor(locks: LockManager, namespace: string) {
    this.#locks = locks
    this.#ownerPrefix = `zaris:${namespace}:owner:`
    this.#instancePrefix = `zaris:${namespace}:instance:`
    this.#channel = new BroadcastChannel(`zaris:idb:${namespace}:gone`)
    this.#channel.onmessage = (ev: MessageEvent<unknown>) => {
      if (isAnnouncement(ev.data)) this.#hear(ev.data)
    }
  }

  ownerLock(owner: string): string {
    return this.#ownerPrefix + owner
  }

  instanceLock(owner: string, nonce: string): string {
    return `${this.#instancePrefix}${nonce}:${owner}`
  }

  /**
   * Tells the other tabs (synchronously: the page may be dying) and, unless
   * `here` is false, this page's waiters and reaper.
   */
  announce(a: Announcement, here: boolean): void {
    try {
      this.#channel.postMessage(a)
    } catch {
      // The channel is closed; the Web Lock tells the others a moment later.
    }
    if (here) this.#hear(a)
  }

  /**
   * Calls `onGone` once every registration of `owner` that exists now has
   * been announced gone; returns the way to stop listening. Call it only
   * after reading the entry to take over: its writer registered before
   * writing it, so the registrations looked up here include the writer, and
   * an announcement heard later covers it without asking again (the lock
   * manager is slow to answer while a tab is being torn down).
   */
  listen(owner: string, onGone: () => void): () => void {
    const ear: Ear = { owner, onGone }
    this.#ears.add(ear)
    void this.#lookUp(owner).then((seen) => {
      ear.seen = seen
      if (this.#ears.has(ear)) this.#decide(ear)
    })
    return () => this.#ears.delete(ear)
  }

  /** How many listeners wait here (for tests: one left behind is a leak). */
  get listeners(): number {
    return this.#ears.size
  }

  close(): void {
    this.#channel.close()
    this.#heard.clear()
    this.#ears.clear()
  }

  /** Whether the lock manager holds or queues a registration of `owner` now; null if it cannot say. */
  async registered(owner: string): Promise<boolean | null> {
    const seen = await this.#lookUp(owner)
    // (A registration asks for its own lock and its id's in one task: a snapshot shows both or neither.)
    return seen && seen.shared > 0
  }

  /** Whether a registration of `owner` was announced gone lately. */
  heard(owner: string): boolean {
    return this.#heard.has(owner)
  }

  #hear(a: Announcement): void {
    const now = Date.now()
    for (const [owner, h] of this.#heard) if (now - h.at > REMEMBER) this.#heard.delete(owner)
    let h = this.#heard.get(a.owner)
    if (!h) this.#heard.set(a.owner, (h = { nonces: new Set(), at: now }))
    h.nonces.add(a.nonce)
    h.at = now
    // (Weighing another owner's ear again changes nothing: its verdict stands on what it saw and heard.)
    for (const ear of this.#ears) this.#decide(ear)
  }

  /** Tells `ear` its owner is gone if every registration it saw has been announced gone. */
  #decide(ear: Ear): void {
    const seen = ear.seen
    const announced = this.#heard.get(ear.owner)?.nonces
    if (!seen || !announced) return
    for (const nonce of seen.nonces) if (!announced.has(nonce)) return
    // Every shared registration lock must belong to an announced registration.
    if (seen.shared > seen.nonces.size) return
    ear.onGone()
  }

  /** The registrations of `owner` the lock manager holds or has queued; null if it cannot say. */
  async #lookUp(owner: string): Promise<Seen | null> {
    let state: LockManagerSnapshot
    try {
      state = await this.#locks.query()
    } catch {
      return null
    }
    const ownerLock = this.ownerLock(owner)
    const suffix = `:${owner}`
    const seen: Seen = { nonces: new Set(), shared: 0 }
    // (The Web Locks spec's query() always fills both lists and every lock's name and mode.)
    for (const l of [...state.held!, ...state.pending!]) {
      const name = l.name!
      if (name === ownerLock) {
        if (l.mode === 'shared') seen.shared++
        continue
      }
      if (!name.startsWith(this.#instancePrefix) || !name.endsWith(suffix)) continue
      const nonce = name.slice(this.#instancePrefix.length, name.length - suffix.length)
      if (!nonce.includes(':')) seen.nonces.add(nonce) // else another owner whose id ends in `:<owner>`
    }
    return seen
  }
}

const hubs = new Map<string, Hub>()

/** Every open Liveness of this page: what `pagehide` announces. */
const openLiveness = new Set<Liveness>()

function onPageHide(ev: Event): void {
  // Kept in the back/forward cache: the page may come back, alive, with its holds.
  if ((ev as PageTransitionEvent).persisted) return
  // Only the other tabs hear it: a takeover or reap started here would open a
  // readwrite transaction the dying page never finishes, and IndexedDB holds
  // every other tab's writes behind it until the browser tears the page down.
  for (const l of openLiveness) l.announce(false)
}

export class Liveness {
  readonly #locks: LockManager
  readonly #namespace: string
  readonly #hub: Hub
  readonly #closing = new AbortController()
  readonly #registrations: Announcement[] = []

  constructor(locks: LockManager, namespace: string) {
    this.#locks = locks
    this.#namespace = namespace
    let hub = hubs.get(namespace)
    if (!hub) hubs.set(namespace, (hub = new Hub(locks, namespace)))
    hub.refs++
    this.#hub = hub
    openLiveness.add(this)
    // (Added once: the DOM keeps one listener per function. A Worker has
    // `addEventListener` but no page to hide: its listener is never called.)
    ;(globalThis as { addEventListener?: typeof addEventListener }).addEventListener?.('pagehide', onPageHide)
  }

  /** Holds `owner`'s liveness locks until {@link close}; resolves once they are held (or queued behind a live twin). */
  async register(owner: string): Promise<void> {
    // A random registration id: never reused, unlike client ids.
    const nonce = randomHex(12)
    const signal = this.#closing.signal
    const hold = (name: string, mode: LockMode) =>
      new Promise<void>((resolve, reject) => {
        this.#locks
          .request(name, { mode, signal }, () => {
            resolve()
            return new Promise<void>((release) => signal.addEventListener('abort', () => release()))
          })
          // Closed before the grant: a hold awaiting this registration fails, as its write would, instead of waiting forever.
          .catch((err: unknown) => reject(signal.aborted ? new ClosedError('the indexeddb adapter is closed') : err))
        if (mode === 'shared') {
          // Queued (a prober holds the name for an instant, or waits in front of
          // us while a twin of this id is alive): the id is alive either way.
          // The lock manager answers in order, so its answer comes once it has
          // our request, granted or queued; queued, some client holds the name.
          // A lock manager that cannot answer: the grant resolves it instead (no unhandled rejection).
          this.#locks.query().then(
            () => resolve(),
            () => {},
          )
        }
      })
    // The lock of its own first, so a waiter's query that sees this client's shared lock sees it too.
    const instance = hold(this.#hub.instanceLock(owner, nonce), 'exclusive')
    const shared = hold(this.#hub.ownerLock(owner), 'shared')
    this.#registrations.push({ owner, nonce })
    await Promise.all([instance, shared])
  }

  /** Resolves when no live client of `owner` is left; rejects with `signal`'s reason on abort. */
  gone(owner: string, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted()
    const waiter = {}
    const probe = Probe.join(this.#locks, this.#hub.ownerLock(owner), waiter)
    return new Promise<void>((resolve, reject) => {
      // The first of the word, the probe and the abort settles it; leaving again changes nothing.
      const leave = () => {
        unlisten()
        signal.removeEventListener('abort', onAbort)
        probe.leave(waiter)
      }
      const onAbort = () => (leave(), reject(signal.reason))
      signal.addEventListener('abort', onAbort)
      const unlisten = this.#hub.listen(owner, () => (leave(), resolve()))
      probe.promise.then(
        () => (leave(), resolve()),
        (err: unknown) => (leave(), reject(err)),
      )
    })
  }

  /**
   * Whether a client of `owner` is registered (alive, or queued behind a
   * live twin) right now; null when the lock manager cannot say. A client
   * registers before it writes, so "no" after reading an entry means its
   * writer is gone, or never registered (a store opened with `liveness: false`,
   * a raw adapter's write).
   */
  registered(owner: string): Promise<boolean | null> {
    return this.#hub.registered(owner)
  }

  /** Whether a registration of `owner` said lately that it is gone: `owner` did use liveness. */
  heard(owner: string): boolean {
    return this.#hub.heard(owner)
  }

  /** Says that every client registered here is gone (the page is being discarded, or this adapter closes). */
  announce(here: boolean): void {
    for (const r of this.#registrations) this.#hub.announce(r, here)
  }

  /** Announces, then releases every liveness lock this adapter holds and ends its probes. */
  close(): void {
    if (this.#closing.signal.aborted) return
    this.announce(true)
    this.#closing.abort()
    openLiveness.delete(this)
    // (Once per hub: it is in the map from its first Liveness until its last closes.)
    if (--this.#hub.refs > 0) return
    this.#hub.close()
    hubs.delete(this.#namespace)
  }
}

/** @internal For tests: how many listeners wait in this page's hub of `namespace`; undefined when it has none open. */
export function listenersIn(namespace: string): number | undefined {
  return hubs.get(namespace)?.listeners
}
