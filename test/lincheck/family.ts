/**
 * The lock family's models: what a client is told by `locks.acquire` with a
 * `mode` (a reader-writer lock), by `semaphores.acquire` (a semaphore), and
 * by the holds they give (release, renew, a fenced write). Where model.ts
 * holds a store to the adapter contract, these hold the core to the lock
 * family's promises of ../../../shared/DESIGN.md and docs/locks.md,
 * docs/semaphores.md — recorded at the API, so a core that grants what it
 * should not is caught even when every commit it sends is one the store
 * model accepts.
 *
 * Operations (history.ts's shape; the checker picks the model by `f`, as
 * for every operation):
 *
 * - `lock-acquire`: invoke `{ keys, mode: 'exclusive' | 'shared', ttl,
 *   steal? }` (one key or several, all in one commit), ok `{ token }` (one
 *   token for every key), fail: not granted (`null`).
 * - `permit-acquire`: invoke `{ key, limit, ttl }`, ok `{ token, slot? }`,
 *   fail: not granted.
 * - `lock-release` / `permit-release`: invoke `{ key, token }`, ok
 *   `{ released }`; `lock-renew` / `permit-renew`: invoke `{ key, token,
 *   ttl }`, ok `{ renewed }`; `lock-fenced` / `permit-fenced`: invoke
 *   `{ key, token }` (a write fenced by that hold), ok: accepted, fail
 *   `{ error: 'FENCED' }`: refused by its fence. Any other `fail` is bad
 *   input refused before anything was sent: nothing happened.
 *
 * The rules, at each operation's linearization point:
 *
 * - **Reader-writer**: an exclusive grant only while no hold of the key
 *   lives; a shared grant only while no exclusive one does (shared holds
 *   overlap each other). A steal (exclusive) ends every live hold of the key.
 * - **Semaphore**: a grant with limit `n` only while fewer than `n` live
 *   permits were taken with a limit of `n` or less (with one limit for
 *   all: fewer than `limit` live; with mixed limits, what the slots rule of
 *   docs/semaphores.md implies); a reported slot is below the limit and not
 *   held by a live permit.
 * - **Tokens** are store revisions: each grant's token is above every token
 *   and revision known in its partition, so tokens rise per key; and the
 *   checker's store-wide check holds them above what any operation that
 *   returned before the grant's call saw (check.ts).
 * - **Holds**: a release or renewal that answers true found its hold alive
 *   (a renewal restarts its TTL from then); one that answers false leaves it
 *   ended (a hold past its holder's own deadline still sends its release,
 *   and a renewal answered after that deadline is undone by a delete the
 *   core sends later: the hold may end at any point after). A fenced write
 *   is accepted only while its hold lives, refused only once it is gone.
 *   Expiry is model.ts's: a hold may have expired once its TTL from the
 *   grant's call is up, must have once its TTL from the grant's return is;
 *   `owner-gone` and `store-restart` as there.
 *
 * A refusal (`null`) is not checked: a semaphore's try reads its slots and
 * tries one, so a `null` says "every slot was seen taken", not "all were
 * taken at one instant"; a shared try also yields to an exclusive waiter's
 * intent. The models judge what was granted, not what was refused (that is
 * what the conformance tests' own assertions are for).
 *
 * @module
 */
import type { Operation } from './history'

export type HoldKind = 'lock' | 'permit'
export type HoldMode = 'exclusive' | 'shared' | 'permit'

/** One live hold. */
export interface FamilyHold {
  kind: HoldKind
  key: string
  mode: HoldMode
  owner: string
  /** `null`: the grant's outcome was unknown, so its token was never learned. */
  token: number | null
  limit?: number
  slot?: number
  ttl: number
  /** The interval its grant or last renewal took effect in (model.ts's module comment). */
  lo: number
  hi: number
  /** After a durable store's restart: by when it reopened (model.ts). */
  reopen?: number
  /** May end at any later point (a release of unknown outcome; a renewal answered after the holder's deadline). */
  doomed?: boolean
}

/** The part of a model state the lock family keeps (model.ts's `State` has these fields). */
export interface FamilyState {
  holds?: FamilyHold[]
  max: number
  dead: string[]
}

