/**
 * How the HTTP client reads a node's answers: one hand-written check per
 * answer, accepting exactly what the protocol's schemas (`./protocol`, zod)
 * accept, and building the core's shapes as it goes. The node keeps zod for
 * the requests it must not trust; a page's client chunk carries none of it
 * (zod was three quarters of that chunk). test/http/answers.test.ts holds
 * each check to its schema on generated answers, valid and not.
 *
 * A bad answer throws a {@link BadAnswer} naming the field at fault
 * (`entries.0.revision: must be a revision …`); the client turns it into a
 * `ZarisError` that names the node and the operation.
 *
 * @module
 */
import type { CommitResult, Entry, WatchEvent } from '../../core/contract/adapter'
import { checkValue, isOwnerId, keyProblem, MAX_TTL } from '../../core/contract/validate'

/** An answer that is not what the protocol says; the message names the field. */
export class BadAnswer extends Error {}

type Obj = Record<string, unknown>
type Allowed = Readonly<Record<string, 1>>

function fail(path: string, message: string): never {
  throw new BadAnswer(`${path}: ${message}`)
}

/**
 * A JSON object whose keys are all `allowed` (the schemas are strict: an
 * unknown key is refused). `allowed[k]` is 1 only for an own member: what
 * `__proto__` or `constructor` find on Object.prototype is not 1.
 */
function object(v: unknown, path: string, allowed: Allowed): Obj {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(path, 'expected an object')
  for (const k in v) if (allowed[k] !== 1) fail(path, `unexpected key ${JSON.stringify(k)}`)
  return v as Obj
}

function array(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) fail(path, 'expected an array')
  return v
}

function key(v: unknown, path: string): string {
  if (typeof v !== 'string') fail(path, 'expected a key (a string)')
  const problem = keyProblem(v)
  if (problem) fail(path, problem)
  return v
}

function revision(v: unknown, path: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) fail(path, 'must be a revision (an integer >= 0)')
  return v
}

function bool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') fail(path, 'expected a boolean')
  return v
}

function owner(v: unknown, path: string): string {
  if (!isOwnerId(v)) fail(path, 'must be an owner id (a non-empty, well-formed string)')
  return v
}

function value(v: unknown, path: string): Entry['value'] {
  try {
    return checkValue(v, path)
  } catch (err) {
    throw new BadAnswer((err as Error).message)
  }
}

const ENTRY: Allowed = { key: 1, value: 1, revision: 1, created: 1, owner: 1, ttl: 1 }

function entry(v: unknown, path: string): Entry {
  const o = object(v, path, ENTRY)
  const e: Entry = { key: key(o.key, `${path}.key`), value: value(o.value, `${path}.value`), revision: revision(o.revision, `${path}.revision`), created: revision(o.created, `${path}.created`) }
  if (o.owner !== undefined) e.owner = owner(o.owner, `${path}.owner`)
  if (o.ttl !== undefined) {
    if (typeof o.ttl !== 'number' || !Number.isFinite(o.ttl) || o.ttl < 0) fail(`${path}.ttl`, 'must be a number of ms >= 0')
    e.ttl = o.ttl
  }
  return e
}

const entryOrNull = (v: unknown, path: string): Entry | undefined => (v === null ? undefined : entry(v, path))

/** The answer to `get`: the entry, or undefined for none. */
export function readGet(json: unknown): Entry | undefined {
  const o = object(json, 'response', { entry: 1 })
  if (!Object.hasOwn(o, 'entry')) fail('entry', 'missing')
  return entryOrNull(o.entry, 'entry')
}

/** The answer to `list`: one page. */
export function readList(json: unknown): { entries: Entry[]; more: boolean } {
  const o = object(json, 'response', { entries: 1, more: 1 })
  return { entries: array(o.entries, 'entries').map((e, i) => entry(e, `entries.${i}`)), more: bool(o.more, 'more') }
}

/** The answer to `commit`. */
export function readCommit(json: unknown): CommitResult {
  const ok = (json as Obj | null)?.ok
  if (ok === true) {
    const o = object(json, 'response', { ok: 1, revision: 1, entries: 1, deleted: 1 })
    return {
      ok,
      revision: revision(o.revision, 'revision'),
      entries: array(o.entries, 'entries').map((e, i) => entry(e, `entries.${i}`)),
      deleted: array(o.deleted, 'deleted').map((k, i) => key(k, `deleted.${i}`)),
    }
  }
  if (ok !== false) fail('ok', 'expected true or false')
  const o = object(json, 'response', { ok: 1, failed: 1 })
  const failed = array(o.failed, 'failed').map((f, i) => {
    const x = object(f, `failed.${i}`, { key: 1, entry: 1 })
    if (!Object.hasOwn(x, 'entry')) fail(`failed.${i}.entry`, 'missing')
    return { key: key(x.key, `failed.${i}.key`), entry: entryOrNull(x.entry, `failed.${i}.entry`) }
  })
  return { ok, failed }
}

