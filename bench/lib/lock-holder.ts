/**
 * A process that takes one lock and keeps it until it is killed, for the
 * "killed holder -> next holder" rows: `zaris` (a `file://` store) or
 * `lockfile` (proper-lockfile with its defaults: stale 10 s, mtime updated
 * every 5 s). Prints `held` once it holds.
 *
 *   node lock-holder.mjs zaris|lockfile <file>
 *
 * @module
 */
import lockfile from 'proper-lockfile'
import { connect } from 'zaris'

const [kind, file] = process.argv.slice(2) as ['zaris' | 'lockfile', string]
if (kind === 'zaris') {
  const client = await connect(`file://${file}?ns=bench`)
  const lock = await client.locks.acquire('lock:killed', { ttl: 30_000, wait: 10_000 })
  if (!lock) throw new Error('the holder could not take the lock')
} else {
  await lockfile.lock(file)
}
console.log('held')
setInterval(() => {}, 60_000)
