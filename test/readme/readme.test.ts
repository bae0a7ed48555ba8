/**
 * The examples of README.md and docs/*.md run as written. Every ```ts block
 * that imports zaris and uses only the in-process store (or a scheme it
 * registers itself) is run as its own Node process; it must print, write
 * nothing to stderr and exit by itself (no lingering timers or handles).
 * Blocks that need a node, Redis or a browser are run by those tests instead
 * (see snippets.ts).
 */
import { describe, expect, test } from 'vitest'
import { blocksFor, runSnippet, titleOf } from './snippets'

const blocks = blocksFor('node')

describe('README and docs examples, in-process', () => {
  test('there are runnable examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(20)
  })
  test.each(blocks.map((b) => ({ title: titleOf(b), block: b })))('$title', async ({ block }) => {
    const { stdout, stderr } = await runSnippet(block.code)
    expect(stderr).toBe('')
    expect(stdout.trim()).not.toBe('')
  }, 30_000)
})
