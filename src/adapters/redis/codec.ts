/**
 * How the Redis adapter lays a namespace out in Redis and reads it back:
 * key names, the stored form of an entry, and log entries as watch events.
 * The layout itself is described in `scripts.ts`.
 *
 * @module
 */
import type { Entry, Value, WatchEvent } from '../../core/contract/adapter'

/** The Redis keys of one namespace, in the order the scripts take them. */
export function namespaceKeys(namespace: string): string[] {
  // The hash tag puts every key of a namespace in one Cluster slot.
  const base = `zaris:{${namespace}}:`
  return ['rev', 'data', 'idx', 'exp', 'log', 'req', 'reqt', 'park', 'pkey'].map((k) => base + k)
}

/** The log key (the stream) among {@link namespaceKeys}. */
export const LOG_KEY_INDEX = 4

/**
 * Decodes a stored entry. `now` is Redis's time in microseconds, from the
 * same script that read the entry.
 */
export function decodeEntry(key: string, raw: string, now: number): Entry {
  let at = 0
  const field = () => {
    const end = raw.indexOf(' ', at)
    const s = raw.slice(at, end)
    at = end + 1
    return s
  }
  const revision = Number(field())
  const created = Number(field())
  const deadline = field()
  field() // the TTL it was written with; reads report what is left
  const rest = raw.slice(at)
  // Serialized JSON never holds a raw newline, so the first one starts the owner.
  const nl = rest.indexOf('\n')
  const entry: Entry = { key, value: JSON.parse(nl === -1 ? rest : rest.slice(0, nl)) as Value, revision, created }
  if (nl !== -1) entry.owner = rest.slice(nl + 1)
  if (deadline !== '-') entry.ttl = Math.max(0, (Number(deadline) - now) / 1000)
  return entry
}

/** A position in the log: the revision and the index of the event within it. */
export interface StreamId {
  rev: number
  seq: number
}

export function parseId(id: string): StreamId {
  const dash = id.indexOf('-')
  return { rev: Number(id.slice(0, dash)), seq: Number(id.slice(dash + 1)) }
}

export function compareIds(a: StreamId, b: StreamId): number {
  return a.rev - b.rev || a.seq - b.seq
}

/** One log entry as Redis returns it: `[id, [field, value, ...]]`. */
export type RawLogEntry = [string, string[]]

/** A decoded log entry; `event` is absent for the no-op entry of a commit that changed nothing. */
export interface LogEntry {
  id: StreamId
  /** The last entry of its revision. */
  last: boolean
  /** The store's epoch when it was written. */
  epoch: string
  event?: WatchEvent
  /** On the entry that reports lost history: the newest revision Redis still had. */
  lost?: number
}

export function decodeLogEntry([id, fields]: RawLogEntry): LogEntry {
  const f: Record<string, string> = Object.create(null)
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!
  const sid = parseId(id)
  const out: LogEntry = { id: sid, last: f.z === '1', epoch: f.g ?? '' }
  if (f.t === 'x') out.lost = Number(f.a)
  const key = f.k
  if (key === undefined) return out
  switch (f.t) {
    case 'p': {
      const event: WatchEvent = { type: 'put', key, revision: sid.rev, value: JSON.parse(f.v!) as Value, created: Number(f.c) }
      if (f.o !== undefined) event.owner = f.o
      if (f.l !== undefined) event.ttl = Number(f.l)
      out.event = event
      break
    }
    case 'd':
      out.event = { type: 'delete', key, revision: sid.rev }
      break
    case 'e':
      out.event = { type: 'expire', key, revision: sid.rev }
      break
  }
  return out
}
