/**
 * `zaris serve --postgres URL`: two node processes in front of one real
 * Postgres serve one store, the same one applications reach with
 * `postgres://`, so a lock taken through a node (a browser, say) is the lock
 * an application sees directly, and fences the application's own transaction.
 */
import pg from 'pg'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connect } from 'zaris'
import { fence } from 'zaris/postgres'
import { startPostgres, type PostgresServer } from '../postgres/server'
import { startNode, type NodeProcess } from './node-process'

let server: PostgresServer
const nodes: NodeProcess[] = []
beforeAll(async () => {
  server = await startPostgres()
})
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.kill9()))
  await server?.dispose()
})

test('two nodes on one Postgres are one lock domain with its direct clients; a lock taken through a node fences a transaction', async () => {
  const a = await startNode(['--postgres', server.url()])
  const b = await startNode(['--postgres', server.url()])
  nodes.push(a, b)
  expect(a.output()).toMatch(/store: postgres postgres:\/\/zaris@127\.0\.0\.1:\d+\/postgres/)
  const onA = await connect(`zaris://127.0.0.1:${a.port}/shared`, { id: 'on-a' })
  const onB = await connect(`zaris://127.0.0.1:${b.port}/shared`, { id: 'on-b' })
  const direct = await connect(server.url('shared'), { id: 'direct' })
  const db = new pg.Client({ connectionString: server.url() })
  await db.connect()
  try {
    const lock = (await onA.locks.acquire('lock:one', { ttl: 10_000 }))!
    expect(await onB.locks.acquire('lock:one')).toBeNull()
    expect(await direct.locks.holder('lock:one')).toMatchObject({ owner: 'on-a', token: lock.token })
    const watch = onB.watch('job:', { prefix: true })
    await watch.ready
    await direct.put('job:1', 1)
    expect((await watch.next()).value).toMatchObject({ key: 'job:1', value: 1 })
    await db.query('BEGIN')
    await fence(db, lock)
    await db.query('COMMIT')
    expect(await lock.release()).toBe(true)
    await db.query('BEGIN')
    await expect(fence(db, lock)).rejects.toMatchObject({ code: 'FENCED' })
    await db.query('ROLLBACK')
    await watch.return?.()
  } finally {
    await db.end()
    await Promise.all([onA.close(), onB.close(), direct.close()])
  }
}, 120_000)
