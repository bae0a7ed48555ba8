/**
 * zaris/web-locks: the Web Locks API (`navigator.locks`) over any zaris
 * store — `request()` and `query()` with the specification's options, grant
 * order and errors, across tabs, processes and machines, and with what the
 * browser's lacks: a TTL, renewal, a fencing token and a signal on every lock.
 *
 * @module
 */
export { webLocks, WebLocks } from './manager'
export type { LockInfo, LockManagerSnapshot, WebLocksOptions } from './manager'
export { WebLock } from './lock'
export type { LockGrantedCallback, WebLockOptions, ZarisRequestOptions } from './options'
