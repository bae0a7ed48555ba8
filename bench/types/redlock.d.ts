/** The part of redlock 4's API the bench uses (the package ships no types). */
declare module 'redlock' {
  import type { EventEmitter } from 'node:events'

  interface Options {
    driftFactor?: number
    retryCount?: number
    retryDelay?: number
    retryJitter?: number
  }
  class Lock {
    resource: string
    value: string
    expiration: number
    unlock(): Promise<void>
  }
  class Redlock extends EventEmitter {
    constructor(clients: unknown[], options?: Options)
    lock(resource: string, ttl: number): Promise<Lock>
  }
  export default Redlock
}
