/**
 * The model-based random test: fast-check generates what a few clients do
 * at once with locks, fenced writes, plain writes, reads and counters, and
 * how time passes; the clients do it on a real store through an adapter
 * that records every get and commit (test/lincheck/recorder.ts); the
 * history is checked for linearizability against the store model, the
 * watch of an observer against the commits, and each hold's signal against
 * what the store did to its key (zaris's own promise, which the model of
 * the store cannot see).
 *
 * The same scenarios run on every adapter (test/model/*.test.ts): on the
 * memory store with fast-check's scheduler interleaving every store call
 * and a ManualClock for time, on the others with real time.
 *
 * @module
 */
import fc from 'fast-check'
import { Client, UnavailableError, isZarisError, type Adapter, type Clock, type Lock } from 'zaris'
import { MemoryHistory, recordingAdapter } from '../lincheck/recorder'
import type { HistoryEvent } from '../lincheck/history'
import { verifyHistory } from '../lincheck/verify'
import { watchRecorder } from '../lincheck/watch'
import { checkHoldCommits, checkHolds, checkResults, type HoldRecord, type HoldResult } from './holds'

export const LOCKS = ['lock:a', 'lock:b']
export const fencedKeys = (lock: string) => [`res:${lock.slice(5)}:0`, `res:${lock.slice(5)}:1`]
export const COUNTERS = ['count:0']
const PLAIN_TARGETS = [...LOCKS, ...LOCKS.flatMap(fencedKeys)]

export type Command =
  | { kind: 'acquire'; lock: string; ttl: number; wait: number; steal: boolean; autoRenew: boolean; abortAfter?: number }
  | { kind: 'renew'; ttl: number }
  | { kind: 'release' }
  | { kind: 'fencedPut'; key: number }
  | { kind: 'fencedDelete'; key: number }
  | { kind: 'put'; key: string }
  | { kind: 'putIf'; key: string }
  | { kind: 'delete'; key: string }
  | { kind: 'get'; key: string }
  | { kind: 'increment'; key: string }
  /** The client works a while (holding its lock, say) before its next command. */
  | { kind: 'pause'; ms: number }

export interface Scenario {
  /** What each client does, in order. */
  clients: Command[][]
  /** How far time moves, step by step, while they do it (ms). */
  advances: number[]
  /** Store calls (by index among all commits) whose answer is lost: after being applied, or before. */
  losses: Array<{ at: number; applied: boolean }>
}

/** Arbitraries of scenarios; `ttl` bounds are in ms. */
export function scenarioArbitrary(options: { clients: number; commands: number; minCommands?: number; ttl: [number, number]; losses?: boolean; holdsOnly?: boolean }): fc.Arbitrary<Scenario> {
  const ttl = fc.integer({ min: options.ttl[0], max: options.ttl[1] })
  // Most of the contention on one lock: races need two clients on the same key.
  const lock = fc.oneof({ weight: 3, arbitrary: fc.constant(LOCKS[0]!) }, { weight: 1, arbitrary: fc.constantFrom(...LOCKS) })
  // Races of holds: two clients on one lock, stealing, renewing and releasing it.
  const holdRace: fc.Arbitrary<Command> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('acquire' as const), lock: fc.constant(LOCKS[0]!), ttl, wait: fc.constant(0), steal: fc.boolean(), autoRenew: fc.boolean() }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('renew' as const), ttl }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('fencedPut' as const), key: fc.nat(1) }) },
  )
  const command: fc.Arbitrary<Command> = options.holdsOnly ? holdRace : fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant('acquire' as const), lock, ttl, wait: fc.oneof(fc.constant(0), ttl), steal: fc.nat(2).map((n) => n === 0), autoRenew: fc.boolean() }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('renew' as const), ttl }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const) }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('fencedPut' as const), key: fc.nat(1) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('fencedDelete' as const), key: fc.nat(1) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('put' as const), key: fc.constantFrom(...PLAIN_TARGETS) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('putIf' as const), key: fc.constantFrom(...PLAIN_TARGETS) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom(...PLAIN_TARGETS) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('get' as const), key: fc.constantFrom(...PLAIN_TARGETS) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('increment' as const), key: fc.constantFrom(...COUNTERS) }) },
  )
  return fc.record({
    clients: fc.array(fc.array(command, { minLength: options.minCommands ?? 1, maxLength: options.commands, size: 'max' }), { minLength: 2, maxLength: options.clients, size: 'max' }),
    advances: fc.array(fc.integer({ min: 1, max: options.ttl[1] * 2 }), { maxLength: 6 }),
    losses: options.losses === false ? fc.constant([]) : fc.array(fc.record({ at: fc.nat(40), applied: fc.boolean() }), { maxLength: 2 }),
  })
}

