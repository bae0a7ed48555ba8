/**
 * The README's node examples run as written, against a node process: the
 * ```ts blocks of "## The zaris node" that connect to zaris://localhost:7861
 * (which test/readme leaves to this test) get the port of a node started
 * here, and must exit by themselves with output.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { readme, runSnippet, tsBlocks } from '../readme/snippets'
import { startNode, type NodeProcess } from './node-process'

const blocks = tsBlocks(readme('The zaris node')).filter((code) => code.includes('zaris://localhost:7861'))
let node: NodeProcess

beforeAll(async () => {
  node = await startNode()
})
afterAll(async () => {
  await node?.stop()
})

test('the node section has examples that need a node', () => {
  expect(blocks.length).toBeGreaterThanOrEqual(1)
})

blocks.forEach((code, i) => {
  test(`node example ${i + 1} runs against a node and exits by itself`, async () => {
    const { stdout, stderr } = await runSnippet(code.replaceAll('zaris://localhost:7861', `zaris://127.0.0.1:${node.port}`) + "\nconsole.log('ok')\n")
    expect(stderr).toBe('')
    expect(stdout.trim()).toBe('ok')
    const status = await fetch(`${node.url}/v1/demo/get`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"key":"report:status"}' })
    expect((await status.json()).entry?.value).toBe('running')
  }, 30_000)
})
