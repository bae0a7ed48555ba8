/**
 * One real redis-server for a test file of parked commits (handover.test.ts,
 * permit-handover.test.ts): started before its tests, with a raw connection
 * to read the store's hashes, and adapters of a fresh namespace, each on a
 * connection of its own as clients of different processes are.
 */
import Redis from 'ioredis'
import { afterAll, beforeAll } from 'vitest'
import type { Check, CommitResult, Op } from 'zaris'
import { redisAdapter, type RedisAdapter } from 'zaris/redis'
import { startRedis, type RedisServer } from './server'

export const set = (key: string, owner: string, ttl = 60_000): Op => ({ type: 'set', key, value: null, owner, ttl })
export const del = (key: string): Op => ({ type: 'delete', key })
export const absent = (key: string): Check => ({ key, revision: null })
export const life = (key: string, created: number): Check => ({ key, created })
export const ok = (r: CommitResult) => r as Extract<CommitResult, { ok: true }>

export interface ParkedFixture {
  /** A raw connection (set once the server is up). */
  readonly raw: Redis
  /** A fresh namespace's name. */
  fresh(): string
  /** `count` adapters of one fresh namespace. */
  adapters(count: number): Promise<{ ns: string; all: RedisAdapter[] }>
}

/** Registers the server's start and stop with the file's hooks. */
export function parkedFixture(prefix: string): ParkedFixture {
  let server: RedisServer | undefined
  let raw: Redis | undefined
  const opened: Redis[] = []
  let n = 0
  beforeAll(async () => {
    server = await startRedis()
    raw = new Redis(server.port, '127.0.0.1')
  })
  afterAll(async () => {
    raw?.disconnect()
    for (const c of opened) c.disconnect()
    await server?.dispose()
  })
  const fresh = () => `${prefix}${++n}-${Math.random().toString(36).slice(2, 8)}`
  return {
    get raw() {
      return raw!
    },
    fresh,
    async adapters(count) {
      const ns = fresh()
      // Each its own connection (the adapter leaves a connection it was given open).
      const client = () => {
        const c = new Redis(server!.port, '127.0.0.1')
        c.on('error', () => {})
        opened.push(c)
        return c
      }
      return { ns, all: await Promise.all(Array.from({ length: count }, () => redisAdapter({ client: client(), namespace: ns }))) }
    },
  }
}
