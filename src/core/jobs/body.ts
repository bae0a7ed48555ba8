/**
 * The body of `client.jobs.once`, loaded on its first call. It reads top to
 * bottom:
 *
 * 1. **look**: read the slot's record. `done`, or `failed` with no retry
 *    left: skip. Anything else (no record, `started`, `failed` with a retry
 *    left): the slot's lock decides.
 * 2. **take**: acquire the lock `name@slot` (waiting up to `wait`). Held
 *    elsewhere: a run is under way there; skip. Held here: nobody else runs
 *    the slot now, so a `started` record is a run whose holder ended
 *    without writing its outcome (it died, or lost its lock) — a failed
 *    attempt.
 * 3. **start**: write `started` (this client, the lock's token, the next
 *    attempt) in one commit that checks the lock still carries the token
 *    (the fence) and the record is still the one read. A record changed
 *    since (another run came and went while this call waited) sends it
 *    back to 1, lock in hand.
 * 4. **run**: call `fn(lock)` (the lock renews itself meanwhile), then write
 *    `done` or `failed`, fenced, and release the lock. A fence refused
 *    there means the lock ended first: the run is reported `failed` with
 *    the reason, and the record still says `started` for the next call.
 *
 * Every write of the record is fenced by the slot's lock, so the record
 * changes only under the lock and two runs of a slot never both write.
 *
 * @module
 */
import type { Context } from '../context'
import { ConflictError, FencedError, InvalidArgumentError, isZarisError } from '../contract/errors'
import { describe } from '../contract/validate'
import type { Lock } from '../hold/lock'
import type { Locks } from '../locks'
import { sleep } from '../time/clock'
import { checkJobName, checkOnce, checkSlot, errorText, recordOf, recordValue, slotKeys, type JobRecord, type JobResult, type Fencing, type OnceChecked, type OnceOptions, type SlotKeys } from './record'

/** How many times a call goes back to look: each time the record changed under it, which takes another run's whole life. */
const MAX_ROUNDS = 8
/** How many times the outcome is sent when the store cannot be reached (the same write: sending it twice is harmless). */
const OUTCOME_TRIES = 3

/** What the record says when a run's holder ended without writing its outcome. */
export const HOLDER_ENDED = 'the run ended without writing its outcome: its process died, or it lost the lock'

type Outcome = 'written' | 'changed' | 'lost'

/** One call of `once`: where it runs, the slot, its options. */
interface Call {
  ctx: Context
  locks: Locks
  fencing: Fencing
  keys: SlotKeys
  o: OnceChecked
}

/** `client.jobs.once`: checks the call, then runs it. */
export async function once<T>(ctx: Context, locks: Locks, fencing: Fencing, name: unknown, slot: unknown, fn: unknown, options: OnceOptions | undefined): Promise<JobResult<Awaited<T>>> {
  const keys = checkedKeys(name, slot)
  if (typeof fn !== 'function') throw new InvalidArgumentError(`once needs a function to run, got ${describe(fn)}`)
  const o = checkOnce(ctx, options)
  ctx.assertOpen()
  o.signal?.throwIfAborted()
  return runOnce({ ctx, locks, fencing, keys, o }, fn as (lock: Lock) => T | PromiseLike<T>)
}

/** `client.jobs.record`: the slot's record. */
export async function readRecord(ctx: Context, name: unknown, slot: unknown): Promise<JobRecord | undefined> {
  const keys = checkedKeys(name, slot)
  ctx.assertOpen()
  return recordOf(await ctx.adapter.get(keys.record))
}

function checkedKeys(name: unknown, slot: unknown): SlotKeys {
  const n = checkJobName(name)
  return slotKeys(n, checkSlot(slot, n))
}