/**
 * Scenarios for a node that parks the first waiter's take (`waitChange`;
 * test/model/node-park.test.ts): holds shorter than the parked waits, so
 * that the node's second try in the tick of a change is reached. Each client
 * works in rounds: take, a step or two, mostly a release. Takes wait, most
 * with long TTLs (600-1600 ms: parked up to a quarter of it, 150-400 ms);
 * what ends the hold in their way comes sooner: a release a few steps after
 * its take, a short TTL (60-200 ms) that expires, a plain delete of the lock
 * key, a steal. A third of the takes give up after 5-250 ms (`abortAfter`,
 * in real time), often while parked: deleting their place wakes their own
 * parked take, whose second try must then fail.
 */
export function parkScenarioArbitrary(): fc.Arbitrary<Scenario> {
  const lock = fc.oneof({ weight: 6, arbitrary: fc.constant(LOCKS[0]!) }, { weight: 1, arbitrary: fc.constant(LOCKS[1]!) })
  const short = fc.integer({ min: 60, max: 200 })
  const take: fc.Arbitrary<Command> = fc.record({
    kind: fc.constant('acquire' as const),
    lock,
    ttl: fc.oneof({ weight: 1, arbitrary: short }, { weight: 2, arbitrary: fc.integer({ min: 600, max: 1_600 }) }),
    wait: fc.integer({ min: 200, max: 1_500 }),
    steal: fc.nat(9).map((n) => n === 0),
    autoRenew: fc.nat(4).map((n) => n === 0),
    abortAfter: fc.oneof({ weight: 2, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.integer({ min: 5, max: 250 }) }),
  })
  const step: fc.Arbitrary<Command> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant('pause' as const), ms: fc.integer({ min: 10, max: 150 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('fencedPut' as const), key: fc.nat(1) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('renew' as const), ttl: short }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('get' as const), key: fc.constantFrom(...LOCKS) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.constantFrom(...LOCKS) }) },
  )
  const round = fc.tuple(take, fc.array(step, { maxLength: 3 }), fc.nat(5)).map(([t, steps, r]): Command[] => [t, ...steps, ...(r > 0 ? [{ kind: 'release' as const }] : [])])
  return fc.record({
    clients: fc.array(fc.array(round, { minLength: 2, maxLength: 4, size: 'max' }).map((rounds) => rounds.flat()), { minLength: 3, maxLength: 4, size: 'max' }),
    advances: fc.array(fc.integer({ min: 1, max: 300 }), { maxLength: 4 }),
    losses: fc.array(fc.record({ at: fc.nat(40), applied: fc.boolean() }), { maxLength: 1 }),
  })
}

/** Why a scenario's take with `abortAfter` gave up: expected, unlike any other error of an acquire. */
class GaveUp extends Error {
  override name = 'GaveUp'
}

/** Where a scenario runs. */
export interface Environment {
  /** A fresh adapter on the run's store (one per client, and one for the observer). */
  adapter(): Promise<Adapter>
  /** The clock clients count holds on; `undefined`: the system's. */
  clock?: Clock
  /** Milliseconds on the clock the history is stamped with. */
  now(): number
  /** Lets `ms` of time pass. */
  advance(ms: number): Promise<void>
  /** Interleaves store calls and steps (fast-check's scheduler), or nothing with real concurrency. */
  scheduler?: fc.Scheduler
  /** Lets deliveries in flight arrive before the holds are judged. */
  settle(): Promise<void>
  /** Margin for real time: how late a hold may learn (ms); 0 for a ManualClock. */
  tolerance: number
  /** Timer and clock rounding allowed on TTLs by the model (ms). */
  slack: number
  /** Real time a run may take before it fails as hung, with who was doing what (ms); none with a ManualClock. */
  maxRunMs?: number
}

