/**
 * Who holds which key and who waits for it, read straight from the store
 * for `zaris locks`: held keys are live entries with an owner; the wait
 * line of a key is kept under U+0001 `q` + key + U+0001 + the waiter's id
 * (src/core/wait-queue.ts, src/core/reserved.ts), one entry per waiter,
 * in line order of their `created` revisions.
 *
 * Everything here reads the layout the core writes, through the adapter; it
 * is meant to give way to a `locks.query()` API of the core, and is kept in
 * this one module so that the swap touches nothing else.
 *
 * @module
 */
import type { Adapter, Entry } from '../core/adapter'
import { isQueueKey, QUEUE_PREFIX } from '../core/reserved'

/** Ends the lock key inside a wait-line key (wait-queue.ts's separator). */
const SEP = '\u0001'

/** A waiter in a key's line. */
export interface Waiter {
  /** The waiting client's id. */
  owner: string
  /** The revision it joined the line at: the line's order. */
  since: number
}

/** One key that is held, waited for, or both. */
export interface LockRow {
  /** The key. */
  key: string
  /** Its holder, or `null` when the key is free (its first waiter is about to take it). */
  holder: { owner: string; token: number; ttl?: number } | null
  /** Its waiters, first in line first. */
  waiters: Waiter[]
}

/**
 * Every held key under `prefix` (locks, leases, election terms) with the
 * line waiting for it, sorted by key.
 *
 * @example
 * for (const row of await readLocks(client.adapter, 'lock:')) console.log(row.key, row.holder?.owner, row.waiters.length)
 */
export async function readLocks(adapter: Adapter, prefix: string): Promise<LockRow[]> {
  const [entries, line] = await Promise.all([listAll(adapter, prefix), listAll(adapter, QUEUE_PREFIX + prefix)])
  const rows = new Map<string, LockRow>()
  const row = (key: string) => {
    let r = rows.get(key)
    if (!r) rows.set(key, (r = { key, holder: null, waiters: [] }))
    return r
  }
  for (const e of entries) {
    if (e.owner === undefined || isQueueKey(e.key)) continue
    // Whole milliseconds: a store may count time left in fractions.
    row(e.key).holder = e.ttl === undefined ? { owner: e.owner, token: e.created } : { owner: e.owner, token: e.created, ttl: Math.round(e.ttl) }
  }
  const waiting = line
    .map((e) => ({ e, cut: e.key.lastIndexOf(SEP) }))
    .filter(({ e, cut }) => cut >= QUEUE_PREFIX.length && e.owner !== undefined)
    .sort((a, b) => a.e.created - b.e.created)
  for (const { e, cut } of waiting) row(e.key.slice(QUEUE_PREFIX.length, cut)).waiters.push({ owner: e.owner!, since: e.created })
  return [...rows.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
}

type Page = Entry[] | { entries: Entry[]; more: boolean }

/** Every entry under `prefix`, through the adapter's pages where it has them. */
async function listAll(adapter: Adapter, prefix: string): Promise<Entry[]> {
  const list = adapter.list.bind(adapter) as (prefix: string, options?: { after?: string }) => Promise<Page>
  const all: Entry[] = []
  let after: string | undefined
  for (;;) {
    const page = await list(prefix, after === undefined ? undefined : { after })
    if (Array.isArray(page)) return page
    all.push(...page.entries)
    if (!page.more || page.entries.length === 0) return all
    after = page.entries[page.entries.length - 1]!.key
  }
}
