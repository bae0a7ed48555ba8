/**
 * The reaper: a client that is gone (its tab closed or crashed) has its
 * entries ended for everyone at once, not at their TTL.
 *
 * Every page with an open `zaris://idb` store (and liveness) follows the
 * owners of the store's live entries — locks, leases, candidacies, places in
 * wait lines. When liveness (./liveness) says an owner is gone, the page ends
 * that owner's entries in one transaction, each as an `expire` with a
 * revision of its own, as the TTL would have, only sooner: from then on every
 * read, check, plain acquire and watch of every tab sees them gone.
 *
 * Races, and why each is safe:
 * - Several tabs reap one dead owner at once: each delete checks the entry's
 *   owner and life (`created`) inside the transaction, and transactions
 *   serialize, so the first ends it and the others find nothing to do (no
 *   revision, no event).
 * - An owner that is only frozen, hung or hidden keeps its Web Lock, so it is
 *   never reported gone: its entries wait for their TTL, and it finds its
 *   hold lost (or not) as any holder does.
 * - The dead owner's last renewal lands after the entry was read: a renewal
 *   keeps the life, and its owner is still dead, so the entry is ended
 *   anyway; a renewal that lands after the end finds no entry.
 * - An id used again (a reload with a fixed `id`): the news that an owner is
 *   gone covers only the lives this page saw before it began to listen for it
 *   (liveness counts the registrations it finds after them); a life seen
 *   later is judged again, and a live registration of that id keeps it.
 * - A writer that never registered (a store opened with `liveness: false`, a
 *   raw adapter's commit): an owner is ended only once this page has seen it
 *   registered, or heard it say it is gone; the entries of others keep their
 *   TTL, as they would without a reaper.
 *
 * The cost: per page, one transaction that reads every entry when the store
 * opens, two `navigator.locks.query()` per owner when it first holds
 * something, and one queued Web Lock request per owner while it holds
 * anything (shared with waiting acquires).
 *
 * @module
 */
import type { WatchEvent } from '../../core/contract/adapter'
import { asked } from './gate'
import { Liveness } from './liveness'
import type { Database, LogRecord } from './schema'
import type { SharedStore } from './page-store'
import { expired, hasRevisionLeft, type Stored } from '../kit/write'
import { finish, lastRevision, writeTx, type Outcome } from './transactions'

/** One life of an owned entry, as this page saw it. */
interface Life {
  key: string
  owner: string
  created: number
  /** When this page first saw this life, in its own order of sightings. */
  seen: number
}

/** What this page knows of one owner. */
interface Owner {
  lives: Set<Life>
  /** Seen registered (or heard gone): its writes come from a client that registers. */
  known: boolean
  running: boolean
  stop: AbortController | undefined
  /** Set once the owner holds nothing: forget it after {@link IDLE} ms. */
  idle: ReturnType<typeof setTimeout> | undefined
  /** An owner not seen registered is looked at again no sooner than this (Date.now). */
  notBefore: number
  later: ReturnType<typeof setTimeout> | undefined
}

/** How long an owner that holds nothing is still followed (its next hold costs no query), in ms. */
const IDLE = 5_000
/** How often an owner that is not registered may be looked at again, in ms. */
const RECHECK = 1_000

const reapers = new WeakMap<SharedStore, Reaper>()

export class Reaper {
  readonly #store: SharedStore
  readonly #liveness: Liveness
  readonly #lives = new Map<string, Life>()
  readonly #owners = new Map<string, Owner>()
  #sightings = 0
  #refs = 0
  #closed = false
  #unsubscribe: (() => void) | undefined

