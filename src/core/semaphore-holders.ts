/**
 * Who holds a semaphore's permits, read from its slots: the answer of
 * `semaphores.holders()`, loaded on first use.
 *
 * @module
 */
import type { Context } from './context'
import { listAll } from './contract/pages'
import { slotOf, slotPrefix } from './contract/reserved'

/** A holder of a semaphore's permit, from `semaphores.holders()`. */
export interface PermitHolder {
  /** The holding client's id. */
  owner: string
  /** The permit's fencing token. */
  token: number
  /** Milliseconds left on the store's clock. */
  ttl?: number
  /** The limit the permit was taken with. */
  limit: number
  /** Its slot: a number below that limit. */
  slot: number
}

/** Who holds permits of semaphore `key`, by slot. */
export async function permitHolders(ctx: Context, key: string): Promise<PermitHolder[]> {
  const prefix = slotPrefix(key)
  const holders: PermitHolder[] = []
  for (const e of await listAll(ctx.adapter, prefix)) {
    const slot = slotOf(prefix, e.key)
    if (slot === undefined || e.owner === undefined) continue
    const limit = (e.value as { limit?: unknown } | null)?.limit
    const h: PermitHolder = { owner: e.owner, token: e.created, limit: typeof limit === 'number' ? limit : slot + 1, slot }
    if (e.ttl !== undefined) h.ttl = e.ttl
    holders.push(h)
  }
  return holders.sort((a, b) => a.slot - b.slot)
}
