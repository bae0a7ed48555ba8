/**
 * The contract's limits, named once: every store, the wire and the CLI take
 * them from here.
 *
 * @module
 */

/** Keys longer than this many UTF-16 code units are refused: they are names, not payloads. */
export const MAX_KEY_LENGTH = 1024
/** Values nested deeper than this are refused (a guard against runaway recursion). */
export const MAX_VALUE_DEPTH = 64
/** The most ms a TTL may be: timers cannot wait longer than 2^31-1 ms. */
export const MAX_TTL = 2_147_483_647
/** Owner ids (client ids) are at most this many UTF-16 code units. */
export const MAX_OWNER_LENGTH = 256
/** A commit's request id, given to a store directly (Redis, etcd), is at most this many characters. */
export const MAX_REQUEST_ID_LENGTH = 256

/** The largest `limit` a semaphore may have. */
export const MAX_PERMITS = 1_000_000

/** The most other ways one commit may go through (`CommitOptions.orElse`): a semaphore of a larger limit waits on watch events. */
export const MAX_OR_ELSE = 32
