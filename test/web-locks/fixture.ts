/**
 * The fixture of the Web Locks API cases (cases.ts) for zaris/web-locks:
 * each context a client of its own on one store; every client closed after
 * the file. The empty manager (query-empty) is one with a prefix of its own.
 */
import { afterAll } from 'vitest'
import { connect, type Client } from 'zaris'
import { webLocks } from 'zaris/web-locks'
import type { WebLocksFixture } from './cases'

/** Managers over clients of the store at `url()` (read when a test opens one). */
export function zarisContexts(url: () => string): () => Promise<WebLocksFixture> {
  const clients: Client[] = []
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()))
  })
  const open = async () => {
    const c = await connect(url())
    clients.push(c)
    return webLocks(c)
  }
  // A prefix no test uses: a manager that sees no lock, as a new page's navigator.locks.
  const empty = async () => webLocks((await open()).client, { prefix: `empty-${Math.random().toString(36).slice(2)}/` })
  return async () => ({ locks: await open(), other: open, empty })
}
