/**
 * Recording the lock family at the client API: each `locks.acquire` with a
 * mode, `semaphores.acquire`, a hold's `release` and `renew`, and a write
 * fenced by a hold, as an invocation and a completion in the shape
 * family.ts models (history.ts's Jepsen shape). Recording above the core is
 * the point: a core that grants one permit too many sends commits the store
 * model accepts; what the client was *told* shows it.
 *
 * Holds must not renew behind the recorder's back (`autoRenew: false`): a
 * renewal the history does not show would make the model end the hold at
 * its first TTL.
 *
 * Runs in Node and in the browser (no imports beyond types).
 *
 * @module
 */
import type { Client, Lock, LockOptions, LockSet, Permit, SemaphoreOptions, Value } from 'zaris'
import type { HistoryEvent } from './history'
import type { HistorySink } from './recorder'

const ns = (ms: number) => Math.round(ms * 1e6)
const codeOf = (err: unknown) => (err as { code?: string } | null)?.code

/** A lock or a permit. */
type Held = Lock | Permit

/** Options as recorded: the TTL given (the model needs it), and no renewal behind the recorder's back. */
export type Recorded<O> = O & { ttl: number; autoRenew: false }

/** A hold the recorder handed out, and what kind it is. */
interface Known {
  kind: 'lock' | 'permit'
  client: string
}

export class FamilyRecorder {
  readonly #sink: HistorySink
  readonly #idle = new Map<string, number[]>()
  readonly #known = new WeakMap<Held, Known>()

  constructor(sink: HistorySink) {
    this.#sink = sink
  }

  /** `client.locks.acquire(key or keys, options)`, recorded. */
  async lock(client: Client, key: string, options: Recorded<LockOptions>): Promise<Lock | null>
  async lock(client: Client, keys: string[], options: Recorded<LockOptions>): Promise<LockSet | null>
  async lock(client: Client, keyOrKeys: string | string[], options: Recorded<LockOptions>): Promise<Lock | LockSet | null> {
    const keys = typeof keyOrKeys === 'string' ? [keyOrKeys] : keyOrKeys
    const input: Record<string, unknown> = { keys, mode: options.mode ?? 'exclusive', ttl: options.ttl }
    if (options.steal) input.steal = true
    const held = await this.#run(client.id, 'lock-acquire', input, () => client.locks.acquire(keyOrKeys, options), (h) => (h ? { type: 'ok', value: { token: tokenOf(h) } } : { type: 'fail', value: null }))
    if (held) for (const l of 'locks' in held ? held.locks : [held]) this.#known.set(l, { kind: 'lock', client: client.id })
    return held
  }

  /** `client.semaphores.acquire(key, options)`, recorded. */
  async permit(client: Client, key: string, options: Recorded<SemaphoreOptions>): Promise<Permit | null> {
    const input = { key, limit: options.limit, ttl: options.ttl }
    const permit = await this.#run(client.id, 'permit-acquire', input, () => client.semaphores.acquire(key, options), (p) => (p ? { type: 'ok', value: { token: p.token } } : { type: 'fail', value: null }))
    if (permit) this.#known.set(permit, { kind: 'permit', client: client.id })
    return permit
  }

  /** `hold.release()` (every lock of a set, each recorded), resolving as it does. */
  async release(hold: Held | LockSet): Promise<boolean> {
    if ('locks' in hold) return (await Promise.all(hold.locks.map((l) => this.release(l)))).every(Boolean)
    const k = this.#of(hold)
    return this.#run(k.client, `${k.kind}-release`, { key: hold.key, token: hold.token }, () => hold.release(), (released) => ({ type: 'ok', value: { released } }))
  }

  /** `hold.renew(ttl)`, recorded. */
  async renew(hold: Held, ttl: number): Promise<boolean> {
    const k = this.#of(hold)
    return this.#run(k.client, `${k.kind}-renew`, { key: hold.key, token: hold.token, ttl }, () => hold.renew(ttl), (renewed) => ({ type: 'ok', value: { renewed } }))
  }

