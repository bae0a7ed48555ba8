/**
 * This page's managers for the browser tests of contexts (html, contexts):
 * Chromium's `navigator.locks`, or zaris/web-locks over a client of its own
 * of the IndexedDB store at `url` — every client closed after the file.
 */
import { afterAll } from 'vitest'
import { connect, type Client } from 'zaris'
import { webLocks } from 'zaris/web-locks'
import type { AnyLockManager } from './helpers'

export type Kind = 'navigator' | 'zaris'

/** A function that gives this page a manager of `kind`. */
export function pageManagers(url: string): (kind: Kind) => Promise<AnyLockManager> {
  const clients: Client[] = []
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()))
  })
  return async (kind) => {
    if (kind === 'navigator') return navigator.locks as unknown as AnyLockManager
    const c = await connect(url)
    clients.push(c)
    return webLocks(c) as unknown as AnyLockManager
  }
}
