/**
 * The Postgres adapter's watch follower (src/adapters/postgres/follower.ts)
 * where the conformance suite does not look: a store that started over or
 * went back ends its watches saying so; an outage is told once to each
 * watch (`reconnecting`) and a write made during it is heard soon after the
 * way is open; a watch of a namespace nobody wrote reads at its poll
 * interval, not in a loop, and stops reading (and marking the namespace
 * watched) once its last watch ends; reads cut at 500 events, and watches
 * at different revisions, each get every event once; one follower per
 * namespace and pool; an expiry nobody reads is heard at its deadline;
 * `listen` given a URL of its own is where notifications come from. On a
 * real Postgres. Most were written from Stryker's survivors
 * (RELIABILITY.md, "Mutation score").
 */
import pg from 'pg'
import { expect, test } from 'vitest'
import type { WatchEvent } from 'zaris'
import { postgresAdapter } from 'zaris/postgres'
import { FaultProxy } from '../faults/proxy'
import { sleep, until } from '../conformance/util'
import { countedPool, usePostgres } from './use-postgres'

const db = usePostgres('follower')
const ns = db.ns

/** A watch's events and errors. */
function sink() {
  const events: WatchEvent[] = []
  const errors: Error[] = []
  let reconnects = 0
  return { events, errors, reconnects: () => reconnects, sink: { event: (e: WatchEvent) => events.push(e), error: (e: Error) => errors.push(e), reconnecting: () => reconnects++ } }
}

test('tables emptied under a watch (the store started over): the watch reads on at its interval, then ends, saying so', async () => {
  const name = ns()
  const counted = countedPool(db.server.url())
  const watcher = await postgresAdapter({ pool: counted.pool, namespace: name, schema: 'over', pollInterval: 50, listen: false })
  const writer = await postgresAdapter({ url: `${db.server.url(name)}&schema=over`, pg: { max: 1 } })
  try {
    const w = sink()
    await watcher.watch('k', w.sink)
    await writer.commit([], [{ type: 'set', key: 'k', value: 1 }])
    await until(() => w.events.length === 1)
    await db.admin.query('TRUNCATE over.entries, over.events, over.stores')
    // No namespace row to read now: one read a poll, not a read loop.
    const before = counted.calls()
    await sleep(500)
    expect(counted.calls() - before).toBeLessThan(30)
    // Not an outage either: nothing to tell.
    expect(w.reconnects()).toBe(0)
    await writer.commit([], [{ type: 'set', key: 'k', value: 2 }])
    await until(() => w.errors.length === 1)
    expect(w.errors[0]).toMatchObject({ code: 'COMPACTED', message: expect.stringContaining('started over') })
  } finally {
    await watcher.close()
    await writer.close()
    await counted.pool.end()
  }
})

test('a store that went back (restored from an older backup): the watch ends, saying so', async () => {
  const name = ns()
  const watcher = await postgresAdapter({ url: db.server.url(name), pollInterval: 20, listen: false })
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    const w = sink()
    await watcher.watch('k', w.sink)
    for (let i = 0; i < 3; i++) await writer.commit([], [{ type: 'set', key: 'k', value: i }])
    await until(() => w.events.length === 3)
    await db.admin.query('UPDATE zaris.stores SET revision = 1 WHERE ns = $1', [name])
    await until(() => w.errors.length === 1)
    expect(w.errors[0]).toMatchObject({ code: 'COMPACTED', message: expect.stringContaining('went back') })
  } finally {
    await watcher.close()
    await writer.close()
  }
})

test('an outage is told once to each watch, and a write made during it is heard soon after the way is open', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  const watcher = await postgresAdapter({ url: db.server.url(name, proxy.port), pollInterval: 20, listen: false, timeout: 30_000 })
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    const w = sink()
    await watcher.watch('k', w.sink)
    // A sink without `reconnecting` (it is optional) hears on too.
    const plain: WatchEvent[] = []
    await watcher.watch('k', { event: (e) => plain.push(e), error: () => {} })
    for (let outage = 1; outage <= 2; outage++) {
      const tries = proxy.accepted
      proxy.drop()
      // Several failed reads (retries after 0.1, 0.2, 0.4 s ...): still one word of it.
      await sleep(350)
      // Each a connection tried: backing off, a few, not a loop.
      expect(proxy.accepted - tries).toBeLessThanOrEqual(5)
      const r = await writer.commit([], [{ type: 'set', key: 'k', value: outage }])
      proxy.pass()
      const open = performance.now()
      await until(() => w.events.some((e) => e.revision === (r.ok ? r.revision : -1)), 10_000)
      // Retries back off from 0.1 s to at most 2 s: after 0.35 s down, the next comes ~0.4 s after the way opened.
      expect(performance.now() - open).toBeLessThan(1_000)
      expect(w.reconnects()).toBe(outage)
    }
    expect(plain.map((e) => e.revision)).toEqual(w.events.map((e) => e.revision))
  } finally {
    await watcher.close()
    await writer.close()
    await proxy.stop()
  }
})

