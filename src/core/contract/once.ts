/**
 * `once`: how a part loaded on first use is loaded, in a module of its own so
 * that an adapter can use it without reaching the core's own loaders
 * (on-demand.ts), whose `import()`s would become chunks of every app that
 * bundles the adapter.
 *
 * @module
 */

import { UnavailableError } from './errors'

/** Loads under way, for {@link loadsUnderWay}. */
const loading = new Set<Promise<unknown>>()

/**
 * `load`, called on first use and kept; a failed load is tried again on the
 * next use. With `part` named, a failed load rejects with an
 * `UnavailableError` naming that part (the browser's own import error is its
 * `cause`), so a caller sees a zaris error with a code, not a bundler's message.
 */
export function once<T>(load: () => Promise<T>, part?: string): () => Promise<T> {
  let loaded: Promise<T> | undefined
  return () => {
    if (loaded) return loaded
    // In a page, a chunk the network lost may arrive on the next try.
    const attempt = (loaded = load().catch((err: unknown) => {
      loaded = undefined
      if (part === undefined) throw err
      throw new UnavailableError(
        `zaris could not load its ${part} part: ${(err as Error)?.message ?? String(err)}; the next call loads it again`,
        { cause: err },
      )
    }))
    loading.add(attempt)
    const done = () => loading.delete(attempt)
    attempt.then(done, done)
    return attempt
  }
}

/**
 * The loads of parts under way: a `ManualClock` lets them finish before it
 * moves time, since the time they take is the module loader's, not the clock's.
 */
export function loadsUnderWay(): Array<Promise<unknown>> {
  return [...loading]
}
