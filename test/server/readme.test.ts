/**
 * The README's node examples run as written, against a node process: the
 * ```ts blocks of "## The zaris node" that connect to zaris://localhost:7861
 * (which test/readme leaves to this test) get the port of a node started
 * here, and must exit by themselves with output.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { root, startNode, type NodeProcess } from './node-process'

const run = promisify(execFile)
const readme = readFileSync(join(root, 'README.md'), 'utf8')
const section = readme.slice(readme.indexOf('## The zaris node'), readme.indexOf('\n## ', readme.indexOf('## The zaris node') + 1))
const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((code) => code.includes('zaris://localhost:7861'))
const dir = mkdtempSync(join(root, 'test/server/.run-'))
let node: NodeProcess

beforeAll(async () => {
  node = await startNode()
})
afterAll(async () => {
  await node?.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('the node section has examples that need a node', () => {
  expect(blocks.length).toBeGreaterThanOrEqual(1)
})

blocks.forEach((code, i) => {
  test(`node example ${i + 1} runs against a node and exits by itself`, async () => {
    const file = join(dir, `node-example-${i}.ts`)
    writeFileSync(file, code.replaceAll('zaris://localhost:7861', `zaris://127.0.0.1:${node.port}`) + "\nconsole.log('ok')\n")
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', file], { cwd: root, timeout: 20_000 })
    expect(stderr).toBe('')
    expect(stdout.trim()).toBe('ok')
    const status = await fetch(`${node.url}/v1/demo/get`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"key":"report:status"}' })
    expect((await status.json()).entry?.value).toBe('running')
  }, 30_000)
})
