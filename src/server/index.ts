/**
 * `zaris/server`: the zaris node, to embed. `createHandler` is a
 * web-standard fetch handler around any adapter; `listen` serves it from
 * Node; `memoryBackend` and `sqliteBackend` are the stores `zaris serve` uses.
 *
 * @example
 * import { createHandler, listen, memoryBackend } from 'zaris/server'
 * const backend = memoryBackend()
 * const node = await listen(createHandler({ adapterFor: backend.adapterFor, positionOf: backend.positionOf }), { port: 7861 })
 *
 * @module
 */
export { createHandler } from './handler'
export type { Handler } from './handler'
export { loopbackHosts } from './options'
export type { HandlerOptions, StorePosition } from './options'
export type { Exchange, Reply, StreamSink } from './reply'
export type { FrameAnswer, FrameSession, UpgradeOutcome } from './frame-session'
export { listen } from './node'
export type { ListenOptions, Listening } from './node'
export { etcdBackend, memoryBackend, redisBackend, sqliteBackend } from './backends'
export type { Backend } from './backends'
export { Metrics } from './metrics'
export type { ReplayCacheOptions } from './replay-cache'
