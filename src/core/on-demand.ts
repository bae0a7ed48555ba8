/**
 * The parts of the core that load on first use — shared locks, semaphore
 * permits, `query`, several keys at once, counting — so that an app that
 * never uses them does not carry them. Each module is imported once and kept: a
 * dynamic `import()` on every call would cost a trip through the module
 * loader each time.
 *
 * A body that imports acquire.ts (an election's) is loaded from its own
 * facade instead: acquire.ts imports this module, and the bundler (Vite 8)
 * then kept that body's whole graph in an app that reaches acquire.ts only
 * for a constant (zaris/web-locks grew from 2.75 to 7.1 kB at start).
 *
 * @module
 */
import { once } from './once'

export const sharedPart = once(() => import('./shared-part'), 'shared-lock')
export const permits = once(() => import('./permits'), 'semaphore permit')
export const lockQuery = once(() => import('./lock-query'), 'lock query')
export const lockSet = once(() => import('./lock-set'), 'lock set')
export const counterOps = once(() => import('./counter-ops'), 'counter')
