/**
 * Two zaris nodes in front of one real redis-server, eight client processes
 * (four on each node) x 100 rounds on one lock: every fenced write the store
 * accepted carries a larger token than the write accepted before it. One
 * node reaches Redis through ioredis, the other through node-redis: both
 * libraries on one store at once.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connect } from 'zaris'
import { RedisServer } from '../redis/server'
import { bundle } from './cli-bundle'
import { root, startNode, type NodeProcess } from './node-process'

const run = promisify(execFile)
const PROCESSES = 8
const ROUNDS = 100
let redis: RedisServer
const nodes: NodeProcess[] = []

beforeAll(async () => {
  redis = await new RedisServer().start()
  for (const library of ['ioredis', 'redis']) nodes.push(await startNode(['--redis', `redis://127.0.0.1:${redis.port}/0?client=${library}`]))
}, 60_000)
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()))
  await redis?.dispose()
})

test(`${PROCESSES} processes x ${ROUNDS} rounds through two nodes on one Redis: accepted fenced writes have rising tokens`, async () => {
  // Bundled once per state of the sources (cli-bundle.ts): the processes start at once, and tsx's start took a core-second each.
  const contender = bundle('zaris-contend', ['test/server/fixtures/contend.ts'], ['test/server/fixtures'])['test/server/fixtures/contend.ts']!
  const started = Date.now()
  const outputs = await Promise.all(
    Array.from({ length: PROCESSES }, (_, i) => {
      const node = nodes[i % 2]!
      const url = `zaris://127.0.0.1:${node.port}/contention`
      return run(process.execPath, [contender, url, String(ROUNDS), `p${i}`], { cwd: root, timeout: 240_000 })
    }),
  )
  const results = outputs.map((o) => JSON.parse(o.stdout.trim().split('\n').pop()!) as { id: string; accepted: Array<{ token: number; revision: number }>; refused: number })
  const writes = results.flatMap((r) => r.accepted).sort((a, b) => a.revision - b.revision)
  console.log(`redis contention: ${writes.length} accepted fenced writes, ${results.reduce((n, r) => n + r.refused, 0)} refused, in ${Date.now() - started} ms`)
  // Nothing was held past its TTL here, so every write was accepted, each by a different holder.
  expect(writes).toHaveLength(PROCESSES * ROUNDS)
  for (let i = 1; i < writes.length; i++) expect(writes[i]!.token).toBeGreaterThan(writes[i - 1]!.token)
  // Every process made progress through its node.
  expect(results.every((r) => r.accepted.length + r.refused === ROUNDS)).toBe(true)
  const client = await connect(`zaris://127.0.0.1:${nodes[0]!.port}/contention`)
  expect(((await client.get('resource'))?.value as { token: number }).token).toBe(writes.at(-1)!.token)
  await client.close()
}, 300_000)
