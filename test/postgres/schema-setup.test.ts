/**
 * The setup of the zaris tables when processes start together, against a
 * real Postgres: one that read "missing" before another's setup committed
 * waits for it (the advisory lock), then reads the version again and runs
 * none of the script, whose statements would wait on the other's commits
 * (run 77 of CI: a deadlock between a second setup's DDL and the first
 * process's commits). The stale first read is made by hand: the version
 * read of a `db` answers "no such table" once.
 */
import pg from 'pg'
import { expect, test } from 'vitest'
import { postgresAdapter } from 'zaris/postgres'
import { ensureSchema } from '../../src/adapters/postgres/sql'
import { usePostgres } from './use-postgres'

const db = usePostgres('schema-setup')

test('a setup that read "missing" before another\'s committed runs none of the script: it does not wait on the tables\' users', async () => {
  await (await postgresAdapter({ url: db.server.url('setup'), schema: 'together' })).close()
  // Another process's commit under way: it holds a row of meta.
  const user = new pg.Client({ connectionString: db.server.url() })
  await user.connect()
  try {
    await user.query('BEGIN')
    await user.query('UPDATE together.meta SET version = version')
    let reads = 0
    const stale = {
      query: (text: string) => {
        if (reads++ === 0) return Promise.reject(Object.assign(new Error('relation "together.meta" does not exist'), { code: '42P01' }))
        return db.admin.query(text)
      },
    }
    const setup = ensureSchema(stale, 'together', true).then(() => 'done')
    expect(await Promise.race([setup, new Promise((r) => setTimeout(() => r('waiting on the open commit'), 3_000))])).toBe('done')
  } finally {
    await user.query('ROLLBACK')
    await user.end()
  }
})
