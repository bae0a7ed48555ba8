/**
 * The sequential specification the checker holds a store to: the adapter
 * contract of ../../../shared/DESIGN.md, on the keys of one partition.
 *
 * - A register with compare-and-set: `get`, and `commit` with `set` /
 *   `delete` ops and `{ key, revision }` checks (`null`: absent).
 * - A counter: the `add` op (a safe-integer add, creating the key at 0).
 * - A fenced lock: a grant is a commit checking the key absent and setting
 *   it with an owner and TTL; its token is the entry's `created`. A renewal
 *   and a release check `{ key, created: token }`; a fenced write checks the
 *   same and sets another key. The new-life rule decides `created`: absent,
 *   `fresh`, or an owner change (an ownerless write over an owned entry
 *   included) starts a new life at the commit's revision; the same owner
 *   keeps it. So an accepted fenced write carries the token of the newest
 *   grant at its linearization point, and tokens rise with revisions.
 *
 * Revisions are store-wide while a partition sees only some commits: the
 * model asks only that each commit's revision exceed every revision known
 * in the partition (gaps are other partitions' commits). A commit of
 * unknown outcome that is applied gets a symbolic revision, "some number
 * above m", pinned when a later read or check reveals it.
 *
 * Time (expiry). An entry written with a TTL by a commit linearized at an
 * instant L expires at L + ttl on the store's clock. The checker does not
 * know L, only that it lies in [lo, hi]: lo is the commit's call, hi its
 * return (for a commit of unknown outcome, the return of the first
 * operation linearized after it: that one took effect after it). So before
 * each operation the entry
 * - may already have expired if lo + ttl - slack <= that operation's return,
 * - may still be alive if hi + ttl + slack >= that operation's call,
 * and the model follows both branches where both hold. The bounds are an
 * operation's own, never the order the search happens to try: states that
 * differ only in the order that led to them are one state to the memo,
 * which keeps the search small on histories of slow, overlapping operations
 * (tabs stalled by busy loops); the price is a little looseness (an
 * operation is not held to the calls of the ones ordered before it). This is the reading
 * of etcd's robustness tests (a lease may have expired any time after its
 * TTL from the grant's request; it must have before its TTL from the
 * grant's response) rather than Jepsen's lock checkers, which give the
 * holder a clock margin instead; it never calls a correct history wrong
 * when the clocks of the recorders and the store run at one rate (one
 * machine), with `slack` for timer rounding. An expiry takes a revision the
 * history does not see; watch events carry it (test/lincheck/watch.ts).
 *
 * Faults the history reports: `owner-gone` (a closed tab: the store may end
 * that owner's entries at any later point) and `store-restart` (a store
 * that lost its state: every entry gone; revisions rise again from there,
 * each client's above what it saw before; or, with `durable: true`, a
 * store that kept its entries and gives each TTL'd one its whole TTL again
 * from when it reopened, as a `--data` node does).
 *
 * The lock family (shared and exclusive holds, semaphore permits), as the
 * client API reports it, is family.ts's; its holds live beside the entries.
 *
 * @module
 */
import { FAMILY_OPS, applyFamily, familyKeys, holdExpiries, holdsKey, restartHolds, tightenHolds, type FamilyHold } from './family'
import { canonical, type CheckJson, type EntryJson, type OpJson, type Operation } from './history'

/** A revision the model may not know yet: "some integer above `gt`", named by the operation that made it. */
export interface Sym {
  sym: number
  gt: number
}
export type Num = number | Sym

/** One live entry. */
export interface KeyState {
  /** Canonical JSON of the value. */
  value: string
  rev: Num
  created: Num
  owner?: string
  ttl?: number
  /** The interval the TTL'd write took effect in (see the module comment). */
  lo?: number
  hi?: number
  /**
   * After a durable store's restart: by when it reopened and gave the entry
   * its whole TTL again (Infinity until an operation answered after it).
   */
  reopen?: number
  /** Written through a gate of this mode (capability `gates`), while this life lasts. */
  gate?: 'exclusive' | 'shared'
}

/** The gate a commit was made through, as the recorder writes it. */
interface GateJson {
  key: string
  mode: 'exclusive' | 'shared'
}

