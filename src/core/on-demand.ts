/**
 * The parts of the core that load on first use — shared locks, semaphore
 * permits, `query`, several keys at once, an election's campaign, counting — so that an app that never uses
 * them does not carry them. Each module is imported once and kept: a
 * dynamic `import()` on every call would cost a trip through the module
 * loader each time.
 *
 * @module
 */

function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined
  // A failed load is forgotten: in a page, a chunk the network lost may arrive on the next try.
  return () =>
    (loaded ??= load().catch((err: unknown) => {
      loaded = undefined
      throw err
    }))
}

export const sharedPart = once(() => import('./shared-part'))
export const permits = once(() => import('./permits'))
export const lockQuery = once(() => import('./lock-query'))
export const lockSet = once(() => import('./lock-set'))
export const electionBody = once(() => import('./election-body'))
export const counterOps = once(() => import('./counter-ops'))
