/**
 * Lock names to zaris keys and back. The Web Locks API takes any DOMString
 * as a name — `''`, lone surrogates (`'\uD800'`, `'\uDC00\uD800'`) — and
 * gives it back unchanged as `lock.name` and in `query()`; a zaris key is
 * well-formed UTF-16 of 1 to 1024 units not starting with U+0001. The map
 * is reversible and leaves the names a store can keep as they are:
 *
 * - A **plain** name — not empty, well-formed, not starting with U+0001,
 *   without U+FFFD — is its own key (so `client.locks.holder(name)` and
 *   `zaris locks` see the same lock).
 * - Any other name is **escaped**: U+FFFD, then the name with every lone
 *   surrogate and every U+FFFD written as U+FFFD and its code unit in four
 *   upper-case hex digits. `''` is `'\uFFFD'`; `'\uD800'` is
 *   `'\uFFFD\uFFFDD800'`; `'a\uFFFDb'` is `'\uFFFDa\uFFFDFFFDb'`.
 *
 * A key that starts with U+FFFD is an escaped name (no plain name does);
 * in its body every U+FFFD starts an escape. An escaped key that is more
 * than 1024 units long with the manager's prefix cannot be a key at all:
 * the request is refused (`INVALID_ARGUMENT`, saying the encoded length).
 *
 * @module
 */
import { isWellFormed } from '../core/contract/validate'

/** What starts an escaped name, and every escape in it: the replacement character, U+FFFD. */
const MARK = '\uFFFD'
const RESERVED = '\u0001'
/** The code units an escaped name writes as escapes: lone surrogates and the mark. */
const NEEDS_ESCAPE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|\uFFFD/g
const ESCAPE = /\uFFFD([0-9A-F]{4})/g

/** Whether `name` is its own key (see the module doc). */
function plain(name: string): boolean {
  return name !== '' && !name.startsWith(RESERVED) && !name.includes(MARK) && isWellFormed(name)
}

/** The key body of lock `name` (the manager's prefix goes before it). */
export function encodeName(name: string): string {
  if (plain(name)) return name
  return MARK + name.replace(NEEDS_ESCAPE, (unit) => MARK + unit.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0'))
}

/** The lock name of key body `body` ({@link encodeName} undone); a body no name encodes to is returned as it is. */
export function decodeName(body: string): string {
  if (!body.startsWith(MARK)) return body
  return body.slice(1).replace(ESCAPE, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
}