export const FAMILY_OPS = new Set(['lock-acquire', 'permit-acquire', 'lock-release', 'permit-release', 'lock-renew', 'permit-renew', 'lock-fenced', 'permit-fenced'])

const kindOf = (f: string): HoldKind => (f.startsWith('permit-') ? 'permit' : 'lock')

/** The keys of an operation's input: `keys`, or `key`. */
export const inputKeys = (op: Operation): string[] => (Array.isArray(op.input?.keys) ? op.input.keys : [op.input?.key]).map(String)

/** A hold's partition key: locks and semaphores named alike are different things, and apart from store keys. */
export const partitionKey = (kind: HoldKind, key: string) => `${kind === 'lock' ? 'lock' : 'semaphore'} ${key}`

/** The partition keys of a lock-family operation. */
export function familyKeys(op: Operation): string[] {
  return inputKeys(op).map((k) => partitionKey(kindOf(op.f), k))
}

type Step<S> = { ok: true; states: S[] } | { ok: false; reason: string }

const name = (h: FamilyHold) => `${h.owner}'s ${h.mode === 'permit' ? `permit${h.slot !== undefined ? ` (slot ${h.slot})` : ''}` : `${h.mode} hold`} of ${h.key} (token ${h.token ?? 'unknown'})`

/**
 * The states possible just before `op` takes effect, for the holds it
 * touches (every hold for an operation of no key): each that may have ended
 * by then, ended or not. As model.ts's `expiries`.
 */
export function holdExpiries<S extends FamilyState>(state: S, op: Operation, touched: Set<string> | undefined, slack: number, late: number): S[] {
  const holds = state.holds ?? []
  let out: S[] = [state]
  // An operation of unknown outcome returns at +infinity: deciding there that a hold expired would let it
  // expire before every operation ordered after it. Nothing in this model needs such an operation to have
  // taken effect (its grant's token was never learned), so it decides expiries as of its call; the next
  // operation on the key decides the rest.
  const by = op.status === 'unknown' ? op.call : op.ret
  for (const h of holds) {
    if (touched && !touched.has(partitionKey(h.kind, h.key))) continue
    const expMin = h.lo + h.ttl - slack
    const expMax = Math.max(h.hi, h.reopen ?? -Infinity) + h.ttl + slack + late
    const mayBeAlive = expMax >= op.call
    const mayBeGone = h.doomed === true || state.dead.includes(h.owner) || expMin <= by
    if (mayBeAlive && !mayBeGone) continue
    const next: S[] = []
    for (const s of out) {
      if (mayBeAlive) next.push(s)
      // The states in `out` share the hold objects they kept: dropped by identity.
      if (mayBeGone) next.push({ ...s, holds: s.holds!.filter((x) => x !== h) })
    }
    out = next
  }
  return out
}

/** Every hold written before `op` took effect before it: bounds known now (model.ts's `tighten`). */
export function tightenHolds<S extends FamilyState>(state: S, op: Operation): S {
  if (!state.holds || op.ret === Infinity) return state
  let changed = false
  const holds = state.holds.map((h) => {
    let x = h
    if (h.hi === Infinity) x = { ...x, hi: op.ret }
    if (h.reopen === Infinity && op.status !== 'unknown' && op.f !== 'store-restart') x = { ...x, reopen: op.ret }
    if (x !== h) changed = true
    return x
  })
  return changed ? { ...state, holds } : state
}

/** A store restart for the holds: gone (memory), or kept with their whole TTL from the reopening (durable). */
export function restartHolds<S extends FamilyState>(state: S, durable: boolean): S {
  if (!state.holds) return state
  return durable ? { ...state, holds: state.holds.map((h) => ({ ...h, reopen: Infinity })) } : { ...state, holds: [] }
}

const find = (s: FamilyState, kind: HoldKind, key: string, token: number) => (s.holds ?? []).find((h) => h.kind === kind && h.key === key && h.token === token)
const without = <S extends FamilyState>(s: S, h: FamilyHold): S => ({ ...s, holds: s.holds!.filter((x) => x !== h) })
const replaced = <S extends FamilyState>(s: S, h: FamilyHold, by: FamilyHold): S => ({ ...s, holds: s.holds!.map((x) => (x === h ? by : x)) })

