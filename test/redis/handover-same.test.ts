/**
 * The Redis store's parked commits (src/adapters/redis/handover.ts, Lua)
 * answer as the local store's (src/adapters/kit/parked.ts, behind the memory
 * adapter): random steps of three clients (places in line, waiting takes
 * with or without `keepParked`, `parkOrder`, `wakeOwner` and another way,
 * releases, plain takes, takeovers, give-ups, aborts, waits that run out and
 * the turns they keep), each step made on both stores at once; after each,
 * every client's answer so far, every entry and every event a watcher
 * heard must be the same on both, revisions included. Real time on both (Redis's clock, the process's), so
 * waits and turns run out alike: a step lets 150 ms pass, a short wait is
 * 60 ms, and a turn (a second) is never left to end between two steps (a
 * pause of 1.3 s ends them all first).
 *
 * `ZARIS_SAME_RUNS` sequences (default 4) of `ZARIS_SAME_STEPS` steps
 * (default 14), from seed `ZARIS_SAME_SEED` (default: a new one, printed on
 * failure).
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import type { Adapter, Check, CommitOptions, CommitResult, Op } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { redisAdapter } from 'zaris/redis'
import { startRedis, type RedisServer } from './server'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(async () => {
  await server?.dispose()
})

const CLIENTS = 3
const LOCKS = ['a', 'b'] as const
const SETTLE_MS = 150
const SHORT_MS = 60
const TURN_SAFE_MS = 700
const PAUSE_MS = 1_300

type Step =
  | { t: 'place'; c: number }
  | { t: 'leave'; c: number }
  | { t: 'abort'; c: number }
  | { t: 'take'; c: number; key: string; short: boolean; keep: boolean; order: boolean; wake: boolean; orElse: boolean }
  | { t: 'plain'; c: number; key: string }
  | { t: 'steal'; c: number; key: string }
  | { t: 'release'; key: string }
  | { t: 'pause' }

/** A small seeded generator (mulberry32): a failing sequence can be run again from its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function steps(rnd: () => number, n: number): Step[] {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!
  const c = () => Math.floor(rnd() * CLIENTS)
  const out: Step[] = []
  for (let i = 0; i < n; i++) {
    const r = rnd()
    if (r < 0.2) out.push({ t: 'place', c: c() })
    else if (r < 0.55) out.push({ t: 'take', c: c(), key: pick(LOCKS), short: rnd() < 0.35, keep: rnd() < 0.8, order: rnd() < 0.8, wake: rnd() < 0.2, orElse: rnd() < 0.25 })
    else if (r < 0.72) out.push({ t: 'release', key: pick(LOCKS) })
    else if (r < 0.78) out.push({ t: 'plain', c: c(), key: pick(LOCKS) })
    else if (r < 0.83) out.push({ t: 'steal', c: c(), key: pick(LOCKS) })
    else if (r < 0.9) out.push({ t: 'leave', c: c() })
    else if (r < 0.95) out.push({ t: 'abort', c: c() })
    else out.push({ t: 'pause' })
  }
  return out
}

const owner = (c: number) => `c${c}`
const place = (c: number) => `q.${owner(c)}`
const set = (key: string, o: string): Op => ({ type: 'set', key, value: null, owner: o })

/** One store's side: its clients, their answers so far (a pending one as `…`), and when the last turn may have begun. */
class Side {
  readonly answers: string[] = Array.from({ length: CLIENTS }, () => '-')
  /** Every event a watcher of the whole namespace heard (the probe's no-op deletes aside). */
  readonly events: string[] = []
  readonly #pending = new Map<number, AbortController>()
  constructor(
    readonly name: string,
    readonly clients: Adapter[],
  ) {}

  get reader(): Adapter {
    return this.clients[0]!
  }

  async listen(): Promise<void> {
    await this.reader.watch('', {
      event: (e) => e.key !== 'probe' && this.events.push(`${e.revision} ${e.type} ${e.key}${e.type === 'put' ? `=${e.owner} @${e.created}` : ''}`),
      error: (err) => this.events.push(`error ${err.message}`),
    })
  }

  async entry(key: string) {
    const e = await this.reader.get(key)
    return e && { owner: e.owner, created: e.created, revision: e.revision }
  }

