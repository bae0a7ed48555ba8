/**
 * zaris/web-locks's checked history, on one store: three clients' requests
 * of mixed modes in rounds, recorded at the facade — a request's grant as
 * `lock-acquire` (invoked when the request is made, answered when its
 * callback gets the lock), its release as `lock-release` (invoked when the
 * callback settles, answered when the request settles) — and checked two
 * ways:
 *
 * - against the lock family's models (test/lincheck/family.ts): shared
 *   holds never beside an exclusive one, tokens rising, no hold freed early;
 * - for the ordering claim the models do not see, **grant before resolve**
 *   ({@link grantOrderViolations}): once the requests of every hold granted
 *   before a release have settled, the waiters that stood in line then and
 *   come next — the first if exclusive, else every shared one before the
 *   first exclusive — hold, in the `query()` the releasing client makes
 *   right after its request settled. As the specification's release step,
 *   which grants them before the released request's promise settles.
 *
 * Each round, the driver makes the new requests one at a time, each seen
 * in line in `query()` before the next is made (a CI run once saw a later
 * client's exclusive request overtake an earlier client's shared one on the
 * wire), and then lets the holders go (a `wl-lined` note): "stood in line"
 * and its order are then facts of the history, not guesses.
 */
import { expect, test } from 'vitest'
import { connect, type Client } from 'zaris'
import { webLocks, type WebLocks } from 'zaris/web-locks'
import { checkHistory, formatResult } from '../lincheck/check'
import type { HistoryEvent } from '../lincheck/history'
import { MemoryHistory } from '../lincheck/recorder'
import { gate, until } from './helpers'

const ns = (ms: number) => Math.round(ms * 1e6)
type Mode = 'exclusive' | 'shared'
const TTL = 30_000

/** One recorded request. */
interface Req {
  mode: Mode
  process: number
  token?: number
  granted: Promise<void>
  release(): Promise<void>
}

/** Records requests of `locks` on key `key` into `h`. */
function recorder(h: MemoryHistory) {
  const push = (e: Omit<HistoryEvent, 'time'>) => h.push({ ...e, time: ns(h.now()) })
  return (locks: WebLocks, key: string, mode: Mode): Req => {
    const process = h.newProcess()
    const client = locks.client.id
    const [granted, grant] = gate()
    const [letGo, leave] = gate()
    push({ process, type: 'invoke', f: 'lock-acquire', value: { keys: [key], mode, ttl: TTL }, client })
    const req: Req = { mode, process, granted, release: async () => {} }
    const done = locks.request(key, { mode, zaris: { ttl: TTL, autoRenew: false } }, (lock) => {
      req.token = lock!.token
      push({ process, type: 'ok', f: 'lock-acquire', value: { token: lock!.token }, client })
      grant()
      return letGo
    })
    req.release = async () => {
      push({ process, type: 'invoke', f: 'lock-release', value: { key, token: req.token }, client })
      leave()
      await done
      push({ process, type: 'ok', f: 'lock-release', value: { released: true }, client })
      // What the releasing client sees right after: the holds of the key, by token.
      const at = h.now()
      const q = await locks.client.locks.query(key)
      const held = q.held.filter((x) => x.key === key).map((x) => ({ token: x.token, mode: x.mode }))
      h.push({ process, type: 'info', f: 'wl-query', value: { key, after: req.token, held }, time: ns(at), client })
    }
    return req
  }
}

/** The rounds: what the holders are let go for (each a batch of new requests, in the order made). */
const ROUNDS: Mode[][] = [
  ['shared', 'shared', 'shared', 'exclusive', 'shared'],
  ['exclusive', 'shared', 'shared'],
  ['shared', 'exclusive', 'exclusive'],
  ['shared', 'shared', 'exclusive'],
]

/** Runs the rounds on three clients of `url`; returns the history. */
async function run(url: string, key: string): Promise<HistoryEvent[]> {
  const h = new MemoryHistory(() => performance.now())
  const clients: Client[] = await Promise.all([0, 1, 2].map((i) => connect(url, { id: `wl-h${i}-${Math.random().toString(36).slice(2, 6)}` })))
  try {
    const managers = clients.map((c) => webLocks(c))
    const request = recorder(h)
    const first = request(managers[0]!, key, 'exclusive')
    await first.granted
    let holders = [first]
    let waiting: Req[] = []
    const grantedNow = () => waiting.filter((r) => r.token !== undefined)
    for (const [round, batch] of ROUNDS.entries()) {
      // One at a time, each seen in line before the next is made: requests of different clients travel
      // separately, and the line's order must be the order made for "comes next" to be known.
      for (const [i, mode] of batch.entries()) {
        waiting.push(request(managers[(round + i) % 3]!, key, mode))
        const lined = waiting.length
        await until(async () => (await clients[0]!.locks.query(key)).pending.filter((p) => p.key === key).length === lined)
      }
      h.push({ process: 'nemesis', type: 'info', f: 'wl-lined', value: { key }, time: ns(h.now()) })
      await Promise.all(holders.map((r) => r.release()))
      // The next holders: those granted (the checks judge whether they were in time).
      await until(async () => grantedNow().length > 0 && (await clients[0]!.locks.query(key)).held.filter((x) => x.key === key).length === grantedNow().length)
      holders = grantedNow()
      waiting = waiting.filter((r) => r.token === undefined)
    }
    while (holders.length > 0) {
      await Promise.all(holders.map((r) => r.release()))
      if (waiting.length === 0) break
      await until(async () => grantedNow().length > 0)
      holders = grantedNow()
      waiting = waiting.filter((r) => r.token === undefined)
    }
  } finally {
    await Promise.all(clients.map((c) => c.close()))
  }
  return h.events
}

