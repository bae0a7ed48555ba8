/**
 * The `file://` store with real processes on one file: a holder killed with
 * kill -9 (a process waiting for its lock holds it long before the TTL, with
 * a larger token), a holder stopped with SIGSTOP (it keeps the lock until
 * its TTL, not a moment less), and worker processes taking locks in rounds
 * while some are killed at random. Every run's history — each process's
 * store operations, recorded at its adapter — is checked against the model
 * (test/lincheck), with each kill reported as the model's `owner-gone`.
 *
 * Short run: 8 processes x 25 acquisitions; long run (ZARIS_FAULT_SCALE=1):
 * 8 x 200.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import type { HistoryEvent } from '../lincheck/history'
import { storeDir } from '../setup/store-dir'
import { assertHistory, sharedNow, type AcquireRecord, type HistoryRecord } from './checker'
import { memoryHistory, recordedClient, recordedOps } from './ops'
import { Workspace, sleep, until, type WorkerProcess } from './procs'
import { count, figure, prng, quantiles, seedFor, timeout } from './scale'

const dir = storeDir('zaris-file-faults-')
const ws = new Workspace()
afterAll(async () => {
  await ws.dispose()
  rmSync(dir, { recursive: true, force: true })
})

const url = (ns: string) => `file://${join(dir, 'store.db')}?ns=${ns}`

/** The client `owner` is gone from now on: the store may end its entries at once (the model's owner-gone). */
const ownerGone = (owner: string, at: number): HistoryEvent => ({ process: 'nemesis', type: 'info', f: 'owner-gone', value: { owner }, time: Math.round(at * 1e6) })

/** The tokens of each lock in the order they were granted. */
function tokensByLock(records: readonly HistoryRecord[]): Map<string, number[]> {
  const out = new Map<string, number[]>()
  const grants = records.filter((r): r is AcquireRecord => r.type === 'acquire').sort((a, b) => a.at - b.at)
  for (const g of grants) out.set(g.lock, [...(out.get(g.lock) ?? []), g.token])
  return out
}

test(`kill -9 of a holder (TTL 30 s): a process waiting for its lock holds it at once, with a larger token; ${count(4, 30)} runs`, async () => {
  const takeovers: number[] = []
  let accepted = 0
  for (let run = 0; run < count(4, 30); run++) {
    const ns = `kill-${run}`
    const holder = ws.spawn({ url: url(ns), id: `holder-${run}`, mode: 'hold', locks: ['lock:a'], ttl: 30_000, wait: 10_000, interval: 20 })
    const [, token] = await holder.waitFor(/held (\d+)/)
    const { history, record, operations, sink } = memoryHistory()
    const client = await recordedClient(url(ns), `waiter-${run}`, sink)
    const ops = recordedOps(client, `waiter-${run}`, record)
    const waiting = ops.take('lock:a', { ttl: 30_000, wait: 20_000 }).then((lock) => ({ lock, at: sharedNow() }))
    await sleep(100 + ((run * 37) % 200)) // waiting, and the holder writing
    const killedAt = sharedNow()
    await holder.kill9()
    operations.push(ownerGone(`holder-${run}`, killedAt))
    const { lock, at } = await waiting
    expect(lock, 'the waiter holds the lock, long before the dead holder\'s TTL').toBeDefined()
    expect(lock!.token).toBeGreaterThan(Number(token))
    expect(await ops.write(lock!, 0)).toBe('accepted')
    await ops.release(lock!)
    takeovers.push(at - killedAt)
    accepted += assertHistory([...holder.history(), ...history], [...holder.operations(), ...operations]).accepted
    await client.close()
  }
  // Liveness, not speed (the figure is printed, the bench compares): well inside the 30 s TTL.
  expect(Math.max(...takeovers)).toBeLessThan(5_000)
  expect(accepted).toBeGreaterThan(takeovers.length)
  const q = quantiles(takeovers)
  await figure('file://: kill -9 of a holder (TTL 30 s) -> a waiting process holds', { runs: takeovers.length, p50_ms: q.p50, p99_ms: q.p99, max_ms: q.max })
}, timeout(60_000, 300_000))

test(`a holder stopped with SIGSTOP keeps its lock until its TTL, then its writes are refused; ${count(2, 10)} runs`, async () => {
  const ttl = 1_000
  const early: number[] = []
  for (let run = 0; run < count(2, 10); run++) {
    const ns = `stop-${run}`
    const holder = ws.spawn({ url: url(ns), id: `paused-${run}`, mode: 'hold', locks: ['lock:a'], ttl, wait: 10_000, interval: 25, stopAfterRefused: 3 })
    await holder.waitFor(/held (\d+)/)
    await until(() => holder.history().some((r) => r.type === 'write' && r.outcome === 'accepted'), 10_000, 'a first accepted write')
    const { history, record, operations, sink } = memoryHistory()
    const client = await recordedClient(url(ns), `successor-${run}`, sink)
    const ops = recordedOps(client, `successor-${run}`, record)
    holder.pause()
    // The store's view once stopped: held for `ttl` at most from its last renewal.
    const askedAt = sharedNow()
    const held = await client.locks.holder('lock:a')
    const lock = await ops.take('lock:a', { ttl: 30_000, wait: 15_000 })
    const acquiredAt = sharedNow()
    expect(lock).toBeDefined()
    if (held !== undefined) {
      // Not a moment before its TTL: a stopped process is alive (2 ms for timer rounding).
      expect(acquiredAt).toBeGreaterThanOrEqual(askedAt + held.ttl! - 2)
      early.push(acquiredAt - (askedAt + held.ttl!))
    }
    expect(await ops.write(lock!, 0)).toBe('accepted')
    holder.resume()
    expect((await holder.exited).code).toBe(0)
    await ops.release(lock!)
    await client.close()
    const h = holder.history()
    expect(h.some((r) => r.type === 'loss')).toBe(true)
    assertHistory([...h, ...history], [...holder.operations(), ...operations])
  }
  const q = quantiles(early)
  await figure('file://: a SIGSTOPped holder (TTL 1 s) -> the next holder, after the TTL by', { runs: early.length, p50_ms: q.p50, max_ms: q.max })
}, timeout(60_000, 300_000))

