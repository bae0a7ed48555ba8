/**
 * The answers of recent commits by request id, for a store in this process
 * or page (memory, IndexedDB): a commit sent again with its id is answered
 * as the first time, not applied twice (the contract's request-id rule).
 * Only applied commits are kept (a refused one wrote nothing, so trying it
 * again is safe), the last {@link MAX_ANSWERS}: a retry comes within
 * seconds. Two functions over a Map, small for a page's first load.
 *
 * @module
 */
import type { CommitResult } from '../../core/contract/adapter'

/** How many answers a store keeps. */
export const MAX_ANSWERS = 1_000

/** Answers by request id, oldest first. */
export type Answers = Map<string, CommitResult>

/** The answer kept for `id`, as a copy the caller may change; undefined when none is. */
export function answerOf(answers: Answers, id: string | undefined): CommitResult | undefined {
  const kept = id === undefined ? undefined : answers.get(id)
  return kept && structuredClone(kept)
}

/** Keeps a copy of `answer` under `id` if its commit applied; past {@link MAX_ANSWERS}, the oldest goes. */
export function keepAnswer(answers: Answers, id: string | undefined, answer: CommitResult): void {
  if (id === undefined || !answer.ok) return
  answers.set(id, structuredClone(answer))
  if (answers.size > MAX_ANSWERS) answers.delete(answers.keys().next().value!)
}