/** One lock-family operation on one state (expiries already decided). */
export function applyFamily<S extends FamilyState>(s: S, op: Operation): Step<S> {
  const kind = kindOf(op.f)
  const verb = op.f.slice(kind.length + 1)
  if (verb === 'acquire') return kind === 'lock' ? acquireLock(s, op) : acquirePermit(s, op)
  const key = String(op.input.key)
  const token = Number(op.input.token)
  const h = find(s, kind, key, token)
  const what = `${kind} ${key} token ${token}`
  if (op.status === 'unknown') {
    // Applied at some point after the call, or never: a release may end it later; a renewal may extend it.
    if (!h || verb === 'fenced') return { ok: true, states: [s] }
    if (verb === 'release') return { ok: true, states: [replaced(s, h, { ...h, doomed: true })] }
    return { ok: true, states: [s, replaced(s, h, { ...h, ttl: Math.max(h.ttl, Number(op.input.ttl ?? h.ttl)), hi: Infinity })] }
  }
  // Refused as bad input (a renewal's TTL, say): nothing was sent. A fenced write's refusal is its answer.
  if (op.status === 'fail' && (verb !== 'fenced' || (op.output?.error ?? 'FENCED') !== 'FENCED')) return { ok: true, states: [s] }
  switch (verb) {
    case 'release':
      if (op.output?.released === true) return h ? { ok: true, states: [without(s, h)] } : { ok: false, reason: `it released ${what}, which does not live here` }
      return { ok: true, states: [h ? without(s, h) : s] }
    case 'renew': {
      if (op.output?.renewed === true) {
        if (!h) return { ok: false, reason: `it renewed ${what}, which does not live here` }
        return { ok: true, states: [replaced(s, h, { ...h, ttl: Number(op.input.ttl ?? h.ttl), lo: op.call, hi: op.ret, doomed: undefined })] }
      }
      // False: lost, or answered after the holder's deadline (then extended, and deleted later).
      if (!h) return { ok: true, states: [s] }
      return { ok: true, states: [replaced(s, h, { ...h, ttl: Math.max(h.ttl, Number(op.input.ttl ?? h.ttl)), hi: Math.max(h.hi, op.ret), doomed: true })] }
    }
    case 'fenced':
      if (op.status === 'ok') return h ? { ok: true, states: [s] } : { ok: false, reason: `a write fenced by ${what} was accepted, but that hold does not live here` }
      return h ? { ok: false, reason: `a write fenced by ${what} was refused, but ${name(h)} lives here` } : { ok: true, states: [s] }
    default:
      return { ok: false, reason: `unknown operation ${op.f}` }
  }
}

/** The new hold(s) of a grant; `token` null for an unknown outcome. */
function holdsOf(op: Operation, kind: HoldKind, mode: HoldMode, token: number | null): FamilyHold[] {
  const unknown = op.status === 'unknown'
  return inputKeys(op).map((key) => {
    const h: FamilyHold = { kind, key, mode, owner: op.client ?? `process ${op.process}`, token, ttl: Number(op.input.ttl), lo: op.call, hi: unknown ? Infinity : op.ret }
    if (kind === 'permit') {
      h.limit = Number(op.input.limit)
      if (typeof op.output?.slot === 'number') h.slot = op.output.slot
    }
    return h
  })
}

/** Grants `fresh` holds where `allowed` says so: ok with a token, or both branches for an unknown outcome. */
function grant<S extends FamilyState>(s: S, op: Operation, fresh: FamilyHold[], why?: string, ended: FamilyHold[] = []): Step<S> {
  const keep = (s.holds ?? []).filter((h) => !ended.includes(h))
  if (op.status === 'fail') return { ok: true, states: [s] }
  if (op.status === 'unknown') return { ok: true, states: why ? [s] : [s, { ...s, holds: sortHolds([...keep, ...fresh]) }] }
  if (why) return { ok: false, reason: why }
  const token = Number(op.output?.token)
  if (!(token > s.max)) return { ok: false, reason: `its token ${token} is not above ${s.max}, already seen on these keys (tokens rise)` }
  return { ok: true, states: [{ ...s, max: token, holds: sortHolds([...keep, ...fresh]) }] }
}

