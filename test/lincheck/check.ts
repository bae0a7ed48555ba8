/**
 * The linearizability checker: Wing & Gong's search for an order of the
 * operations that respects real time and the model, with Lowe's
 * just-in-time pruning and memoization (a set of linearized operations and
 * the model's state, seen before, is not searched again), on each partition
 * of the history on its own, as Porcupine does (github.com/anishathalye/porcupine,
 * read for the algorithm; this is its own code).
 *
 * A partition is a set of keys that operations tie together: a commit's
 * checks and ops, so a lock's key with the keys written fenced by it (and
 * its waiters' line). Faults that concern every key (`owner-gone`,
 * `store-restart`) go into every partition.
 *
 * An operation of unknown outcome returns at +infinity: it may take effect
 * at any point after its call, or never (the model follows both).
 *
 * Besides, one check across partitions that the partitioned search cannot
 * see: revisions are store-wide, so an operation invoked after another
 * returned sees or writes a larger revision (tokens never go back, also
 * across a store's restart).
 *
 * @module
 */
import { MODELED, canonicalSet, forgetUnwatched, initialState, keysOf, step, type ModelOptions, type State } from './model'
import { describeOperation } from './describe'
import { pairHistory, type HistoryEvent, type Operation } from './history'

export interface CheckOptions extends ModelOptions {
  /** Steps of the search per partition before it gives up with `unknown`. Default 20 million. */
  maxSteps?: number
  /** Milliseconds of search per partition before it gives up with `unknown`. Default: no limit. */
  maxMs?: number
  /** Memo entries per partition before it gives up with `unknown` (a bound on memory). Default 2 million. */
  maxMemo?: number
  /** Model states the search may hold for one point of an order before it gives up with `unknown`. Default 4 096. */
  maxStates?: number
  /**
   * For a partition undecided within the limits, check its writes alone (its
   * reads and refused commits left out): a weaker check that still decides
   * (`writesOnly` in its result). Default false.
   */
  fallback?: boolean
  /**
   * Real-time margin between processes' clocks for the cross-partition
   * revision check, in ms: B follows A only if B was invoked more than this
   * after A returned. Default: `slack`.
   */
  clockMargin?: number
}

/** Why a partition is not linearizable: the deepest point the search reached. */
export interface Counterexample {
  /** The keys of the partition. */
  keys: string[]
  /** How many operations it has. */
  size: number
  /** The longest order found that the model accepts (its last operations). */
  linearized: Operation[]
  /** Operations that could come next, each with why the model refused it. */
  refused: Array<{ op: Operation; reason: string }>
  /** The operation whose return closed the search: it had to be linearized by then. */
  stuck?: Operation
}

export interface PartitionResult {
  keys: string[]
  size: number
  verdict: 'ok' | 'violation' | 'unknown'
  steps: number
  counterexample?: Counterexample
  /** For an undecided partition with `fallback`: the verdict on its writes alone. */
  writesOnly?: PartitionResult
}

export interface CheckResult {
  verdict: 'ok' | 'violation' | 'unknown'
  partitions: PartitionResult[]
  /** Revision regressions across partitions. */
  regressions: Array<{ earlier: Operation; later: Operation; message: string }>
  operations: number
  unknownOutcome: number
  ms: number
}

/** Checks a history; see the module comment. */
export function checkHistory(history: readonly HistoryEvent[], options: CheckOptions = {}): CheckResult {
  const started = performance.now()
  const { operations, standalone } = pairHistory(history)
  for (const e of standalone) {
    if (e.f === 'owner-gone' || e.f === 'store-restart') {
      const start = (e.value as { start?: number } | null)?.start
      operations.push({ id: operations.length, process: e.process, client: e.client, f: e.f, input: e.value, output: e.value, status: 'ok', call: (start ?? e.time) / 1e6, ret: e.time / 1e6, events: [e] })
    }
  }
  for (const op of operations) if (!MODELED.has(op.f)) throw new Error(`operation ${op.f} (history event ${op.events[0]?.index}) is not one the model knows: ${[...MODELED].join(', ')}`)
  const partitions = partition(operations).map((p) => {
    const r = checkPartition(p.keys, p.ops, options)
    if (r.verdict === 'unknown' && options.fallback) r.writesOnly = checkPartition(p.keys, p.ops.filter((op) => !writesNothing(op)), { ...options, maxSteps: undefined, maxMemo: undefined, maxStates: undefined })
    return r
  })
  const restarts = operations.filter((op) => op.f === 'store-restart')
  const regressions = revisionRegressions(operations, restarts, options.clockMargin ?? options.slack ?? 0)
  const verdict =
    partitions.some((p) => p.verdict === 'violation' || p.writesOnly?.verdict === 'violation') || regressions.length > 0 ? 'violation' : partitions.some((p) => p.verdict === 'unknown') ? 'unknown' : 'ok'
  return { verdict, partitions, regressions, operations: operations.length, unknownOutcome: operations.filter((o) => o.status === 'unknown').length, ms: performance.now() - started }
}

