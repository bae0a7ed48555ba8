/**
 * Bearer-token checking for the node. Both sides are hashed with SHA-256
 * (Web Crypto, so the handler runs outside Node too) and the digests compared
 * in constant time: neither the token's length nor a matching prefix shows in
 * the response time. The token itself is never logged.
 *
 * @module
 */

const encoder = new TextEncoder()

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', encoder.encode(text)))
}

/**
 * Makes a checker for the `Authorization` header value of each request.
 *
 * @example
 * const allowed = bearerChecker('s3cret')
 * await allowed('Bearer s3cret') // true
 */
export function bearerChecker(token: string): (authorization: string | null) => Promise<boolean> {
  const expected = sha256(token)
  return async (authorization) => {
    const match = authorization === null ? null : /^Bearer[ ]+(\S+)\s*$/i.exec(authorization)
    // Hash something even without a token, so a missing header costs the same.
    const given = await sha256(match?.[1] ?? '')
    const want = await expected
    let diff = match ? 0 : 1
    for (let i = 0; i < want.length; i++) diff |= want[i]! ^ given[i]!
    return diff === 0
  }
}
