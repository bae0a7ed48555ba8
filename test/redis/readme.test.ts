/**
 * The examples of the README's "Redis" section run as written, each as its
 * own Node process, against a real redis-server (for `redis://127.0.0.1:6379`)
 * and a real three-node Redis Cluster (for port 7000); only the addresses are
 * replaced. Each must print something, write nothing to stderr and exit by
 * itself.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { readme, runSnippet, tsBlocks } from '../readme/snippets'
import { RedisCluster, startRedis, type RedisServer } from './server'

const blocks = tsBlocks(readme('Redis'))

let server: RedisServer
let cluster: RedisCluster
beforeAll(async () => {
  ;[server, cluster] = await Promise.all([startRedis(), RedisCluster.start(3)])
})
afterAll(async () => {
  await Promise.all([server?.dispose(), cluster?.dispose()])
})

describe('README: Redis', () => {
  test('the section has its examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(2)
  })
  blocks.forEach((code, i) => {
    test(`example ${i + 1}`, async () => {
      const local = code.replaceAll('127.0.0.1:6379', `127.0.0.1:${server.port}`).replaceAll('port: 7000', `port: ${cluster.nodes[0]!.port}`)
      expect(local).not.toBe(code)
      const { stdout, stderr } = await runSnippet(local)
      expect(stderr).toBe('')
      expect(stdout.trim()).not.toBe('')
    }, 30_000)
  })
})
