/**
 * Who is alive. Each adapter registers the client ids it serves
 * (`registerOwner`) as rows of `zaris_file_owners`, with its process; a
 * client id is gone when every registration of it is gone: removed by an
 * adapter's `close()`, or standing for a process that has died (pid and
 * start time, see machine.ts). Then its locks, leases, candidacies and
 * places in line end, as expiries, in the next write transaction of any
 * process that looks:
 *
 * - every write transaction looks (at most every {@link FRESH_MS}: a
 *   plain acquire, a release, a renewal);
 * - a read (`get`, `list`) looks the same way, and writes first if it
 *   found someone gone;
 * - an adapter with open watches looks every {@link SWEEP_MS};
 * - a waiter for a holder (`ownerGone`) looks at that holder at once, then
 *   every {@link OWNER_POLL_MS}.
 *
 * The store ends on its own only the entries of client ids it saw
 * registered: an entry whose owner never registered (a raw adapter's
 * commit with an `owner`) lasts its TTL for readers. A waiter may still
 * take it over: to `ownerGone` an id with no registration is gone (every
 * client of the store registers before its first write). A process that is
 * alive but stopped (SIGSTOP) or hung is alive: its holds last their TTL,
 * as the contract says.
 *
 * @module
 */
import { processAlive, type ProcessId } from './machine'
import type { OwnerRow } from './schema'

/** How long a process seen alive is taken to be, before it is looked at again, in ms. */
export const FRESH_MS = 20
/** How often an adapter with open watches looks for gone owners, in ms. */
export const SWEEP_MS = 50
/** How often a waiter looks at the holder it waits for, in ms. */
export const OWNER_POLL_MS = 10
/** Verdicts remembered at most (a dead process is dead for good; an alive one is looked at again). */
const MAX_VERDICTS = 4096

/** The verdicts of one adapter: whether each registered process is alive. */
export class Verdicts {
  readonly #here: ProcessId
  readonly #alive: (p: ProcessId, here: ProcessId) => boolean
  readonly #seen = new Map<string, { alive: boolean; at: number }>()
  #lastLook = -Infinity

  constructor(here: ProcessId, alive: (p: ProcessId, here: ProcessId) => boolean = processAlive) {
    this.#here = here
    this.#alive = alive
  }

  /** Whether a look is due at `now` (the last one is older than {@link FRESH_MS}). */
  due(now: number): boolean {
    return now - this.#lastLook >= FRESH_MS
  }

  /** The registrations among `rows` whose process is gone; `fresh`: ask the system again about every process. */
  gone(rows: OwnerRow[], now: number, fresh = false): OwnerRow[] {
    this.#lastLook = now
    const out: OwnerRow[] = []
    for (const r of rows) if (!this.#isAlive(r, now, fresh)) out.push(r)
    return out
  }

  /** The registrations among `rows` whose process is gone, asking the system again (a look at these alone: the next look at every owner is still due). */
  goneNow(rows: OwnerRow[], now: number): OwnerRow[] {
    const out: OwnerRow[] = []
    for (const r of rows) if (!this.#isAlive(r, now, true)) out.push(r)
    return out
  }

  #isAlive(p: ProcessId, now: number, fresh: boolean): boolean {
    const id = `${p.pid}:${p.start}:${p.host}`
    const known = this.#seen.get(id)
    if (known && (!known.alive || (!fresh && now - known.at < FRESH_MS))) return known.alive
    const alive = this.#alive(p, this.#here)
    if (this.#seen.size >= MAX_VERDICTS) this.#seen.clear()
    this.#seen.set(id, { alive, at: now })
    return alive
  }
}

/** A waiter for an owner's end. */
interface Waiter {
  owner: string
  resolve(): void
}

/**
 * The waiters of one adapter for owners to be gone, looked at together
 * every {@link OWNER_POLL_MS} while any waits.
 */
export class GoneWaiters {
  readonly #waiters = new Set<Waiter>()
  /** Ends the owner if every registration of it is gone; true when it did (or found it ended). */
  readonly #look: (owner: string) => boolean
  #timer: ReturnType<typeof setInterval> | undefined

  constructor(look: (owner: string) => boolean) {
    this.#look = look
  }

  /** Resolves once `owner` is gone (see the module comment); rejects with the signal's reason. */
  wait(owner: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason)
      const waiter: Waiter = {
        owner,
        resolve: () => {
          signal.removeEventListener('abort', onAbort)
          resolve()
        },
      }
      const onAbort = () => {
        this.#drop(waiter)
        reject(signal.reason)
      }
      signal.addEventListener('abort', onAbort)
      this.#waiters.add(waiter)
      // A first look at once: an owner gone already (a client closed, a process dead a while) ends the wait now.
      queueMicrotask(() => this.#poll(owner))
      if (!this.#timer) {
        this.#timer = setInterval(() => this.#poll(), OWNER_POLL_MS)
        this.#timer.unref()
      }
    })
  }

  /** Stops every wait (the adapter closed): they stay pending, as for an owner never gone. */
  close(): void {
    this.#waiters.clear()
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  #poll(only?: string): void {
    const owners = only === undefined ? new Set([...this.#waiters].map((w) => w.owner)) : [only]
    for (const owner of owners) {
      if (![...this.#waiters].some((w) => w.owner === owner)) continue
      let ended = false
      try {
        ended = this.#look(owner)
      } catch {
        // The file is busy or failing: looked at again at the next poll.
      }
      if (!ended) continue
      for (const w of this.#waiters) {
        if (w.owner !== owner) continue
        this.#drop(w)
        w.resolve()
      }
    }
  }

  #drop(w: Waiter): void {
    this.#waiters.delete(w)
    if (this.#waiters.size === 0) this.close()
  }
}