  async run(step: Step): Promise<void> {
    if (step.t === 'pause') return
    if (step.t === 'release') {
      const e = await this.reader.get(step.key)
      if (e) await this.reader.commit([{ key: step.key, created: e.created }], [{ type: 'delete', key: step.key }])
      return
    }
    const client = this.clients[step.c]!
    if (step.t === 'abort') return this.#pending.get(step.c)?.abort()
    if (step.t === 'place') {
      await client.commit([{ key: place(step.c), revision: null }], [set(place(step.c), owner(step.c))])
      return
    }
    if (step.t === 'leave') {
      await client.commit([], [{ type: 'delete', key: place(step.c) }])
      return
    }
    if (step.t === 'plain') {
      await client.commit([{ key: step.key, revision: null }], [set(step.key, owner(step.c))])
      return
    }
    if (step.t === 'steal') {
      const e = await this.reader.get(step.key)
      if (e) await client.commit([{ key: step.key, created: e.created }], [set(step.key, owner(step.c))])
      return
    }
    if (this.#pending.has(step.c)) return
    const mine = await client.get(place(step.c))
    const checks: Check[] = [{ key: step.key, revision: null }]
    const ops: Op[] = [set(step.key, owner(step.c))]
    if (mine) {
      checks.push({ key: place(step.c), created: mine.created })
      ops.push({ type: 'delete', key: place(step.c) })
    }
    const stop = new AbortController()
    const options: CommitOptions = { waitChange: step.short ? SHORT_MS : 5_000, keepParked: step.keep, signal: stop.signal }
    if (step.order && mine) options.parkOrder = mine.created
    if (step.wake && step.keep) options.wakeOwner = owner((step.c + 1) % CLIENTS)
    if (step.orElse && step.keep) {
      const other = step.key === 'a' ? 'b' : 'a'
      options.orElse = [{ checks: [{ key: other, revision: null }, ...checks.slice(1)], ops: [set(other, owner(step.c)), ...ops.slice(1)] }]
    }
    this.#pending.set(step.c, stop)
    this.answers[step.c] = '…'
    void client.commit(checks, ops, options).then(
      (r) => (this.answers[step.c] = said(r)),
      (err: Error) => (this.answers[step.c] = `error ${err.message}`),
    ).finally(() => this.#pending.delete(step.c))
  }

  /** What a comparison looks at: the answers, every entry (owner and life) and the store's revision. */
  async view(): Promise<unknown> {
    const keys = [...LOCKS, ...Array.from({ length: CLIENTS }, (_, c) => place(c))]
    const entries = Object.fromEntries(await Promise.all(keys.map(async (k) => [k, (await this.entry(k)) ?? null] as const)))
    const probe = await this.reader.commit([{ key: 'probe', revision: null }], [{ type: 'delete', key: 'probe' }])
    return { answers: [...this.answers], entries, revision: probe.ok ? probe.revision : 'failed', events: [...this.events].sort(byRevision) }
  }

  async close(): Promise<void> {
    for (const stop of this.#pending.values()) stop.abort()
    await new Promise((r) => setTimeout(r, 50))
    await Promise.all(this.clients.map((c) => c.close()))
  }
}

/** In revision order; within one revision by text (the order of a commit's events is each store's own). */
function byRevision(a: string, b: string): number {
  return parseInt(a) - parseInt(b) || (a < b ? -1 : a > b ? 1 : 0)
}

function said(r: CommitResult): string {
  if (r.ok) return `ok r${r.revision} ${r.entries.map((e) => `${e.key}=${e.owner}`).join(',')} -${r.deleted.join(',')}`
  return `no ${r.failed.map((f) => `${f.key}:${f.entry?.owner ?? '∅'}`).join(',')}`
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const runs = Number(process.env.ZARIS_SAME_RUNS ?? 4)
const length = Number(process.env.ZARIS_SAME_STEPS ?? 14)
const seed = Number(process.env.ZARIS_SAME_SEED ?? Math.floor(Math.random() * 2 ** 31))

test(`${runs} random sequences of ${length} steps: Redis's parked commits answer as the local store's, step by step (seed ${seed})`, async () => {
  const rnd = random(seed)
  for (let run = 0; run < runs; run++) {
    const ns = `same-${seed}-${run}`
    const memory = new Side('memory', Array.from({ length: CLIENTS }, () => memoryAdapter({ namespace: ns })))
    const redis = new Side('redis', await Promise.all(Array.from({ length: CLIENTS }, () => redisAdapter({ url: server.url(ns) }))))
    const done: Step[] = []
    await Promise.all([memory.listen(), redis.listen()])
    try {
      // Since the oldest wait that may have kept a turn began, in ms of steps.
      let turnAge: number | undefined
      for (const step of steps(rnd, length)) {
        if (step.t === 'pause' || (turnAge !== undefined && turnAge > TURN_SAFE_MS)) {
          await sleep(PAUSE_MS)
          turnAge = undefined
          if (step.t === 'pause') continue
        }
        done.push(step)
        await Promise.all([memory.run(step), redis.run(step)])
        await sleep(SETTLE_MS)
        if (turnAge !== undefined) turnAge += SETTLE_MS
        if (step.t === 'take' && step.short) turnAge ??= 0
        const [m, r] = await Promise.all([memory.view(), redis.view()])
        expect(r, `seed ${seed}, run ${run}, after ${JSON.stringify(done)}`).toEqual(m)
      }
    } finally {
      await Promise.all([memory.close(), redis.close()])
    }
  }
}, 600_000)
