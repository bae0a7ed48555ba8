/**
 * The Node transport in a build for the browser (the `browser` export
 * condition; scripts/browser-variants.ts puts this file in place of
 * `./node-transport`): a page has no `node:http`, so none of the Node
 * transport nor its framed connection is even a chunk of a web app. Asked
 * for anyway (`transport: 'node'`), it says so.
 *
 * @module
 */
import { UnsupportedError } from '../../core/contract/errors'
import type { Transport } from './transport'

/** Options of {@link nodeTransport}. */
export interface NodeTransportOptions {
  /** Send `get`, `list` and `commit` as frames of one persistent connection (default true); false: plain HTTP only. */
  frames?: boolean
}

/**
 * The Node transport, which a page cannot have: it rejects with an `UnsupportedError`.
 *
 * @example
 * const transport = await nodeTransport() // in a page: rejects (UNSUPPORTED); use fetchTransport()
 */
export async function nodeTransport(_options: NodeTransportOptions = {}): Promise<Transport> {
  throw new UnsupportedError("nodeTransport needs Node's node:http; this is zaris's browser build, where the HTTP adapter uses fetchTransport()")
}