/** Groups operations by the keys they tie together (union-find); global operations join every group. */
export function partition(operations: Operation[]): Array<{ keys: string[]; ops: Operation[] }> {
  const parent = new Map<string, string>()
  const find = (k: string): string => {
    let root = k
    while (parent.get(root) !== root) root = parent.get(root)!
    for (let x = k; x !== root; ) {
      const next = parent.get(x)!
      parent.set(x, root)
      x = next
    }
    return root
  }
  const global: Operation[] = []
  const keyed: Array<[Operation, string[]]> = []
  for (const op of operations) {
    const keys = keysOf(op)
    if (keys.length === 0) {
      global.push(op)
      continue
    }
    for (const k of keys) if (!parent.has(k)) parent.set(k, k)
    for (const k of keys.slice(1)) {
      const a = find(keys[0]!)
      const b = find(k)
      if (a !== b) parent.set(b, a)
    }
    keyed.push([op, keys])
  }
  const groups = new Map<string, { keys: Set<string>; ops: Operation[] }>()
  for (const [op, keys] of keyed) {
    const root = find(keys[0]!)
    let g = groups.get(root)
    if (!g) groups.set(root, (g = { keys: new Set(), ops: [...global] }))
    for (const k of keys) g.keys.add(k)
    g.ops.push(op)
  }
  return [...groups.values()].map((g) => ({ keys: [...g.keys].sort(), ops: g.ops }))
}

/** A read or a refused commit: it changed nothing (an unknown outcome may have). */
const writesNothing = (op: Operation) => op.status !== 'unknown' && (op.f === 'get' || (op.f === 'commit' && op.status === 'fail'))

interface Node {
  op: Operation | undefined
  /** For a call: its return node. */
  match: Node | undefined
  prev: Node | undefined
  next: Node | undefined
}