/** Runs `fn` for the slot `keys` unless it is run, running or spent; see the module doc. */
async function runOnce<T>(call: Call, fn: (lock: Lock) => T | PromiseLike<T>): Promise<JobResult<Awaited<T>>> {
  const { ctx, locks, keys, o } = call
  const deadline = ctx.clock.now() + o.wait
  let lock: Lock | null = null
  try {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      // 1. look
      const entry = await ctx.adapter.get(keys.record)
      const record = recordOf(entry)
      const spent = spentBy(record, o.retries)
      if (spent) return spent
      // 2. take
      if (!lock) {
        lock = await locks.acquire(keys.lock, { ttl: o.ttl, autoRenew: true, wait: Math.max(0, deadline - ctx.clock.now()), signal: o.signal })
        if (!lock) {
          const holder = await locks.holder(keys.lock)
          // The holder may be a caller that looked before the run ended and is letting go: read after it, the record decides.
          const settled = holder && spentBy(recordOf(await ctx.adapter.get(keys.record)), o.retries)
          if (settled) return settled
          if (holder) return { status: 'skipped', state: 'running', by: holder.owner, token: holder.token }
          continue // freed since: look again
        }
      }
      // 3. start (or, for a dead run with no retry left, record that it failed)
      const attempt = (record?.attempt ?? 0) + 1
      const exhausted = record?.state === 'started' && attempt > o.retries + 1
      const next: JobRecord = exhausted ? { ...record, state: 'failed', error: HOLDER_ENDED } : { state: 'started', by: ctx.id, token: lock.token, attempt }
      const written = await writeRecord(call, lock, next, entry?.revision ?? null)
      if (written === 'changed') continue
      if (written === 'lost') {
        lock = null // ended by the refusal: nothing to release
        continue
      }
      if (exhausted) return { status: 'skipped', state: 'failed', by: next.by, token: next.token }
      // 4. run: it releases the lock
      const held = lock
      lock = null
      return await run(call, held, fn, attempt)
    }
  } finally {
    // Taken but not run (skipped, or the store failed): let it go. A release that fails frees at the TTL.
    if (lock) await lock.release().catch(() => {})
  }
  throw new ConflictError(`the slot ${JSON.stringify(keys.lock)} changed under this call ${MAX_ROUNDS} times; try again`)
}

/** The skip a record calls for: `done`, or `failed` with no retry left; `undefined` when the lock decides. */
function spentBy(record: JobRecord | undefined, retries: number): JobResult<never> | undefined {
  if (!record) return undefined
  if (record.state === 'done' || (record.state === 'failed' && record.attempt > retries)) {
    return { status: 'skipped', state: record.state, by: record.by, token: record.token }
  }
  return undefined
}

/** Step 4: calls `fn`, writes its outcome, releases the lock. */
async function run<T>(call: Call, lock: Lock, fn: (lock: Lock) => T | PromiseLike<T>, attempt: number): Promise<JobResult<Awaited<T>>> {
  const { ctx } = call
  const { token } = lock
  let result: JobResult<Awaited<T>>
  let outcome: JobRecord
  try {
    result = { status: 'ran', value: await fn(lock), token, attempt }
    outcome = { state: 'done', by: ctx.id, token, attempt }
  } catch (error) {
    result = { status: 'failed', error, token, attempt }
    outcome = { state: 'failed', by: ctx.id, token, attempt, error: errorText(error) }
  }
  try {
    const written = await writeOutcome(call, lock, outcome)
    // fn's own error says more than the loss (it is often a fenced write refused for it).
    if (written === 'lost' && result.status === 'ran') result = { status: 'failed', error: endReason(lock), token, attempt }
  } catch (error) {
    // The store could not be reached: the outcome may not be recorded, and then the next call counts the run as failed.
    if (result.status === 'ran') result = { status: 'failed', error, token, attempt }
  } finally {
    await lock.release().catch(() => {})
  }
  return result
}

/** Writes the outcome, fenced; sent again (the same write) while the store cannot be reached. */
async function writeOutcome(call: Call, lock: Lock, outcome: JobRecord): Promise<Outcome> {
  for (let tries = 1; ; tries++) {
    try {
      return await writeRecord(call, lock, outcome)
    } catch (err) {
      if (tries >= OUTCOME_TRIES || isZarisError(err, 'CLOSED')) throw err
      await sleep(call.ctx.clock, Math.min(lock.ttl / 10, 500) * tries)
    }
  }
}

/**
 * Writes `record` at the slot, fenced by `lock` and, with `revision`, only
 * over that revision of the record (`null`: none): `lost` when the fence
 * failed (the lock is then ended), `changed` when the record did.
 */
async function writeRecord({ ctx, fencing, keys, o }: Call, lock: Lock, record: JobRecord, revision?: number | null): Promise<Outcome> {
  const checks = [...fencing.checks(lock)]
  if (revision !== undefined) checks.push({ key: keys.record, revision })
  const r = await ctx.adapter.commit(checks, [{ type: 'set', key: keys.record, value: recordValue(record), ttl: o.retention }])
  if (r.ok) return 'written'
  return fencing.refused(lock, r.failed) ? 'lost' : 'changed'
}

/** Why a run's lock ended before its outcome was written. */
function endReason(lock: Lock): unknown {
  return lock.signal.reason ?? new FencedError(`the lock ${JSON.stringify(lock.key)} is no longer held with token ${lock.token}: the outcome was not written`)
}
