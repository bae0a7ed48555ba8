/**
 * A page's waiting commits, answered on its watch stream.
 *
 * A browser gives all the pages of an origin six HTTP/1.1 connections to a
 * node, and each page's client keeps one for its watch stream. A take that
 * waited at the node inside its POST held another for seconds: four tabs
 * filled all six, and every other request of every tab queued. So a page
 * sends a waiting commit with `answerOn`, naming its filtered stream: a
 * node that parks it answers the POST `{ parked: true }` at once, keeps it
 * parked (handed over in the release's own step, as for any client), and
 * sends its outcome on that stream as an `answer` event.
 *
 * An outcome that does not come (the stream broke, which drops the park at
 * the node, or nothing came in time) is asked for again with the commit's
 * request id: the node answers a retry with the commit's first outcome, so
 * a grant made just before the stream broke is not lost.
 *
 * @module
 */
import type { CommitResult } from '../../core/contract/adapter'
import { errorFromJSON, ZarisError } from '../../core/contract/errors'
import { readCommit, readError } from './answers'
import { plainOf, type CommitBody } from './waiting'
import type { WatchHub } from './watch-hub'

/** What a page's waiting commit needs from its adapter. */
export interface StreamedContext {
  /** The adapter's watch hub (made on first use). */
  hub(): WatchHub
  /** `POST commit` with `body`, read by `read`. */
  commit<T>(body: CommitBody, read: (json: unknown) => T): Promise<T>
  /** Ms an answer may take past the wait (the adapter's `timeout`). */
  timeoutMs: number
  /** The node refused `answerOn` (it is older): stop asking it to wait. */
  older(): void
  /** Whether a refusal's message is of other ways (`orElse`): if so, none is sent again (the client's `#noOtherWays`). */
  noOtherWays(refused: string): boolean
}

/** What `POST commit` answers for a commit that parked with its outcome due on a stream. */
const PARKED = 0

/** The outcome told on the stream: the commit's result, its error, or `undefined` for "ask the node". */
type Told = CommitResult | Error | undefined

/** The waiting commits of one adapter in a page, whose outcome is due on its watch stream. */
export class StreamAnswers {
  readonly #ctx: StreamedContext
  /** By request id: set before the commit is sent, since the stream (another connection) may bring it before the POST's answer. */
  readonly #pending = new Map<string, (told: Told) => void>()

  constructor(ctx: StreamedContext) {
    this.#ctx = ctx
  }

  /**
   * Commits `body`, which may wait `wait` ms at the node: joins the shared
   * watch stream (a watch of a checked key keeps it open), names it in
   * `answerOn`, and waits there for the outcome of a commit the node parked.
   */
  async commit(body: CommitBody, wait: number): Promise<CommitResult> {
    const ctx = this.#ctx
    const id = body.requestId
    const plain = plainOf(body)
    let settle!: (told: Told) => void
    const told = new Promise<Told>((resolve) => (settle = resolve))
    const lose = () => settle(undefined)
    this.#pending.set(id, settle)
    let unwatch: (() => void) | undefined
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      const hub = ctx.hub()
      unwatch = await hub.watch(body.checks[0]!.key, { event() {}, error: lose, reconnecting: lose }).catch(() => undefined)
      const answerOn = hub.answerTo
      const first = answerOn
        ? await ctx.commit({ ...body, answerOn }, readParked).catch((err: unknown) => {
            const refused = err instanceof ZarisError && err.code === 'INVALID_ARGUMENT' ? err.message : ''
            if (refused.includes('answerOn')) ctx.older()
            else if (!(body.orElse && ctx.noOtherWays(refused))) throw err
          })
        : undefined
      // No stream to name (a node that does not filter streams), or a node that refused a field: no wait.
      if (first === undefined) return await ctx.commit(plain, readCommit)
      if (first !== PARKED) return first
      timer = setTimeout(lose, wait + ctx.timeoutMs)
      const r = await told
      if (r instanceof Error) throw r
      // Nothing came on the stream: the node answers the same request id with the commit's outcome.
      return r ?? (await ctx.commit(plain, readCommit))
    } finally {
      clearTimeout(timer)
      this.#pending.delete(id)
      unwatch?.()
    }
  }

  /** An `answer` event's data. One that does not parse is taken as lost: the commit is asked for again. */
  told(json: unknown): void {
    const { requestId, result, error } = (json ?? {}) as { requestId?: unknown; result?: unknown; error?: unknown }
    const settle = this.#pending.get(requestId as string)
    if (!settle) return
    try {
      // (No error, or one not of a node's shape: read as a result, which asks again if it is none.)
      const wire = readError({ error })
      settle(wire ? errorFromJSON(wire) : readCommit(result))
    } catch {
      settle(undefined)
    }
  }
}

/** Reads a commit's answer, or `{ parked: true }`. */
function readParked(json: unknown): CommitResult | typeof PARKED {
  return (json as { parked?: unknown } | null)?.parked === true ? PARKED : readCommit(json)
}