/**
 * Whether a commit through `gate` may take its key over `e`: an entry marked
 * by a gate that cannot be held beside this one (the contract's `Gate`). The
 * model trusts that the gate was held; the store's lock manager is not in the
 * history.
 */
function overridable(e: KeyState | undefined, gate: GateJson | undefined, c: CheckJson): boolean {
  const absent = 'revision' in c ? c.revision === null : c.created === null
  return absent && gate !== undefined && c.key === gate.key && e?.gate !== undefined && (gate.mode === 'exclusive' || e.gate === 'exclusive')
}

/** The model's state on one partition. Immutable: steps copy. */
export interface State {
  keys: Record<string, KeyState>
  /** The largest revision known on this partition. */
  max: number
  /** Owners known gone (sorted). */
  dead: string[]
  /** The lock family's live holds (family.ts), sorted. */
  holds?: FamilyHold[]
}

export interface ModelOptions {
  /** Timer and clock rounding allowed on TTLs, in ms. Default 0 (ManualClock histories). */
  slack?: number
  /**
   * How long past its TTL a store may keep an entry, in ms (never before it):
   * etcd rounds leases up to whole seconds and restarts them on a leader
   * change. Default 0.
   */
  lateExpiry?: number
}

/** What one step gives: the possible next states, or why none is possible. */
export type StepResult = { ok: true; states: State[] } | { ok: false; reason: string }

export const initialState = (): State => ({ keys: {}, max: 0, dead: [] })

/**
 * `state` without the entries of gone owners at keys no operation still to
 * be placed touches (`watched` says which are): none can be observed again,
 * and the store may end them at any point, so they only split the states
 * (one with the entry, one without) to no purpose.
 */
export function forgetUnwatched(state: State, watched: (key: string) => boolean): State {
  if (state.dead.length === 0) return state
  let keys: Record<string, KeyState> | undefined
  for (const [key, e] of Object.entries(state.keys)) {
    if (e.owner === undefined || !state.dead.includes(e.owner) || watched(key)) continue
    keys ??= { ...state.keys }
    delete keys[key]
  }
  return keys ? { ...state, keys } : state
}

const isSym = (n: Num | undefined): n is Sym => typeof n === 'object' && n !== null
const showNum = (n: Num) => (isSym(n) ? `(unknown > ${n.gt})` : String(n))

/** The keys an operation touches: its partition. Empty: it concerns every partition. */
export function keysOf(op: Operation): string[] {
  if (op.f === 'get') return [op.input.key]
  if (FAMILY_OPS.has(op.f)) return familyKeys(op)
  if (op.f === 'commit') {
    const keys = new Set<string>()
    for (const c of op.input.checks as CheckJson[]) keys.add(c.key)
    for (const o of op.input.ops as OpJson[]) keys.add(o.key)
    for (const way of (op.input.orElse ?? []) as Way[]) {
      for (const c of way.checks) keys.add(c.key)
      for (const o of way.ops) keys.add(o.key)
    }
    return [...keys]
  }
  return []
}

/** Operations the model knows; others are refused when the history is read. */
export const MODELED = new Set(['get', 'commit', 'owner-gone', 'store-restart', ...FAMILY_OPS])

/** A step of one state; see the module comment. */
export function step(state: State, op: Operation, options: ModelOptions = {}): StepResult {
  const slack = options.slack ?? 0
  const touched = keysOf(op)
  const holdsTouched = touched.length > 0 ? new Set(touched) : undefined
  const branches = expiries(state, op, slack, options.lateExpiry ?? 0).flatMap((s) => holdExpiries(s, op, holdsTouched, slack, options.lateExpiry ?? 0))
  const states: State[] = []
  let reason = ''
  for (const b of branches) {
    // Every entry written before took effect before this operation: tighten their windows.
    const s = tighten(b, op)
    const r = apply(s, op, slack + (options.lateExpiry ?? 0))
    if (r.ok) states.push(...r.states)
    else reason ||= r.reason
  }
  return states.length > 0 ? { ok: true, states } : { ok: false, reason }
}

/**
 * The states possible just before `op` takes effect: each TTL'd entry of a
 * key it touches expired or not, where time allows both. Other keys wait:
 * an expiry is seen only by an operation on its key, and stays once it
 * happened, so deciding it there is the same (and keeps the state sets small
 * when many entries with TTLs live side by side: a lock's line of waiters).
 */
