/**
 * Hand-written histories for the checker's unit tests: each call adds one
 * operation (an invocation and its completion) in the shape the recorders
 * write, with times in ms. Lock operations are spelled as the commits the
 * core sends for them.
 *
 * @module
 */
import type { CheckJson, EntryJson, HistoryEvent, OpJson } from './history'

type Outcome<T> = T | 'unknown'

export class HistoryBuilder {
  readonly events: HistoryEvent[] = []

  /** One operation from `call` to `ret` ms; `ret` undefined: never completed. */
  op(process: number, call: number, ret: number | undefined, f: string, input: unknown, type: 'ok' | 'fail' | 'info', output?: unknown): this {
    this.events.push({ process, type: 'invoke', f, value: input, time: call * 1e6, client: `c${process}` })
    if (ret !== undefined) this.events.push({ process, type, f, value: output ?? null, time: ret * 1e6, client: `c${process}` })
    return this
  }

  commit(process: number, [call, ret]: [number, number], checks: CheckJson[], ops: OpJson[], result: Outcome<{ revision: number; entries?: EntryJson[]; deleted?: string[] } | { failed: Array<{ key: string; entry?: EntryJson }> }>): this {
    if (result === 'unknown') return this.op(process, call, ret, 'commit', { checks, ops }, 'info')
    if ('failed' in result) return this.op(process, call, ret, 'commit', { checks, ops }, 'fail', result)
    const entries = result.entries ?? ops.filter((o) => o.type !== 'delete').map((o) => ({ key: o.key, value: o.type === 'set' ? o.value : 0, revision: result.revision, created: result.revision }))
    return this.op(process, call, ret, 'commit', { checks, ops }, 'ok', { revision: result.revision, entries, deleted: result.deleted ?? [] })
  }

  get(process: number, span: [number, number], key: string, entry: EntryJson | null): this {
    return this.op(process, span[0], span[1], 'get', { key }, 'ok', { entry })
  }

  /** A lock grant: `token`, `held` (someone else's entry `by` was there), or unknown. */
  grant(process: number, span: [number, number], key: string, ttl: number, result: Outcome<number | { held: EntryJson }>): this {
    const owner = `c${process}`
    const set: OpJson = { type: 'set', key, value: null, ttl, owner }
    if (typeof result === 'object') return this.commit(process, span, [{ key, revision: null }], [set], { failed: [{ key, entry: result.held }] })
    return this.commit(process, span, [{ key, revision: null }], [set], result === 'unknown' ? 'unknown' : { revision: result, entries: [{ key, value: null, revision: result, created: result, owner, ttl }] })
  }

  renew(process: number, span: [number, number], key: string, token: number, ttl: number, result: Outcome<number | false>): this {
    const owner = `c${process}`
    const set: OpJson = { type: 'set', key, value: null, ttl, owner }
    if (result === false) return this.commit(process, span, [{ key, created: token }], [set], { failed: [{ key }] })
    return this.commit(process, span, [{ key, created: token }], [set], result === 'unknown' ? 'unknown' : { revision: result, entries: [{ key, value: null, revision: result, created: token, owner, ttl }] })
  }

  release(process: number, span: [number, number], key: string, token: number, result: Outcome<number | false>): this {
    if (result === false) return this.commit(process, span, [{ key, created: token }], [{ type: 'delete', key }], { failed: [{ key }] })
    return this.commit(process, span, [{ key, created: token }], [{ type: 'delete', key }], result === 'unknown' ? 'unknown' : { revision: result, deleted: [key] })
  }

  /** A write of `key` fenced by `lock` held with `token`: its revision, refused (with the lock's entry as seen), or unknown. */
  fenced(process: number, span: [number, number], lock: string, token: number, key: string, value: unknown, result: Outcome<number | { revision: number; created: number } | { refused: EntryJson | undefined }>): this {
    const checks: CheckJson[] = [{ key: lock, created: token }]
    const ops: OpJson[] = [{ type: 'set', key, value }]
    if (typeof result === 'object' && 'refused' in result) return this.commit(process, span, checks, ops, { failed: [{ key: lock, entry: result.refused }] })
    if (result === 'unknown') return this.commit(process, span, checks, ops, 'unknown')
    const r = typeof result === 'number' ? { revision: result, created: result } : result
    return this.commit(process, span, checks, ops, { revision: r.revision, entries: [{ key, value, revision: r.revision, created: r.created }] })
  }

  /** A plain put (created as the store reports it; default: the revision, a new life). */
  put(process: number, span: [number, number], key: string, value: unknown, result: Outcome<number | { revision: number; created: number }>, ifRevision?: number | null): this {
    const checks: CheckJson[] = ifRevision === undefined ? [] : [{ key, revision: ifRevision }]
    const ops: OpJson[] = [{ type: 'set', key, value }]
    if (result === 'unknown') return this.commit(process, span, checks, ops, 'unknown')
    const r = typeof result === 'number' ? { revision: result, created: result } : result
    return this.commit(process, span, checks, ops, { revision: r.revision, entries: [{ key, value, revision: r.revision, created: r.created }] })
  }

  add(process: number, span: [number, number], key: string, delta: number, result: Outcome<{ revision: number; value: number; created: number }>): this {
    const ops: OpJson[] = [{ type: 'add', key, delta }]
    if (result === 'unknown') return this.commit(process, span, [], ops, 'unknown')
    return this.commit(process, span, [], ops, { revision: result.revision, entries: [{ key, value: result.value, revision: result.revision, created: result.created }] })
  }

  /** A lock-family grant (family.ts): `lock-acquire` of one key or several (`mode`, `steal`), `permit-acquire` (`limit`). */
  acquire(process: number, span: [number, number], kind: 'lock' | 'permit', input: { key?: string; keys?: string[]; mode?: 'exclusive' | 'shared'; steal?: boolean; limit?: number; ttl: number }, result: Outcome<number | null | { token: number; slot: number }>): this {
    const f = `${kind}-acquire`
    if (result === 'unknown') return this.op(process, span[0], span[1], f, input, 'info')
    if (result === null) return this.op(process, span[0], span[1], f, input, 'fail')
    return this.op(process, span[0], span[1], f, input, 'ok', typeof result === 'number' ? { token: result } : result)
  }

  /** A hold's release or renewal (`ok`: what it resolved), or a write fenced by it (`ok`: accepted, false: FENCED). */
  hold(process: number, span: [number, number], kind: 'lock' | 'permit', verb: 'release' | 'renew' | 'fenced', key: string, token: number, result: Outcome<boolean>, ttl?: number): this {
    const f = `${kind}-${verb}`
    const input = ttl === undefined ? { key, token } : { key, token, ttl }
    if (result === 'unknown') return this.op(process, span[0], span[1], f, input, 'info')
    if (verb === 'fenced') return this.op(process, span[0], span[1], f, input, result ? 'ok' : 'fail', result ? null : { error: 'FENCED' })
    return this.op(process, span[0], span[1], f, input, 'ok', verb === 'release' ? { released: result } : { renewed: result })
  }

  fault(f: 'owner-gone' | 'store-restart', at: number, value: unknown = null): this {
    this.events.push({ process: 'nemesis', type: 'info', f, value, time: at * 1e6 })
    return this
  }
}

/** An entry as a read returns it. */
export const entry = (key: string, value: unknown, revision: number, created = revision, owner?: string, ttl?: number): EntryJson => {
  const e: EntryJson = { key, value, revision, created }
  if (owner !== undefined) e.owner = owner
  if (ttl !== undefined) e.ttl = ttl
  return e
}
