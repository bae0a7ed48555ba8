/**
 * Entries and events as SQL rows hold them (the node's `--data` file and the
 * `file://` store): the columns, and the checked way back to an entry or a
 * watch event. A value is JSON text; `owner` and `ttl` are NULL when absent.
 *
 * @module
 */
import type { Value, WatchEvent } from '../../core/contract/adapter'
import { InternalError } from '../../core/contract/errors'
import { checkKey, checkValue } from '../../core/contract/validate'
import type { Stored } from './write'

/** An entry as `zaris_entries` and a put event hold it. */
export interface Row {
  key: string
  value: string
  revision: number
  created: number
  owner: string | null
  ttl: number | null
}

/** An event as `zaris_events` holds it. */
export interface EventRow {
  revision: number
  type: string
  key: string
  value: string | null
  created: number | null
  owner: string | null
  ttl: number | null
}

/**
 * The stored entry a row (or a put event) holds, checked as a commit's input
 * is: a row that is not (a damaged file, or one written by hand) fails the
 * load with an error naming where it is (`where`: the file, the namespace
 * and what the row is) and its key, rather than a bare JSON error or a store
 * that serves it.
 */
export function fromRow(r: Row, where: string): Stored {
  try {
    checkKey(r.key)
    let value: Value
    try {
      value = JSON.parse(r.value) as Value
    } catch {
      throw new Error('its value is not JSON')
    }
    checkValue(value)
    const revisionOk = (n: unknown) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 1
    if (!revisionOk(r.revision) || !revisionOk(r.created) || r.created > r.revision) throw new Error(`its revision (${r.revision}) and created (${r.created}) are not revisions`)
    if (r.owner !== null && (typeof r.owner !== 'string' || r.owner === '')) throw new Error('its owner is not a string')
    if (r.ttl !== null && !(typeof r.ttl === 'number' && r.ttl > 0)) throw new Error('its ttl is not a positive number')
    const e: Stored = { key: r.key, value, revision: r.revision, created: r.created }
    if (r.owner !== null) e.owner = r.owner
    if (r.ttl !== null) e.ttl = r.ttl
    return e
  } catch (err) {
    const key = typeof r.key === 'string' ? JSON.stringify(r.key.slice(0, 200)) : String(r.key)
    throw new InternalError(`the SQLite file is damaged: ${where} key ${key}: ${(err as Error).message}; restore it from a backup, or delete that row`)
  }
}

/** Where a row of `namespace` in `file` is, for {@link fromRow}'s error: `what` names the row (an entry, an event of revision N). */
export function rowPlace(file: string, namespace: string, what: string): string {
  return `${file}: namespace ${JSON.stringify(namespace)}, ${what}`
}

/** The watch event an event row holds. */
export function toEvent(row: EventRow): WatchEvent {
  if (row.type !== 'put') return { type: row.type as 'delete' | 'expire', key: row.key, revision: row.revision }
  const ev: WatchEvent = { type: 'put', key: row.key, revision: row.revision, value: JSON.parse(row.value!) as Value, created: row.created! }
  if (row.owner !== null) ev.owner = row.owner
  if (row.ttl !== null) ev.ttl = row.ttl
  return ev
}
