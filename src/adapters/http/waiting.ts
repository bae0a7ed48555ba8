/**
 * A commit that may wait at the node, as the HTTP adapter sends it: its
 * body on the wire (protocol.ts has the node's schema; this chunk carries
 * no zod), the capabilities a node is taken to have, and the `waitChange`
 * the adapter asks for.
 *
 * @module
 */
import type { Capabilities, Check, CommitOptions, Op } from '../../core/contract/adapter'

/** A commit's body on the wire (protocol.ts has its schema; this chunk carries no zod). */
export interface CommitBody {
  checks: Check[]
  ops: Op[]
  requestId: string
  seen?: number
  waitChange?: number
  /** These three go together (CommitOptions.keepParked): a node that knows one knows all. */
  keepParked?: boolean
  parkOrder?: number
  wakeOwner?: string
  /** With keepParked, to a node whose store takes other ways (CommitOptions.orElse); one that refuses it never gets it again. */
  orElse?: CommitOptions['orElse']
  /** A page's filtered watch stream on the node its outcome goes to if it parks (./stream-answers). */
  answerOn?: string
}

export const ON_CHANGE: Capabilities = Object.freeze({ commitOnChange: true })
export const ON_CHANGE_KEEP: Capabilities = Object.freeze({ commitOnChange: true, keepParked: true })
/** A node whose store chooses among other ways in one step (memory, `--data`, Redis), until it refuses them. */
export const ON_CHANGE_KEEP_OR: Capabilities = Object.freeze({ commitOnChange: true, keepParked: true, orElse: true })
export const NONE: Capabilities = Object.freeze({})

/** The commit itself, tried once as a plain commit (what a node that refused a waiting field is sent). */
export function plainOf(body: CommitBody): CommitBody {
  return { checks: body.checks, ops: body.ops, requestId: body.requestId, seen: body.seen }
}

/** The most ms a commit asks a node to wait (nodes cut it to their own bound, 30 s by default). */
const MAX_WAIT_CHANGE = 30_000

/** A `waitChange` option as sent: a whole number of ms; none, 0 or below, or NaN: not above 0 (no wait). */
export function waitOf(ms: number | undefined): number {
  return Math.min(Math.ceil(ms ?? 0), MAX_WAIT_CHANGE)
}
