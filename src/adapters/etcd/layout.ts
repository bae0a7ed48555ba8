/**
 * How the etcd adapter lays a namespace out in etcd, and reads it back.
 *
 * Keys. A zaris key `K` of namespace `ns` lives at one of two etcd keys, its
 * *slots*, `zaris/<ns>/k/<K'>\0 0` and `…\0 1` (`K'` is K in UTF-8 with bytes
 * 0x00 and 0x01 escaped as 0x01 0x01 and 0x01 0x02, so that `\0` ends the
 * key, etcd's byte order is the keys' UTF-8 order, and the range of one
 * key's slots holds no other key). At most one slot exists at a time: every
 * write of a slot deletes the other in the same transaction.
 *
 * Why two slots: zaris's `created` is etcd's create revision of the live
 * slot, and a new life over a live entry (an owner change, `fresh`) must
 * start a new create revision — a delete and a put of one key, which etcd
 * refuses in one transaction. Writing the *other* slot and deleting the live
 * one is two keys, so etcd takes it, and the new slot's create revision is
 * the commit's revision.
 *
 * Beside the slots, `…\0 t` is the key's *tombstone*: a user delete puts it in
 * the same transaction, so a watcher can tell a user delete (slot deleted,
 * tombstone put, one revision) from a lease expiry (slot deleted alone).
 * `zaris/<ns>/r/<requestId>` records that a commit was applied.
 *
 * Values. A slot holds `<owner>\0<ttl>\0<value>`: the owner as a JSON string
 * (empty when none), the TTL in ms the entry was written with (empty when
 * none), the value as JSON. The owner comes first so that a transaction can
 * ask etcd "is the live slot's owner O?" as a byte range: the value lies
 * strictly between `O\0` and `O\x01` (JSON strings hold no raw control
 * characters, so no other owner's bytes fall there).
 *
 * @module
 */
import type { Entry, Value, WatchEvent } from '../../core/contract/adapter'

export type Slot = 0 | 1
const SLOT_BYTE = [0x30, 0x31] as const
const TOMBSTONE_BYTE = 0x74
/** The byte after the last slot: `[slot 0, END)` covers both slots and nothing else. */
const SLOT_END_BYTE = 0x32

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** The next key after every key that starts with `prefix` (etcd's prefix range end). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix)
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i]!++
      return end.subarray(0, i + 1)
    }
  }
  return Buffer.from([0]) // every key
}

function escape(s: string): Buffer {
  const raw = encoder.encode(s)
  let extra = 0
  for (const b of raw) if (b <= 1) extra++
  if (extra === 0) return Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
  const out = Buffer.alloc(raw.length + extra)
  let j = 0
  for (const b of raw) {
    if (b <= 1) {
      out[j++] = 1
      out[j++] = b + 1
    } else out[j++] = b
  }
  return out
}

function unescape(b: Buffer): string {
  if (!b.includes(1)) return decoder.decode(b)
  const out = Buffer.alloc(b.length)
  let j = 0
  for (let i = 0; i < b.length; i++) out[j++] = b[i] === 1 ? b[++i]! - 1 : b[i]!
  return decoder.decode(out.subarray(0, j))
}

/** What an etcd key of the namespace is. */
export type Part = { key: string; kind: 'slot'; slot: Slot } | { key: string; kind: 'tombstone' } | undefined

/** The etcd keys of one namespace. */
export class Layout {
  /** `zaris/<ns>/k/`: every entry key starts with it. */
  readonly entries: Buffer
  readonly requests: Buffer

  constructor(namespace: string) {
    this.entries = Buffer.from(`zaris/${namespace}/k/`)
    this.requests = Buffer.from(`zaris/${namespace}/r/`)
  }

