/**
 * Wall-clock jumps of an hour on clients (test/faults/shift-clock.ts, loaded
 * with `--import`, moves `Date.now()` and `new Date()` of a worker process,
 * at start and while it runs): nothing is granted early, and a holder's own
 * deadline neither stretches nor shrinks. Holds are counted on monotonic
 * clocks (the holder's `performance.now()`, the node's), so the wall clock
 * must not matter; these tests check that it does not.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { startNode, type NodeProcess } from '../server/node-process'
import { assertHistory, sharedNow } from './checker'
import { memoryHistory, recordedClient, recordedOps } from './ops'
import { Workspace, until } from './procs'
import { count, figure, timeout } from './scale'

const HOUR = 3_600_000
let node: NodeProcess
let ws: Workspace
beforeAll(async () => {
  node = await startNode()
  ws = new Workspace()
})
afterAll(async () => {
  await ws?.dispose()
  await node?.kill9()
})

const runs = count(1, 3)

test(`a contender whose clock jumps ±1 h is not granted a lock that a renewing holder (clock jumping too) still holds; ${runs} run(s)`, async () => {
  for (let run = 0; run < runs; run++) {
    const url = `zaris://127.0.0.1:${node.port}/jump-${run}`
    const ttl = 1_000
    const holdMs = 3_000 // three TTLs
    const holder = ws.spawn({ url, id: `holder-${run}`, mode: 'hold', locks: ['lock:a'], ttl, wait: 10_000, interval: 50, holdMs }, { offsetMs: -HOUR, jumps: '400:7200000,1200:-7200000,2000:3600000' })
    await holder.waitFor(/held/)
    const contender = ws.spawn({ url, id: `contender-${run}`, mode: 'rounds', rounds: 1, locks: ['lock:a'], ttl, wait: 20_000, writes: 1 }, { offsetMs: HOUR, jumps: '200:-7200000,500:7200000,800:-3600000' })
    await Promise.all([holder.exited, contender.exited])
    // Every jump happened in each process (the shifter reports each on stderr). The contender's
    // come early: a holder that loses its lock on a loaded machine lets the contender finish
    // after about one TTL, and a jump scheduled later would never happen.
    for (const delta of ['7200000', '-7200000', '3600000']) expect(holder.output()).toContain(`clock jumped ${delta} `)
    for (const delta of ['-7200000', '7200000', '-3600000']) expect(contender.output()).toContain(`clock jumped ${delta} `)
    const h = holder.history()
    const c = contender.history()
    // The holder's hold ended at its release or, if a renewal came too late on a loaded machine, at its
    // own deadline (a loss); the contender was granted only after that, never while the holder held.
    // A release ends the hold between its call and its answer: a take parked at the node is granted in the
    // release's own tick, so the contender may hear of its grant before the holder hears its release went
    // through; the grant must still come after the release was called.
    const released = h.find((r) => r.type === 'release')
    const loss = h.find((r) => r.type === 'loss')
    const ended = Math.min(released?.invokedAt ?? Infinity, loss?.at ?? Infinity)
    const granted = c.find((r) => r.type === 'acquire')!
    expect(Number.isFinite(ended)).toBe(true)
    expect(granted.at, 'the contender was granted only after the holder let go').toBeGreaterThan(ended)
    assertHistory([...h, ...c], [...holder.operations(), ...contender.operations()])
    await figure('clock jumps of ±1-2 h on holder and contender', { holder_held_ms: holdMs, contender_granted_after_hold_ended_ms: granted.at - ended, holder_lost_by_deadline: loss ? 1 : 0 })
  }
}, timeout(40_000, 120_000))

test(`a holder whose clock jumps back 1 h still steps down at its TTL, before a contender is granted; ${runs} run(s)`, async () => {
  for (let run = 0; run < runs; run++) {
    const url = `zaris://127.0.0.1:${node.port}/back-${run}`
    const ttl = 1_000
    const holder = ws.spawn({ url, id: `holder-${run}`, mode: 'hold', locks: ['lock:a'], ttl, wait: 10_000, autoRenew: false, interval: 50, stopAfterRefused: 2 }, { jumps: '200:-3600000' })
    await holder.waitFor(/held/)
    const { history, record, operations, sink } = memoryHistory()
    const client = await recordedClient(url, `contender-${run}`, sink)
    const ops = recordedOps(client, `contender-${run}`, record)
    const lock = await ops.take('lock:a', { ttl: 30_000, wait: 20_000 })
    const grantedAt = sharedNow()
    expect(lock).toBeDefined()
    await until(() => holder.history().some((r) => r.type === 'loss'), 10_000, "the holder's loss")
    const h = holder.history()
    const acquired = h.find((r) => r.type === 'acquire')!
    const loss = h.find((r) => r.type === 'loss')!
    expect(holder.output()).toMatch(/clock jumped -3600000/)
    expect(loss.at).toBeLessThan(grantedAt)
    expect(loss.at - acquired.invokedAt, JSON.stringify(h.map((r) => ({ ...r, at: r.at - acquired.invokedAt })))).toBeLessThanOrEqual(ttl + 50) // not an hour later
    expect(await ops.write(lock!, 0)).toBe('accepted')
    await holder.exited
    await ops.release(lock!)
    await client.close()
    assertHistory([...holder.history(), ...history], [...holder.operations(), ...operations])
    await figure('holder clock jumped back 1 h, no renewal', { ttl, loss_after_acquire_ms: loss.at - acquired.invokedAt, contender_granted_after_loss_ms: grantedAt - loss.at })
  }
}, timeout(40_000, 120_000))