test('a watch from revision 0 of a namespace with no events hears nothing until one is written', async () => {
  const watcher = await postgresAdapter({ url: db.server.url(ns()), listen: false, pollInterval: 50 })
  try {
    const w = sink()
    await watcher.watch('', w.sink, 0)
    await sleep(300)
    expect([w.events, w.errors, w.reconnects()]).toEqual([[], [], 0])
    const r = await watcher.commit([], [{ type: 'set', key: 'k', value: 1 }])
    await until(() => w.events.length > 0)
    expect(w.events.map((e) => e.revision)).toEqual([r.ok ? r.revision : -1])
  } finally {
    await watcher.close()
  }
})

test('watches of a namespace nobody wrote read at its poll interval, in one loop, not in a loop each', async () => {
  const counted = countedPool(db.server.url())
  const watcher = await postgresAdapter({ pool: counted.pool, namespace: ns(), pollInterval: 200, listen: false })
  try {
    const w = sink()
    await watcher.watch('k', w.sink)
    // Each new watch wakes the one loop; three loops would read three times as often.
    await watcher.watch('k', sink().sink)
    await watcher.watch('j', sink().sink)
    await sleep(100)
    const before = counted.calls()
    await sleep(1_000)
    // ~5 reads at a 200 ms poll; a read loop makes hundreds, a mark of the namespace before each read twice as many.
    expect(counted.calls() - before).toBeLessThanOrEqual(8)
    // Nothing to read is not an outage.
    expect(w.reconnects()).toBe(0)
    expect(w.errors).toEqual([])
  } finally {
    await watcher.close()
    await counted.pool.end()
  }
})

test('the namespace stays marked watched while a watch lasts; once the last ends, with its adapter open, its reads and marks stop', { timeout: 40_000 }, async () => {
  const counted = countedPool(db.server.url())
  const name = ns()
  const watcher = await postgresAdapter({ pool: counted.pool, namespace: name, pollInterval: 100, listen: false })
  try {
    const stop = await watcher.watch('k', sink().sink)
    const watchedUntil = async () => Number((await db.admin.query('SELECT extract(epoch FROM watched) * 1000 AS w FROM zaris.stores WHERE ns = $1', [name])).rows[0].w)
    const first = await watchedUntil()
    // The mark (30 s) is renewed a third of the way through, while the watch lasts.
    await until(async () => (await watchedUntil()) > first + 5_000, 15_000)
    stop()
    await sleep(200)
    const before = counted.calls()
    // Past the 10 s at which a follower marks its namespace watched again: a loop left running would
    // keep marking it (and every commit of the namespace would NOTIFY for nobody).
    await sleep(10_500)
    expect(counted.calls() - before).toBe(0)
  } finally {
    await watcher.close()
    await counted.pool.end()
  }
})

