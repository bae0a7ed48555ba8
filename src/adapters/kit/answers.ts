/**
 * The answers of recent commits by request id, for a store in this process
 * or page (memory, IndexedDB): a commit sent again with its id is answered
 * as the first time, not applied twice (the contract's request-id rule).
 * Only applied commits are kept: a refused one wrote nothing, so trying it
 * again is safe. Bounded by count and age; a retry comes within seconds.
 *
 * @module
 */
import type { CommitResult } from '../../core/contract/adapter'
import { checkRequestId } from '../../core/contract/validate'
import { copyValue } from './write'

/** How many answers are kept, at most. */
const MAX_IDS = 10_000
/** How long an answer is kept (ms): as long as the node's replay cache and the SQLite store keep theirs. */
const MAX_AGE_MS = 10 * 60_000

/**
 * A bounded map from request id to the answer of the commit that carried it.
 *
 * @example
 * const answers = new RequestAnswers(() => performance.now())
 * const result = await answers.answer(options?.requestId, () => store.commit(checks, ops))
 */
export class RequestAnswers {
  readonly #now: () => number
  /** Oldest first (a Map keeps insertion order). */
  readonly #kept = new Map<string, { answer: CommitResult; at: number }>()

  constructor(now: () => number) {
    this.#now = now
  }

  /** The answer kept for `requestId`, or `commit()`'s, kept when it applied. Without an id, just `commit()`. */
  async answer(requestId: string | undefined, commit: () => CommitResult | Promise<CommitResult>): Promise<CommitResult> {
    if (checkRequestId(requestId) === undefined) return commit()
    const kept = this.#kept.get(requestId!)
    if (kept) return copy(kept.answer)
    const answer = await commit()
    if (answer.ok) this.#keep(requestId!, copy(answer))
    return answer
  }

  #keep(id: string, answer: CommitResult): void {
    const now = this.#now()
    this.#kept.set(id, { answer, at: now })
    for (const [old, { at }] of this.#kept) {
      if (this.#kept.size <= MAX_IDS && at > now - MAX_AGE_MS) break
      this.#kept.delete(old)
    }
  }
}

/** A copy of an answer: what a caller does to one cannot change another's. */
function copy(answer: CommitResult): CommitResult {
  if (!answer.ok) return answer
  return { ...answer, entries: answer.entries.map((e) => ({ ...e, value: copyValue(e.value) })), deleted: [...answer.deleted] }
}
