/**
 * Keys zaris keeps for itself in the user's store: the wait queues of locks
 * (wait-queue.ts). They are hidden from `list` and `watch` and refused as
 * user keys, so the two can never collide.
 *
 * @module
 */

/** Keys starting with this (U+0001 then `q`) belong to zaris's wait queues. */
export const QUEUE_PREFIX = '\u0001q'

/** Whether `key` is one of zaris's own wait-queue entries. */
export function isQueueKey(key: string): boolean {
  return key.startsWith(QUEUE_PREFIX)
}