/** The search on one partition (Porcupine's `checkSingle`, on a set of model states). */
export function checkPartition(keys: string[], ops: Operation[], options: CheckOptions = {}): PartitionResult {
  const n = ops.length
  const maxSteps = options.maxSteps ?? 20_000_000
  const maxMemo = options.maxMemo ?? 2_000_000
  const maxStates = options.maxStates ?? 4_096
  const deadline = performance.now() + (options.maxMs ?? Infinity)
  // Calls and returns in time order, calls first at equal times (intervals are closed); unknown returns last.
  const events: Array<{ op: Operation; call: boolean; time: number; local: number }> = []
  ops.forEach((op, local) => {
    events.push({ op, call: true, time: op.call, local })
    events.push({ op, call: false, time: op.ret, local })
  })
  events.sort((a, b) => a.time - b.time || (a.call === b.call ? a.local - b.local : a.call ? -1 : 1))
  const head: Node = { op: undefined, match: undefined, prev: undefined, next: undefined }
  /** Each operation's call node. */
  const returns = new Map<Operation, Node>()
  let tail = head
  for (const e of events) {
    const node: Node = { op: e.op, match: undefined, prev: tail, next: undefined }
    if (e.call) returns.set(e.op, node) // placeholder, fixed below
    tail.next = node
    tail = node
    if (!e.call) returns.get(e.op)!.match = node
  }
  const local = new Map(ops.map((op, i) => [op, i]))
  // How many operations not yet linearized touch each key: a gone owner's entry at a key none of them touches can
  // change no verdict, so the states forget it (else each such entry, alive or ended, doubles the state sets for good).
  const touches = ops.map(keysOf)
  const pending = new Map<string, number>()
  const count = (i: number, by: number) => {
    for (const key of touches[i]!) pending.set(key, (pending.get(key) ?? 0) + by)
  }
  ops.forEach((_, i) => count(i, 1))
  const watched = (key: string) => (pending.get(key) ?? 0) > 0

  const lift = (call: Node) => {
    call.prev!.next = call.next
    if (call.next) call.next.prev = call.prev
    const ret = call.match!
    ret.prev!.next = ret.next
    if (ret.next) ret.next.prev = ret.prev
  }
  const unlift = (call: Node) => {
    const ret = call.match!
    ret.prev!.next = ret
    if (ret.next) ret.next.prev = ret
    call.prev!.next = call
    if (call.next) call.next.prev = call
  }

  // Lowe's memo: linearized set (bitset + a Zobrist hash of it) and the model's states.
  const words = Math.ceil(n / 32)
  const bits = new Uint32Array(words)
  const zobrist = new Uint32Array(2 * n)
  let seed = 0x9e3779b9
  for (let i = 0; i < zobrist.length; i++) {
    seed = (seed + 0x6d2b79f5) >>> 0
    let t = Math.imul(seed ^ (seed >>> 15), seed | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    zobrist[i] = (t ^ (t >>> 14)) >>> 0
  }
  let h1 = 0
  let h2 = 0
  // Keyed by the linearized set's hash and a 64-bit hash of the states (their text can be kilobytes);
  // the set itself is compared exactly. Two different state sets with one 64-bit hash would prune a
  // path never searched: with a few million entries, a chance of about 1 in 10^6.
  const cache = new Map<string, Uint32Array[]>()
  let memo = 0
  const flip = (i: number) => {
    bits[i >>> 5]! ^= 1 << (i & 31)
    h1 ^= zobrist[2 * i]!
    h2 ^= zobrist[2 * i + 1]!
  }
  const seen = (key: string): boolean => {
    const k = `${h1}.${h2}.${hash32(key, 0x811c9dc5)}.${hash32(key, 0x01000193)}`
    const bucket = cache.get(k)
    if (bucket) {
      for (const b of bucket) if (b.every((w, i) => w === bits[i])) return true
      bucket.push(bits.slice())
    } else cache.set(k, [bits.slice()])
    memo++
    return false
  }

  // A frame is `forced` when its operation writes nothing (a read, a refused commit) and changed no
  // state here (every possible state agrees with it): placed as soon as it fits, it needs no other
  // place. Placing it later cannot help any other operation (the state is the same), and every
  // operation that had to precede it already does; so the way back skips it. Not so a write that
  // happened to change nothing here (an unknown delete of a key absent now): later, it may (run 69).
  const stack: Array<{ node: Node; states: State[]; key: string; forced: boolean }> = []
  let states: State[] = [initialState()]
  let statesKey = canonicalSet(states).key
  let entry = head.next
  let steps = 0
  // For the report: the deepest point reached, and why each candidate there was refused.
  let deepest = -1
  let refusedHere = new Map<Operation, string>()
  let counterexample: Counterexample | undefined

  while (head.next !== undefined) {
    if (++steps > maxSteps || memo > maxMemo || ((steps & 0xfff) === 0 && performance.now() > deadline)) return { keys, size: n, verdict: 'unknown', steps, counterexample }
    const node = entry!
    if (node.match !== undefined) {
      const op = node.op!
      const next: State[] = []
      let reason = ''
      for (const s of states) {
        const r = step(s, op, options)
        if (r.ok) for (const t of r.states) next.push(t)
        else reason ||= r.reason
      }
      if (next.length > 0) {
        const i = local.get(op)!
        flip(i)
        count(i, -1)
        const set = canonicalSet(next.map((t) => forgetUnwatched(t, watched)))
        if (set.states.length > maxStates) return { keys, size: n, verdict: 'unknown', steps, counterexample }
        if (!seen(set.key)) {
          stack.push({ node, states, key: statesKey, forced: set.key === statesKey && writesNothing(op) })
          states = set.states
          statesKey = set.key
          lift(node)
          refusedHere = new Map()
          entry = head.next
        } else {
          flip(i)
          count(i, 1)
          entry = node.next
        }
      } else {
        refusedHere.set(op, reason)
        entry = node.next
      }
    } else {
      // The return of an operation not yet linearized: nothing before it fits here; step back.
      if (stack.length >= deepest) {
        deepest = stack.length
        counterexample = {
          keys,
          size: n,
          linearized: stack.map((s) => s.node.op!),
          refused: [...refusedHere].map(([op, reason]) => ({ op, reason })),
          stuck: node.op,
        }
      }
      let top = stack.pop()
      while (top?.forced) {
        flip(local.get(top.node.op!)!)
        count(local.get(top.node.op!)!, 1)
        unlift(top.node)
        top = stack.pop()
      }
      if (!top) return { keys, size: n, verdict: 'violation', steps, counterexample }
      states = top.states
      statesKey = top.key
      flip(local.get(top.node.op!)!)
      count(local.get(top.node.op!)!, 1)
      unlift(top.node)
      refusedHere = new Map()
      entry = top.node.next
    }
  }
  return { keys, size: n, verdict: 'ok', steps }
}

/** A 32-bit FNV-1a-style hash of a string, from `seed`. */
function hash32(s: string, seed: number): number {
  let h = seed >>> 0
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0
  return h
}

/**
 * Revisions are store-wide and rise: what an operation writes or sees is
 * above everything an operation that returned before its call wrote or saw
 * (a restarted store included: it starts above what its clients have seen).
 */
function revisionRegressions(operations: Operation[], restarts: Operation[], margin: number): CheckResult['regressions'] {
  // A lock-family grant's token is the revision of the commit that granted it.
  const grants = (op: Operation) => op.f === 'commit' || op.f === 'lock-acquire' || op.f === 'permit-acquire'
  const seenBy = (op: Operation): number | undefined => {
    if (op.status !== 'ok') return undefined
    if (op.f === 'commit') return op.output?.revision
    if (op.f === 'get') return op.output?.entry?.revision
    if (grants(op)) return op.output?.token
    return undefined
  }
  const written = operations.filter((op) => grants(op) && op.status === 'ok')
  const observed = operations.filter((op) => seenBy(op) !== undefined)
  const byReturn = [...observed].sort((a, b) => a.ret - b.ret)
  const byCall = [...written].sort((a, b) => a.call - b.call)
  const out: CheckResult['regressions'] = []
  const check = (ops: Operation[], returned: Operation[]) => {
    let i = 0
    let best: Operation | undefined
    for (const op of ops) {
      while (i < returned.length && returned[i]!.ret + margin < op.call) {
        const c = returned[i++]!
        if (!best || seenBy(c)! > seenBy(best)!) best = c
      }
      if (best && seenBy(op)! <= seenBy(best)!) {
        out.push({ earlier: best, later: op, message: `${describeOperation(op)} got revision ${seenBy(op)}, invoked after ${describeOperation(best)} had returned revision ${seenBy(best)}` })
      }
    }
  }
  if (restarts.length === 0) check(byCall, byReturn)
  else {
    // A store that lost its state starts above what each client saw, not above what all saw: per client only.
    const clients = new Set(operations.map((o) => o.client))
    for (const c of clients) check(byCall.filter((o) => o.client === c), byReturn.filter((o) => o.client === c))
  }
  return out
}

/** A readable verdict: on a violation, the smallest failing partition and the operations involved. */
export function formatResult(result: CheckResult, limit = 12): string {
  const lines: string[] = []
  const failing = result.partitions.filter((p) => p.verdict === 'violation').sort((a, b) => a.size - b.size)
  const unknown = result.partitions.filter((p) => p.verdict === 'unknown')
  lines.push(
    `${result.verdict === 'ok' ? 'linearizable' : result.verdict === 'violation' ? 'NOT linearizable' : 'undecided'}: ${result.operations} operations (${result.unknownOutcome} of unknown outcome) in ${result.partitions.length} partitions, ${Math.round(result.ms)} ms`,
  )
  for (const r of result.regressions.slice(0, limit)) lines.push(`revision regression: ${r.message}`)
  if (failing.length > 0) {
    lines.push(`${failing.length} partition(s) not linearizable; the smallest: keys ${failing[0]!.keys.join(', ')} (${failing[0]!.size} operations)`)
    const c = failing[0]!.counterexample
    if (c) {
      const tail = c.linearized.slice(-limit)
      lines.push(`  the longest order the model accepts (${c.linearized.length} operations${tail.length < c.linearized.length ? `, the last ${tail.length}` : ''}):`)
      for (const op of tail) lines.push(`    ${describeOperation(op)}`)
      lines.push('  then no operation can come next:')
      for (const { op, reason } of c.refused.slice(0, limit)) lines.push(`    ${describeOperation(op)}\n      refused: ${reason}`)
      if (c.stuck && !c.refused.some((r) => r.op === c.stuck)) lines.push(`  and ${describeOperation(c.stuck)} had returned by then`)
    }
  }
  for (const p of unknown) {
    const fb = p.writesOnly ? `; its writes alone (reads and refused commits left out): ${p.writesOnly.verdict === 'ok' ? 'linearizable' : p.writesOnly.verdict === 'violation' ? 'NOT linearizable' : 'undecided'}` : ''
    lines.push(`undecided within the search's limits: keys ${p.keys.slice(0, 6).join(', ')}${p.keys.length > 6 ? `, … (${p.keys.length})` : ''} (${p.size} operations, ${p.steps} steps)${fb}`)
  }
  const fallbackFailed = unknown.find((p) => p.writesOnly?.verdict === 'violation')?.writesOnly?.counterexample
  if (fallbackFailed) {
    lines.push('  its writes alone, the longest order the model accepts, then:')
    for (const { op, reason } of fallbackFailed.refused.slice(0, limit)) lines.push(`    ${describeOperation(op)}\n      refused: ${reason}`)
  }
  return lines.join('\n')
}
