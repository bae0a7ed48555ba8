/**
 * What a watcher should have seen of a set of commits, and what it missed:
 * the suite's watch-under-load case says which events were lost, doubled or
 * out of order instead of timing out. Nothing here is Node-only.
 */
import type { CommitResult, WatchEvent } from 'zaris'

/** One event as the comparison sees it. */
export interface Seen {
  type: WatchEvent['type']
  key: string
  revision: number
}

/** The events the answered commits `results` made under `prefix`, in revision order. */
export function expectedEvents(results: CommitResult[], prefix: string): Seen[] {
  const out: Seen[] = []
  for (const r of results) {
    if (!r.ok) continue
    for (const e of r.entries) if (e.key.startsWith(prefix)) out.push({ type: 'put', key: e.key, revision: r.revision })
    for (const key of r.deleted) if (key.startsWith(prefix)) out.push({ type: 'delete', key, revision: r.revision })
  }
  return out.sort((a, b) => a.revision - b.revision || (a.key < b.key ? -1 : 1))
}

const name = (e: Seen) => `${e.type} ${e.key} at revision ${e.revision}`

/** The first few of `list`, and how many more. */
function some(list: Seen[]): string {
  const shown = list.slice(0, 5).map(name).join(', ')
  return list.length > 5 ? `${shown} and ${list.length - 5} more` : shown
}

/**
 * Compares what a watcher got with what it should have seen:
 * `none lost, doubled or out of order`, or each problem with the events
 * it concerns.
 */
export function describeLoss(expected: Seen[], got: WatchEvent[]): string {
  const want = new Map<string, Seen>()
  for (const e of expected) want.set(name(e), e)
  const counts = new Map<string, number>()
  const problems: string[] = []
  for (const e of got) counts.set(name(e), (counts.get(name(e)) ?? 0) + 1)
  const lost = expected.filter((e) => !counts.has(name(e)))
  if (lost.length > 0) problems.push(`lost ${lost.length} of ${expected.length} events: ${some(lost)}`)
  const doubled = [...counts].filter(([, n]) => n > 1).map(([k]) => want.get(k) ?? got.find((e) => name(e) === k)!)
  if (doubled.length > 0) problems.push(`delivered ${doubled.length} events more than once: ${some(doubled)}`)
  const extra = got.filter((e) => !want.has(name(e)))
  if (extra.length > 0) problems.push(`delivered ${extra.length} events no commit made: ${some(extra)}`)
  const back = got.findIndex((e, i) => i > 0 && e.revision < got[i - 1]!.revision)
  if (back > 0) problems.push(`out of revision order: ${name(got[back]!)} after ${name(got[back - 1]!)}`)
  if (problems.length === 0) return 'none lost, doubled or out of order'
  return `${problems.join('; ')} (the watcher got ${got.length} events, up to revision ${got.at(-1)?.revision ?? 'none'})`
}
