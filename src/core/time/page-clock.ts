/**
 * The page's background clock: every client that runs in a page counts its
 * holds on it by default, whatever the store (IndexedDB, a zaris node,
 * memory), because throttling is a property of the page, not of the store.
 *
 * A clock whose timers run in a dedicated Worker. Browsers throttle the
 * timers of hidden pages (Chrome: aligned to 1 s at once, and to one wake-up
 * a minute after five minutes hidden), which would starve a holder's
 * auto-renewal of a 30 s lock; a dedicated worker's timers are not subject to
 * that wake-up throttling, and its message wakes the page as a task, not a
 * timer. Where a worker cannot be made (no `Worker`, a CSP without `blob:`),
 * it falls back to the page's own timers.
 *
 * While the page is visible its own timers are not throttled, and they cost
 * no message to a worker (a hold arms and clears a timer on every renewal and
 * release): timers set then run on the page. When the page goes hidden, the
 * pending ones move to the worker with the time they have left, and timers
 * set while hidden go to the worker.
 *
 * @module
 */
import { systemClock, type Clock, type TimerHandle } from './clock'

/** A {@link Clock} whose timers survive background-tab throttling; `close()` ends its worker. */
export interface BackgroundClock extends Clock {
  /** True when a worker runs the timers of a hidden page (false: the page's timers, throttled in hidden tabs). */
  readonly inWorker: boolean
  /** Terminates the worker; pending timers never fire. */
  close(): void
}

// Runs in the worker: one timer per id, each answered with its id. A timer comes with the time it is
// due ('timeOrigin + now()', one scale in the page and its worker), not a delay, so a message that
// reaches a busy worker late does not make the timer late too.
const WORKER_SOURCE = `
const timers = new Map()
onmessage = (e) => {
  const [op, id, at] = e.data
  if (op === 'set') timers.set(id, setTimeout(() => { timers.delete(id); postMessage(id) }, Math.max(0, at - performance.timeOrigin - performance.now())))
  else { clearTimeout(timers.get(id)); timers.delete(id) }
}
`

interface Handle {
  id: number
}

/**
 * Creates a monotonic clock whose timers run in a dedicated Worker, so that
 * `autoRenew` keeps renewing in a hidden tab. Clients in a page use the
 * page's shared one ({@link pageBackgroundClock}) by default; make one of
 * your own to close it with the client.
 *
 * @example
 * import { backgroundClock, connect } from 'zaris'
 * const client = await connect('zaris://idb/app', { clock: backgroundClock() })
 */
export function backgroundClock(): BackgroundClock {
  const worker = makeWorker()
  if (!worker) {
    return {
      inWorker: false,
      now: () => performance.now(),
      setTimeout: (fn, ms) => globalThis.setTimeout(fn, Math.max(0, ms)) as unknown as TimerHandle,
      clearTimeout: (h) => globalThis.clearTimeout(h as unknown as ReturnType<typeof setTimeout>),
      close() {},
    }
  }
  interface Timer {
    fn: () => void
    /** When it is due, on `performance.now()`. */
    at: number
    /** The page's timer while it runs there; undefined once it is in the worker. */
    page?: ReturnType<typeof setTimeout>
  }
  const pending = new Map<number, Timer>()
  let next = 1
  const doc = (globalThis as { document?: Document }).document
  const visible = () => doc?.visibilityState === 'visible'
  const toWorker = (id: number, t: Timer) => {
    t.page = undefined
    worker.postMessage(['set', id, performance.timeOrigin + t.at])
  }
  // Hidden: the page's timers will be throttled, so what is pending moves to the worker.
  const onVisibility = () => {
    if (visible()) return
    for (const [id, t] of pending) {
      if (t.page === undefined) continue
      globalThis.clearTimeout(t.page)
      toWorker(id, t)
    }
  }
  doc?.addEventListener('visibilitychange', onVisibility)
  worker.onmessage = (e: MessageEvent<number>) => {
    const t = pending.get(e.data)
    // A timer moved back and forth may answer late; only one still in the worker fires.
    if (!t || t.page !== undefined) return
    // With it, every worker timer due by now, in deadline order: timers that were overdue when the
    // worker got them (it starts late, or was busy) answer in the order they were sent.
    const now = performance.now()
    const due = [...pending].filter(([id, x]) => x.page === undefined && (x.at <= now || id === e.data)).sort(([, x], [, y]) => x.at - y.at)
    for (const [id, x] of due) {
      if (pending.get(id) !== x) continue
      pending.delete(id)
      x.fn()
    }
  }
  return {
    inWorker: true,
    now: () => performance.now(),
    setTimeout(fn, ms) {
      const id = next++
      const delay = Math.max(0, ms)
      const t: Timer = { fn, at: performance.now() + delay }
      pending.set(id, t)
      if (visible()) {
        t.page = globalThis.setTimeout(() => {
          if (pending.get(id) !== t) return
          pending.delete(id)
          fn()
        }, delay)
      } else {
        toWorker(id, t)
      }
      return { id } satisfies Handle as unknown as TimerHandle
    },
    clearTimeout(handle) {
      const id = (handle as unknown as Handle).id
      const t = pending.get(id)
      if (!t) return
      pending.delete(id)
      if (t.page !== undefined) globalThis.clearTimeout(t.page)
      else worker.postMessage(['clear', id])
    },
    close() {
      for (const t of pending.values()) if (t.page !== undefined) globalThis.clearTimeout(t.page)
      pending.clear()
      doc?.removeEventListener('visibilitychange', onVisibility)
      worker.terminate()
    },
  }
}

let shared: BackgroundClock | undefined

/**
 * The page's one background clock, made on first use: what every client in a
 * page counts its holds on by default (one worker per page, however many
 * clients and stores).
 *
 * @example
 * const clock = pageBackgroundClock()
 */
export function pageBackgroundClock(): BackgroundClock {
  shared ??= backgroundClock()
  return shared
}

/**
 * The clock a client counts on unless given one: the page's background clock
 * in a page that can run Workers, the system clock elsewhere (Node, Deno,
 * inside a worker, whose timers are not throttled like a hidden page's).
 *
 * @example
 * const clock = defaultClock() // what new Client(adapter) uses
 */
export function defaultClock(): Clock {
  const g = globalThis as { document?: unknown; Worker?: unknown }
  return typeof g.document === 'object' && g.document !== null && typeof g.Worker === 'function' ? pageBackgroundClock() : systemClock
}

function makeWorker(): Worker | undefined {
  const g = globalThis as { Worker?: typeof Worker; Blob?: typeof Blob; URL?: typeof URL }
  if (!g.Worker || !g.Blob || !g.URL?.createObjectURL) return undefined
  try {
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'text/javascript' }))
    // The URL stays valid for the page's life: revoking it before the worker has loaded would fail the load.
    return new Worker(url)
  } catch {
    return undefined
  }
}
