/**
 * Where the Redis adapter's parked commits are answered (handover.ts): one
 * pub/sub connection per namespace and connection, subscribed to a channel
 * of its own, on which the script that lets a parked commit through (or
 * answers its failure) publishes the answer. A waiter is registered before
 * its commit is sent, since the answer may come before the commit's own
 * reply; an answer lost with the connection is found by the adapter's
 * `unpark` at the waiter's deadline (answers are kept under request ids).
 *
 * @module
 */
import { randomHex } from '../../core/contract/ids'
import { SocketHold, type SharedConnection } from './connection'
import type { RedisLink } from './link'

/** An answer as the script published it: Redis's time (µs) and the answer's text (handover.ts). */
export interface ParkAnswer {
  now: number
  text: string
}

/** Most answers kept for waiters not yet registered (an answer that overtook its commit's reply). */
const EARLY = 1_024

export class ParkedAnswers {
  /** The channel this space's parked commits are answered on. */
  readonly channel: string
  readonly #connection: SharedConnection
  readonly #waiting = new Map<string, (answer: ParkAnswer | undefined) => void>()
  readonly #early = new Map<string, ParkAnswer>()
  #sub: RedisLink | undefined
  #hold: SocketHold | undefined
  #subscribed: Promise<void> | undefined

  constructor(connection: SharedConnection, namespace: string) {
    this.#connection = connection
    this.channel = `zaris:{${namespace}}:park:${randomHex(12)}`
  }

  /** Resolves once the channel is subscribed (a commit that may park is sent only then). */
  ready(): Promise<void> {
    this.#subscribed ??= this.#subscribe().catch((err: unknown) => {
      this.#subscribed = undefined
      throw err
    })
    return this.#subscribed
  }

  /**
   * Registers a waiter for the answer of `requestId`: `answer` resolves it
   * (or `undefined` once `cancel` is called: the waiter unparks instead).
   */
  expect(requestId: string): { answer: Promise<ParkAnswer | undefined>; cancel(): void } {
    let resolve!: (a: ParkAnswer | undefined) => void
    const answer = new Promise<ParkAnswer | undefined>((r) => (resolve = r))
    const early = this.#early.get(requestId)
    if (early) {
      this.#early.delete(requestId)
      resolve(early)
      return { answer, cancel() {} }
    }
    this.#waiting.set(requestId, resolve)
    if (this.#waiting.size === 1) this.#hold?.hold()
    const done = () => {
      if (this.#waiting.delete(requestId) && this.#waiting.size === 0) this.#hold?.release()
    }
    void answer.then(done)
    return { answer, cancel: () => resolve(undefined) }
  }

  close(): void {
    for (const resolve of this.#waiting.values()) resolve(undefined)
    this.#sub?.destroy()
  }

  async #subscribe(): Promise<void> {
    // A connection of its own: a subscribed connection runs no other commands.
    const sub = this.#connection.link.duplicate()
    this.#sub = sub
    if (this.#connection.owned) this.#hold = new SocketHold(sub)
    await sub.subscribe(this.channel, (message) => this.#received(message))
  }

  /** `<now> <length> <request id><answer>` */
  #received(message: string): void {
    const a = message.indexOf(' ')
    const b = message.indexOf(' ', a + 1)
    const length = Number(message.slice(a + 1, b))
    const requestId = message.slice(b + 1, b + 1 + length)
    const answer = { now: Number(message.slice(0, a)), text: message.slice(b + 1 + length) }
    const resolve = this.#waiting.get(requestId)
    if (resolve) return resolve(answer)
    this.#early.set(requestId, answer)
    if (this.#early.size > EARLY) this.#early.delete(this.#early.keys().next().value!)
  }
}
