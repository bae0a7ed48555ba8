/**
 * `fence(tx, lock)`: a lock's token checked inside the application's own
 * Postgres transaction, and kept until that transaction ends. On a real
 * Postgres, with holders in processes of their own that the test pauses
 * with SIGSTOP (test/postgres/fenced-holder.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Client, type Lock } from 'zaris'
import { fence, postgresAdapter } from 'zaris/postgres'
import { bundle } from '../server/cli-bundle'
import { until } from '../conformance/util'
import { startPostgres, type PostgresServer } from './server'

let server: PostgresServer
let db: pg.Client
let n = 0
const holderScript = () => bundle('zaris-fenced-holder', ['test/postgres/fenced-holder.ts'], ['test/postgres'])['test/postgres/fenced-holder.ts']!
const children: ChildProcess[] = []

beforeAll(async () => {
  server = await startPostgres()
  db = new pg.Client({ connectionString: server.url() })
  await db.connect()
  await db.query('CREATE TABLE invoices (id integer PRIMARY KEY, status text NOT NULL, token bigint); CREATE TABLE audit (token bigint, what text)')
})
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL')
  await db?.end()
  await server?.dispose()
})

/** A fresh namespace with an unsent invoice 42 and an empty audit table. */
async function fresh(): Promise<string> {
  await db.query("DELETE FROM audit; DELETE FROM invoices; INSERT INTO invoices VALUES (42, 'draft', NULL)")
  return server.url(`fence-${++n}`)
}

function holder(url: string, ttl: number, mode: 'before' | 'inside') {
  const child = spawn(process.execPath, [holderScript(), JSON.stringify({ url, ttl, mode })], { stdio: ['pipe', 'pipe', 'pipe'] })
  children.push(child)
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  const waitFor = async (re: RegExp, ms = 15_000) => {
    const deadline = Date.now() + ms
    for (;;) {
      const m = re.exec(out)
      if (m) return m
      if (Date.now() > deadline) throw new Error(`holder did not print ${re} within ${ms} ms:\n${out}`)
      await new Promise((r) => setTimeout(r, 10))
    }
  }
  return {
    waitFor,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    go: () => child.stdin!.write('go\n'),
  }
}

/** Clients a and b on a fresh namespace (a's adapter with `options`), and a connection of the test's own for transactions. */
async function inProcess(run: (ctx: { a: Client; b: Client; tx: pg.Client }) => Promise<void>, options: { timeout?: number } = {}): Promise<void> {
  const url = await fresh()
  const a = new Client(await postgresAdapter({ url, ...options }), { id: 'a' })
  const b = new Client(await postgresAdapter({ url }), { id: 'b' })
  const tx = new pg.Client({ connectionString: server.url() })
  await tx.connect()
  try {
    await run({ a, b, tx })
  } finally {
    await tx.end()
    await a.close()
    await b.close()
  }
}

const row = async () => (await db.query('SELECT status, token FROM invoices WHERE id = 42')).rows[0] as { status: string; token: string | null }
const audits = async () => (await db.query('SELECT count(*)::int AS n FROM audit')).rows[0].n as number

