/**
 * The examples of README.md and docs/*.md that use Redis run as written,
 * each as its own Node process, against a real redis-server (for
 * `redis://127.0.0.1:6379`) and a real three-node Redis Cluster (for port
 * 7000); only the addresses are replaced. Each must print something, write
 * nothing to stderr and exit by itself.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { blocksFor, runSnippet, titleOf } from '../readme/snippets'
import { RedisCluster, startRedis, type RedisServer } from './server'

const blocks = blocksFor('redis')

let server: RedisServer
let cluster: RedisCluster
beforeAll(async () => {
  ;[server, cluster] = await Promise.all([startRedis(), RedisCluster.start(3)])
})
afterAll(async () => {
  await Promise.all([server?.dispose(), cluster?.dispose()])
})

describe('README and docs: Redis', () => {
  test('there are Redis examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(2)
  })
  test.each(blocks.map((b) => ({ title: titleOf(b), block: b })))('$title', async ({ block }) => {
    const local = block.code.replaceAll('127.0.0.1:6379', `127.0.0.1:${server.port}`).replaceAll('port: 7000', `port: ${cluster.nodes[0]!.port}`)
    expect(local, 'the example names a Redis this test can replace').not.toBe(block.code)
    const { stdout, stderr } = await runSnippet(local)
    expect(stderr).toBe('')
    expect(stdout.trim()).not.toBe('')
  }, 30_000)
})