function expiries(state: State, op: Operation, slack: number, late: number): State[] {
  let out: State[] = [state]
  const touched = keysOf(op)
  for (const key of touched.length > 0 ? touched : Object.keys(state.keys)) {
    const e = state.keys[key]
    if (!e) continue
    const ownerGone = e.owner !== undefined && state.dead.includes(e.owner)
    if (e.ttl === undefined && !ownerGone) continue
    const expMin = e.ttl === undefined ? Infinity : e.lo! + e.ttl - slack
    const expMax = e.ttl === undefined ? Infinity : Math.max(e.hi!, e.reopen ?? -Infinity) + e.ttl + slack + late
    const next: State[] = []
    for (const s of out) {
      const mayBeAlive = expMax >= op.call
      const mayBeGone = ownerGone || expMin <= op.ret
      if (mayBeAlive) next.push(s)
      if (mayBeGone) {
        const keys = { ...s.keys }
        delete keys[key]
        next.push({ ...s, keys })
      }
    }
    out = next
  }
  return out
}

function tighten(state: State, op: Operation): State {
  const ret = op.ret
  let keys: Record<string, KeyState> | undefined
  for (const [key, e] of Object.entries(state.keys)) {
    if (e.hi === Infinity && ret < Infinity) (keys ??= { ...state.keys })[key] = { ...e, hi: ret }
    // A store that answered had reopened by then.
    if (e.reopen === Infinity && op.status !== 'unknown' && op.f !== 'store-restart') (keys ??= { ...state.keys })[key] = { ...(keys?.[key] ?? e), reopen: ret }
  }
  return tightenHolds(keys ? { ...state, keys } : state, op)
}

function apply(s: State, op: Operation, slack: number): StepResult {
  switch (op.f) {
    case 'get':
      return applyGet(s, op, slack)
    case 'commit':
      return applyCommit(s, op, slack)
    case 'owner-gone': {
      const owner = String(op.input?.owner)
      return { ok: true, states: [s.dead.includes(owner) ? s : { ...s, dead: [...s.dead, owner].sort() }] }
    }
    case 'store-restart':
      // Everything gone. Revisions go on above what each client saw (the contract), not above what
      // every client saw: across clients the partition's order starts again (the global check in
      // check.ts keeps each client's own revisions rising).
      if (op.input?.durable) {
        const keys: Record<string, KeyState> = {}
        for (const [k, e] of Object.entries(s.keys)) keys[k] = e.ttl === undefined ? e : { ...e, reopen: Infinity }
        return { ok: true, states: [restartHolds({ ...s, keys }, true)] }
      }
      return { ok: true, states: [restartHolds({ ...s, keys: {}, max: 0 }, false)] }
    default:
      return FAMILY_OPS.has(op.f) ? applyFamily(s, op) : { ok: false, reason: `unknown operation ${op.f}` }
  }
}

function applyGet(s: State, op: Operation, slack: number): StepResult {
  if (op.status !== 'ok') return { ok: true, states: [s] }
  const key = op.input.key as string
  const m = match(s, key, op.output?.entry ?? undefined, slack)
  return m.ok ? { ok: true, states: [m.state] } : m
}

/** A pinning of symbols to numbers. */
type Pins = Map<number, number>

/** Whether what the store reported of `key` (an entry, or `undefined` for absent) can be the model's entry; pins symbols it reveals. */
function match(s: State, key: string, seen: EntryJson | undefined, slack: number, pins: Pins = new Map()): { ok: true; state: State } | { ok: false; reason: string } {
  const e = s.keys[key]
  if (!e && !seen) return { ok: true, state: s }
  if (!e) return { ok: false, reason: `${key} was seen as ${showEntry(seen!)}, but it is absent here` }
  if (!seen) return { ok: false, reason: `${key} was seen absent, but it holds ${showKey(e)} here` }
  const value = canonical(seen.value)
  if (value !== e.value) return { ok: false, reason: `${key} was seen with value ${value}, but it holds ${e.value} here` }
  if ((seen.owner ?? null) !== (e.owner ?? null)) return { ok: false, reason: `${key} was seen owned by ${seen.owner ?? 'nobody'}, but by ${e.owner ?? 'nobody'} here` }
  if (!unify(e.rev, seen.revision, pins)) return { ok: false, reason: `${key} was seen at revision ${seen.revision}, but it is at ${showNum(e.rev)} here` }
  if (!unify(e.created, seen.created, pins)) return { ok: false, reason: `${key} was seen with created ${seen.created}, but its life began at ${showNum(e.created)} here` }
  if (seen.ttl !== undefined && (e.ttl === undefined || seen.ttl > e.ttl + slack)) return { ok: false, reason: `${key} was seen with ${seen.ttl} ms to live, but it was written with ${e.ttl === undefined ? 'no TTL' : `a TTL of ${e.ttl} ms`}` }
  if (seen.ttl === undefined && e.ttl !== undefined) return { ok: false, reason: `${key} was seen without a TTL, but it was written with one of ${e.ttl} ms` }
  return { ok: true, state: pin(s, pins) }
}

