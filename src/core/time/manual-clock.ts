/**
 * A clock that moves only when told to, for deterministic tests of code that
 * uses locks: expiry, renewal races and pauses without sleeping.
 *
 * @module
 */
import type { Clock, TimerHandle } from './clock'

interface Timer {
  at: number
  seq: number
  fn: () => void
}

/**
 * A {@link Clock} advanced by hand. Timers fire in time order as `advance`
 * passes them, and pending promise reactions run between them (after the
 * parts of the library that load on first use have arrived).
 *
 * @example
 * import { ManualClock } from 'zaris/testing'
 * const clock = new ManualClock()
 * const client = await connect('zaris://inproc/test', { clock })
 * const lock = await client.locks.acquire('lock:a', { ttl: 1_000, autoRenew: false })
 * await clock.advance(1_000) // lock.signal is now aborted
 */
export class ManualClock implements Clock {
  #now: number
  #seq = 0
  #timers = new Map<TimerHandle, Timer>()

  constructor(start = 0) {
    this.#now = start
  }

  /** The current time of this clock, in ms. */
  now(): number {
    return this.#now
  }

  /** Calls `fn` when `advance` passes `ms` from now. */
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const handle = {} as TimerHandle
    this.#timers.set(handle, { at: this.#now + Math.max(0, ms), seq: this.#seq++, fn })
    return handle
  }

  /** Cancels a timer. */
  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle)
  }

  /** How many timers are waiting. */
  get pending(): number {
    return this.#timers.size
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way,
   * in order, and letting the promise reactions each one causes settle.
   */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms
    await settle()
    for (;;) {
      let next: [TimerHandle, Timer] | undefined
      for (const entry of this.#timers) {
        if (entry[1].at <= target && (!next || entry[1].at < next[1].at || (entry[1].at === next[1].at && entry[1].seq < next[1].seq))) next = entry
      }
      if (!next) break
      this.#timers.delete(next[0])
      this.#now = Math.max(this.#now, next[1].at)
      next[1].fn()
      await settle()
    }
    this.#now = target
    await settle()
  }
}

/** Lets pending promise chains run: a few macrotask turns of the real event loop. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => globalThis.setTimeout(resolve, 0))
}