export interface Outcome {
  ok: boolean
  report: string
  history: HistoryEvent[]
  operations: number
}

/** Runs a scenario and judges it. */
export async function runScenario(scenario: Scenario, env: Environment, runId: string): Promise<Outcome> {
  const history = new MemoryHistory(() => env.now())
  const s = env.scheduler
  const gate = (label: string) => (s ? s.schedule(Promise.resolve(), label) : Promise.resolve())
  const waitFor = <T>(p: Promise<T>) => (s ? s.waitFor(p) : p)
  const unexpected: string[] = []
  const holds: HoldRecord[] = []
  const results: HoldResult[] = []
  const told = (kind: HoldResult['kind'], client: Client, lock: Lock, revision?: number) => results.push({ kind, client: client.id, key: lock.key, token: lock.token, revision })
  let commits = 0
  /** What each client is doing, for the report of a run that hangs. */
  const busy = new Map<string, string>()
  /** Fails a run that hangs (a call never answered, a wait that never ends), saying who was doing what. */
  const watchdog = <T>(p: Promise<T>, what: string): Promise<T> => {
    if (!env.maxRunMs) return p
    let timer: ReturnType<typeof setTimeout> | undefined
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`waited ${env.maxRunMs} ms for ${what}; still busy: ${[...busy].map(([c, cmd]) => `${c} ${cmd}`).join('; ') || 'nobody'}${s ? `\n${s.report().filter((t) => t.status === 'pending').map((t) => t.label).join(', ')} pending in the scheduler` : ''}`)), env.maxRunMs)
    })
    return Promise.race([p, late]).finally(() => clearTimeout(timer))
  }
  /** A client's plain delete in progress (the commits it sends then are the user's, not a hold's). */
  const doing = new Map<string, string>()
  const lost = new Map(scenario.losses.map((l) => [l.at, l.applied]))

  /** The adapter a client sees: each call gated by the scheduler, some answers lost, everything recorded. */
  const wrap = (inner: Adapter, id: string): Adapter => {
    const faulty: Adapter = {
      name: inner.name,
      capabilities: inner.capabilities,
      get: async (key) => {
        await gate(`${id} get ${key}`)
        const r = await inner.get(key)
        await gate(`${id} get ${key} answer`)
        return r
      },
      list: (prefix, options) => inner.list(prefix, options),
      commit: async (checks, ops, options) => {
        const n = commits++
        await gate(`${id} commit #${n}`)
        const loss = lost.get(n)
        if (loss === false) throw new UnavailableError(`answer lost (injected, commit #${n} not applied)`)
        const r = await inner.commit(checks, ops, options)
        await gate(`${id} commit #${n} answer`)
        if (loss === true) throw new UnavailableError(`answer lost (injected, commit #${n} applied)`)
        return r
      },
      watch: (prefix, sink, from) => inner.watch(prefix, sink, from),
      close: () => inner.close(),
    }
    if (inner.ownerGone) faulty.ownerGone = inner.ownerGone.bind(inner)
    if (inner.registerOwner) faulty.registerOwner = inner.registerOwner.bind(inner)
    return recordingAdapter(faulty, history, id, () => doing.get(id))
  }

  // An observer follows every key from the start: what the store did, in revision order.
  const observerAdapter = await env.adapter()
  const watched = watchRecorder((e) => history.push(e), () => env.now(), history.newProcess(), 'observer', 'observer')
  watched.start('', 0)
  const storeEvents: Array<{ key: string; kind: 'put' | 'delete' | 'expire'; revision: number; created?: number; owner?: string; at: number }> = []
  const unwatch = await observerAdapter.watch(
    '',
    {
      event(ev) {
        watched.event(ev)
        storeEvents.push({ key: ev.key, kind: ev.type, revision: ev.revision, created: ev.created, owner: ev.owner, at: env.now() })
      },
      error(err) {
        watched.end((err as { code?: string }).code ?? err.message)
      },
    },
    0,
  )

  const clients: Client[] = []
  for (let i = 0; i < scenario.clients.length; i++) {
    const id = `${runId}-c${i}`
    clients.push(new Client(wrap(await env.adapter(), id), { id, clock: env.clock }))
  }
  let seq = 0
  const value = (id: string) => `${id}:${seq++}`

  const thread = async (client: Client, commands: Command[]) => {
    await threadOf(client, commands)
    busy.delete(client.id)
  }
  const threadOf = async (client: Client, commands: Command[]) => {
    let lock: Lock | undefined
    for (const cmd of commands) {
      busy.set(client.id, JSON.stringify(cmd))
      await gate(`${client.id} ${cmd.kind}`)
      try {
        switch (cmd.kind) {
          case 'acquire': {
            const stop = cmd.abortAfter === undefined ? undefined : new AbortController()
            const timer = stop && setTimeout(() => stop.abort(new GaveUp(`gave up after ${cmd.abortAfter} ms`)), cmd.abortAfter)
            const held = await client.locks.acquire(cmd.lock, { ttl: cmd.ttl, wait: cmd.wait, steal: cmd.steal, autoRenew: cmd.autoRenew, signal: stop?.signal }).finally(() => clearTimeout(timer))
            if (held) {
              lock = held
              holds.push(watchHold(held, client.id, env.now))
            }
            break
          }
          case 'renew':
            if (lock && (await lock.renew(cmd.ttl))) told('renew', client, lock, lock.revision)
            break
          case 'release':
            if (lock) {
              holds.find((h) => h.lock === lock)!.releaseCalledAt ??= env.now()
              if (await lock.release()) told('release', client, lock)
            }
            break
          case 'fencedPut':
            if (lock) told('fenced', client, lock, (await client.put(fencedKeys(lock.key)[cmd.key]!, value(client.id), { fence: lock })).revision)
            break
          case 'fencedDelete':
            if (lock) {
              await client.delete(fencedKeys(lock.key)[cmd.key]!, { fence: lock })
              told('fenced', client, lock)
            }
            break
          case 'put':
            await client.put(cmd.key, value(client.id))
            break
          case 'putIf': {
            const e = await client.get(cmd.key)
            await client.put(cmd.key, value(client.id), { ifRevision: e ? e.revision : null })
            break
          }
          case 'delete':
            doing.set(client.id, 'plain-delete')
            await client.delete(cmd.key).finally(() => doing.delete(client.id))
            break
          case 'get':
            await client.get(cmd.key)
            break
          case 'increment':
            await client.counters.increment(cmd.key)
            break
          case 'pause':
            await env.advance(cmd.ms)
            break
        }
      } catch (err) {
        const gaveUp = cmd.kind === 'acquire' && err instanceof GaveUp
        if (!gaveUp && !isZarisError(err, 'FENCED') && !isZarisError(err, 'CONFLICT') && !isZarisError(err, 'UNAVAILABLE')) {
          unexpected.push(`${client.id} ${JSON.stringify(cmd)}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`)
        }
      }
    }
  }

  let running = true
  const clientsDone = Promise.all(scenario.clients.map((cmds, i) => thread(clients[i]!, cmds))).finally(() => (running = false))
  // Time passes while they work (the generated steps); then, while a client still waits (for a lock,
  // say), time moves on only once nothing else can happen: no store call or step is pending.
  const time = (async () => {
    for (const ms of scenario.advances) {
      await gate(`advance ${ms}`)
      await env.advance(ms)
    }
    let waited = 0
    while (running) {
      await new Promise((r) => setTimeout(r, 0))
      if (s && s.count() > 0) continue
      if ((waited += 250) > 60_000) {
        unexpected.push('a client was still busy after 60 more seconds of time: a wait that never ends')
        break
      }
      await env.advance(250)
    }
  })()
  await watchdog(waitFor(Promise.all([clientsDone, time])), 'the clients to finish')
  await env.settle()

  const holdProblems = [...checkHolds(holds, storeEvents, history.events, env.now(), env.tolerance), ...checkResults(results, storeEvents, history.events), ...checkHoldCommits(holds, storeEvents, history.events)]
  await watchdog(waitFor(Promise.all(clients.map((c) => c.close()))), 'the clients to close')
  unwatch()
  watched.end('closed')
  await observerAdapter.close()

  const verdict = verifyHistory(history.events, { slack: env.slack })
  const problems = [...unexpected.map((u) => `unexpected error: ${u}`), ...holdProblems]
  const ok = verdict.ok && problems.length === 0
  return {
    ok,
    history: history.events,
    operations: verdict.linearizability.operations,
    report: [verdict.ok ? '' : verdict.report, ...problems].filter(Boolean).join('\n'),
  }
}