/** `n` equals `value` (pinning a symbol to it if need be). */
function unify(n: Num, value: number, pins: Pins): boolean {
  if (!isSym(n)) return n === value
  const pinned = pins.get(n.sym)
  if (pinned !== undefined) return pinned === value
  if (value <= n.gt) return false
  pins.set(n.sym, value)
  return true
}

function pin(s: State, pins: Pins): State {
  if (pins.size === 0) return s
  const sub = (n: Num): Num => (isSym(n) && pins.has(n.sym) ? pins.get(n.sym)! : n)
  const keys: Record<string, KeyState> = {}
  for (const [k, e] of Object.entries(s.keys)) keys[k] = isSym(e.rev) || isSym(e.created) ? { ...e, rev: sub(e.rev), created: sub(e.created) } : e
  return { ...s, keys, max: Math.max(s.max, ...pins.values()) }
}

/** Whether a check holds: true, false, or a symbol that must equal the checked number for it to hold. */
function evaluate(s: State, c: CheckJson): boolean | { sym: Sym; value: number } {
  const e = s.keys[c.key]
  const want = 'revision' in c ? c.revision : c.created
  if (want === null) return e === undefined
  if (!e) return false
  const have = 'revision' in c ? e.rev : e.created
  if (!isSym(have)) return have === want
  return want > have.gt ? { sym: have, value: want } : false
}

/** A commit's other way (`CommitOptions.orElse`), as the recorder writes it. */
interface Way {
  checks: CheckJson[]
  ops: OpJson[]
}

/**
 * A commit with other ways (`CommitOptions.orElse`): the store applies the
 * first of the commit and its ways whose checks all hold. Judged as that
 * one, on the commit's own checks when none holds (a failure: each way must
 * fail here too).
 */
function applyCommit(s: State, op: Operation, slack: number): StepResult {
  const ways = (op.input.orElse ?? []) as Way[]
  if (ways.length === 0) return applyOne(s, op, slack)
  const all: Way[] = [{ checks: op.input.checks as CheckJson[], ops: op.input.ops as OpJson[] }, ...ways]
  if (op.status === 'fail') {
    const failed = op.output?.failed as unknown[] | undefined
    // Refused as bad input, or a kept take in line held back behind an earlier waiter's turn: judged as one commit.
    if (!failed || (failed.length === 0 && op.input.inLine === true)) return applyOne(s, op, slack)
    const i = all.findIndex((w) => w.checks.every((c) => evaluate(s, c) === true))
    if (i >= 0) return { ok: false, reason: `it failed, but ${i === 0 ? 'its own checks' : `its other way ${i}`} all hold here` }
    return applyOne(s, op, slack)
  }
  // The way whose writes the answer shows (a way whose checks hold may have been held back behind a turn),
  // else the first that may hold here (a symbol that unifies may), else the commit's own (to say why not).
  const shown = new Set([...((op.output?.entries ?? []) as Array<{ key: string }>).map((e) => e.key), ...((op.output?.deleted ?? []) as string[])])
  const writes = (w: Way) => new Set(w.ops.map((o) => o.key))
  const same = (a: Set<string>, b: Set<string>) => a.size === b.size && [...a].every((k) => b.has(k))
  const first = all.find((w) => same(writes(w), shown)) ?? all.find((w) => w.checks.every((c) => evaluate(s, c) !== false)) ?? all[0]!
  return applyOne(s, { ...op, input: { ...op.input, checks: first.checks, ops: first.ops } }, slack)
}

