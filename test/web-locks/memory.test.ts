/**
 * The Web Locks API cases (cases.ts) against zaris/web-locks over the
 * memory store: each context a client of its own on one namespace.
 */
import { afterAll } from 'vitest'
import { connect, type Client } from 'zaris'
import { webLocks } from 'zaris/web-locks'
import { webLocksCases } from './cases'

const clients: Client[] = []
const url = `zaris://inproc/web-locks-${Math.random().toString(36).slice(2)}`
const open = async () => {
  const c = await connect(url)
  clients.push(c)
  return webLocks(c)
}
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()))
})

webLocksCases('zaris/web-locks over memory', async () => ({ locks: await open(), other: open }))