function acquireLock<S extends FamilyState>(s: S, op: Operation): Step<S> {
  const mode: HoldMode = op.input.mode === 'shared' ? 'shared' : 'exclusive'
  const token = op.status === 'ok' ? Number(op.output?.token) : null
  const fresh = holdsOf(op, 'lock', mode, token)
  const live = (key: string) => (s.holds ?? []).filter((h) => h.kind === 'lock' && h.key === key)
  if (op.input.steal && mode === 'exclusive') return grant(s, op, fresh, undefined, inputKeys(op).flatMap(live))
  for (const key of inputKeys(op)) {
    const blocking = live(key).filter((h) => mode === 'exclusive' || h.mode === 'exclusive')
    if (blocking.length > 0) return grant(s, op, fresh, `it granted ${key} ${mode} to ${fresh[0]!.owner}, but ${blocking.map(name).join(', ')} ${blocking.length > 1 ? 'live' : 'lives'} here`)
  }
  return grant(s, op, fresh)
}

function acquirePermit<S extends FamilyState>(s: S, op: Operation): Step<S> {
  const key = String(op.input.key)
  const limit = Number(op.input.limit)
  const token = op.status === 'ok' ? Number(op.output?.token) : null
  const fresh = holdsOf(op, 'permit', 'permit', token)
  const live = (s.holds ?? []).filter((h) => h.kind === 'permit' && h.key === key)
  const counted = live.filter((h) => (h.limit ?? Infinity) <= limit)
  const who = fresh[0]!.owner
  if (counted.length >= limit) return grant(s, op, fresh, `it granted ${who} a permit of ${key} (limit ${limit}), but ${counted.length} live here: ${counted.map(name).join(', ')}`)
  const slot = fresh[0]!.slot
  if (slot !== undefined) {
    if (!(slot >= 0 && slot < limit)) return grant(s, op, fresh, `it granted ${who} slot ${slot} of ${key}, not below its limit ${limit}`)
    const taken = live.find((h) => h.slot === slot)
    if (taken) return grant(s, op, fresh, `it granted ${who} slot ${slot} of ${key}, but ${name(taken)} holds it here`)
  }
  return grant(s, op, fresh)
}

const sortHolds = (holds: FamilyHold[]) => holds.sort((a, b) => holdKey(a).localeCompare(holdKey(b)))

const holdKey = (h: FamilyHold) =>
  `${h.kind}:${h.key}#${h.token ?? '?'}:${h.mode}/${h.owner}/${h.limit ?? ''}/${h.slot ?? ''}/${h.ttl}/${h.lo}/${h.hi}/${h.reopen ?? ''}/${h.doomed ? 'd' : ''}`

/** The holds' part of a canonical state string. */
export function holdsKey(s: FamilyState): string {
  return s.holds && s.holds.length > 0 ? `|holds:${s.holds.map(holdKey).join(';')}` : ''
}

/** An operation of the lock family in words, for reports. */
export function describeFamily(op: Operation): { what: string; outcome: string } {
  const i = op.input ?? {}
  const keys = inputKeys(op).join(', ')
  let what: string
  if (op.f === 'lock-acquire') what = `acquire ${keys} ${i.mode ?? 'exclusive'}${i.steal ? ' (steal)' : ''} (TTL ${i.ttl})`
  else if (op.f === 'permit-acquire') what = `acquire a permit of ${keys} (limit ${i.limit}, TTL ${i.ttl})`
  else if (op.f.endsWith('-fenced')) what = `write fenced by ${kindOf(op.f)} ${keys} token ${i.token}`
  else what = `${op.f.replace(/^\w+-/, '')} ${kindOf(op.f)} ${keys} token ${i.token}${i.ttl !== undefined ? ` (TTL ${i.ttl})` : ''}`
  let outcome: string
  if (op.status === 'unknown') outcome = 'unknown outcome'
  else if (op.f.endsWith('-acquire')) outcome = op.status === 'ok' ? `token ${op.output?.token}${op.output?.slot !== undefined ? ` slot ${op.output.slot}` : ''}` : 'null'
  else if (op.f.endsWith('-fenced')) outcome = op.status === 'ok' ? 'accepted' : 'FENCED'
  else outcome = String(op.output?.released ?? op.output?.renewed)
  return { what, outcome }
}
