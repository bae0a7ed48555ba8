/**
 * A key's wait line, as the facade reads it after a release: whether anyone
 * stands in it, and who (one page of one list: a line longer than a page
 * is not waited for). Only when someone waits does the wait for the grants
 * (handover.ts) run, so a request nobody waits behind costs one list.
 *
 * @module
 */
import type { Client } from '../core/client'
import type { Entry } from '../core/contract/adapter'
import { QUEUE_PREFIX, SEP } from '../core/contract/reserved'
import { MAX_KEY_LENGTH } from '../core/contract/validate'

/** The prefix of `key`'s line, or `undefined` when the key is too long to have one (its waiters retry on their own). */
export function linePrefix(key: string): string | undefined {
  const prefix = QUEUE_PREFIX + key + SEP
  return prefix.length + 2 > MAX_KEY_LENGTH ? undefined : prefix
}

/** The most places of one line read at once; a longer line's release does not wait for its grants. */
const PAGE = 256

/** The places in the line under `prefix`, in line order (places of longer keys under the same prefix left out); `undefined` past a page. */
export async function lineOf(client: Client, prefix: string): Promise<Entry[] | undefined> {
  const page = await client.adapter.list(prefix, { limit: PAGE })
  if (page.more) return undefined
  return page.entries.filter((e) => !e.key.slice(prefix.length).includes(SEP)).sort((a, b) => a.created - b.created)
}

/** Whether anyone stands in `key`'s line, in a line of a page at most; never rejects. */
export async function someoneWaits(client: Client, key: string): Promise<boolean> {
  const prefix = linePrefix(key)
  return prefix !== undefined && ((await lineOf(client, prefix).catch(() => undefined))?.length ?? 0) > 0
}
