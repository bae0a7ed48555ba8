/**
 * What knows which clients are alive — liveness (./liveness: this page's
 * registrations, the waits for others' ends) and the reaper (./reaper:
 * dead clients' entries ended for every reader) — in one chunk that a store
 * loads when it is made (see `IndexedDbStore` in ./index), not at a page's
 * start.
 *
 * @module
 */
export { Liveness } from './liveness'
export { Reaper } from './reaper'