function applyOne(s: State, op: Operation, slack: number): StepResult {
  const checks = op.input.checks as CheckJson[]
  const ops = op.input.ops as OpJson[]
  if (op.status === 'fail') {
    const failed = op.output?.failed as Array<{ key: string; entry?: EntryJson | null }> | undefined
    if (!failed) return { ok: true, states: [s] } // refused as bad input: not applied
    // A kept take in line held back behind an earlier waiter's turn (kit/parked.ts) fails with nothing failed: it wrote nothing.
    if (failed.length === 0) return op.input.inLine === true ? { ok: true, states: [s] } : { ok: false, reason: 'the commit failed with no failed check' }
    let state = s
    for (const f of failed) {
      const c = checks.find((c) => c.key === f.key)
      if (!c) return { ok: false, reason: `the commit reports a failed check on ${f.key}, which it did not check` }
      const m = match(state, f.key, f.entry ?? undefined, slack)
      if (!m.ok) return { ok: false, reason: `its failed check on ${f.key} saw ${f.entry ? showEntry(f.entry) : 'nothing'}: ${m.reason}` }
      state = m.state
      // A symbol compared to a number may differ from it: only a sure success contradicts the failure.
      // (A gate's takeover may have failed for a gate no longer held: the model cannot see the lock manager.)
      if (evaluate(state, c) === true) return { ok: false, reason: `it failed on ${showCheck(c)}, which holds here` }
    }
    return { ok: true, states: [state] }
  }

  const pins: Pins = new Map()
  const gate = op.input.gate as GateJson | undefined
  let over: string | undefined
  let holds = true
  let why = ''
  for (const c of checks) {
    const v = evaluate(s, c)
    if (v === true) continue
    if (overridable(s.keys[c.key], gate, c)) {
      over = c.key
      continue
    }
    if (v !== false && unify(v.sym, v.value, pins)) continue
    holds = false
    why = `${showCheck(c)} does not hold: ${c.key} is ${s.keys[c.key] ? showKey(s.keys[c.key]!) : 'absent'} here`
    break
  }

  if (op.status === 'unknown') {
    // Porcupine's reading of a lost answer: applied at some point after the call, or never.
    const states = [s]
    if (holds) {
      const base = pin(s, pins)
      const written = write(base, ops, { sym: op.id, gt: base.max }, op, gate, over)
      if (written.ok) states.push(written.state)
    }
    return { ok: true, states }
  }

  if (!holds) return { ok: false, reason: `it succeeded, but ${why}` }
  const base = pin(s, pins)
  const revision = op.output.revision as number
  if (!(revision > base.max)) return { ok: false, reason: `its revision ${revision} is not above ${base.max}, already seen on these keys` }
  const written = write(base, ops, revision, op, gate, over)
  if (!written.ok) return written
  let state = { ...written.state, max: revision }
  // What the store says it wrote must be what the contract writes: created, revision, owner, value.
  const entries = (op.output.entries ?? []) as EntryJson[]
  const outPins: Pins = new Map()
  for (const seen of entries) {
    const e = state.keys[seen.key]
    if (!e) return { ok: false, reason: `it returned an entry for ${seen.key}, which it did not write` }
    if (seen.revision !== revision) return { ok: false, reason: `it returned ${seen.key} at revision ${seen.revision}, not the commit's ${revision}` }
    if (canonical(seen.value) !== e.value) return { ok: false, reason: `it returned ${seen.key} with value ${canonical(seen.value)}, but the commit writes ${e.value}` }
    if ((seen.owner ?? null) !== (e.owner ?? null)) return { ok: false, reason: `it returned ${seen.key} owned by ${seen.owner ?? 'nobody'}, but the commit writes owner ${e.owner ?? 'nobody'}` }
    if (!unify(e.created, seen.created, outPins)) {
      return { ok: false, reason: `it returned ${seen.key} with created ${seen.created}, but the contract gives ${showNum(e.created)} (${lifeRule(s, ops, seen.key)})` }
    }
  }
  state = pin(state, outPins)
  const deleted = new Set((op.output.deleted ?? []) as string[])
  for (const o of ops) {
    if (o.type !== 'delete') continue
    const was = s.keys[o.key] !== undefined
    if (was !== deleted.has(o.key)) return { ok: false, reason: `it ${deleted.has(o.key) ? 'reports' : 'does not report'} deleting ${o.key}, which was ${was ? 'live' : 'absent'} here` }
  }
  return { ok: true, states: [state] }
}

