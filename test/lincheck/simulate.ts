/**
 * Large histories for the checker's own tests, made by simulation: clients
 * with random latencies run against zaris's LocalStore (the memory store's
 * kernel), each operation taking effect at a random instant between its call
 * and its return, some answers lost (applied or not). The result is a
 * history of a correct store by construction, as big and as concurrent as
 * asked, without waiting for real time.
 *
 * @module
 */
import type { Check, Clock, Op } from 'zaris'
import { LocalStore } from '../../src/adapters/kit/local-store'
import { prng } from '../faults/scale'
import type { HistoryEvent } from './history'

export interface SimulationOptions {
  operations: number
  clients: number
  locks: number
  /** Keys fenced by each lock. */
  fencedKeys: number
  /** Share of operations whose answer is lost (half of them applied). */
  unknownRate: number
  seed: number
}

/** A simulated history of a correct store; see the module comment. */
export function simulate(options: SimulationOptions): HistoryEvent[] {
  const random = prng(options.seed)
  const int = (n: number) => Math.floor(random() * n)
  let time = 0
  const clock: Clock = { now: () => time, setTimeout: () => ({}), clearTimeout: () => {} }
  const store = new LocalStore({ clock })
  const events: HistoryEvent[] = []
  const locks = Array.from({ length: options.locks }, (_, i) => `lock:${i}`)
  const fencedOf = (lock: string) => Array.from({ length: options.fencedKeys }, (_, j) => `res:${lock.slice(5)}:${j}`)

  interface ClientState {
    id: string
    process: number
    at: number
    held?: { lock: string; token: number; ttl: number; until: number }
    /** The revision a counter read, for its compare-and-set. */
    counter?: { key: string; revision: number | null; value: number }
  }
  let nextProcess = 0
  const clients: ClientState[] = Array.from({ length: options.clients }, (_, i) => ({ id: `c${i}`, process: nextProcess++, at: random() }))
  let seq = 0

  /** One operation of `c`: what it sends, and what it learns. */
  const next = (c: ClientState): { f: 'get' | 'commit'; input: any; learn(output: any): void } => {
    const held = c.held && c.held.until > c.at ? c.held : undefined
    if (!held) c.held = undefined
    if (c.counter) {
      const { key, revision, value } = c.counter
      c.counter = undefined
      const checks: Check[] = [{ key, revision }]
      return { f: 'commit', input: { checks, ops: [{ type: 'set', key, value: value + 1 }] }, learn: () => {} }
    }
    const r = random()
    if (held) {
      const keys = fencedOf(held.lock)
      if (r < 0.45) return { f: 'commit', input: { checks: [{ key: held.lock, created: held.token }], ops: [{ type: 'set', key: keys[int(keys.length)]!, value: `${c.id}:${seq++}` }] }, learn: () => {} }
      if (r < 0.6) return { f: 'get', input: { key: keys[int(keys.length)]! }, learn: () => {} }
      if (r < 0.8) {
        const ttl = held.ttl
        const sentAt = c.at
        return {
          f: 'commit',
          input: { checks: [{ key: held.lock, created: held.token }], ops: [{ type: 'set', key: held.lock, value: null, ttl, owner: c.id }] },
          learn: (out) => {
            if (out?.revision && c.held === held) held.until = sentAt + ttl * 0.9
          },
        }
      }
      c.held = undefined
      return { f: 'commit', input: { checks: [{ key: held.lock, created: held.token }], ops: [{ type: 'delete', key: held.lock }] }, learn: () => {} }
    }
    if (r < 0.5) {
      const lock = locks[int(locks.length)]!
      const ttl = 5 + int(40)
      const sentAt = c.at
      const ops: Op[] = [{ type: 'set', key: lock, value: null, ttl, owner: c.id }]
      return {
        f: 'commit',
        input: { checks: [{ key: lock, revision: null }], ops },
        learn: (out) => {
          if (out?.revision) c.held = { lock, token: out.revision, ttl, until: sentAt + ttl * 0.9 }
        },
      }
    }
    if (r < 0.7) {
      const lock = locks[int(locks.length)]!
      return { f: 'get', input: { key: random() < 0.5 ? lock : fencedOf(lock)[0]! }, learn: () => {} }
    }
    if (r < 0.85) {
      const key = `count:${int(2)}`
      return {
        f: 'get',
        input: { key },
        learn: (out) => {
          const e = out?.entry
          c.counter = { key, revision: e ? e.revision : null, value: typeof e?.value === 'number' ? e.value : 0 }
        },
      }
    }
    return { f: 'commit', input: { checks: [], ops: [{ type: 'set', key: `plain:${int(4)}`, value: `${c.id}:${seq++}` }] }, learn: () => {} }
  }

  for (let n = 0; n < options.operations; n++) {
    let c = clients[0]!
    for (const d of clients) if (d.at < c.at) c = d
    const op = next(c)
    const call = c.at
    // The store's clock never goes back: each effect at or after the last.
    const effect = Math.max(time, call + random() * 2)
    const ret = effect + random() * 2
    time = effect
    const lost = random() < options.unknownRate
    const applied = !lost || random() < 0.5
    const output: any = op.f === 'get' ? { entry: store.get(op.input.key) ?? null } : applied ? store.commit(op.input.checks, op.input.ops) : { ok: false, failed: [] }
    events.push({ process: c.process, type: 'invoke', f: op.f, value: op.input, time: Math.round(call * 1e6), client: c.id })
    if (lost) {
      // The answer never came: the client goes on under a new process, knowing nothing.
      if (random() < 0.5) events.push({ process: c.process, type: 'info', f: op.f, value: null, time: Math.round(ret * 1e6), client: c.id })
      c.process = nextProcess++
      c.counter = undefined
    } else {
      const value = op.f === 'get' ? output : output.ok ? { revision: output.revision, entries: output.entries, deleted: output.deleted } : { failed: output.failed }
      const type = op.f === 'commit' && !output.ok ? 'fail' : 'ok'
      events.push({ process: c.process, type, f: op.f, value: JSON.parse(JSON.stringify(value)), time: Math.round(ret * 1e6), client: c.id })
      op.learn(value)
    }
    c.at = ret + random()
  }
  return events
}
