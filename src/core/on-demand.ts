/**
 * The parts of the core that load on first use — the acquire machinery,
 * `query`, counting, a semaphore's holders — so that an app that never uses them does not carry
 * them. Each module is imported once and kept: a dynamic `import()` on every
 * call would cost a trip through the module loader each time.
 *
 * The acquire machinery loads its own rarer parts (shared locks, permits,
 * several keys) the same way; an election's body is loaded by election.ts.
 *
 * @module
 */
import { once } from './contract/once'

export const acquirePart = once(() => import('./acquire'), 'lock-taking')
export const lockQuery = once(() => import('./lock-query'), 'lock query')
export const counterOps = once(() => import('./counter-ops'), 'counter')
export const semaphoreHolders = once(() => import('./semaphore-holders'), 'semaphore holders')
