/**
 * `client.watch`: a store's changes as an async iterable.
 *
 * The subscription starts when `watch()` is called (await `ready` to know it
 * is established), so nothing is missed between the call and the first
 * `next()`. Events arrive in revision order; the iterator drops any revision
 * it has already delivered, as a second line of defence. Events are buffered
 * without bound until read: read them, or close the watch.
 *
 * @module
 */
import type { Unsubscribe, WatchEvent } from './contract/adapter'
import type { Context } from './context'
import { keepAlive } from './time/keep-alive'
import { isReservedKey } from './contract/reserved'
import { checkBoolean, checkUserKey, checkOptions, checkPrefix, checkRevision, checkSignal } from './contract/validate'

/** Options of `client.watch`. */
export interface WatchOptions {
  /** Watch every key that starts with the given string, not just that key. */
  prefix?: boolean
  /** Ends the iteration quietly when aborted. */
  signal?: AbortSignal
  /**
   * Deliver every event after this revision first. Rejects the iteration with
   * a `CompactedError` when the store no longer keeps history that old.
   */
  fromRevision?: number
}

/**
 * A running watch: iterate it with `for await`, `close()` it when done.
 *
 * @example
 * const watch = client.watch('lock:', { prefix: true })
 * await watch.ready
 * for await (const ev of watch) console.log(ev.type, ev.key, ev.revision)
 */
export class Watch implements AsyncIterableIterator<WatchEvent>, AsyncDisposable {
  /** Resolves once the store delivers every later event to this watch; rejects if it cannot. */
  readonly ready: Promise<void>

  readonly #ctx: Context
  readonly #key: string
  readonly #prefix: boolean
  readonly #signal: AbortSignal | undefined
  #queue: WatchEvent[] = []
  #waiting: ((r: IteratorResult<WatchEvent>) => void) | undefined
  #failWaiting: ((e: unknown) => void) | undefined
  #error: unknown
  #done = false
  #last = -1
  /** Keys already delivered at revision `#last`: one commit may change several keys. */
  #lastKeys = new Set<string>()
  #unsubscribe: Unsubscribe | undefined
  #letGo: () => void = () => {}

  /** @internal Created by `client.watch`. */
  constructor(ctx: Context, key: string, rawOptions?: WatchOptions) {
    const options = checkOptions<WatchOptions>(rawOptions)
    this.#prefix = checkBoolean(options.prefix, 'prefix') ?? false
    this.#key = this.#prefix ? checkPrefix(key) : checkUserKey(key)
    this.#signal = checkSignal(options.signal)
    const from = options.fromRevision === undefined ? undefined : (checkRevision(options.fromRevision, 'fromRevision') ?? undefined)
    ctx.assertOpen()
    this.#ctx = ctx
    ctx.open.add(this)
    this.#letGo = keepAlive()
    const onAbort = () => this.close()
    this.#signal?.addEventListener('abort', onAbort, { once: true })
    if (this.#signal?.aborted) this.close()

    const sink = { event: (ev: WatchEvent) => this.#push(ev), error: (err: Error) => this.#fail(err) }
    this.ready = ctx.adapter.watch(this.#key, sink, from).then(
      (unsubscribe) => {
        if (this.#done) unsubscribe()
        else this.#unsubscribe = unsubscribe
      },
      (err) => {
        this.#fail(err)
        throw err
      },
    )
    // A watch nobody awaits `ready` on must not raise an unhandled rejection; the iterator reports it.
    this.ready.catch(() => {})
  }

  /** The next event; waits for one. Rejects when the watch failed (for example `CompactedError`). */
  next(): Promise<IteratorResult<WatchEvent>> {
    const ev = this.#queue.shift()
    if (ev) return Promise.resolve({ value: ev, done: false })
    if (this.#error !== undefined) {
      const err = this.#error
      this.#error = undefined
      return Promise.reject(err)
    }
    if (this.#done) return Promise.resolve({ value: undefined, done: true })
    return new Promise((resolve, reject) => {
      this.#waiting = resolve
      this.#failWaiting = reject
    })
  }

  /** Ends the watch (`break` in `for await` calls this). */
  async return(): Promise<IteratorResult<WatchEvent>> {
    this.close()
    return { value: undefined, done: true }
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close()
  }

  /** Ends the watch; a pending `next()` resolves done. */
  close(): void {
    if (this.#done) return
    this.#done = true
    this.#unsubscribe?.()
    this.#ctx.open.delete(this)
    this.#letGo()
    this.#settle({ value: undefined, done: true })
  }

  #push(ev: WatchEvent): void {
    if (this.#done || ev.revision < this.#last || (ev.revision === this.#last && this.#lastKeys.has(ev.key))) return
    if (this.#prefix ? !ev.key.startsWith(this.#key) || isReservedKey(ev.key) : ev.key !== this.#key) return
    if (ev.revision !== this.#last) this.#lastKeys.clear()
    this.#last = ev.revision
    this.#lastKeys.add(ev.key)
    if (this.#waiting) this.#settle({ value: ev, done: false })
    else this.#queue.push(ev)
  }

  #fail(err: unknown): void {
    if (this.#done) return
    this.#done = true
    this.#ctx.open.delete(this)
    this.#letGo()
    if (this.#failWaiting) {
      const reject = this.#failWaiting
      this.#waiting = this.#failWaiting = undefined
      reject(err)
    } else {
      this.#error = err
    }
  }

  #settle(result: IteratorResult<WatchEvent>): void {
    const resolve = this.#waiting
    this.#waiting = this.#failWaiting = undefined
    resolve?.(result)
  }
}
