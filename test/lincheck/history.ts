/**
 * Histories in the Jepsen/elle shape: one event per line (or a JSON array),
 * `{ process, type, f, value, time }`, where `type` is `invoke` for a call
 * and `ok` / `fail` / `info` for its completion (`info`: the outcome is
 * unknown: a timeout, a lost answer, a crash). `time` is in nanoseconds, as
 * Jepsen writes it; `process` is an integer, one operation at a time each
 * (a client with operations in flight at once records them under several
 * processes). Events a process reports without an invocation (`info` with
 * an `f` of {@link STANDALONE}) are observations or faults, as Jepsen's
 * nemesis records are: watch deliveries, an owner known dead, a store that
 * lost its state.
 *
 * The operations are those of the adapter contract (../../../shared/DESIGN.md):
 *
 * - `get`: invoke `{ key }`, ok `{ entry }` (`null` when absent).
 * - `commit`: invoke `{ checks, ops }`, ok `{ revision, entries, deleted }`,
 *   fail `{ failed: [{ key, entry }] }` (the checks that did not hold, with
 *   the entry each saw), or fail `{ error }` for a refusal that proves the
 *   commit was not applied (bad input).
 *
 * A lock's grant, renewal and release and a fenced write are commits of a
 * known shape; test/lincheck/describe.ts names them in reports.
 *
 * Histories recorded at the client API (test/lincheck/family-recorder.ts)
 * hold the lock family's operations instead: `lock-acquire`,
 * `permit-acquire` and the release, renewal and fenced write of their holds
 * (family.ts has their shapes).
 *
 * Written so that a JVM elsewhere (Knossos, elle) can read the same files:
 * plain JSON, integer processes and nanosecond times.
 *
 * @module
 */

/** A process id; `nemesis` for faults that belong to no client (Jepsen's convention). */
export type ProcessId = number | 'nemesis'

/** One line of a history. */
export interface HistoryEvent {
  process: ProcessId
  type: 'invoke' | 'ok' | 'fail' | 'info'
  f: string
  value: unknown
  /** Nanoseconds on a clock every recorder of the history shares. */
  time: number
  /** The zaris client id behind the process, for reports. */
  client?: string
  /** Position in the history, added when read if absent. */
  index?: number
  /** What the client was doing, for checks outside the model (test/model). */
  tag?: string
}

/** `info` events that are complete on their own (no invocation). */
export const STANDALONE = new Set([
  'watch-start',
  'watch-event',
  'watch-end',
  'owner-gone',
  'store-restart',
  // The fault suite's observations (test/faults/checker.ts), kept beside the operations.
  'acquire',
  'write',
  'loss',
  'release',
  'pause',
  'final',
  'note',
  'unhandled',
])

/** Entries and checks as the adapter contract has them (a copy, so the checker imports nothing from src/). */
export interface EntryJson {
  key: string
  value: unknown
  revision: number
  created: number
  owner?: string
  ttl?: number
}
export type CheckJson = { key: string; revision: number | null } | { key: string; created: number | null }
export type OpJson =
  | { type: 'set'; key: string; value: unknown; ttl?: number; owner?: string; fresh?: boolean }
  | { type: 'delete'; key: string }
  | { type: 'add'; key: string; delta: number }

/**
 * One operation: an invocation paired with its completion. `ret` is
 * `Infinity` when the outcome is unknown (Porcupine's treatment: the
 * operation may take effect at any point after its call, or never).
 */
export interface Operation {
  /** Index in the partition-independent list of operations. */
  id: number
  process: ProcessId
  client?: string
  f: string
  input: any
  /** `undefined` when the outcome is unknown. */
  output: any
  status: 'ok' | 'fail' | 'unknown'
  /** Call and return, in ms (the history's ns / 1e6). */
  call: number
  ret: number
  /** The history events it came from. */
  events: HistoryEvent[]
}

