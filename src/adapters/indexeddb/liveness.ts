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
  async gone(owner: string, signal: AbortSignal): Promise<void> {
    const name = this.#prefix + owner
    const both = AbortSignal.any([signal, this.#closing.signal])
    for (;;) {
      const gone = await this.#locks.request(name, { mode: 'exclusive', signal: both }, async () => {
        const state = await this.#locks.query()
        return !state.pending?.some((l) => l.name === name && l.mode === 'shared')
      })
      if (gone) return
    }
  }

  /** Releases every liveness lock this adapter holds and ends its probes. */
  close(): void {
    this.#closing.abort(new Error('closed'))
  }
}
