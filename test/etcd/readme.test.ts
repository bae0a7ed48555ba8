/**
 * The examples of README.md and docs/*.md that use etcd run as written, each
 * as its own Node process, against a real etcd member (for
 * `127.0.0.1:2379`); only the address is replaced. Each must print
 * something, write nothing to stderr and exit by itself.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { blocksFor, runSnippet, titleOf } from '../readme/snippets'
import { EtcdCluster } from './server'

const blocks = blocksFor('etcd')

let etcd: EtcdCluster
beforeAll(async () => {
  etcd = await EtcdCluster.start(1)
})
afterAll(async () => {
  await etcd?.dispose()
})

describe('README and docs: etcd', () => {
  test('there are etcd examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(1)
  })
  test.each(blocks.map((b) => ({ title: titleOf(b), block: b })))('$title', async ({ block }) => {
    const local = block.code.replaceAll('127.0.0.1:2379', etcd.members[0]!.endpoint)
    expect(local, 'the example names an etcd this test can replace').not.toBe(block.code)
    const { stdout, stderr } = await runSnippet(local)
    expect(stderr).toBe('')
    expect(stdout.trim()).not.toBe('')
  }, 30_000)
})
