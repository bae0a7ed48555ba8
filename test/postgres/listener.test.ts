/**
 * The LISTEN connection behind the Postgres adapter's watches
 * (src/adapters/postgres/listener.ts), seen from Postgres's own
 * `pg_stat_activity`: one per schema and pool however many watches and
 * namespaces; kept while any namespace is followed, and for the linger after
 * the last one, then gone; opened again after Postgres cut it; and a
 * notification wakes a watch long before the 2 s safety poll it would
 * otherwise wait for. Notifications only ever make a watch faster, so the
 * conformance suite cannot see any of this. On a real Postgres.
 */
import { spawn } from 'node:child_process'
import { createServer, type AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { expect, test } from 'vitest'
import type { WatchEvent } from 'zaris'
import { postgresAdapter, type PostgresAdapter } from 'zaris/postgres'
import { FaultProxy } from '../faults/proxy'
import { sleep, until } from '../conformance/util'
import { usePostgres } from './use-postgres'

const db = usePostgres('listener')
const ns = db.ns
/** The listener stays this long after the last namespace stopped being followed (listener.ts's LINGER_MS). */
const LINGER_MS = 2_000

/** The backends of this test's database that a listener opened. */
async function listeners(): Promise<number[]> {
  const r = await db.admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'zaris listen' ORDER BY pid`)
  return r.rows.map((row) => row.pid)
}

/** Each of `count` writes by `writer` at `key`, timed from its commit's answer to `watched` hearing it, in ms. */
async function delays(writer: PostgresAdapter, watched: WatchEvent[], key: string, count: number): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < count; i++) {
    const r = await writer.commit([], [{ type: 'set', key, value: i }])
    if (!r.ok) throw new Error('a plain set was refused')
    const t = performance.now()
    await until(() => watched.some((e) => e.revision === r.revision), 10_000)
    out.push(performance.now() - t)
  }
  return out.sort((a, b) => a - b)
}

/** A watch of `prefix` on `adapter`, its events gathered. */
async function watched(adapter: PostgresAdapter, prefix: string): Promise<{ seen: WatchEvent[]; stop: () => void }> {
  const seen: WatchEvent[] = []
  const stop = await adapter.watch(prefix, { event: (e) => seen.push(e), error() {} })
  return { seen, stop }
}

test('one LISTEN connection for every watch and namespace of a pool, kept while any is followed, gone a linger after the last', async () => {
  const [na, nb] = [ns(), ns()]
  const [a, b, idle] = await Promise.all([postgresAdapter({ url: db.server.url(na) }), postgresAdapter({ url: db.server.url(nb) }), postgresAdapter({ url: db.server.url(ns()) })])
  // A pool of its own (other options), which never watches.
  const writer = await postgresAdapter({ url: db.server.url(nb), pg: { max: 1 } })
  try {
    expect(await listeners()).toEqual([])
    const w1 = await watched(a, 'x/')
    await watched(a, 'y/')
    const w3 = await watched(b, 'x/')
    await until(() => a.listening && b.listening, 5_000)
    // The listener of its pool is working, but idle follows nothing: it does not listen.
    expect(idle.listening).toBe(false)
    const [pid] = await listeners()
    expect(await listeners()).toEqual([pid])

    // a's namespace is no longer followed once a closes; b's still is, and is still woken by its notifications.
    w1.stop()
    await a.close()
    await sleep(LINGER_MS + 500)
    expect(await listeners()).toEqual([pid])
    const d = await delays(writer, w3.seen, 'x/1', 5)
    expect(d[2]!, `NOTIFY delays ${d.map((x) => x.toFixed(0)).join(', ')} ms`).toBeLessThan(300)

    // The last follower gone (the pool stays open for `idle`): the listener lingers, then ends.
    await b.close()
    await sleep(LINGER_MS / 2)
    expect(await listeners(), 'still there within the linger').toEqual([pid])
    await until(async () => (await listeners()).length === 0, LINGER_MS + 5_000)
    // The connection gone, no adapter of the pool says it listens.
    expect([idle.listening, b.listening]).toEqual([false, false])
  } finally {
    for (const x of [a, b, idle, writer]) await x.close()
  }
})

test('a watch begun within the linger keeps the same LISTEN connection', async () => {
  const [a, b] = await Promise.all([postgresAdapter({ url: db.server.url(ns()) }), postgresAdapter({ url: db.server.url(ns()) })])
  try {
    const w = await watched(a, 'k/')
    await until(() => a.listening, 5_000)
    const before = await listeners()
    expect(before).toHaveLength(1)
    w.stop()
    await a.close()
    await sleep(LINGER_MS / 4)
    await watched(b, 'k/')
    await until(() => b.listening, 5_000)
    await sleep(LINGER_MS + 500)
    expect(await listeners()).toEqual(before)
  } finally {
    await a.close()
    await b.close()
  }
})

test('a notification wakes a watch at once, not at the 2 s safety poll; a LISTEN connection Postgres cut is opened again', async () => {
  const name = ns()
  const watcher = await postgresAdapter({ url: db.server.url(name), pollInterval: 60_000 })
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    const w = await watched(watcher, 'n/')
    await until(() => watcher.listening, 5_000)
    const first = await delays(writer, w.seen, 'n/1', 9)
    // Polled instead, each would wait up to the 2 s safety poll: a median of ~1 s.
    expect(first[4]!, `delays ${first.map((x) => x.toFixed(0)).join(', ')} ms`).toBeLessThan(300)

    const [pid] = await listeners()
    await db.admin.query('SELECT pg_terminate_backend($1)', [pid])
    // Opened again at once: the first retry comes 0.1 s after the loss (then 0.2, 0.4 ... up to 5 s).
    await until(async () => {
      const now = await listeners()
      return now.length === 1 && now[0] !== pid
    }, 2_000)
    await until(() => watcher.listening, 5_000)
    const again = await delays(writer, w.seen, 'n/2', 9)
    expect(again[4]!, `delays after the cut ${again.map((x) => x.toFixed(0)).join(', ')} ms`).toBeLessThan(300)
  } finally {
    await watcher.close()
    await writer.close()
  }
})

test('listen: false opens no LISTEN connection, nor tries one anywhere, and its watches poll at pollInterval', async () => {
  const name = ns()
  // Where a client without a host and port would go (libpq's PGHOST and PGPORT): a server that counts who comes.
  let tried = 0
  const trap = createServer((socket) => {
    tried++
    socket.destroy()
  })
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve))
  const saved = { host: process.env.PGHOST, port: process.env.PGPORT }
  process.env.PGHOST = '127.0.0.1'
  process.env.PGPORT = String((trap.address() as AddressInfo).port)
  const watcher = await postgresAdapter({ url: db.server.url(name), listen: false, pollInterval: 30 })
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    const w = await watched(watcher, 'p/')
    const d = await delays(writer, w.seen, 'p/1', 5)
    expect(d[4]!).toBeLessThan(2_000)
    expect(watcher.listening).toBe(false)
    expect(await listeners()).toEqual([])
    expect(tried).toBe(0)
  } finally {
    for (const [k, v] of [['PGHOST', saved.host], ['PGPORT', saved.port]] as const) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
    await watcher.close()
    await writer.close()
    trap.close()
  }
})

test('listen is per adapter: one with listen: false and one without, on one pool, each as asked, in either order', async () => {
  for (const offFirst of [true, false]) {
    const make = (listen: boolean) => postgresAdapter({ url: db.server.url(ns()), ...(listen ? {} : { listen: false }), pollInterval: 30 })
    const first = await make(!offFirst)
    const second = await make(offFirst)
    const [off, on] = offFirst ? [first, second] : [second, first]
    try {
      await watched(first, 'o/')
      await watched(second, 'o/')
      await until(() => on.listening, 5_000)
      expect(off.listening).toBe(false)
      expect(await listeners()).toHaveLength(1)
    } finally {
      await off.close()
      await on.close()
    }
  }
})

test('an adapter left open after its last watch stopped does not keep Node running (the LISTEN socket is unref-ed)', async () => {
  const fixture = fileURLToPath(new URL('./fixtures/watch-and-leave.ts', import.meta.url))
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, db.server.url(ns())], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const code = await Promise.race([exited, sleep(15_000).then(() => 'still running' as const)])
  child.kill('SIGKILL')
  expect(code, out).toBe(0)
  expect(out).toContain('left')
}, 30_000)

test('a LISTEN connection that cannot be opened at first is tried again until it can, backing off from 0.1 s', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  proxy.drop()
  // The pool goes straight to Postgres; LISTEN through the proxy, which refuses for now.
  const watcher = await postgresAdapter({ url: db.server.url(name), listen: db.server.url(undefined, proxy.port), pollInterval: 50 })
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    const w = await watched(watcher, 'r/')
    await sleep(1_000)
    expect(watcher.listening).toBe(false)
    // Tries at 0, 0.1, 0.3, 0.7 s (1.5 s next): a few, not a loop.
    expect(proxy.accepted).toBeGreaterThanOrEqual(2)
    expect(proxy.accepted).toBeLessThanOrEqual(6)
    // Polled meanwhile: nothing is missed.
    const r = await writer.commit([], [{ type: 'set', key: 'r/1', value: 1 }])
    await until(() => w.seen.some((e) => e.revision === (r.ok ? r.revision : -1)), 5_000)
    proxy.pass()
    // The next try (at 1.5 s, then 3.1 s) finds the way open: within the 5 s the backoff stops at.
    const open = performance.now()
    await until(() => watcher.listening, 10_000)
    expect(performance.now() - open).toBeLessThan(4_000)
    expect(await listeners()).toHaveLength(1)
  } finally {
    await watcher.close()
    await writer.close()
    await proxy.stop()
  }
})

test('a LISTEN connection that cannot be opened is not tried again once its adapter closed', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  proxy.drop()
  const watcher = await postgresAdapter({ url: db.server.url(name), listen: db.server.url(undefined, proxy.port), pollInterval: 50 })
  try {
    await watched(watcher, 'n/')
    await until(() => proxy.accepted >= 2, 5_000)
    await watcher.close()
    // A try already waiting for its backoff finds nobody to open for.
    await sleep(300)
    const tries = proxy.accepted
    await sleep(2_000)
    expect(proxy.accepted - tries).toBe(0)
  } finally {
    await watcher.close()
    await proxy.stop()
  }
})

test('a LISTEN connection whose probe cannot be sent (the pool cut off) is opened again until the probe comes back', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  // The pool goes through the proxy; LISTEN straight to Postgres.
  const watcher = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: db.server.url(), pollInterval: 50, timeout: 30_000 })
  try {
    await watched(watcher, 'p/')
    await until(() => watcher.listening, 5_000)
    proxy.drop()
    const [pid] = await listeners()
    await db.admin.query('SELECT pg_terminate_backend($1)', [pid])
    // Reopened at once, straight to Postgres; its probe, sent through the pool, cannot go.
    await sleep(1_500)
    expect(watcher.listening).toBe(false)
    proxy.pass()
    await until(() => watcher.listening, 10_000)
  } finally {
    await watcher.close()
    await proxy.stop()
  }
})

/** An adapter whose LISTEN connection goes through `proxy`, each way `ms` late (1 s: it opens after ~4 s, past the 2 s linger). */
async function slowListen(name: string, proxy: FaultProxy, ms = 1_000): Promise<PostgresAdapter> {
  proxy.delay(ms)
  return postgresAdapter({ url: db.server.url(name), listen: db.server.url(undefined, proxy.port), pollInterval: 50 })
}

test('a LISTEN connection that opens after its last follower left and the linger ran out is ended, not kept', async () => {
  const proxy = await new FaultProxy(db.server.port).start()
  const name = ns()
  const watcher = await slowListen(name, proxy)
  // Same options, same pool: it keeps the pool and its listener open after the watcher closed.
  const idle = await slowListen(name, proxy)
  try {
    await watched(watcher, 's/')
    await until(async () => (await listeners()).length === 1, 10_000)
    await watcher.close()
    await until(async () => (await listeners()).length === 0, 15_000)
    expect(idle.listening).toBe(false)
  } finally {
    await watcher.close()
    await idle.close()
    await proxy.stop()
  }
}, 30_000)

test('a LISTEN connection still opening when its adapter closes is ended once it opens', async () => {
  const proxy = await new FaultProxy(db.server.port).start()
  const watcher = await slowListen(ns(), proxy)
  try {
    await watched(watcher, 'c/')
    await until(async () => (await listeners()).length === 1, 10_000)
    await watcher.close()
    await until(async () => (await listeners()).length === 0, 15_000)
  } finally {
    await watcher.close()
    await proxy.stop()
  }
}, 30_000)

test('a LISTEN connection whose probe comes back later than a second counts as not working: its watches poll at their interval', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  const watcher = await slowListen(name, proxy, 1_200)
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    const w = await watched(watcher, 'p/')
    // LISTEN done on the server: its answer reaches the client 1.2 s later, the probe 1.2 s after it is sent.
    await until(async () => {
      const r = await db.admin.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'zaris listen' AND query LIKE 'LISTEN%' AND state = 'idle'`)
      return r.rowCount === 1
    }, 10_000)
    await sleep(3_500)
    expect(watcher.listening).toBe(false)
    const r = await writer.commit([], [{ type: 'set', key: 'p/1', value: 1 }])
    await until(() => w.seen.some((e) => e.revision === (r.ok ? r.revision : -1)), 1_000)
  } finally {
    await watcher.close()
    await writer.close()
    await proxy.stop()
  }
}, 30_000)
