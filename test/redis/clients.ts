/**
 * The Redis client libraries the tests run the adapter on: ioredis, node-redis
 * (`redis`) and iovalkey. `npm test` runs the Redis suites on ioredis and
 * node-redis ({@link LIBRARIES}) and short checks on iovalkey
 * (clients.test.ts); iovalkey is ioredis's code under another name (one path
 * through the adapter's client layer), and `npm run test:faults` runs the
 * conformance suite (test/long), the model test and the restarts on it too
 * ({@link HEAVY_LIBRARIES}).
 */
import { Cluster as IoredisCluster, Redis as Ioredis } from 'ioredis'
import { Redis as Iovalkey } from 'iovalkey'
import { createClient, createCluster } from 'redis'
import type { RedisClient, RedisLibrary } from 'zaris/redis'

/** The libraries every Redis test runs on in `npm test`. */
export const LIBRARIES: readonly RedisLibrary[] = ['ioredis', 'redis']

/** Every library; `npm run test:faults` (ZARIS_FAULT_SCALE set) runs the heavier suites on each. */
export const ALL_LIBRARIES: readonly RedisLibrary[] = ['ioredis', 'redis', 'iovalkey']

/** The libraries of a heavy suite: {@link LIBRARIES} in `npm test`, all of them in `test:faults`. */
export const HEAVY_LIBRARIES: readonly RedisLibrary[] = process.env.ZARIS_FAULT_SCALE ? ALL_LIBRARIES : LIBRARIES

/** How test names say a library. */
export function named(library: RedisLibrary): string {
  return library === 'redis' ? 'node-redis' : library
}

/** `url` with `client=<library>`: a `redis://` URL that opens its connection with that library. */
export function using(url: string, library: RedisLibrary): string {
  const u = new URL(url)
  u.searchParams.set('client', library)
  return u.toString()
}

/** A client of `library` that a user opened on a local Redis, connected; `close()` ends it. */
export interface UserClient {
  client: RedisClient
  /** PING through it: whether it is still open and working. */
  ping(): Promise<string>
  close(): Promise<void>
}

/** Opens a user's client of `library` on 127.0.0.1:`port`; node-redis options (RESP, typeMapping…) go to `createClient`. */
export async function userClient(library: RedisLibrary, port: number, nodeRedisOptions: Record<string, unknown> = {}): Promise<UserClient> {
  if (library === 'redis') {
    const client = createClient({ url: `redis://127.0.0.1:${port}`, ...nodeRedisOptions })
    client.on('error', () => {})
    await client.connect()
    return { client, ping: () => client.ping(), close: () => client.close() }
  }
  const client = library === 'iovalkey' ? new Iovalkey(port, '127.0.0.1') : new Ioredis(port, '127.0.0.1')
  client.on('error', () => {})
  return { client, ping: () => client.ping(), close: async () => void (await client.quit()) }
}

/** Opens a user's cluster client of `library` (ioredis `Cluster` or node-redis `createCluster`) on `nodes`, connected. */
export async function userCluster(library: 'ioredis' | 'redis', nodes: Array<{ host: string; port: number }>): Promise<UserClient> {
  if (library === 'redis') {
    const cluster = createCluster({ rootNodes: nodes.map((n) => ({ url: `redis://${n.host}:${n.port}` })) })
    cluster.on('error', () => {})
    await cluster.connect()
    return { client: cluster, ping: async () => String(await cluster.sendCommand(undefined, true, ['PING'])), close: () => cluster.close() }
  }
  const cluster = new IoredisCluster(nodes)
  cluster.on('error', () => {})
  return { client: cluster, ping: () => cluster.ping(), close: async () => void (await cluster.quit()) }
}

/** `redis` options that give an adapter a connection of its own (a distinct connection name), in `library`'s words. */
export function apart(library: RedisLibrary, name: string): Record<string, unknown> {
  return library === 'redis' ? { name } : { connectionName: name }
}
