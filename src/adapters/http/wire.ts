/**
 * The protocol's names that both ends use and that need no schema: paths,
 * SSE event names, the framed connection's token and limits. Kept apart from
 * `./protocol` (the zod schemas the node validates requests with) so the
 * client, which reads answers with `./answers`, never loads zod.
 *
 * @module
 */

/** The path prefix of this version of the protocol. */
export const API_PREFIX = '/v1'

/** Namespaces on the wire follow the connection-string rule. */
export const NAMESPACE_PATTERN = /^[A-Za-z0-9._~-]{1,128}$/

/** The SSE event names a watch stream uses besides plain change events. */
export const SSE_READY = 'ready'
export const SSE_ERROR = 'error'
/**
 * On a filtered stream: `{ revision }`, every change up to it under the
 * stream's prefixes has been sent (a quiet stream's resume point moves on).
 */
export const SSE_PROGRESS = 'progress'
/**
 * `{ requestId, result }` or `{ requestId, error }`: the answer of a commit
 * sent with `answerOn` naming this stream, which the node parked (its POST
 * was answered `{ parked: true }`).
 */
export const SSE_ANSWER = 'answer'

/** Most prefixes one filtered watch stream follows (more: TOO_LARGE). */
export const FILTER_MAX_PREFIXES = 64
/** Most UTF-16 code units, summed over its prefixes, one filtered watch stream follows (more: TOO_LARGE). */
export const FILTER_MAX_CHARS = 4_096

/** The `Upgrade` token of the framed protocol, and the path that accepts it. */
export const FRAMES_PROTOCOL = 'zaris-frames/1'
export const FRAMES_PATH = `${API_PREFIX}/frames`
/** Bytes a request frame may hold beyond the body limit: its envelope. */
export const FRAME_ENVELOPE_BYTES = 1024
/** Most requests in flight on one framed connection. */
export const FRAMES_MAX_PENDING = 256
/** A header of the 101 answer: ms after which the node closes a framed connection that sent nothing; the client pings within it. */
export const FRAMES_IDLE_HEADER = 'zaris-idle-timeout'
/** The path of a ping frame: answered `{}` at once, it keeps an idle framed connection open. */
export const FRAMES_PING_PATH = `${API_PREFIX}/ping`

/**
 * The longest prefix every one of `prefixes` starts with (a filtered
 * stream's set collapsed to one), never ending inside a surrogate pair: the
 * store's prefix rule wants well-formed strings.
 */
export function commonPrefix(prefixes: readonly string[]): string {
  let c = prefixes[0] ?? ''
  for (const p of prefixes) {
    let i = 0
    while (i < c.length && i < p.length && c.charCodeAt(i) === p.charCodeAt(i)) i++
    c = c.slice(0, i)
  }
  const last = c.charCodeAt(c.length - 1)
  return last >= 0xd800 && last <= 0xdbff ? c.slice(0, -1) : c
}
