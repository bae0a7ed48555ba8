/**
 * The examples of the README's "Redis" section run as written, each as its
 * own Node process, against a real redis-server (for `redis://127.0.0.1:6379`)
 * and a real three-node Redis Cluster (for port 7000); only the addresses are
 * replaced. Each must print something, write nothing to stderr and exit by
 * itself.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { RedisCluster, startRedis, type RedisServer } from './server'

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '../..')
const readme = readFileSync(join(root, 'README.md'), 'utf8')
const section = readme.slice(readme.indexOf('\n## Redis\n'), readme.indexOf('\n## ', readme.indexOf('\n## Redis\n') + 1))
const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!)

let server: RedisServer
let cluster: RedisCluster
// Inside the repo, so that 'zaris' resolves to the source through tsconfig paths.
const dir = mkdtempSync(join(root, 'test/redis/.run-'))
beforeAll(async () => {
  ;[server, cluster] = await Promise.all([startRedis(), RedisCluster.start(3)])
})
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true })
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
      const file = join(dir, `example-${i}.ts`)
      writeFileSync(file, local)
      const { stdout, stderr } = await run('npx', ['tsx', file], { cwd: root, timeout: 20_000 })
      expect(stderr).toBe('')
      expect(stdout.trim()).not.toBe('')
    }, 30_000)
  })
})