  /** The reaper of this page's store, shared by its adapters; {@link release} when done. */
  static acquire(store: SharedStore, locks: LockManager): Reaper {
    let reaper = reapers.get(store)
    if (!reaper || reaper.#closed) reapers.set(store, (reaper = new Reaper(store, locks)))
    reaper.#refs++
    return reaper
  }

  private constructor(store: SharedStore, locks: LockManager) {
    this.#store = store
    this.#liveness = new Liveness(locks, store.namespace)
    void this.#load()
  }

  /** Drops one reference; the last one stops following owners. */
  release(): void {
    if (--this.#refs > 0 || this.#closed) return
    this.#closed = true
    this.#unsubscribe?.()
    for (const o of this.#owners.values()) {
      o.stop?.abort()
      clearTimeout(o.idle)
      clearTimeout(o.later)
    }
    this.#owners.clear()
    this.#lives.clear()
    this.#liveness.close()
  }

  /** Reads every owned entry and the revision together, then follows every change after it. */
  async #load(): Promise<void> {
    try {
      const { revision, entries } = await this.#store.run((db) => readOwned(db, this.#store.clock.now()))
      if (this.#closed) return
      const live = new Set(entries.map((e) => e.key))
      for (const key of [...this.#lives.keys()]) if (!live.has(key)) this.#forget(key)
      for (const e of entries) this.#saw(e.key, e.owner!, e.created)
      const unsubscribe = await this.#store.feed.subscribe('', {
        event: (ev) => this.#event(ev),
        // History this page slept through is gone: read the entries again. (The feed drops a
        // subscriber before it errs it: there is nothing to unsubscribe.)
        error: () => {
          if (!this.#closed) void this.#load()
        },
      }, revision)
      if (this.#closed) unsubscribe()
      else this.#unsubscribe = unsubscribe
    } catch {
      // The store closed or went away: nothing to follow.
    }
  }

  #event(ev: WatchEvent): void {
    if (ev.type === 'put' && ev.owner !== undefined) this.#saw(ev.key, ev.owner, ev.created ?? ev.revision)
    else this.#forget(ev.key)
  }

  #saw(key: string, owner: string, created: number): void {
    const was = this.#lives.get(key)
    if (was && was.owner === owner && was.created === created) return // a renewal: the same life
    if (was) this.#forget(key)
    const life: Life = { key, owner, created, seen: ++this.#sightings }
    this.#lives.set(key, life)
    let o = this.#owners.get(owner)
    if (!o) {
      o = { lives: new Set(), known: false, running: false, stop: undefined, idle: undefined, notBefore: 0, later: undefined }
      this.#owners.set(owner, o)
    }
    o.lives.add(life)
    clearTimeout(o.idle)
    o.idle = undefined
    this.#follow(owner, o)
  }

  #forget(key: string): void {
    const life = this.#lives.get(key)
    if (!life) return
    this.#lives.delete(key)
    // An owner is dropped only once it holds no life (or with every life, by release): it is there.
    const o = this.#owners.get(life.owner)!
    o.lives.delete(life)
    if (o.lives.size === 0) {
      // No timer is set yet: lives went from one to none, and the life added since the last one (#saw) cleared it.
      // Nothing can be in the way when it fires: a new life clears it, and only it (or release, which clears it) drops `o`.
      o.idle = setTimeout(() => {
        o.idle = undefined
        o.stop?.abort()
        clearTimeout(o.later)
        this.#owners.delete(life.owner)
      }, IDLE)
    }
  }

  /** Starts listening for the owner's end, unless that is under way or must wait. */
  #follow(owner: string, o: Owner): void {
    if (o.running || o.later !== undefined || this.#closed) return
    const wait = o.notBefore - Date.now()
    if (wait > 0) {
      o.later = setTimeout(() => {
        o.later = undefined
        // (An owner let go holds nothing, and its timer was cleared anyway.)
        if (o.lives.size > 0) this.#follow(owner, o)
      }, wait)
      return
    }
    void this.#check(owner, o)
  }

  /** Waits until `owner` is gone, then ends the lives of it seen before the wait began. */
  async #check(owner: string, o: Owner): Promise<void> {
    o.running = true
    const start = this.#sightings
    const stop = (o.stop = new AbortController())
    let unsure = false
    try {
      const registered = await this.#liveness.registered(owner)
      let gone = false
      if (registered) {
        o.known = true
        await this.#liveness.gone(owner, stop.signal)
        gone = true
      } else if (registered === false && (o.known || this.#liveness.heard(owner))) {
        gone = true // a client that registers, with no registration left: its writer is gone
      } else {
        // Never seen registered (its lives keep their TTL), or the lock manager cannot say (ask again).
        o.notBefore = Date.now() + RECHECK
        unsure = registered === null
      }
      if (gone && !stop.signal.aborted) await this.#reap(owner, o, start)
    } catch {
      // Stopped (the owner holds nothing any more, or this page closes), or the store went away.
    } finally {
      o.running = false
      o.stop = undefined // (one check at a time: `running`)
    }
    if (this.#closed || this.#owners.get(owner) !== o) return
    // Lives first seen while we listened are judged on their own.
    if (unsure || [...o.lives].some((life) => life.seen > start)) this.#follow(owner, o)
  }

  async #reap(owner: string, o: Owner, start: number): Promise<void> {
    // A key a client of this page asks the gate of is taken over by that client's take: no reap in front of it.
    const lives = [...o.lives].filter((l) => l.seen <= start && !asked(this.#store.namespace, l.key))
    if (lives.length === 0) return
    // The expire events come back through the feed, and forget the lives.
    await this.#store.write((db) => reapTx(db, lives, this.#store.historySize))
  }
}

/** Every live owned entry and the store's revision, read in one transaction. */
function readOwned(db: Database, now: number): Promise<{ revision: number; entries: Stored[] }> {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(['entries', 'log'])
    const all = tx.objectStore('entries').getAll()
    let revision = 0
    lastRevision(tx.objectStore('log'), 0, (r) => (revision = r))
    tx.oncomplete = () => {
      const entries = (all.result as Stored[]).filter((e) => e.owner !== undefined && !expired(e, now))
      resolve({ revision, entries })
    }
    tx.onabort = () => reject(tx.error ?? new DOMException('the transaction was aborted', 'AbortError'))
  })
}

/**
 * Ends the given lives in one readwrite transaction: each entry still in that
 * life with that owner is deleted with an `expire` of its own revision; one
 * that has ended or begun a new life since is left alone.
 */
export function reapTx(db: Database, lives: Array<Pick<Life, 'key' | 'owner' | 'created'>>, historySize: number): Promise<Outcome> {
  return writeTx(db, (tx, guard, done) => {
    const entries = tx.objectStore('entries')
    const found: Array<Stored | undefined> = []
    let revision = 0
    // The writes go from the callback of the last read to arrive.
    let pending = lives.length + 1
    const arrived = () => {
      if (--pending > 0) return
      const records: LogRecord[] = []
      lives.forEach((life, i) => {
        const e = found[i]
        if (!e || e.owner !== life.owner || e.created !== life.created) return
        // A store with no revision left ends nothing, as its sweep does not (see RevisionExhaustedError).
        if (!hasRevisionLeft(revision)) return
        revision++
        entries.delete(life.key)
        records.push({ revision, events: [{ type: 'expire', key: life.key, revision }] })
      })
      finish(tx, revision, records, historySize)
      done({ records })
    }
    lives.forEach((life, i) => {
      const get = entries.get(life.key)
      get.onsuccess = guard(() => {
        found[i] = get.result as Stored | undefined
        arrived()
      })
    })
    lastRevision(tx.objectStore('log'), 0, (r) =>
      guard(() => {
        revision = r
        arrived()
      })(),
    )
    // Deletes only: relaxed, as a release (see durabilityOf in ./transactions).
  }, 'relaxed')
}
