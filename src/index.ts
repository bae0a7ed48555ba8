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
export type { ClientOptions, DeleteOptions, HoldEndDetail, HoldEndEvent, PutOptions } from './core/client'
export type { Telemetry } from './otel/options'
export { Locks, Lock, Hold } from './core/locks'
export type { Fence, HeldLock, Holder, LockMode, LockOptions, LockQuery, LockSet, PendingLock, RunOptions } from './core/locks'
export { Semaphores, MAX_PERMITS } from './core/semaphores'
export type { Permit, PermitHolder, SemaphoreOptions } from './core/semaphores'
export { Leases, Lease } from './core/leases'
export type { LeaseOptions } from './core/leases'
export type { AcquireOptions } from './core/locks'
export { Counters } from './core/counters'
export { Watch } from './core/watch'
export type { WatchOptions } from './core/watch'
export { Jobs } from './core/jobs'
export type { JobRecord, JobResult, OnceOptions } from './core/jobs'
export { Election } from './core/election'
export type { ElectionOptions, Leader } from './core/election'
export { systemClock } from './core/time/clock'
export { backgroundClock, pageBackgroundClock } from './core/time/page-clock'
export type { BackgroundClock } from './core/time/page-clock'
export type { Clock, TimerHandle } from './core/time/clock'
export type {
  Adapter,
  Capabilities,
  Check,
  CommitOptions,
  CommitResult,
  Gate,
  GateOptions,
  Entry,
  HistoryLimits,
  HistoryPage,
  ListOptions,
  ListPage,
  Op,
  Unsubscribe,
  Value,
  WatchEvent,
  WatchSink,
} from './core/contract/adapter'
export { SEEN_REVISION_LIMIT } from './core/contract/adapter'
export { checkCommitArgs, checkCommitOptions, checkKey, checkListOptions, checkPrefix, checkRequestId, checkWatchArgs } from './core/contract/validate'
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
} from './core/contract/errors'
export type { ErrorCode } from './core/contract/errors'
