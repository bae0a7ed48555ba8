/**
 * The README's examples run as written. Every ```ts block that imports zaris
 * and uses only the in-process store is run as its own Node process; it must
 * print, write nothing to stderr and exit by itself (no lingering timers or
 * handles). Blocks that need a node, Redis or a browser are run by those
 * adapters' README tests instead.
 */
import { describe, expect, test } from 'vitest'
import { readme, runSnippet, tsBlocks } from './snippets'

const runnable = tsBlocks(readme()).filter((code) => /from 'zaris/.test(code) && !/zaris:\/\/(?!inproc\/)|redis:\/\/|https?:\/\//.test(code))

describe('README examples', () => {
  test('there are runnable examples', () => {
    expect(runnable.length).toBeGreaterThanOrEqual(8)
  })
  runnable.forEach((code, i) => {
    const title = code.split('\n').find((l) => l.includes('connect(') || l.includes('clients(')) ?? `block ${i}`
    test(`example ${i + 1}: ${title.trim().slice(0, 60)}`, async () => {
      const { stdout, stderr } = await runSnippet(code)
      expect(stderr).toBe('')
      expect(stdout.trim()).not.toBe('')
    }, 30_000)
  })
})