/** Follows a hold's signal from the moment it is granted. */
function watchHold(lock: Lock, client: string, now: () => number): HoldRecord {
  const h: HoldRecord = { lock, client, key: lock.key, token: lock.token, grantedAt: now() }
  const signal = lock.signal
  const note = () => {
    h.abortedAt = now()
    h.reason = (signal.reason as { code?: string })?.code ?? String(signal.reason)
  }
  if (signal.aborted) note()
  else signal.addEventListener('abort', note, { once: true })
  return h
}

/** fast-check's parameters for a run: seed from `ZARIS_MODEL_SEED`, runs scaled by the caller. */
export function runParameters(numRuns: number): fc.Parameters<unknown> {
  const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {}
  const seed = env.ZARIS_MODEL_SEED
  const path = env.ZARIS_MODEL_PATH
  return { numRuns, ...(seed ? { seed: Number(seed) } : {}), ...(path ? { path } : {}), endOnFailure: false, verbose: 1 }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/**
 * An environment with real time, for stores a ManualClock cannot drive (a
 * node in another process, Redis, IndexedDB): time steps are sleeps, the
 * scheduler still reorders the clients' store calls, holds get `tolerance`
 * ms to learn what happened, and the model allows `slack` ms of clock
 * rounding on TTLs.
 */
export function realEnvironment(adapter: () => Promise<Adapter>, scheduler: fc.Scheduler, options: { tolerance?: number; slack?: number } = {}): Environment {
  return {
    adapter,
    now: () => performance.now(),
    advance: sleep,
    scheduler,
    settle: () => sleep(options.tolerance ?? 300),
    tolerance: options.tolerance ?? 300,
    slack: options.slack ?? 5,
    maxRunMs: 45_000,
  }
}

/** Real-time scenarios: TTLs long enough that a loaded machine does not end every hold by itself. */
export const realScenarios = (holdsOnly = false) => scenarioArbitrary({ clients: 3, commands: 8, minCommands: 4, ttl: [150, 400], holdsOnly })

/**
 * Runs `runs` random scenarios in `env`; throws fast-check's report (seed, path, shrunk scenario) on failure.
 * `shrinkMs`: how long to shrink a failure. Each candidate of a real-time scenario costs a real-time run, so
 * past it the candidates are not run (taken as passing) and the report shows the smallest failure so far.
 */
export async function assertScenarios(runs: number, arbitrary: fc.Arbitrary<Scenario>, env: (scheduler: fc.Scheduler, run: number) => Environment | Promise<Environment>, label: string, options: { shrinkMs?: number } = {}): Promise<{ runs: number; operations: number; ms: number }> {
  let n = 0
  let operations = 0
  const started = performance.now()
  let failed: { at: number; run: number } | undefined
  await fc.assert(
    fc.asyncProperty(fc.scheduler(), arbitrary, async (scheduler, scenario) => {
      if (failed && options.shrinkMs !== undefined && performance.now() - failed.at > options.shrinkMs) return
      const run = n++
      const outcome = await runScenario(scenario, await env(scheduler, run), `${label}${run}`)
      operations += outcome.operations
      if (!outcome.ok) {
        failed ??= { at: performance.now(), run }
        const first = `first failure: run ${failed.run}, ${((failed.at - started) / 1000).toFixed(1)} s in`
        throw new Error(`${outcome.report}\n${scheduler.report().length} scheduled steps\n${first}`)
      }
    }),
    runParameters(runs),
  )
  return { runs: n, operations, ms: performance.now() - started }
}
