/**
 * The examples of README.md and docs/*.md that use Postgres run as written,
 * each as its own Node process, against a real Postgres (for
 * `127.0.0.1:5432`); only the address is replaced. Each must print
 * something, write nothing to stderr and exit by itself.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { blocksFor, runSnippet, titleOf } from '../readme/snippets'
import { startPostgres, type PostgresServer } from './server'

const blocks = blocksFor('postgres')

let server: PostgresServer
beforeAll(async () => {
  server = await startPostgres()
})
afterAll(async () => {
  await server?.dispose()
})

describe('README and docs: Postgres', () => {
  test('there are Postgres examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(2)
  })
  test.each(blocks.map((b) => ({ title: titleOf(b), block: b })))('$title', async ({ block }) => {
    const local = block.code.replaceAll('127.0.0.1:5432', `127.0.0.1:${server.port}`).replaceAll('app@', 'zaris@').replaceAll('/app?', '/postgres?')
    expect(local, 'the example names a Postgres this test can replace').not.toBe(block.code)
    const { stdout, stderr } = await runSnippet(local)
    expect(stderr).toBe('')
    expect(stdout.trim()).not.toBe('')
  }, 30_000)
})
