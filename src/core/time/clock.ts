/**
 * The clock the core and the memory adapter measure TTLs with. It is
 * monotonic (wall-clock jumps do not move it) and injectable, so tests — and
 * users testing their own lock code — can advance time by hand with
 * `ManualClock` from `zaris/testing` instead of sleeping.
 *
 * @module
 */

/** An opaque timer handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = { readonly __timer: unique symbol } | object

/**
 * A monotonic clock with timers.
 *
 * @example
 * const clock: Clock = systemClock
 * const start = clock.now()
 */
export interface Clock {
  /** Milliseconds on a monotonic scale; only differences mean anything. */
  now(): number
  /** Calls `fn` once `ms` have passed on this clock. Must not keep a Node process alive. */
  setTimeout(fn: () => void, ms: number): TimerHandle
  /** Cancels a timer; a handle that already fired or was cleared is ignored. */
  clearTimeout(handle: TimerHandle): void
}

/**
 * The real clock: `performance.now()` and the platform's timers, unref'd in
 * Node so an idle process can exit.
 *
 * @example
 * connect('zaris://inproc/demo', { clock: systemClock })
 */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout(fn, ms) {
    const t = globalThis.setTimeout(fn, Math.max(0, ms))
    // A function call, not a property access, so it does not throw in browsers.
    if (typeof t === 'object' && t !== null && 'unref' in t) (t as { unref(): void }).unref()
    return t as unknown as TimerHandle
  },
  clearTimeout(handle) {
    globalThis.clearTimeout(handle as unknown as ReturnType<typeof setTimeout>)
  },
}

/** Resolves after `ms` on `clock`, or rejects with the signal's reason. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clock.clearTimeout(timer)
      reject(signal!.reason)
    }
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
