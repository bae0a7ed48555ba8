/**
 * `zaris/testing`: helpers for testing code that uses zaris.
 *
 * @module
 */
export { ManualClock } from './core/time/manual-clock'