interface Grant {
  process: number
  mode: Mode
  token: number
  call: number
  ok: number
  releaseCall?: number
  releaseOk?: number
}

/**
 * Every release after which the waiters it let through (see the module doc)
 * did not show as held in the releasing client's `query()`: described, one
 * line each. Empty when grant-before-resolve held throughout.
 */
export function grantOrderViolations(events: readonly HistoryEvent[]): string[] {
  const byProcess = new Map<number, Grant>()
  const keyOf = new Map<number, string>()
  const lined: Array<{ key: string; time: number }> = []
  const queries: Array<{ key: string; after: number; held: Array<{ token: number }>; time: number }> = []
  for (const e of events) {
    const v = e.value as Record<string, unknown>
    if (e.f === 'wl-lined') lined.push({ key: v.key as string, time: e.time })
    else if (e.f === 'wl-query') queries.push({ ...(v as { key: string; after: number; held: Array<{ token: number }> }), time: e.time })
    else if (e.f === 'lock-acquire' && e.type === 'invoke') {
      keyOf.set(e.process as number, (v.keys as string[])[0]!)
      byProcess.set(e.process as number, { process: e.process as number, mode: v.mode as Mode, token: NaN, call: e.time, ok: Infinity })
    } else if (e.f === 'lock-acquire' && e.type === 'ok') Object.assign(byProcess.get(e.process as number)!, { token: v.token as number, ok: e.time })
    else if (e.f === 'lock-release') byProcess.get(e.process as number)![e.type === 'invoke' ? 'releaseCall' : 'releaseOk'] = e.time
  }
  const grants = [...byProcess.values()].filter((g) => Number.isFinite(g.token))
  const violations: string[] = []
  for (const q of queries) {
    const r = grants.find((g) => g.token === q.after && keyOf.get(g.process) === q.key)!
    const ofKey = grants.filter((g) => keyOf.get(g.process) === q.key)
    // Only the release that let the last earlier hold go: every hold granted before it began has settled.
    const earlier = ofKey.filter((g) => g !== r && g.ok < r.releaseCall! && (g.releaseOk ?? Infinity) > r.releaseCall!)
    if (earlier.some((g) => (g.releaseOk ?? Infinity) > r.releaseOk!)) continue
    const line = lined.filter((l) => l.key === q.key && l.time < r.releaseCall!).at(-1)
    if (!line) continue
    // Those in line when it began: made before the line was seen whole, granted only after it began.
    const stood = ofKey.filter((g) => g.call < line.time && g.ok > r.releaseCall!).sort((a, b) => a.token - b.token)
    const next = headOf(stood)
    const missing = next.filter((g) => !q.held.some((x) => x.token === g.token) && (g.releaseCall ?? Infinity) > q.time)
    if (missing.length > 0) {
      violations.push(`the release of #${r.token} settled before ${missing.map((g) => `${g.mode} #${g.token}`).join(', ')} held: query() after it showed [${q.held.map((x) => `#${x.token}`).join(', ')}]`)
    }
  }
  return violations
}

/** The waiters a release lets through, of `line` in line order: the first if exclusive, else every shared one before the first exclusive. */
function headOf(line: Grant[]): Grant[] {
  if (line[0]?.mode === 'exclusive') return line.slice(0, 1)
  const firstExclusive = line.findIndex((g) => g.mode === 'exclusive')
  return firstExclusive < 0 ? line : line.slice(0, firstExclusive)
}

/** The history test on the store at `url()`. */
export function historyCases(label: string, url: () => string): void {
  test(`zaris/web-locks over ${label}: checked history of three clients' mixed requests (lock-family models; grant before resolve)`, async () => {
    const key = `wl-history-${Math.random().toString(36).slice(2, 8)}`
    const events = await run(url(), key)
    const family = events.filter((e) => e.f === 'lock-acquire' || e.f === 'lock-release')
    const r = checkHistory(family, { slack: 5, maxMs: 60_000 })
    expect(r.verdict, formatResult(r)).toBe('ok')
    expect(r.operations).toBe(2 * (1 + ROUNDS.flat().length))
    expect(grantOrderViolations(events)).toEqual([])
    // The claim was put to the test: releases after which several shared waiters had to hold.
    const judged = events.filter((e) => e.f === 'wl-query' && (e.value as { held: unknown[] }).held.length >= 3)
    expect(judged.length).toBeGreaterThan(0)
  }, 60_000)
}
