/**
 * One call that joins a wait line and parks the take (`CommitOptions.place`,
 * capability `parkPlace`), on any store that parks commits: the in-process
 * stores (local-adapter.ts) and a node in front of any store
 * (src/server/parking.ts). The caller's round trips per contended success
 * drop from three (join, parked take, release) to two.
 *
 * It is three commits of the store in a row, each atomic on its own, and
 * safe in any interleaving with others: a plain try first (a free key writes
 * no place); then the place, only where no live entry has its key (a waiter
 * that gave up set it first: nothing is parked); then the take parked with
 * that place checked, deleted by the take, its `created` the take's turn.
 * A release between the steps lets the parked take through at its own first
 * try. A take whose caller went away (a dropped connection) leaves its place
 * to its TTL, as a dead client's place is left.
 *
 * @module
 */
import type { Check, CommitOptions, CommitResult, Entry, Op } from '../../core/contract/adapter'

/** A store's commit (an adapter's, or a node's parking of it). */
export type CommitFn = (checks: Check[], ops: Op[], options: CommitOptions | undefined) => Promise<CommitResult>

/** Commits `checks`/`ops` with `options.place` (see the module doc): `commit` does the rest of the options. */
export async function joinThenPark(commit: CommitFn, get: GetFn, checks: Check[], ops: Op[], options: CommitOptions & { place: NonNullable<CommitOptions['place']> }): Promise<CommitResult> {
  const { place, waitChange: _w, keepParked: _k, parkOrder: _o, wakeOwner: _v, onParked: _p, signal, ...plain } = options
  // The plain try carries the request's id and `seen`: if it goes through, a retry is answered with it.
  const first = await commit(checks, ops, plain)
  if (first.ok || signal?.aborted) return first
  const { key, value, ttl, owner } = place
  // No `seen` here: the plain try has already moved the store up to it.
  const placed = await commit([{ key, revision: null }], [{ type: 'set', key, value, ttl, owner }], undefined)
  if (!placed.ok) return { ok: false, failed: [...first.failed, ...placed.failed] }
  const created = placed.entries[0]!.created
  // The waiter may leave between the place and the park: its take would then park on a check failing from the start,
  // never answered before its wait ends. So once parked, look: a place gone meanwhile ends the wait (a store that honours `signal`).
  const end = new AbortController()
  const parking = commit([...checks, { key, created }], [...ops, { type: 'delete', key }], { ...options, place: undefined, keepParked: true, parkOrder: created, signal: signal ? AbortSignal.any([signal, end.signal]) : end.signal })
  // (An abort after the take was answered does nothing: one that went through stands.)
  const now = await get(key).catch(() => undefined)
  if (now?.created !== created) end.abort(LEFT)
  return parking
}

/** A store's get. */
export type GetFn = (key: string) => Promise<Entry | undefined>

/** Why a take whose place went before it parked is ended (made once: nobody reads it). */
const LEFT = new Error('the place went before the take parked')
