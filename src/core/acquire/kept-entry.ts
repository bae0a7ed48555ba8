/**
 * A reserved entry this client keeps alive while it waits — a place in a
 * wait line, an exclusive waiter's intent: written only where no live entry
 * is, renewed at a third of its TTL, deleted (if still its own life) when
 * the client lets go. An entry whose renewals fail simply expires; one whose
 * client died expires, or is ended at once by a store that can tell.
 *
 * @module
 */
import type { Entry, Value } from '../contract/adapter'
import type { TimerHandle } from '../time/clock'
import type { Context } from '../context'

export class KeptEntry {
  readonly #ctx: Context
  readonly #key: string
  readonly #value: Value
  readonly #ttl: number
  #entry: Entry | undefined
  #renewal: TimerHandle | undefined
  #left = false

  constructor(ctx: Context, key: string, value: Value, ttl: number) {
    this.#ctx = ctx
    this.#key = key
    this.#value = value
    this.#ttl = ttl
  }

  /** The entry while this client keeps it. */
  get entry(): Entry | undefined {
    return this.#entry
  }

  /**
   * Writes the entry if no live entry has the key: resolves it, or resolves
   * `undefined` with the entry that has the key (someone else's, or ours from before).
   */
  async take(): Promise<{ entry: Entry } | { entry: undefined; other: Entry | undefined }> {
    const sentAt = this.#ctx.clock.now()
    const r = await this.#ctx.adapter.commit([{ key: this.#key, revision: null }], [this.#set()])
    if (!r.ok) return { entry: undefined, other: r.failed[0]?.entry }
    this.#entry = r.entries[0]!
    if (this.#left) this.leave()
    else this.#scheduleRenewal(sentAt)
    return { entry: this.#entry }
  }

  /** Forget the entry (the store says it is gone). */
  lost(): void {
    this.#entry = undefined
  }

  /** Stops renewing and deletes the entry if it is still this one's life (best effort: else it expires). */
  leave(): void {
    this.#left = true
    if (this.#renewal !== undefined) this.#ctx.clock.clearTimeout(this.#renewal)
    const entry = this.#entry
    this.#entry = undefined
    if (entry) this.#ctx.adapter.commit([{ key: entry.key, created: entry.created }], [{ type: 'delete', key: entry.key }]).catch(() => {})
  }

  #set() {
    return { type: 'set' as const, key: this.#key, value: this.#value, ttl: this.#ttl, owner: this.#ctx.id }
  }

  /** The next renewal, a third of the TTL after `sentAt` (when the last write was sent: its round trip does not stretch the period). */
  #scheduleRenewal(sentAt: number): void {
    const clock = this.#ctx.clock
    if (this.#renewal !== undefined) clock.clearTimeout(this.#renewal)
    this.#renewal = clock.setTimeout(() => {
      this.#renewal = undefined
      const entry = this.#entry
      if (!entry || this.#left) return
      const sent = clock.now()
      this.#ctx.adapter.commit([{ key: entry.key, created: entry.created }], [this.#set()]).then(
        (r) => {
          if (this.#entry !== entry) return
          this.#entry = r.ok ? r.entries[0]! : undefined
          if (!this.#left && this.#entry) this.#scheduleRenewal(sent)
        },
        () => {
          // Not applied (or not known): try again a third of the TTL after this failure.
          if (!this.#left && this.#entry === entry) this.#scheduleRenewal(clock.now())
        },
      )
    }, sentAt + this.#ttl / 3 - clock.now())
  }
}
