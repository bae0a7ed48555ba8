/**
 * Reading a whole `list` through the adapter's pages: each page starts
 * after the last key of the one before, until the adapter says no more
 * follow. The pages are read one after another, not at one instant: an
 * entry written or deleted meanwhile may be missed or seen at its new state,
 * as with etcd's paginated range reads.
 *
 * @module
 */
import type { Adapter, Entry } from './adapter'

/** The pages of live entries under `prefix`, in key order, each of at most `limit` (the store's own size when undefined). */
export async function* pagesOf(adapter: Adapter, prefix: string, limit?: number): AsyncGenerator<Entry[]> {
  let after: string | undefined
  for (;;) {
    const options = limit === undefined ? (after === undefined ? undefined : { after }) : after === undefined ? { limit } : { after, limit }
    const page = await adapter.list(prefix, options)
    yield page.entries
    const last = page.entries.at(-1)
    // A page that says more follow has entries (the contract); one without cannot be continued.
    if (!page.more || last === undefined) return
    after = last.key
  }
}

/** Every live entry under `prefix`, sorted by key, read page by page. */
export async function listAll(adapter: Adapter, prefix: string): Promise<Entry[]> {
  let first: Entry[] | undefined
  let all: Entry[] | undefined
  for await (const entries of pagesOf(adapter, prefix)) {
    if (first === undefined) first = entries
    else (all ??= [...first]).push(...entries)
  }
  return all ?? first ?? []
}
