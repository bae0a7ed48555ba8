/**
 * The parts of the core that load on first use — shared locks, semaphore
 * permits, `query`, several keys at once — so that an app that never uses
 * them does not carry them. Each module is imported once and kept: a
 * dynamic `import()` on every call would cost a trip through the module
 * loader each time.
 *
 * @module
 */

function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined
  return () => (loaded ??= load())
}

export const sharedPart = once(() => import('./shared-part'))
export const permits = once(() => import('./permits'))
export const lockQuery = once(() => import('./lock-query'))
export const lockSet = once(() => import('./lock-set'))