const EVENT: Allowed = { type: 1, key: 1, revision: 1, value: 1, created: 1, owner: 1, ttl: 1 }

/** A change event of a watch stream, or of an `events` page. */
export function readEvent(json: unknown, path = 'event'): WatchEvent {
  const o = object(json, path, EVENT)
  if (o.type !== 'put' && o.type !== 'delete' && o.type !== 'expire') fail(`${path}.type`, 'expected put, delete or expire')
  const e: WatchEvent = { type: o.type, key: key(o.key, `${path}.key`), revision: revision(o.revision, `${path}.revision`) }
  if (o.value !== undefined) e.value = value(o.value, `${path}.value`)
  if (o.created !== undefined) e.created = revision(o.created, `${path}.created`)
  if (o.owner !== undefined) e.owner = owner(o.owner, `${path}.owner`)
  if (o.ttl !== undefined) {
    if (typeof o.ttl !== 'number' || !(o.ttl > 0) || o.ttl > MAX_TTL) fail(`${path}.ttl`, `must be a number of ms in (0, ${MAX_TTL}]`)
    e.ttl = o.ttl
  }
  return e
}

/** The answer to `events`: a page of history. */
export function readEvents(json: unknown): { events: WatchEvent[]; through: number; more: boolean } {
  const o = object(json, 'response', { events: 1, through: 1, more: 1 })
  return {
    events: array(o.events, 'events').map((e, i) => readEvent(e, `events.${i}`)),
    through: revision(o.through, 'through'),
    more: bool(o.more, 'more'),
  }
}

const EPOCH = /^[A-Za-z0-9_-]{1,64}$/

/** The `ready` event that opens a watch stream (`stream`: a filtered stream's id). */
export function readReady(json: unknown): { revision?: number; epoch?: string; heartbeat: number; stream?: string } {
  const o = object(json, 'ready', { revision: 1, epoch: 1, heartbeat: 1, stream: 1 })
  const { heartbeat } = o
  if (typeof heartbeat !== 'number' || !Number.isSafeInteger(heartbeat) || heartbeat <= 0) fail('ready.heartbeat', 'must be a positive integer (ms)')
  const r: { revision?: number; epoch?: string; heartbeat: number; stream?: string } = { heartbeat }
  if (o.revision !== undefined) r.revision = revision(o.revision, 'ready.revision')
  if (o.epoch !== undefined) {
    if (typeof o.epoch !== 'string' || !EPOCH.test(o.epoch)) fail('ready.epoch', 'must be 1-64 letters, digits, _ or -')
    r.epoch = o.epoch
  }
  if (o.stream !== undefined) {
    if (typeof o.stream !== 'string' || !EPOCH.test(o.stream)) fail('ready.stream', 'must be 1-64 letters, digits, _ or -')
    r.stream = o.stream
  }
  return r
}

/** A filtered stream's `progress` event. */
export function readProgress(json: unknown): number {
  return revision(object(json, 'progress', { revision: 1 }).revision, 'progress.revision')
}

/** The answer to `filter`. */
export function readFilter(json: unknown): { revision: number; version: number; history?: { after: number; events: WatchEvent[]; through: number; more: boolean } } {
  const o = object(json, 'response', { revision: 1, version: 1, history: 1 })
  const r: ReturnType<typeof readFilter> = { revision: revision(o.revision, 'revision'), version: revision(o.version, 'version') }
  if (o.history !== undefined) {
    const h = object(o.history, 'history', { after: 1, events: 1, through: 1, more: 1 })
    r.history = { after: revision(h.after, 'history.after'), ...readEvents({ events: h.events, through: h.through, more: h.more }) }
  }
  return r
}

const only = (v: unknown, a: string, b?: string): v is Obj => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
  for (const k in v) if (k !== a && k !== b) return false
  return true
}

/** An error body as the node sends it (`{ error: { code, message } }`): the error, or undefined when `json` is not one. */
export function readError(json: unknown): { code: string; message: string } | undefined {
  if (!only(json, 'error') || !only(json.error, 'code', 'message')) return undefined
  const { code, message } = json.error
  if (typeof code !== 'string' || code.length < 1 || code.length > 64 || typeof message !== 'string' || message.length > 4_096) return undefined
  return { code, message }
}
