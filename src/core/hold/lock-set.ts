/**
 * Several locks taken in one commit: what `locks.acquire([k1, k2, …])`
 * resolves. Each key has its own {@link Lock} — its own token, renewals
 * and signal — and the set acts on all of them at once.
 *
 * @module
 */
import type { Lock } from './lock'

/**
 * Locks on several keys, all taken in one commit. Each `Lock` in `locks`
 * (in the order the keys were given) keeps its own token and renews itself;
 * `signal` aborts as soon as any of them ends.
 *
 * @example
 * const set = await client.locks.acquire(['account:1', 'account:2'], { wait: 5_000 })
 * if (set) {
 *   await using held = set
 *   await client.put('account:1', 90, { fence: held.get('account:1')! })
 * }
 */
export class LockSet implements AsyncDisposable {
  /** The locks, in the order their keys were given. */
  readonly locks: readonly Lock[]
  #controller: AbortController | undefined

  /** @internal Created by `locks.acquire(keys)`. */
  constructor(locks: Lock[]) {
    this.locks = locks
  }

  /** The keys, in the order they were given. */
  get keys(): string[] {
    return this.locks.map((l) => l.key)
  }

  /** The lock of `key`, if it is one of the set's. */
  get(key: string): Lock | undefined {
    return this.locks.find((l) => l.key === key)
  }

  /** True while every lock of the set is held. */
  get held(): boolean {
    return this.locks.every((l) => l.held)
  }

  /** Aborts when the first of the locks ends, with that lock's reason. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      const controller = (this.#controller = new AbortController())
      for (const l of this.locks) {
        const s = l.signal
        if (s.aborted) controller.abort(s.reason)
        else s.addEventListener('abort', () => controller.abort(s.reason), { once: true })
      }
    }
    return this.#controller.signal
  }

  /**
   * Renews every lock: true if all were still held.
   *
   * @example
   * if (!(await set.renew())) console.log('lost one of them')
   */
  async renew(ttl?: number): Promise<boolean> {
    const renewed = await Promise.all(this.locks.map((l) => l.renew(ttl)))
    return renewed.every(Boolean)
  }

  /**
   * Releases every lock: true if all were still held until then.
   *
   * @example
   * await set.release()
   */
  async release(): Promise<boolean> {
    const released = await Promise.all(this.locks.map((l) => l.release()))
    return released.every(Boolean)
  }

  /** Releases every lock; `await using` calls this. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.release()
  }
}