/** Reads a history file's text: a JSON array of events or one event per line (a cut last line is skipped). */
export function parseHistory(text: string): HistoryEvent[] {
  const trimmed = text.trimStart()
  let events: HistoryEvent[]
  if (trimmed.startsWith('[')) events = JSON.parse(trimmed) as HistoryEvent[]
  else {
    events = []
    const lines = text.split('\n')
    lines.forEach((line, i) => {
      if (line.trim() === '') return
      try {
        events.push(JSON.parse(line) as HistoryEvent)
      } catch (err) {
        // The last line of a process killed mid-write is expected; anything else is a broken file.
        if (lines.slice(i + 1).some((l) => l.trim() !== '')) throw new Error(`history line ${i + 1} is not JSON: ${(err as Error).message}`)
      }
    })
  }
  events.forEach((e, i) => {
    if (typeof e !== 'object' || e === null) throw new Error(`history event ${i} is not an object`)
    if (!['invoke', 'ok', 'fail', 'info'].includes(e.type)) throw new Error(`history event ${i}: type must be invoke, ok, fail or info, got ${JSON.stringify(e.type)}`)
    if (typeof e.f !== 'string') throw new Error(`history event ${i}: f must be a string`)
    if (typeof e.time !== 'number' || !Number.isFinite(e.time)) throw new Error(`history event ${i}: time must be a number of nanoseconds`)
    if (typeof e.process !== 'number' && e.process !== 'nemesis') throw new Error(`history event ${i}: process must be an integer or "nemesis"`)
    e.index ??= i
  })
  return events
}

/** One event per line, as the recorders write. */
export function formatHistory(events: readonly HistoryEvent[]): string {
  return events.map((e) => JSON.stringify(e)).join('\n') + '\n'
}

/** The operations of a history and its standalone events, events sorted by time (stable). */
export interface PairedHistory {
  operations: Operation[]
  standalone: HistoryEvent[]
}

/**
 * Pairs each invocation with the next completion of its process. An
 * invocation never completed (the history ended, or the process was killed)
 * is an operation of unknown outcome, as an `info` completion is.
 */
export function pairHistory(history: readonly HistoryEvent[]): PairedHistory {
  const events = history.map((e, i) => ({ e, i })).sort((a, b) => a.e.time - b.e.time || a.i - b.i).map((x) => x.e)
  const open = new Map<ProcessId, { invoke: HistoryEvent; id: number }>()
  const operations: Operation[] = []
  const standalone: HistoryEvent[] = []
  const unknown = (invoke: HistoryEvent, id: number, completion?: HistoryEvent): Operation => ({
    id,
    process: invoke.process,
    client: invoke.client,
    f: invoke.f,
    input: invoke.value,
    output: completion?.value,
    status: 'unknown',
    call: invoke.time / 1e6,
    ret: Infinity,
    events: completion ? [invoke, completion] : [invoke],
  })
  for (const e of events) {
    if (e.type === 'invoke') {
      const pending = open.get(e.process)
      if (pending) operations[pending.id] = unknown(pending.invoke, pending.id)
      const id = operations.length
      operations.push(undefined as unknown as Operation) // filled on completion
      open.set(e.process, { invoke: e, id })
      continue
    }
    if (e.type === 'info' && STANDALONE.has(e.f)) {
      standalone.push(e)
      continue
    }
    const pending = open.get(e.process)
    if (!pending) throw new Error(`history event ${e.index}: a completion (${e.type} ${e.f}) of process ${e.process} without an invocation`)
    open.delete(e.process)
    if (pending.invoke.f !== e.f) throw new Error(`history event ${e.index}: process ${e.process} completes ${e.f} but invoked ${pending.invoke.f}`)
    if (e.type === 'info') {
      operations[pending.id] = unknown(pending.invoke, pending.id, e)
      continue
    }
    operations[pending.id] = {
      id: pending.id,
      process: e.process,
      client: pending.invoke.client ?? e.client,
      f: e.f,
      input: pending.invoke.value,
      output: e.value,
      status: e.type,
      call: pending.invoke.time / 1e6,
      ret: e.time / 1e6,
      events: [pending.invoke, e],
    }
  }
  for (const { invoke, id } of open.values()) operations[id] = unknown(invoke, id)
  return { operations, standalone }
}

/** JSON with sorted object keys: equal values give equal strings. */
export function canonical(value: unknown): string {
  if (value === undefined) return 'undefined'
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  const o = value as Record<string, unknown>
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
    .join(',')}}`
}
