/**
 * A lock holder in a process of its own, for fence.test.ts to pause with
 * SIGSTOP: it takes `lock:invoice` and writes the invoice in its own
 * Postgres transaction, fenced by the lock (`fence(tx, lock)`).
 *
 *   node fenced-holder.mjs '{"url":"postgres://…?ns=…","ttl":300,"mode":"before"|"inside"}'
 *
 * - `before`: prints `held <token>`, then waits for a line on stdin (the
 *   test pauses it meanwhile) and writes: an audit row, then the fence, then
 *   the invoice.
 * - `inside`: prints `held <token>`, begins the transaction, fences, writes
 *   the audit row and prints `fenced`; then waits for a line (paused
 *   meanwhile, past its TTL) and writes the invoice and commits.
 *
 * It never looks at `lock.held` before writing: a paused process goes on
 * where it stopped. Prints `committed` or `refused <code>` (after rolling back).
 */
import { createInterface } from 'node:readline'
import pg from 'pg'
import { connect, isZarisError } from 'zaris'
import { fence } from 'zaris/postgres'

const { url, ttl, mode } = JSON.parse(process.argv[2]!) as { url: string; ttl: number; mode: 'before' | 'inside' }
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]()
const client = await connect(url, { id: `holder-${process.pid}` })
const lock = (await client.locks.acquire('lock:invoice', { ttl, autoRenew: true }))!
console.log(`held ${lock.token}`)
const db = new pg.Client({ connectionString: url.replace(/\?.*$/, '') })
await db.connect()
try {
  if (mode === 'before') await lines.next()
  await db.query('BEGIN')
  if (mode === 'before') await db.query('INSERT INTO audit (token, what) VALUES ($1, $2)', [lock.token, 'about to send'])
  await fence(db, lock)
  if (mode === 'inside') {
    await db.query('INSERT INTO audit (token, what) VALUES ($1, $2)', [lock.token, 'about to send'])
    console.log('fenced')
    await lines.next()
  }
  await db.query('UPDATE invoices SET status = $1, token = $2 WHERE id = 42', ['sent', lock.token])
  await db.query('COMMIT')
  console.log('committed')
} catch (err) {
  await db.query('ROLLBACK')
  console.log(`refused ${isZarisError(err) ? err.code : String(err)}`)
}
await db.end()
await client.close()
process.exit(0)