/**
 * Applies a commit's ops at `revision` (a number, or a symbol for an unknown
 * outcome); through `gate`, a set at its key is marked, and a take `over` a
 * marked entry is a new life.
 */
function write(s: State, ops: OpJson[], revision: Num, op: Operation, gate?: GateJson, over?: string): { ok: true; state: State } | { ok: false; reason: string } {
  const keys = { ...s.keys }
  for (const o of ops) {
    const existing = keys[o.key]
    if (o.type === 'delete') {
      delete keys[o.key]
      continue
    }
    if (o.type === 'add') {
      const base = existing ? JSON.parse(existing.value) : 0
      if (typeof base !== 'number') return { ok: false, reason: `it adds to ${o.key}, which holds ${existing!.value}, not a number` }
      const value = String(base + o.delta)
      keys[o.key] = existing ? { ...existing, value, rev: revision } : { value, rev: revision, created: revision }
      continue
    }
    const sameLife = existing !== undefined && !o.fresh && o.key !== over && (existing.owner ?? null) === (o.owner ?? null)
    const e: KeyState = { value: canonical(o.value), rev: revision, created: sameLife ? existing.created : revision }
    if (o.owner !== undefined) e.owner = o.owner
    if (gate && o.key === gate.key) e.gate = gate.mode
    else if (sameLife && existing.gate) e.gate = existing.gate
    if (o.ttl !== undefined) {
      e.ttl = o.ttl
      e.lo = op.call
      e.hi = op.ret
    }
    keys[o.key] = e
  }
  return { ok: true, state: { ...s, keys } }
}

function lifeRule(before: State, ops: OpJson[], key: string): string {
  const o = ops.find((o) => o.key === key)
  const e = before.keys[key]
  if (!o || o.type !== 'set') return 'an add keeps the life'
  if (!e) return 'the key was absent: a new life'
  if (o.fresh) return 'fresh: a new life'
  if ((e.owner ?? null) !== (o.owner ?? null)) return `the owner changes from ${e.owner ?? 'nobody'} to ${o.owner ?? 'nobody'}: a new life`
  return 'the same owner keeps the life'
}

/** A canonical string of a state: equal strings, equal futures. */
export function stateKey(s: State): string {
  let out = `${s.max}|${s.dead.join(',')}|`
  for (const k of Object.keys(s.keys).sort()) {
    const e = s.keys[k]!
    out += `${k}=${e.value}@${numKey(e.rev)}/${numKey(e.created)}/${e.owner ?? ''}/${e.ttl ?? ''}/${e.lo ?? ''}/${e.hi ?? ''}/${e.reopen ?? ''}/${e.gate ?? ''};`
  }
  return out + holdsKey(s)
}
const numKey = (n: Num) => (isSym(n) ? `s${n.sym}>${n.gt}` : String(n))

/**
 * A set of states as the search keeps it (Porcupine's power-set reading of
 * a nondeterministic model): distinct states, sorted.
 */
export function canonicalSet(states: State[]): { states: State[]; key: string } {
  const byKey = new Map<string, State>()
  for (const s of states) byKey.set(stateKey(s), s)
  const keys = [...byKey.keys()].sort()
  return { states: keys.map((k) => byKey.get(k)!), key: keys.join('\n') }
}

export function showKey(e: KeyState): string {
  return `${e.value} (revision ${showNum(e.rev)}, created ${showNum(e.created)}${e.owner !== undefined ? `, owner ${e.owner}` : ''}${e.ttl !== undefined ? `, TTL ${e.ttl} ms` : ''})`
}
function showEntry(e: EntryJson): string {
  return `${canonical(e.value)} (revision ${e.revision}, created ${e.created}${e.owner !== undefined ? `, owner ${e.owner}` : ''})`
}
function showCheck(c: CheckJson): string {
  return 'revision' in c ? `${c.key} at revision ${c.revision ?? 'none (absent)'}` : `${c.key} created at ${c.created ?? 'none (absent)'}`
}
