/**
 * Fenced writes that reach the application's own data: `fence(tx, lock)`,
 * awaited inside the application's open transaction on its own connection,
 * makes the rest of that transaction commit only while the lock is held
 * with the lock's token.
 *
 * It takes `FOR KEY SHARE` row locks on the entries the hold lives in,
 * checked to carry the hold's token and to be within their deadlines. Until
 * the transaction ends:
 * - a steal, a plain write over the key, a release and an expiry — anything
 *   that ends the hold's life or starts another — waits for the transaction
 *   (`created` is a key column of the entries table, so each of them needs a
 *   lock that conflicts with key share); a zaris commit never waits holding
 *   its namespace: it backs off and tries again once the transaction ended;
 * - renewals go through (they keep the life), so an application that holds
 *   its lock with `autoRenew` keeps it while its transaction runs;
 * - a deadline that passes does not free the lock: the entry stays live
 *   (read with ttl 0) until the transaction ends, and then expires. So a
 *   transaction that outlives its lock's TTL still commits under the lock,
 *   and nobody else holds it before it ends.
 *
 * The check is a row lock in the caller's transaction, so the write and the
 * check are one atomic commit: if the lock was lost before `fence` ran, it
 * throws `FencedError` and the caller rolls back; once it returned, nobody
 * can take the lock until the caller commits or rolls back.
 *
 * Rules for the caller: call it inside `BEGIN … COMMIT` (it refuses to run
 * outside a transaction, where its locks would end at once), preferably
 * first; at `REPEATABLE READ` or `SERIALIZABLE`, a lock renewed since the
 * transaction's snapshot fails with Postgres's serialization error (retry the
 * transaction). Release the lock after the transaction ends: a release
 * inside it waits for it, and gives up after the adapter's `timeout`.
 *
 * @module
 */
import type { Check } from '../../core/contract/adapter'
import { FencedError, InvalidArgumentError } from '../../core/contract/errors'
import { randomId } from '../../core/contract/ids'
import { fenceChecks, type Fence } from '../../core/locks'
import { keyBytes } from './codec'
import type { PgQueryable } from './load'
import { checkSchema, DEFAULT_SCHEMA } from './sql'

/** Options of {@link fence}. */
export interface FenceOptions {
  /** The schema the store's tables are in (the adapter's `schema`). Default `zaris`. */
  schema?: string
}

/**
 * Checks, inside the caller's open transaction on its own connection `tx`
 * (a `pg.Client` or a pool's client), that `lock` is still held with its
 * token, and keeps it held until that transaction ends; throws
 * `FencedError` (roll back) when it is not.
 *
 * @example
 * const lock = await client.locks.acquire('lock:invoice:42', { ttl: 30_000 })
 * const tx = await pool.connect()
 * try {
 *   await tx.query('BEGIN')
 *   await fence(tx, lock)
 *   await tx.query('UPDATE invoices SET status = $1 WHERE id = $2', ['sent', 42])
 *   await tx.query('COMMIT')
 * } catch (err) {
 *   await tx.query('ROLLBACK')
 *   throw err
 * } finally {
 *   tx.release()
 * }
 */
export async function fence(tx: PgQueryable, lock: Fence, options: FenceOptions = {}): Promise<void> {
  if (typeof tx !== 'object' || tx === null || typeof tx.query !== 'function') {
    throw new InvalidArgumentError('fence needs the transaction\'s connection: a pg Client or a pool\'s client, inside BEGIN')
  }
  if (typeof lock !== 'object' || lock === null || typeof lock.key !== 'string' || typeof lock.token !== 'number') {
    throw new InvalidArgumentError('fence needs a lock or lease (an object with key and token)')
  }
  const schema = checkSchema(options.schema ?? DEFAULT_SCHEMA)
  const checks = fenceChecks(lock).filter((c): c is Extract<Check, { created: number | null }> => 'created' in c && c.created !== null)
  // node-postgres 8.20 and later say whether the connection is inside a transaction block; older ones
  // are asked through a transaction-local setting that a second statement still sees only inside one.
  const status = (tx as { getTransactionStatus?: () => string | null }).getTransactionStatus?.()
  if (status !== undefined && status !== null && status !== 'T') throw outsideTransaction()
  const nonce = status === undefined || status === null ? randomId() : ''
  const r = await tx.query(
    `WITH held AS (
       SELECT e.k FROM ${schema}.entries e JOIN unnest($1::bytea[], $2::bigint[]) AS x(k, created) ON e.k = x.k AND e.created = x.created
       WHERE e.expires_at IS NULL OR e.expires_at > clock_timestamp()
       FOR KEY SHARE OF e
     ) SELECT (SELECT count(*) FROM held)::integer AS held, set_config('zaris.fence', $3, true) AS nonce`,
    [checks.map((c) => keyBytes(c.key)), checks.map((c) => c.created), nonce],
  )
  const row = r.rows[0] as { held: number }
  if (nonce !== '') {
    const again = await tx.query(`SELECT current_setting('zaris.fence', true) AS nonce`)
    if ((again.rows[0] as { nonce: string | null }).nonce !== nonce) throw outsideTransaction()
  }
  if (row.held < checks.length) {
    throw new FencedError(`the lock ${JSON.stringify(lock.key)} is no longer held with token ${lock.token}: roll the transaction back`)
  }
}

function outsideTransaction(): Error {
  return new InvalidArgumentError('fence(tx, lock) must run inside an open transaction (after BEGIN): outside one, its row locks would end with the statement')
}
