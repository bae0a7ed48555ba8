/**
 * Where a hold lives: which entries must still carry it for the hold to be
 * alive, as one list of checks that renewals, releases and fenced writes all
 * send, and what an event or a read of those keys says about it.
 *
 * - A lock, lease or term lives in its own key's entry: the key must carry
 *   the token (`{ key, created: token }`).
 * - A shared hold lives in its own share entry (U+0001 `s` + key + …) *and*
 *   in its group: the lock key must still carry the group's life, so that a
 *   steal or a plain write over the lock key ends every shared hold at once.
 * - A semaphore's permit lives in its slot entry.
 *
 * @module
 */
import type { Adapter, Check, Entry, Op, Unsubscribe, WatchEvent } from '../contract/adapter'

/**
 * What a fenced write checks: a lock or lease key and the token it must still be held with.
 *
 * @example
 * await client.put('report', 'done', { fence: lock }) // a Lock is a Fence
 */
export interface Fence {
  /** The lock or lease key. */
  readonly key: string
  /** The fencing token the key must still be held with. */
  readonly token: number
}

/** The failed checks of a commit. */
export type Failed = ReadonlyArray<{ key: string; entry: Entry | undefined }>

/** Where a hold lives, when not simply in its key's entry. */
export interface HoldLife {
  /** The key whose entry carries the token. */
  entryKey: string
  /** A key whose life the hold also needs (a shared hold's group: the lock key) and that life's `created`. */
  group?: { key: string; created: number }
  /** A release's other ops (a shared hold: one less in its group's count). */
  releaseOps?: Op[]
  /** After a release the store applied, with the entries it wrote (a shared hold: the last one out ends the group). Never rejects. */
  afterRelease?(entries: Entry[]): Promise<void>
}

/** The life of a hold of `key` with `token`, with its checks. */
export class Life {
  readonly entryKey: string
  readonly checks: Check[]
  readonly #token: number
  readonly #life: HoldLife | undefined

  constructor(key: string, token: number, life: HoldLife | undefined) {
    this.entryKey = life?.entryKey ?? key
    this.#token = token
    this.#life = life
    this.checks = [{ key: this.entryKey, created: token }]
    if (life?.group) this.checks.push({ key: life.group.key, created: life.group.created })
  }

  /** The keys to watch: the entry's, and the group's. */
  get keys(): string[] {
    return this.#life?.group ? [this.entryKey, this.#life.group.key] : [this.entryKey]
  }

  /** The ops of a release. */
  releaseOps(): Op[] {
    return [{ type: 'delete', key: this.entryKey }, ...(this.#life?.releaseOps ?? [])]
  }

  /** Tells the life that a release was applied; resolves once it tidied what it must (`undefined`: nothing to tidy). */
  released(entries: Entry[]): Promise<void> | undefined {
    return this.#life?.afterRelease?.(entries)
  }

  /** Whether `entry`, read at `key` (one of {@link keys}), still carries this hold. */
  carries(key: string, entry: Entry | undefined): boolean {
    return entry?.created === (key === this.entryKey ? this.#token : this.#life?.group?.created)
  }

  /** Of a commit's failed checks, the first that shows this hold gone (with what is there instead). */
  gone(failed: Failed): Failed[number] | undefined {
    return failed.find((f) => this.keys.includes(f.key) && !this.carries(f.key, f.entry))
  }

  /**
   * What an event says: `ignore` (another key, or the group's count moving),
   * `renewed` (a write of this hold's own life), or `ended`.
   */
  judge(ev: WatchEvent): 'ignore' | 'renewed' | 'ended' {
    if (ev.key === this.entryKey) return ev.type === 'put' && ev.created === this.#token ? 'renewed' : 'ended'
    const group = this.#life?.group
    if (!group || ev.key !== group.key) return 'ignore'
    return ev.type === 'put' && ev.created === group.created ? 'ignore' : 'ended'
  }

  /**
   * Watches the life's keys from `from`: `event` for each event, `failed`
   * once if any watch fails (every watch is then ended). Returns the unwatch.
   */
  watch(adapter: Adapter, from: number, event: (ev: WatchEvent) => void, failed: () => void): Unsubscribe {
    const unwatches: Unsubscribe[] = []
    let over = false
    const end = () => {
      over = true
      for (const u of unwatches.splice(0)) u()
    }
    const sink = {
      event,
      error: () => {
        if (over) return
        end()
        failed()
      },
    }
    for (const key of this.keys) {
      adapter.watch(key, sink, from).then(
        (unwatch) => (over ? unwatch() : unwatches.push(unwatch)),
        () => sink.error(),
      )
    }
    return end
  }
}
