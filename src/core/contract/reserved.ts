/**
 * Keys zaris keeps for itself in the user's store: every key that starts
 * with U+0001. They are hidden from `list` and `watch` and refused as user
 * keys, so the two can never collide. The second character says whose:
 *
 * - `q`: a waiter's place in the line of a lock or semaphore (acquire/line.ts);
 * - `s`: one shared hold of a lock (acquire/shared-part.ts);
 * - `x`: the intent of the exclusive waiter first in line, which keeps new
 *   shared holds out so that they cannot starve it (acquire/exclusive-part.ts);
 * - `p`: one permit of a semaphore, a slot (acquire/permit-part.ts);
 * - `j`: the record of one slot of a job (jobs/record.ts): who ran it, with
 *   which token, and how it ended. Followed by the job's lock key alone.
 *
 * Each is followed by the user's key, then U+0001 and the entry's own
 * suffix (a waiter or holder id, or a slot number), so that every entry of
 * one key sits under one prefix.
 *
 * @module
 */

/** What every reserved key starts with. */
export const RESERVED = '\u0001'
/** Ends the user's key inside a reserved key. */
export const SEP = '\u0001'
/** Keys starting with this (U+0001 then `q`) belong to zaris's wait queues. */
export const QUEUE_PREFIX = '\u0001q'
/** Shared holds: U+0001 `s` + key + U+0001 + holder id + `.` + a count. */
export const SHARE_PREFIX = '\u0001s'
/** An exclusive waiter's intent: U+0001 `x` + key. */
export const INTENT_PREFIX = '\u0001x'
/** Semaphore permits: U+0001 `p` + key + U+0001 + slot number. */
export const PERMIT_PREFIX = '\u0001p'
/** A job's slot records: U+0001 `j` + the slot's lock key (`name@slot`). */
export const JOB_PREFIX = '\u0001j'
/**
 * The owner of a lock key held in shared mode (its *group*): the entry's
 * value counts the shared holds. No client id can start with U+0001.
 */
export const SHARED_OWNER = '\u0001shared'

/** Whether `key` is one of zaris's own entries (it starts with U+0001). */
export function isReservedKey(key: string): boolean {
  return key.startsWith(RESERVED)
}

/** Whether `key` is one of zaris's own wait-queue entries. */
export function isQueueKey(key: string): boolean {
  return key.startsWith(QUEUE_PREFIX)
}

/** The user's key inside a reserved key of kind `prefix` (`undefined` if it is not one). */
export function userKeyOf(reserved: string, prefix: string): string | undefined {
  if (!reserved.startsWith(prefix)) return undefined
  const cut = reserved.lastIndexOf(SEP)
  return cut > prefix.length ? reserved.slice(prefix.length, cut) : undefined
}

/** The prefix of the slots of semaphore `key`. */
export function slotPrefix(key: string): string {
  return PERMIT_PREFIX + key + SEP
}

/** The slot number of a slot key under `prefix`, or `undefined`. */
export function slotOf(prefix: string, key: string): number | undefined {
  if (!key.startsWith(prefix)) return undefined
  const rest = key.slice(prefix.length)
  return /^(0|[1-9][0-9]*)$/.test(rest) ? Number(rest) : undefined
}
