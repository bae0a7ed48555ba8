/**
 * `zaris/http`: the adapter for zaris nodes, with its transports and wire protocol.
 *
 * @example
 * import { Client } from 'zaris'
 * import { httpAdapter } from 'zaris/http'
 * const client = new Client(httpAdapter({ endpoints: ['http://127.0.0.1:7861'], namespace: 'demo', token }))
 *
 * @module
 */
export { httpAdapter } from './client'
export type { HttpAdapterOptions } from './client'
export { fetchTransport } from './transport'
export type { Transport, TransportRequest, TransportResponse } from './transport'
export { nodeTransport } from './node-transport'
export type { NodeTransportOptions } from './node-transport'