  /** `client.put(key, value, { fence: hold })`, recorded: true if accepted, false if refused with `FENCED`. */
  async fenced(client: Client, hold: Held, key: string, value: Value): Promise<boolean> {
    const k = this.#of(hold)
    const input = { key: hold.key, token: hold.token }
    const process = this.#process(k.client)
    const invoke: HistoryEvent = { process, type: 'invoke', f: `${k.kind}-fenced`, value: input, time: ns(this.#sink.now()), client: k.client }
    this.#sink.push(invoke)
    try {
      await client.put(key, value, { fence: hold })
    } catch (err) {
      const fenced = codeOf(err) === 'FENCED'
      this.#sink.push({ process, type: fenced ? 'fail' : 'info', f: invoke.f, value: { error: codeOf(err) ?? String(err) }, time: ns(this.#sink.now()), client: k.client })
      if (!fenced) throw err
      this.#idle.get(k.client)!.push(process)
      return false
    }
    this.#sink.push({ process, type: 'ok', f: invoke.f, value: null, time: ns(this.#sink.now()), client: k.client })
    this.#idle.get(k.client)!.push(process)
    return true
  }

  /** A client the store knows is gone (a closed tab): its holds may end from `start` (ms) on. */
  ownerGone(owner: string, start: number): void {
    this.#sink.push({ process: 'nemesis', type: 'info', f: 'owner-gone', value: { owner, start: ns(start) }, time: ns(this.#sink.now()) })
  }

  #of(hold: Held): Known {
    const k = this.#known.get(hold)
    if (!k) throw new Error(`a hold of ${hold.key} the recorder did not hand out: its grant is not in the history`)
    return k
  }

  #process(client: string): number {
    let idle = this.#idle.get(client)
    if (!idle) this.#idle.set(client, (idle = []))
    return idle.pop() ?? this.#sink.newProcess()
  }

  /** One operation; a rejection other than bad input is an unknown outcome (that process is not used again, as Jepsen's crashed ones). */
  async #run<T>(client: string, f: string, input: unknown, call: () => Promise<T>, outcome: (r: T) => { type: 'ok' | 'fail'; value: unknown }): Promise<T> {
    const process = this.#process(client)
    this.#sink.push({ process, type: 'invoke', f, value: input, time: ns(this.#sink.now()), client })
    let result: T
    try {
      result = await call()
    } catch (err) {
      // Bad input is refused before anything is sent: not applied. Anything else: unknown.
      const refused = codeOf(err) === 'INVALID_ARGUMENT'
      this.#sink.push({ process, type: refused ? 'fail' : 'info', f, value: { error: codeOf(err) ?? String(err) }, time: ns(this.#sink.now()), client })
      if (refused) this.#idle.get(client)!.push(process)
      throw err
    }
    const { type, value } = outcome(result)
    this.#sink.push({ process, type, f, value, time: ns(this.#sink.now()), client })
    this.#idle.get(client)!.push(process)
    return result
  }
}

const tokenOf = (h: Lock | LockSet) => ('locks' in h ? h.locks[0]!.token : h.token)

/**
 * How many holds of one key the history shows held at once (from the return
 * of each grant to the call of its release), by mode: proof that a test
 * raced what it meant to (shared holds did overlap, the semaphore did fill).
 */
export function heldAtOnce(events: readonly HistoryEvent[], key: string): { shared: number; exclusive: number; permits: number } {
  const opened = new Map<string, { at: number; mode: string }>()
  const points: Array<{ at: number; mode: string; delta: number }> = []
  const invokes = new Map<string, HistoryEvent>()
  const id = (e: HistoryEvent) => `${e.client}/${e.process}`
  for (const e of [...events].sort((a, b) => a.time - b.time)) {
    if (e.type === 'invoke') {
      invokes.set(id(e), e)
      const v = e.value as { key?: string; token?: number }
      if (/-release$/.test(e.f) && v.key === key) {
        const o = opened.get(`${e.f.split('-')[0]}:${v.token}`)
        if (o) points.push({ at: e.time, mode: o.mode, delta: -1 })
        opened.delete(`${e.f.split('-')[0]}:${v.token}`)
      }
      continue
    }
    const inv = invokes.get(id(e))
    if (e.type !== 'ok' || !inv || !/-acquire$/.test(e.f)) continue
    const v = inv.value as { key?: string; keys?: string[]; mode?: string }
    if (!(v.keys ?? [v.key]).includes(key)) continue
    const mode = e.f === 'permit-acquire' ? 'permit' : (v.mode ?? 'exclusive')
    opened.set(`${e.f.split('-')[0]}:${(e.value as { token: number }).token}`, { at: e.time, mode })
    points.push({ at: e.time, mode, delta: 1 })
  }
  // Releases before grants at one instant: touching holds are not at once.
  points.sort((a, b) => a.at - b.at || a.delta - b.delta)
  const now = { shared: 0, exclusive: 0, permit: 0 } as Record<string, number>
  const most = { shared: 0, exclusive: 0, permits: 0 }
  for (const p of points) {
    now[p.mode] = (now[p.mode] ?? 0) + p.delta
    most.shared = Math.max(most.shared, now.shared!)
    most.exclusive = Math.max(most.exclusive, now.exclusive!)
    most.permits = Math.max(most.permits, now.permit!)
  }
  return most
}
