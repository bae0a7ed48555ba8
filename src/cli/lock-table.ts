/**
 * Who holds which key and who waits for it, for `zaris locks`: one row per
 * key from `client.locks.query()` — its holders (one exclusive holder, or
 * every shared one) and its line of waiters in order, each with its mode.
 *
 * @module
 */
import type { Client, LockMode } from 'zaris'

/** A holder of a key. */
export interface RowHolder {
  /** The holding client's id. */
  owner: string
  /** The hold's fencing token. */
  token: number
  /** Whole milliseconds left on the store's clock. */
  ttl?: number
  mode: LockMode
}

/** A waiter in a key's line. */
export interface Waiter {
  /** The waiting client's id. */
  owner: string
  /** The revision it joined the line at: the line's order. */
  since: number
  mode: LockMode
}

/** One key that is held, waited for, or both. */
export interface LockRow {
  /** The key. */
  key: string
  /** Its first holder (the only one, unless it is held shared), or `null` when the key is free (its first waiter is about to take it). */
  holder: RowHolder | null
  /** Every holder, in grant order. */
  holders: RowHolder[]
  /** Its waiters, first in line first. */
  waiters: Waiter[]
}

/**
 * Every held key under `prefix` (locks, leases, election terms) with the
 * line waiting for it, sorted by key.
 *
 * @example
 * for (const row of await readLocks(client, 'lock:')) console.log(row.key, row.holder?.owner, row.waiters.length)
 */
export async function readLocks(client: Client, prefix: string): Promise<LockRow[]> {
  const { held, pending } = await client.locks.query(prefix)
  const rows = new Map<string, LockRow>()
  const row = (key: string) => {
    let r = rows.get(key)
    if (!r) rows.set(key, (r = { key, holder: null, holders: [], waiters: [] }))
    return r
  }
  for (const h of held) {
    // Whole milliseconds: a store may count time left in fractions.
    const holder: RowHolder = h.ttl === undefined ? { owner: h.owner, token: h.token, mode: h.mode } : { owner: h.owner, token: h.token, ttl: Math.round(h.ttl), mode: h.mode }
    const r = row(h.key)
    r.holders.push(holder)
    r.holder ??= holder
  }
  for (const p of pending) row(p.key).waiters.push({ owner: p.owner, since: p.since, mode: p.mode })
  return [...rows.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
}
