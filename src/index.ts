/**
 * zaris: locks, leases, counters, watch and leader election with fencing
 * tokens, over one small compare-and-set adapter — the same API in a browser
 * tab and across many machines.
 *
 * @module
 */
export { connect, clients, registerScheme, parseUrl, DEFAULT_PORT } from './connect'
export type { AdapterFactory, Clients, ConnectOptions, Target } from './connect'
export { Client, DEFAULT_TTL } from './core/client'
export type { ClientOptions, DeleteOptions, PutOptions } from './core/client'
export { Lock, Lease, Hold } from './core/hold'
export type { Fence, LockMode } from './core/hold'
export { Locks } from './core/locks'
export type { HeldLock, Holder, LockOptions, LockQuery, PendingLock, RunOptions } from './core/locks'
export type { LockSet } from './core/lock-set'
export { Semaphores, MAX_PERMITS } from './core/semaphores'
export type { PermitHolder, SemaphoreOptions } from './core/semaphores'
export type { Permit } from './core/permits'
export { Leases } from './core/leases'
export type { LeaseOptions } from './core/leases'
export type { AcquireOptions } from './core/acquire-checks'
export { Counters } from './core/counters'
export { Watch } from './core/watch'
export type { WatchOptions } from './core/watch'
export { Election } from './core/election'
export type { ElectionOptions, Leader } from './core/election'
export { systemClock } from './core/clock'
export { backgroundClock, pageBackgroundClock } from './core/page-clock'
export type { BackgroundClock } from './core/page-clock'
export type { Clock, TimerHandle } from './core/clock'
export type {
  Adapter,
  Capabilities,
  Check,
  CommitOptions,
  CommitResult,
  Entry,
  Op,
  Unsubscribe,
  Value,
  WatchEvent,
  WatchSink,
} from './core/adapter'
export { checkCommitArgs, checkKey, checkListOptions, checkPrefix } from './core/validate'
export {
  ZarisError,
  InvalidArgumentError,
  InvalidUrlError,
  UnsupportedError,
  ConflictError,
  FencedError,
  CompactedError,
  HoldEndedError,
  ClosedError,
  UnavailableError,
  UnauthorizedError,
  TooLargeError,
  RateLimitedError,
  InternalError,
  RevisionExhaustedError,
  isZarisError,
  errorFromJSON,
} from './core/errors'
export type { ErrorCode } from './core/errors'
