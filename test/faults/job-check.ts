/**
 * The judgement of a fleet run of a scheduled job (jobs.test.ts): what the
 * instances recorded (job-worker.ts) and what the store's slot records say
 * at the end, against issue 35's promise — every slot ran exactly once, or
 * is recorded as failed and retried once; never two runs of a slot at once;
 * each run's writes fenced. Checked, per slot:
 *
 * - `unsettled`: a slot some instance fired has no record, or one that
 *   still says `started` once every instance has stopped;
 * - `attempts`: more runs (tokens) than 1 + retries, or a record whose
 *   attempt is past that;
 * - `retry-without-failure`: a second run although the first neither was
 *   killed nor reported `failed`;
 * - `ran-twice`: more than one call resolved `ran`, or the one that did is
 *   not the run the record names;
 * - `done-incomplete`: the record says done, but that run's writes were
 *   not all accepted;
 * - `interleaved`: an accepted write of a run after an accepted write of a
 *   later run (by store revision) — the fence failed;
 * - `overlap`: an accepted write of a run sent after a later run of the
 *   slot had started (the later run's start was committed before it began,
 *   so a fenced write sent after must be refused: measured on the clock
 *   every process shares, with no allowance needed);
 * - `foreign-write`: an accepted write whose token is no run of its slot.
 */
import type { JobRecord } from 'zaris'
import type { HistoryRecord, NoteRecord, WriteRecord } from './checker'

/** One process of the run: its records, and when it was killed (shared clock), if it was. */
export interface Instance {
  name: string
  records: HistoryRecord[]
  killedAt?: number
}

export interface FleetCheckInput {
  instances: Instance[]
  /** The slot records read after every instance stopped. */
  finals: Map<string, JobRecord | undefined>
  /** Fenced writes per run. */
  writes: number
  retries: number
}

export interface FleetStats {
  slots: number
  runs: number
  retried: number
  failedSlots: number
  killedMidRun: number
  results: Record<string, number>
}

export interface FleetVerdict {
  violations: string[]
  stats: FleetStats
}

interface Run {
  token: number
  instance: Instance
  startedAt: number
  accepted: WriteRecord[]
}

const notes = (i: Instance, text: string) => i.records.filter((r): r is NoteRecord => r.type === 'note' && r.text === text)

/** Every slot fired, with its runs by token and the results its calls resolved. */
function collect(instances: Instance[]) {
  const fired = new Set<string>()
  const runs = new Map<string, Map<number, Run>>()
  const results = new Map<string, NoteRecord[]>()
  const writes = new Map<string, WriteRecord[]>()
  for (const i of instances) {
    for (const n of notes(i, 'job-fire')) fired.add(n.slot as string)
    for (const n of notes(i, 'job-run')) {
      const bySlot = runs.get(n.slot as string) ?? new Map<number, Run>()
      runs.set(n.slot as string, bySlot)
      bySlot.set(n.token as number, { token: n.token as number, instance: i, startedAt: n.at, accepted: [] })
    }
    for (const n of notes(i, 'job-result')) results.set(n.slot as string, [...(results.get(n.slot as string) ?? []), n])
    for (const w of i.records) {
      if (w.type === 'write' && w.outcome === 'accepted' && w.lock) writes.set(w.lock, [...(writes.get(w.lock) ?? []), w])
    }
  }
  return { fired, runs, results, writes }
}

/** Judges a fleet run; see the module doc. */
export function checkFleet(input: FleetCheckInput, job: string): FleetVerdict {
  const { fired, runs, results, writes } = collect(input.instances)
  const violations: string[] = []
  const stats: FleetStats = { slots: fired.size, runs: 0, retried: 0, failedSlots: 0, killedMidRun: 0, results: {} }
  const bad = (slot: string, kind: string, what: string) => violations.push(`${kind}: slot ${slot}: ${what}`)
  for (const slot of [...fired].sort()) {
    const record = input.finals.get(slot)
    const slotRuns = [...(runs.get(slot)?.values() ?? [])].sort((a, b) => a.token - b.token)
    const slotResults = results.get(slot) ?? []
    const accepted = (writes.get(`${job}@${slot}`) ?? []).sort((a, b) => a.revision! - b.revision!)
    for (const run of slotRuns) run.accepted = accepted.filter((w) => w.token === run.token)
    for (const r of slotResults) stats.results[r.status as string] = (stats.results[r.status as string] ?? 0) + 1
    stats.runs += slotRuns.length
    if (slotRuns.length > 1) stats.retried++
    if (record?.state === 'failed') stats.failedSlots++
    if (!record || record.state === 'started') {
      // What each call of the slot resolved, and which runs' instances were killed: what to look at next.
      const calls = slotResults.map((r) => `${r.client}: ${r.status}${r.state ? ` ${r.state}` : ''}${r.by ? ` by ${r.by}` : ''}${r.token ? ` (${r.token})` : ''} at ${r.at.toFixed(0)}`)
      const killed = slotRuns.filter((r) => r.instance.killedAt !== undefined).map((r) => `run ${r.token} started ${r.startedAt.toFixed(0)}, killed ${r.instance.killedAt!.toFixed(0)}`)
      bad(slot, 'unsettled', `record ${JSON.stringify(record)} after every instance stopped; calls: ${calls.join('; ') || 'none'}; ${killed.join('; ') || 'no run killed'}`)
    }
    if (slotRuns.length > 1 + input.retries || (record && record.attempt > 1 + input.retries)) {
      bad(slot, 'attempts', `${slotRuns.length} runs (tokens ${slotRuns.map((r) => r.token).join(', ')}), record attempt ${record?.attempt}`)
    }
    const ended = (run: Run) => run.instance.killedAt !== undefined || slotResults.some((r) => r.status === 'failed' && r.token === run.token)
    slotRuns.slice(0, -1).forEach((run, k) => {
      const next = slotRuns[k + 1]!
      if (run.instance.killedAt !== undefined) stats.killedMidRun++
      if (!ended(run)) bad(slot, 'retry-without-failure', `run ${run.token} was followed by run ${next.token} though it was neither killed nor reported failed`)
      for (const w of run.accepted.filter((x) => x.invokedAt > next.startedAt)) {
        bad(slot, 'overlap', `run ${run.token}'s write sent ${(w.invokedAt - next.startedAt).toFixed(1)} ms after run ${next.token} started was accepted (revision ${w.revision})`)
      }
    })
    const ran = slotResults.filter((r) => r.status === 'ran')
    if (ran.length > 1 || (ran.length === 1 && record && ran[0]!.token !== record.token)) {
      bad(slot, 'ran-twice', `${ran.length} calls resolved ran (tokens ${ran.map((r) => r.token).join(', ')}), record ${JSON.stringify(record)}`)
    }
    if (record?.state === 'done' && accepted.filter((w) => w.token === record.token).length !== input.writes) {
      bad(slot, 'done-incomplete', `the record says run ${record.token} is done, with ${accepted.filter((w) => w.token === record.token).length} of ${input.writes} writes accepted`)
    }
    accepted.forEach((w, k) => {
      if (!slotRuns.some((r) => r.token === w.token)) bad(slot, 'foreign-write', `a write with token ${w.token} accepted at revision ${w.revision}, no run of the slot`)
      if (k > 0 && w.token! < accepted[k - 1]!.token!) bad(slot, 'interleaved', `run ${w.token} wrote at revision ${w.revision} after run ${accepted[k - 1]!.token} at ${accepted[k - 1]!.revision}`)
    })
  }
  return { violations, stats }
}