describe('fence(tx, lock)', () => {
  test('a holder paused past its TTL is refused after another took over: its UPDATE and its other writes are rolled back', async () => {
    const url = await fresh()
    const a = holder(url, 300, 'before')
    const token = Number((await a.waitFor(/held (\d+)/))[1])
    a.pause()
    const b = new Client(await postgresAdapter({ url }), { id: 'b' })
    try {
      const taken = await b.locks.acquire('lock:invoice', { ttl: 5_000, wait: 5_000 })
      expect(taken?.token).toBeGreaterThan(token)
      a.resume()
      a.go()
      await a.waitFor(/refused FENCED/)
      expect(await row()).toEqual({ status: 'draft', token: null })
      expect(await audits()).toBe(0)
    } finally {
      a.resume()
      await b.close()
    }
  })

  test('a transaction that fenced keeps the lock past its TTL: nobody takes it before the transaction ends, then the next holder does', async () => {
    const url = await fresh()
    const a = holder(url, 300, 'inside')
    const token = Number((await a.waitFor(/held (\d+)/))[1])
    await a.waitFor(/fenced/)
    a.pause()
    // b's calls counted: a pool of its own.
    const pool = new pg.Pool({ connectionString: server.url(), max: 4 })
    const connect = pool.connect.bind(pool)
    let calls = 0
    pool.connect = (() => (calls++, connect())) as typeof pool.connect
    const b = new Client(await postgresAdapter({ pool, namespace: new URL(url).searchParams.get('ns')! }), { id: 'b' })
    const stop = new AbortController()
    try {
      const events: string[] = []
      const watching = (async () => {
        // A's renewal sent just before the pause may land after this subscribes: a put of A's own life.
        for await (const ev of b.watch('lock:invoice', { signal: stop.signal })) events.push(ev.type === 'put' && ev.created === token ? 'renewal' : ev.type)
      })()
      // Past A's TTL its entry is still there, live with ttl 0, and a try finds it held.
      await new Promise((r) => setTimeout(r, 200))
      const before = calls
      await new Promise((r) => setTimeout(r, 400))
      // The watch's expiry sweep finds the entry held by the fence and tries again 250 ms later, not in a loop.
      expect(calls - before).toBeLessThan(20)
      expect(await b.get('lock:invoice')).toMatchObject({ created: token, ttl: 0 })
      // A listing too: its sweep leaves the fenced entry, and it is read once more, not swept again and again.
      expect(await b.list('lock:inv')).toMatchObject([{ key: 'lock:invoice', created: token, ttl: 0 }])
      expect(await b.locks.acquire('lock:invoice')).toBeNull()
      const waiting = b.locks.acquire('lock:invoice', { ttl: 5_000, wait: 5_000 })
      await new Promise((r) => setTimeout(r, 400))
      expect(events.filter((e) => e !== 'renewal')).toEqual([])
      a.resume()
      a.go()
      await a.waitFor(/committed/)
      const next = (await waiting)!
      expect(next.token).toBeGreaterThan(token)
      expect(await row()).toEqual({ status: 'sent', token: String(token) })
      expect(await audits()).toBe(1)
      await until(() => events.filter((e) => e !== 'renewal').length >= 2)
      stop.abort()
      await watching
      // The expiry was told once, after the transaction ended, then the new holder's put.
      expect(events.filter((e) => e !== 'renewal').slice(0, 2)).toEqual(['expire', 'put'])
    } finally {
      stop.abort()
      a.resume()
      await b.close()
      await pool.end()
    }
  })

  test('while a transaction holds the fence, renewals go through; a takeover (another client\'s put) waits for it to end', () =>
    inProcess(async ({ a, b, tx }) => {
      const lock = (await a.locks.acquire('lock:invoice', { ttl: 5_000, autoRenew: false }))!
      await tx.query('BEGIN')
      await fence(tx, lock)
      expect(await lock.renew(5_000)).toBe(true)
      const order: string[] = []
      let stolenAt = 0
      const steal = b.put('lock:invoice', 'mine').then(() => {
        stolenAt = performance.now()
        order.push('steal')
      })
      // Long enough that a backoff's tries would be ~1 s apart by the end (1.6 s, 2.6 s ...).
      await new Promise((r) => setTimeout(r, 1_800))
      await tx.query("UPDATE invoices SET status = 'sent' WHERE id = 42")
      order.push('update')
      // The steal may be answered before the COMMIT is (both come as the transaction ends): what counts is
      // that it waited for the COMMIT to be sent.
      const committed = tx.query('COMMIT')
      order.push('commit')
      const ended = performance.now()
      await committed
      await steal
      expect(order).toEqual(['update', 'commit', 'steal'])
      // Woken by the transaction's end (it waits on the row the fence holds), not at its next try of a backoff.
      expect(stolenAt - ended).toBeLessThan(400)
      expect(await lock.release()).toBe(false)
      expect(await row()).toMatchObject({ status: 'sent' })
    }))

  test('a takeover waits for a fence longer than its callTimeout, a call per callTimeout, not a loop, and goes through when the transaction ends', async () => {
    const url = await fresh()
    const a = new Client(await postgresAdapter({ url }), { id: 'a' })
    const pool = new pg.Pool({ connectionString: server.url(), max: 2 })
    const connect = pool.connect.bind(pool)
    let calls = 0
    pool.connect = (() => (calls++, connect())) as typeof pool.connect
    const b = new Client(await postgresAdapter({ pool, namespace: new URL(url).searchParams.get('ns')!, callTimeout: 300, timeout: 10_000, listen: false }), { id: 'b' })
    const tx = new pg.Client({ connectionString: server.url() })
    await tx.connect()
    try {
      const lock = (await a.locks.acquire('lock:invoice', { ttl: 5_000, autoRenew: false }))!
      await tx.query('BEGIN')
      await fence(tx, lock)
      const before = calls
      const steal = b.put('lock:invoice', 'mine')
      await new Promise((r) => setTimeout(r, 1_200))
      await tx.query('COMMIT')
      await steal
      // A wait of 300 ms at most, then the commit again: ~2 calls each 300 ms.
      expect(calls - before).toBeLessThanOrEqual(14)
      expect(await b.get('lock:invoice')).toMatchObject({ value: 'mine' })
    } finally {
      await tx.end()
      await a.close()
      await b.close()
      await pool.end()
    }
  })

  test('a release inside its own fenced transaction waits for it, and gives up after the adapter\'s timeout', () =>
    inProcess(
      async ({ a, tx }) => {
        const lock = (await a.locks.acquire('lock:invoice', { ttl: 5_000, autoRenew: false }))!
        await tx.query('BEGIN')
        await fence(tx, lock)
        const started = Date.now()
        const err = await a.delete('lock:invoice').catch((e: unknown) => e)
        expect(err).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('fence') })
        // What Postgres said (the fence's SQLSTATE), for whoever looks further.
        expect((err as Error).cause).toMatchObject({ cause: { code: 'ZR001' } })
        expect(Date.now() - started).toBeGreaterThanOrEqual(550)
        await tx.query('COMMIT')
        expect(await lock.release()).toBe(true)
      },
      { timeout: 600 },
    ))

  test('bad calls: outside a transaction, no connection, no lock; a shared lock and a permit fence too', () =>
    inProcess(async ({ a, b, tx }) => {
      const lock = (await a.locks.acquire('lock:invoice', { ttl: 5_000, autoRenew: false }))!
      await expect(fence(tx, lock)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('BEGIN') })
      // A connection that cannot say whether it is in a transaction is asked through a transaction-local setting.
      const plain = { query: (text: string, values?: unknown[]) => tx.query(text, values) }
      await expect(fence(plain, lock)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('BEGIN') })
      await tx.query('BEGIN')
      await fence(plain, lock)
      await tx.query('COMMIT')
      await expect(fence({} as pg.Client, lock)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      await expect(fence(tx, {} as Lock)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      // Each rule on its own: not a connection, or not a lock, is refused by name and never crashes.
      const query = (text: string, values?: unknown[]) => tx.query(text, values)
      for (const bad of [null, undefined, 'tx', Object.assign(() => {}, { query })]) {
        await expect(fence(bad as unknown as pg.Client, lock)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining("transaction's connection") })
      }
      for (const bad of [null, undefined, 'lock', { key: lock.key }, { token: lock.token }, { key: 1, token: lock.token }, { key: lock.key, token: String(lock.token) }]) {
        await expect(fence(tx, bad as unknown as Lock)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('key and token') })
      }
      await expect(fence(tx, lock, { schema: 'Bad-Schema' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      const shared = [(await a.locks.acquire('lock:report', { mode: 'shared', autoRenew: false }))!, (await b.locks.acquire('lock:report', { mode: 'shared', autoRenew: false }))!]
      const permit = (await a.semaphores.acquire('sem:uploads', { limit: 2, autoRenew: false }))!
      await tx.query('BEGIN')
      for (const hold of [...shared, permit]) await fence(tx, hold)
      await tx.query('COMMIT')
      await shared[0]!.release()
      await tx.query('BEGIN')
      await expect(fence(tx, shared[0]!)).rejects.toMatchObject({ code: 'FENCED' })
      await tx.query('ROLLBACK')
      await tx.query('BEGIN')
      await fence(tx, shared[1]!)
      await tx.query('COMMIT')
    }))
})