test('listen given a URL of its own: notifications come over that one (a pool behind a pooler, LISTEN straight to Postgres)', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  // The pool goes through the proxy; LISTEN goes to Postgres directly.
  const watcher = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: db.server.url(), pollInterval: 60_000 })
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    const w = sink()
    await watcher.watch('k', w.sink)
    await until(() => watcher.listening, 5_000)
    const r = await writer.commit([], [{ type: 'set', key: 'k', value: 1 }])
    const t = performance.now()
    await until(() => w.events.some((e) => e.revision === (r.ok ? r.revision : -1)), 5_000)
    // Polled instead: the 2 s safety poll.
    expect(performance.now() - t).toBeLessThan(1_000)
    const direct = await db.admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'zaris listen' AND client_port IS NOT NULL`)
    expect(direct.rows[0].n).toBe(1)
  } finally {
    await watcher.close()
    await writer.close()
    await proxy.stop()
  }
})

// The follower reads after the earliest cursor: with the watch at the head first, a read from its cursor would skip the others' events.
test.each(['the one furthest behind', 'the one at the head'])('watches of one namespace from different revisions each get every event once, in order, across reads cut at 500 events; first in: %s', async (first) => {
  const name = ns()
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  // Polled only every 3 s: a read cut at 500 events is followed by the next at once, not at the poll.
  const watcher = await postgresAdapter({ url: db.server.url(name), listen: false, pollInterval: 3_000 })
  try {
    /** Commits of two events each (two sets): what a watch from each revision must get, in order. */
    const log: Array<{ revision: number; key: string }> = []
    const write = async (i: number) => {
      const r = await writer.commit([], [{ type: 'set', key: 'w/a', value: i }, { type: 'set', key: 'w/b', value: i }])
      if (!r.ok) throw new Error('a plain set was refused')
      log.push({ revision: r.revision, key: 'w/a' }, { revision: r.revision, key: 'w/b' })
      return r.revision
    }
    const start = await write(0)
    // One event of its own: the 500th event after start is then the first of a revision of two, which the cut splits.
    const single = await writer.commit([], [{ type: 'set', key: 'w/s', value: 0 }])
    if (!single.ok) throw new Error('a plain set was refused')
    log.push({ revision: single.revision, key: 'w/s' })
    for (let i = 1; i < 300; i++) await write(i)
    const mid = log[300]!.revision
    // The first (600 events behind) is read in two cuts; the others join while it is.
    const [a, b, c] = [sink(), sink(), sink()]
    if (first === 'the one at the head') {
      await watcher.watch('w/', c.sink)
      await sleep(60) // read alone at least once
      await watcher.watch('w/', b.sink, mid)
      await watcher.watch('w/', a.sink, start)
    } else await Promise.all([watcher.watch('w/', a.sink, start), watcher.watch('w/', b.sink, mid), watcher.watch('w/', c.sink)])
    const head = log[log.length - 1]!.revision
    const subscribed = performance.now()
    await until(() => a.events.some((e) => e.revision === head), 10_000)
    expect(performance.now() - subscribed, 'the 600 events behind, read in two cuts').toBeLessThan(1_500)
    for (let i = 300; i < 310; i++) await write(i)
    const after = (from: number) => log.filter((e) => e.revision > from).map((e) => `${e.revision}:${e.key}`)
    const got = (s: ReturnType<typeof sink>) => s.events.map((e) => `${e.revision}:${e.key}`)
    await until(() => a.events.length >= after(start).length && b.events.length >= after(mid).length && c.events.length >= after(head).length, 10_000)
    await sleep(100)
    expect(got(a)).toEqual(after(start))
    expect(got(b)).toEqual(after(mid))
    expect(got(c)).toEqual(after(head))
  } finally {
    await watcher.close()
    await writer.close()
  }
})

test("a namespace's follower is shared by the adapters of one pool: one read loop; it lives while any of them watches, and a new one starts after the last closed", async () => {
  const counted = countedPool(db.server.url())
  const name = ns()
  const open = () => postgresAdapter({ pool: counted.pool, namespace: name, pollInterval: 200, listen: false })
  const [a, b, writer] = await Promise.all([open(), open(), open()])
  const [wa, wb] = [sink(), sink()]
  // Reads in 1 s: ~5 at a 200 ms poll for one loop, twice that for two.
  const readsInASecond = async () => {
    await sleep(100)
    const before = counted.calls()
    await sleep(1_000)
    return counted.calls() - before
  }
  const heard = async (s: ReturnType<typeof sink>, value: number) => {
    const r = await writer.commit([], [{ type: 'set', key: 'k', value }])
    await until(() => s.events.some((e) => e.revision === (r.ok ? r.revision : -1)), 5_000)
  }
  try {
    expect(a.listening).toBe(false)
    await a.watch('k', wa.sink)
    const one = await readsInASecond()
    await b.watch('k', wb.sink)
    expect(await readsInASecond()).toBeLessThanOrEqual(one + 2)
    await a.close()
    // b still hears, from the same loop.
    await heard(wb, 1)
    await b.close()
    // The last one closed: no loop is left.
    expect(await readsInASecond()).toBeLessThanOrEqual(1)
    // A later adapter of the pool gets a loop of its own, not the closed one.
    const c = await open()
    const wc = sink()
    try {
      await c.watch('k', wc.sink)
      await heard(wc, 2)
    } finally {
      await c.close()
    }
  } finally {
    await Promise.all([a.close(), b.close(), writer.close()])
    await counted.pool.end()
  }
})

test('an expiry nobody reads is heard at its deadline (a sweep timed to it), also after another watch of the namespace ended; then nothing is swept again', async () => {
  const name = ns()
  const counted = countedPool(db.server.url())
  // Polled every 5 s: only the sweep's timer can tell the expiry sooner.
  const watcher = await postgresAdapter({ pool: counted.pool, namespace: name, listen: false, pollInterval: 5_000 })
  try {
    const [w, other] = [sink(), sink()]
    await watcher.watch('k', w.sink)
    const stopOther = await watcher.watch('other', other.sink)
    const r = await watcher.commit([], [{ type: 'set', key: 'k', value: 1, ttl: 800 }])
    const written = performance.now()
    await until(() => w.events.length === 1)
    stopOther()
    await until(() => w.events.some((e) => e.type === 'expire'), 10_000)
    // Due 800 ms after the write; a poll would have told it at 5 s.
    expect(performance.now() - written).toBeLessThan(1_800)
    expect(w.events.map((e) => e.type)).toEqual(['put', 'expire'])
    expect(r.ok).toBe(true)
    // Nothing left to expire, nothing fenced: no sweep (nor the read after one) until the next poll.
    const before = counted.calls()
    await sleep(1_000)
    expect(counted.calls() - before).toBe(0)
  } finally {
    await watcher.close()
    await counted.pool.end()
  }
})

test('a notification that comes while a read is on its way is read after it at once, not at the next poll', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  // Reads take 600 ms (300 each way); NOTIFY comes straight from Postgres; the safety poll is 2 s.
  const watcher = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: db.server.url() })
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    const w = sink()
    await watcher.watch('k', w.sink)
    await until(() => watcher.listening, 5_000)
    proxy.delay(300)
    await sleep(700)
    // The first write's notification starts a read; the second commits after that read's snapshot and
    // notifies while it is still on its way back.
    await writer.commit([], [{ type: 'set', key: 'k', value: 1 }])
    await sleep(420)
    const second = await writer.commit([], [{ type: 'set', key: 'k', value: 2 }])
    const t = performance.now()
    await until(() => w.events.some((e) => e.revision === (second.ok ? second.revision : -1)), 10_000)
    // One more read (600 ms) after the first: ~0.8 s. Left to the safety poll: 2 s more.
    expect(performance.now() - t).toBeLessThan(1_500)
  } finally {
    await watcher.close()
    await writer.close()
    await proxy.stop()
  }
})

test('a watch stopped while a read is on its way hears nothing more; another watch of the namespace hears that read', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  // Reads take 600 ms (300 each way); NOTIFY comes straight from Postgres.
  const watcher = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: db.server.url() })
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    let stopped = false
    const late: number[] = []
    const stop = await watcher.watch('k', { event: (e) => stopped && late.push(e.revision), error() {} })
    const other = sink()
    await watcher.watch('k', other.sink)
    await until(() => watcher.listening, 5_000)
    proxy.delay(300)
    await sleep(700)
    const r = await writer.commit([], [{ type: 'set', key: 'k', value: 1 }])
    // The notification's read is on its way back.
    await sleep(200)
    stop()
    stopped = true
    await until(() => other.events.some((e) => e.revision === (r.ok ? r.revision : -1)), 5_000)
    expect(late).toEqual([])
  } finally {
    await watcher.close()
    await writer.close()
    await proxy.stop()
  }
})

test('a watch stopped while a read is on its way that finds its revision compacted is not told so: it asked for nothing more', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  const watcher = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: false, historySize: 5 })
  try {
    // Pruned once 105 events past the 5 kept.
    const compacted = async () => Number((await db.admin.query('SELECT compacted FROM zaris.stores WHERE ns = $1', [name])).rows[0]?.compacted ?? 0)
    for (let i = 0; (await compacted()) < 2; i++) await watcher.commit([], [{ type: 'set', key: 'k', value: i }])
    // Reads take 600 ms (300 each way).
    proxy.delay(300)
    const w = sink()
    const stop = await watcher.watch('k', w.sink, 1)
    await sleep(200)
    stop()
    await sleep(1_000)
    expect([w.events, w.errors]).toEqual([[], []])
    // Not stopped, the same watch is told.
    const told = sink()
    await watcher.watch('k', told.sink, 1)
    await until(() => told.errors.length === 1, 5_000)
    expect(told.errors[0]).toMatchObject({ code: 'COMPACTED' })
  } finally {
    await watcher.close()
    await proxy.stop()
  }
})

test('a watch whose read was cut inside a revision that the log then dropped ends COMPACTED: the rest of that revision is not skipped in silence', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  const watcher = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: false })
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    const base = await writer.commit([], [{ type: 'set', key: 'k/base', value: 0 }])
    if (!base.ok) throw new Error('not set')
    // One revision of 600 events: a read of 500 stops inside it.
    await writer.commit([], Array.from({ length: 600 }, (_, j) => ({ type: 'set' as const, key: `k/${j}`, value: j })))
    // Reads take 600 ms (300 each way): the log is pruned to its last 5 events (all in that revision)
    // while the next read is on its way up.
    proxy.delay(300)
    let pruned: Promise<unknown> | undefined
    const w = sink()
    const heard = (e: WatchEvent) => {
      w.sink.event(e)
      if (w.events.length === 500) pruned = db.admin.query('SELECT zaris.prune($1, 5, 60000, clock_timestamp())', [name])
    }
    await watcher.watch('k/', { ...w.sink, event: heard }, base.revision)
    await until(() => w.errors.length === 1, 10_000)
    await pruned
    expect(w.events).toHaveLength(500)
    expect(w.errors[0]).toMatchObject({ code: 'COMPACTED' })
  } finally {
    await watcher.close()
    await writer.close()
    await proxy.stop()
  }
})

test('a watch that heard all of a revision goes on when the log is then pruned through exactly that revision', async () => {
  const name = ns()
  const watcher = await postgresAdapter({ url: db.server.url(name), listen: false, pollInterval: 50 })
  try {
    const w = sink()
    await watcher.watch('k', w.sink)
    const r = await watcher.commit([], [{ type: 'set', key: 'k1', value: 1 }, { type: 'set', key: 'k2', value: 2 }])
    await until(() => w.events.length === 2)
    // Nothing kept: the log is cut at its newest revision, the one the watch has read whole.
    await db.admin.query('SELECT zaris.prune($1, 0, 60000, clock_timestamp())', [name])
    expect((await db.admin.query('SELECT compacted::int AS c FROM zaris.stores WHERE ns = $1', [name])).rows[0].c).toBe(r.ok ? r.revision : -1)
    await watcher.commit([], [{ type: 'set', key: 'k3', value: 3 }])
    await until(() => w.events.length === 3 || w.errors.length > 0)
    expect(w.errors).toEqual([])
    expect(w.events.map((e) => e.key)).toEqual(['k1', 'k2', 'k3'])
  } finally {
    await watcher.close()
  }
})

test('a watch that cannot start fails UNAVAILABLE, naming the watch', async () => {
  const proxy = await new FaultProxy(db.server.port).start()
  const watcher = await postgresAdapter({ url: db.server.url(ns(), proxy.port), listen: false, pg: { connectionTimeoutMillis: 300 } })
  try {
    proxy.drop()
    await expect(watcher.watch('k', sink().sink)).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('Postgres watch failed') })
  } finally {
    await watcher.close()
    await proxy.stop()
  }
})

test('a watch far behind gets every event when a watch at the head joins while it catches up (reads go from the earliest cursor)', async () => {
  const name = ns()
  const proxy = await new FaultProxy(db.server.port).start()
  const a = await postgresAdapter({ url: db.server.url(name, proxy.port), listen: false, pollInterval: 50 })
  const writer = await postgresAdapter({ url: db.server.url(name), pg: { max: 1 } })
  try {
    const base = await writer.commit([], [{ type: 'set', key: 'k/base', value: 0 }])
    if (!base.ok) throw new Error('not set')
    for (let i = 0; i < 12; i++) await writer.commit([], Array.from({ length: 100 }, (_, j) => ({ type: 'set' as const, key: `k/${i}/${j}`, value: j })))
    // Reads take 200 ms (100 each way): the second watch joins while the first is still reading its 1 200
    // events, 500 a read, however fast the machine.
    proxy.delay(100)
    const behind = sink()
    await a.watch('k/', behind.sink, base.revision)
    const head = sink()
    await a.watch('k/', head.sink)
    expect(behind.events.length).toBeLessThan(1_200)
    const last = await writer.commit([], [{ type: 'set', key: 'k/last', value: 1 }])
    // The head watch may hear it one read later: a read already on its way when it joined delivers to those before it.
    await until(() => [behind, head].every((w) => w.events.some((e) => e.revision === (last.ok ? last.revision : -1))), 10_000)
    expect(behind.events).toHaveLength(1_201)
    expect(head.events.map((e) => e.key)).toEqual(['k/last'])
  } finally {
    await a.close()
    await writer.close()
    await proxy.stop()
  }
})
