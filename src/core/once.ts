/**
 * `once`: how a part loaded on first use is loaded, in a module of its own so
 * that an adapter can use it without reaching the core's own loaders
 * (on-demand.ts), whose `import()`s would become chunks of every app that
 * bundles the adapter.
 *
 * @module
 */

/** `load`, called on first use and kept; a failed load is tried again on the next use. */
export function once<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined
  // In a page, a chunk the network lost may arrive on the next try.
  return () =>
    (loaded ??= load().catch((err: unknown) => {
      loaded = undefined
      throw err
    }))
}