const processes = 8
const rounds = count(25, 200)

test(`${processes} processes x ${rounds} acquisitions on one file, with random kill -9: no stale write, tokens strictly rising`, async () => {
  const random = prng(seedFor('file-kills'))
  const ns = 'soak'
  const started = performance.now()
  const gone: HistoryEvent[] = []
  interface Slot {
    worker: WorkerProcess
    left: number
    generation: number
  }
  const spawn = (slot: number, generation: number, left: number) =>
    ws.spawn({ url: url(ns), id: `s${slot}g${generation}`, mode: 'rounds', rounds: left, locks: ['lock:a', 'lock:b'], ttl: 30_000, wait: 120_000, writes: 1, workMs: [0, 5], staleProbe: true, seed: seedFor(`file-${slot}-${generation}`) })
  const slots: Slot[] = Array.from({ length: processes }, (_, i) => ({ worker: spawn(i, 0, rounds), left: rounds, generation: 0 }))
  let kills = 0
  const acquired = (w: WorkerProcess) => w.history().filter((r) => r.type === 'acquire').length
  const inRounds = (s: Slot) => s.worker.alive() && s.worker.history().some((r) => r.type === 'note' && r.text === 'started')
  // Kills follow the work done, not the clock: after every 5-25 acquisitions (looked at every 50 ms: on a quiet
  // machine the 200 acquisitions take ~1 s, and a look every 200 ms landed 2 kills), a random process in its
  // rounds (holding, waiting, writing; not still loading). Kills on the clock
  // (every 200-800 ms) met processes that take 1-5 s to start on a loaded machine: most were killed before or
  // just after their first round, and 8 x 200 ran past 5 minutes restarting processes (profile in RELIABILITY.md).
  let doneBefore = 0
  let nextKillAt = 5 + Math.floor(random() * 21)
  while (slots.some((s) => s.worker.alive())) {
    await sleep(50)
    const done = doneBefore + slots.reduce((n, s) => n + acquired(s.worker), 0)
    const live = slots.filter(inRounds)
    if (done < nextKillAt || live.length === 0) continue
    const slot = live[Math.floor(random() * live.length)]!
    gone.push(ownerGone(slot.worker.id, sharedNow()))
    await slot.worker.kill9()
    kills++
    doneBefore += acquired(slot.worker)
    nextKillAt = done + 5 + Math.floor(random() * 21)
    slot.left -= slot.worker.history().filter((r) => r.type === 'note' && r.text === 'round').length
    if (slot.left > 0) slot.worker = spawn(slots.indexOf(slot), ++slot.generation, slot.left)
  }
  const crashed = (await Promise.all(ws.workers.map((w) => w.exited))).filter((e) => e.signal !== 'SIGKILL' && e.code !== 0)
  expect(crashed, ws.workers.map((w) => w.output()).join('\n').slice(-3000)).toEqual([])
  const records = ws.workers.filter((w) => w.id.startsWith('s')).flatMap((w) => w.history())
  const operations = ws.workers.filter((w) => w.id.startsWith('s')).flatMap((w) => w.operations())
  const stats = assertHistory(records, [...operations, ...gone])
  for (const [lock, tokens] of tokensByLock(records)) {
    for (let i = 1; i < tokens.length; i++) expect(tokens[i], `${lock}: grant ${i} of ${tokens.length}`).toBeGreaterThan(tokens[i - 1]!)
  }
  const acquisitions = records.filter((r) => r.type === 'acquire').length
  expect(acquisitions).toBeGreaterThanOrEqual(processes * rounds)
  expect(stats.refused).toBeGreaterThan(0) // the stale probes after each release
  // Kills land only in processes already in their rounds: a loaded machine starts processes late, so fewer land (4 of 200 seen in CI).
  expect(kills, 'kills landed in the rounds').toBeGreaterThanOrEqual(Math.max(1, Math.floor((processes * rounds) / 60)))
  await figure(`file://: ${processes} processes x ${rounds} acquisitions with random kill -9`, {
    seconds: (performance.now() - started) / 1000,
    acquisitions,
    kills,
    processes_started: ws.workers.filter((w) => w.id.startsWith('s')).length,
    operations_checked: stats.operations,
    accepted: stats.accepted,
    refused: stats.refused,
    linearizable: 'yes',
    stale_writes_accepted: 0,
  })
}, timeout(180_000, 1_200_000))
