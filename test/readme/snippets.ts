/**
 * Runs the README's ```ts examples as users would: each as its own Node
 * process through tsx, from a folder inside the repo so that `'zaris'`
 * resolves to the source through tsconfig paths. Shared by the README tests
 * of each section (in-process here; node, Redis and browser by their adapters).
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
export const root = resolve(import.meta.dirname, '../..')

/** The README, or one `## heading` section of it. */
export function readme(heading?: string): string {
  const text = readFileSync(join(root, 'README.md'), 'utf8')
  if (heading === undefined) return text
  const start = text.indexOf(`\n## ${heading}\n`)
  if (start === -1) throw new Error(`README has no section "## ${heading}"`)
  const end = text.indexOf('\n## ', start + 1)
  return text.slice(start, end === -1 ? undefined : end)
}

/** The code of every ```ts block. */
export function tsBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!)
}

/** Runs `code` as a module in a Node process of its own; rejects if it fails or outlives 20 s. */
export async function runSnippet(code: string): Promise<{ stdout: string; stderr: string }> {
  const dir = mkdtempSync(join(root, 'test/readme/.run-'))
  try {
    const file = join(dir, 'example.ts')
    writeFileSync(file, code)
    return await run(process.execPath, ['--import', 'tsx', file], { cwd: root, timeout: 20_000 })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
