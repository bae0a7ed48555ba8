/**
 * How zaris data is held in Postgres and read back: keys as UTF-16
 * big-endian bytes (their byte order is the contract's UTF-16 code unit
 * order, and bytea holds any key, U+0000 included), owners and request ids
 * as UTF-8 bytes, values as JSON text, deadlines as ms since the epoch on
 * Postgres's clock.
 *
 * @module
 */
import type { Entry, Value, WatchEvent } from '../../core/contract/adapter'
import { InternalError } from '../../core/contract/errors'

/** A key (or prefix) as the `k` column holds it. */
export function keyBytes(key: string): Buffer {
  return Buffer.from(key, 'utf16le').swap16()
}

/** The key a `k` column holds. */
export function keyOf(bytes: Buffer): string {
  return Buffer.from(bytes).swap16().toString('utf16le')
}

/** Owner ids and request ids as the columns hold them. */
export function utf8(s: string): Buffer {
  return Buffer.from(s, 'utf8')
}

/**
 * The bytes just past every key that starts with `prefix`: the smallest
 * byte string greater than all of them (null when there is none: every
 * byte 0xff, or an empty prefix).
 */
export function prefixEnd(prefix: Buffer): Buffer | null {
  for (let i = prefix.length - 1; i >= 0; i--) {
    if (prefix[i]! < 0xff) {
      const end = Buffer.from(prefix.subarray(0, i + 1))
      end[i] = end[i]! + 1
      return end
    }
  }
  return null
}

/** A bytea that came back inside a JSON answer (`\x...`). */
export function hexBytes(json: unknown): Buffer {
  return Buffer.from(String(json).slice(2), 'hex')
}

/** An entry as a failure answer shows it: `[value, revision, created, owner, deadline]`. */
export type ShownEntry = [string, number, number, string | null, number | null]

/** The entry at `key` from its shown form, its ttl counted from `now`. */
export function shownEntry(key: string, shown: ShownEntry, now: number): Entry {
  const [value, revision, created, owner, deadline] = shown
  const entry: Entry = { key, value: parseValue(key, value), revision: Number(revision), created: Number(created) }
  if (owner !== null) entry.owner = hexBytes(owner).toString('utf8')
  if (deadline !== null) entry.ttl = Math.max(0, deadline - now)
  return entry
}

/** An entry row as the adapter selects it (`k`, `value`, `revision`, `created`, `owner`, `left`: ms to the deadline). */
export interface EntryRow {
  k: Buffer
  value: string
  revision: string
  created: string
  owner: Buffer | null
  left: number | null
}

/** The columns of {@link EntryRow}, from the `entries` table. */
export const ENTRY_COLUMNS = `k, value, revision, created, owner, extract(epoch FROM expires_at - clock_timestamp()) * 1000 AS "left"`

export function rowEntry(row: EntryRow): Entry {
  const key = keyOf(row.k)
  const entry: Entry = { key, value: parseValue(key, row.value), revision: Number(row.revision), created: Number(row.created) }
  if (row.owner !== null) entry.owner = row.owner.toString('utf8')
  if (row.left !== null) entry.ttl = Math.max(0, Number(row.left))
  return entry
}

/** An event row as the log holds it. */
export interface EventRow {
  revision: string
  seq: number
  type: string
  k: Buffer
  value: string | null
  created: string | null
  owner: Buffer | null
  ttl: number | null
}

/** The event a log row records. */
export function rowEvent(row: EventRow): WatchEvent {
  const key = keyOf(row.k)
  const revision = Number(row.revision)
  if (row.type === 'd') return { type: 'delete', key, revision }
  if (row.type === 'e') return { type: 'expire', key, revision }
  const ev: WatchEvent = { type: 'put', key, revision, value: parseValue(key, row.value ?? 'null'), created: Number(row.created) }
  if (row.owner !== null) ev.owner = row.owner.toString('utf8')
  if (row.ttl !== null) ev.ttl = row.ttl
  return ev
}

/** A stored value; text that is not JSON means the table was written by something else. */
export function parseValue(key: string, text: string): Value {
  try {
    return JSON.parse(text) as Value
  } catch {
    throw new InternalError(`the value stored at ${JSON.stringify(key)} is not JSON: the zaris tables were written by something else`)
  }
}
