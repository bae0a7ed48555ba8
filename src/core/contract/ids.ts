/**
 * Random ids: a client's id, a store's epoch, a registration's nonce, a
 * request-id prefix. `crypto.getRandomValues` works in every runtime zaris
 * runs in, insecure pages included (`crypto.randomUUID` needs a secure
 * context), so it is the one source.
 *
 * @module
 */

/**
 * `bytes` random bytes as lowercase hex.
 *
 * @example
 * randomHex(9) // '3f0c9a…' (18 digits)
 */
export function randomHex(bytes: number): string {
  const buffer = new Uint8Array(bytes)
  globalThis.crypto.getRandomValues(buffer)
  let hex = ''
  for (const b of buffer) hex += b.toString(16).padStart(2, '0')
  return hex
}

/**
 * A random id: a UUID where the platform makes one (a secure context), else
 * 32 hex digits of the same randomness.
 *
 * @example
 * const id = randomId()
 */
export function randomId(): string {
  const c = globalThis.crypto as { randomUUID?: () => string }
  return typeof c.randomUUID === 'function' ? c.randomUUID() : randomHex(16)
}