  #base(key: string): Buffer {
    return Buffer.concat([this.entries, escape(key), Buffer.from([0])])
  }

  slot(key: string, slot: Slot): Buffer {
    const base = this.#base(key)
    return Buffer.concat([base, Buffer.from([SLOT_BYTE[slot]])])
  }

  /** `[slot 0, range_end)`: both slots of `key`, nothing else. */
  slots(key: string): { key: Buffer; range_end: Buffer } {
    const base = this.#base(key)
    return { key: Buffer.concat([base, Buffer.from([SLOT_BYTE[0]])]), range_end: Buffer.concat([base, Buffer.from([SLOT_END_BYTE])]) }
  }

  tombstone(key: string): Buffer {
    return Buffer.concat([this.#base(key), Buffer.from([TOMBSTONE_BYTE])])
  }

  /** The first etcd key past every etcd key of the zaris key `key` (and before those of keys that extend it). */
  after(key: string): Buffer {
    return Buffer.concat([this.#base(key), Buffer.from([0xff])])
  }

  /** Every etcd key of the zaris keys that start with `prefix`. */
  prefix(prefix: string): { key: Buffer; range_end: Buffer } {
    const start = Buffer.concat([this.entries, escape(prefix)])
    return { key: start, range_end: prefixEnd(start) }
  }

  request(id: string): Buffer {
    return Buffer.concat([this.requests, Buffer.from(id, 'utf8')])
  }

  /** What an etcd key of this namespace holds; `undefined` for keys that are not entries. */
  part(etcdKey: Buffer): Part {
    const n = this.entries.length
    if (etcdKey.length < n + 2 || etcdKey.compare(this.entries, 0, n, 0, n) !== 0 || etcdKey[etcdKey.length - 2] !== 0) return undefined
    let key: string
    try {
      key = unescape(etcdKey.subarray(n, etcdKey.length - 2))
    } catch {
      return undefined
    }
    const tag = etcdKey[etcdKey.length - 1]
    if (tag === SLOT_BYTE[0]) return { key, kind: 'slot', slot: 0 }
    if (tag === SLOT_BYTE[1]) return { key, kind: 'slot', slot: 1 }
    if (tag === TOMBSTONE_BYTE) return { key, kind: 'tombstone' }
    return undefined
  }
}

/** A stored slot value: `<owner json>\0<ttl>\0<value json>`. */
export function encodeValue(json: string, owner: string | undefined, ttl: number | undefined): Buffer {
  return Buffer.from(`${owner === undefined ? '' : JSON.stringify(owner)}\0${ttl === undefined ? '' : ttl}\0${json}`, 'utf8')
}

/** The byte range a slot value lies in when its owner is `owner` (`undefined`: no owner). */
export function ownerRange(owner: string | undefined): { above: Buffer; below: Buffer } {
  const o = owner === undefined ? '' : JSON.stringify(owner)
  return { above: Buffer.from(`${o}\0`, 'utf8'), below: Buffer.from(`${o}\x01`, 'utf8') }
}

export interface StoredValue {
  value: Value
  owner?: string
  /** The TTL the entry was written with. */
  ttl?: number
}

export function decodeValue(raw: Buffer): StoredValue {
  const s = raw.toString('utf8')
  const a = s.indexOf('\0')
  const b = s.indexOf('\0', a + 1)
  const out: StoredValue = { value: JSON.parse(s.slice(b + 1)) as Value }
  if (a > 0) out.owner = JSON.parse(s.slice(0, a)) as string
  if (b > a + 1) out.ttl = Number(s.slice(a + 1, b))
  return out
}

/** The parts of an etcd key-value the adapter reads. */
export interface RawKv {
  key: Buffer
  value: Buffer
  create_revision: string
  mod_revision: string
  lease: string
}

/** An entry from its live slot. `ttl` is what the caller knows is left, if anything. */
export function entryOf(key: string, kv: RawKv, ttlLeft?: number): Entry {
  const stored = decodeValue(kv.value)
  const entry: Entry = { key, value: stored.value, revision: Number(kv.mod_revision), created: Number(kv.create_revision) }
  if (stored.owner !== undefined) entry.owner = stored.owner
  if (stored.ttl !== undefined) entry.ttl = Math.max(0, Math.min(stored.ttl, ttlLeft ?? stored.ttl))
  return entry
}

/** The `put` event of a slot write. */
export function putEvent(key: string, kv: RawKv): WatchEvent {
  const stored = decodeValue(kv.value)
  const ev: WatchEvent = { type: 'put', key, revision: Number(kv.mod_revision), value: stored.value, created: Number(kv.create_revision) }
  if (stored.owner !== undefined) ev.owner = stored.owner
  if (stored.ttl !== undefined) ev.ttl = stored.ttl
  return ev
}
