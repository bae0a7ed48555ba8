/**
 * The hash spans carry in place of a key with `keys: 'hash'`.
 *
 * @module
 */

/**
 * A key's hash for `zaris.key.hash`: 53 bits of cyrb53 as 14 hex digits.
 * Stable across processes and runtimes (no salt), so spans of one key match
 * wherever they come from; not a secret: a key that can be guessed can be
 * hashed and compared.
 *
 * @example
 * hashKey('lock:customer-4711') // 14 hex digits, the same in every process
 */
export function hashKey(key: string): string {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, '0')
}
