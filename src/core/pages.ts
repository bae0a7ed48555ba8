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

/** Every live entry under `prefix`, sorted by key, read page by page. */
export async function listAll(adapter: Adapter, prefix: string): Promise<Entry[]> {
  let page = await adapter.list(prefix)
  if (!page.more) return page.entries
  const all = [...page.entries]
  while (page.more) {
    const last = page.entries.at(-1)
    // A page that says more follow has entries (the contract); one without cannot be continued.
    if (last === undefined) break
    page = await adapter.list(prefix, { after: last.key })
    all.push(...page.entries)
  }
  return all
}
