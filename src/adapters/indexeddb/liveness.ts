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
 * @module
 */

/** The Web Locks API, where the platform has it. */
export function webLocks(): LockManager | undefined {
  const nav = (globalThis as { navigator?: { locks?: LockManager } }).navigator
  return nav?.locks && typeof nav.locks.request === 'function' ? nav.locks : undefined
}

/** One Web Locks request per owner per page, shared by every waiter for that owner. */
interface Probe {
  promise: Promise<void>
  users: number
  controller: AbortController
  linger?: ReturnType<typeof setTimeout>
}

const probes = new Map<string, Probe>()

/** How long a probe stays queued after its last waiter left, in ms. */
const LINGER = 2_000

/** Resolves once an exclusive request for `name` is granted with no registration queued behind it. */
async function waitUntilGone(locks: LockManager, name: string, signal: AbortSignal): Promise<void> {
  for (;;) {
    const gone = await locks.request(name, { mode: 'exclusive', signal }, async () => {
      const state = await locks.query()
      return !state.pending?.some((l) => l.name === name && l.mode === 'shared')
    })
    if (gone) return
  }
}

export class Liveness {
  readonly #locks: LockManager
  readonly #prefix: string
  readonly #closing = new AbortController()

  constructor(locks: LockManager, namespace: string) {
    this.#locks = locks
    this.#prefix = `zaris:${namespace}:owner:`
  }

  /** Holds `owner`'s liveness lock until {@link close}; resolves once it is held (or queued behind a live twin). */
  register(owner: string): Promise<void> {
    const name = this.#prefix + owner
    const signal = this.#closing.signal
    return new Promise<void>((resolve, reject) => {
      this.#locks
        .request(name, { mode: 'shared', signal }, () => {
          resolve()
          return new Promise<void>((release) => signal.addEventListener('abort', () => release(), { once: true }))
        })
        .catch((err: unknown) => {
          if (!signal.aborted) reject(err)
        })
      // Queued (a prober holds the name for an instant, or waits in front of
      // us while a twin of this id is alive): the id is alive either way.
      void this.#locks.query().then((state) => {
        if (state.held?.some((l) => l.name === name)) resolve()
      })
    })
  }

  /** Resolves when no live client of `owner` is left; rejects with `signal`'s reason on abort. */
  gone(owner: string, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted()
    const name = this.#prefix + owner
    let probe = probes.get(name)
    if (!probe) {
      const controller = new AbortController()
      probe = { promise: waitUntilGone(this.#locks, name, controller.signal), users: 0, controller }
      const settled = probe
      probes.set(name, probe)
      // A settled probe is not reused: a client of the same id may start later.
      probe.promise.then(
        () => probes.get(name) === settled && probes.delete(name),
        () => probes.get(name) === settled && probes.delete(name),
      )
    }
    const shared = probe
    shared.users++
    if (shared.linger !== undefined) clearTimeout(shared.linger)
    shared.linger = undefined
    return new Promise<void>((resolve, reject) => {
      let done = false
      const leave = () => {
        if (done) return false
        done = true
        signal.removeEventListener('abort', onAbort)
        if (--shared.users === 0) {
          // Waiters come and go with every change of holder: keep the request queued a moment for the next one.
          shared.linger = setTimeout(() => {
            if (shared.users > 0) return
            if (probes.get(name) === shared) probes.delete(name)
            shared.controller.abort(new Error('no waiter left'))
          }, LINGER)
        }
        return true
      }
      const onAbort = () => leave() && reject(signal.reason)
      signal.addEventListener('abort', onAbort, { once: true })
      shared.promise.then(
        () => leave() && resolve(),
        (err: unknown) => leave() && reject(err),
      )
    })
  }

  /** Releases every liveness lock this adapter holds and ends its probes. */
  close(): void {
    this.#closing.abort(new Error('closed'))
  }
}
