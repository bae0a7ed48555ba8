/**
 * The examples of README.md and docs/*.md that connect to a node
 * (`zaris://localhost:7861/…`) run as written against a node process started
 * here: only the port is replaced. Each must exit by itself without writing
 * to stderr, and must have reached the node (its commit count rose).
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { blocksFor, runSnippet, titleOf } from '../readme/snippets'
import { startNode, type NodeProcess } from './node-process'

const blocks = blocksFor('zaris-node')
let node: NodeProcess

beforeAll(async () => {
  node = await startNode()
})
afterAll(async () => {
  await node?.stop()
})

async function commits(): Promise<number> {
  const text = await (await fetch(`${node.url}/metrics`)).text()
  return Number(/^zaris_commits_total (\d+)$/m.exec(text)?.[1])
}

test('README and docs have examples that need a node', () => {
  expect(blocks.length).toBeGreaterThanOrEqual(2)
})

test.each(blocks.map((b) => ({ title: titleOf(b), block: b })))('$title runs against a node and exits by itself', async ({ block }) => {
  const before = await commits()
  const { stdout, stderr } = await runSnippet(block.code.replaceAll('zaris://localhost:7861', `zaris://127.0.0.1:${node.port}`) + "\nconsole.log('ok')\n")
  expect(stderr).toBe('')
  expect(stdout.trim().split('\n').at(-1)).toBe('ok')
  expect(await commits()).toBeGreaterThan(before)
}, 30_000)
