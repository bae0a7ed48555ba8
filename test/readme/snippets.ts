/**
 * The code blocks of README.md and docs/*.md, and how each is run. Every
 * fenced block is either run by a test or marked on the line before it with
 * `<!-- not run: why -->` (rare; test/readme/coverage.test.ts keeps count).
 * A ```ts block is run by the test of the store it connects to:
 *
 * - `zaris://idb/…`, `zaris/elect` or `zaris/tabs` — in headless Chromium (test/readme/browser.test.ts);
 * - `redis://…`, ioredis or node-redis — against a real redis-server (test/redis/readme.test.ts);
 * - `zaris://localhost:7861/…` — against a node process (test/server/readme.test.ts);
 * - `etcd://…` — against a real etcd member (test/etcd/readme.test.ts);
 * - `postgres://…` — against a real Postgres (test/postgres/readme.test.ts);
 * - a block whose first line names its file (`// map-adapter.ts`) — as a file
 *   of a small project outside zaris, installed from the packed package
 *   (test/package/exports.test.ts);
 * - anything else that imports zaris and connects nowhere else — as its own
 *   Node process (test/readme/readme.test.ts).
 *
 * A ```console block of `$ zaris ...` lines and their output is run by
 * test/cli/docs.test.ts against a node process.
 *
 * Snippets run as users would run them: through tsx (or Vite in the
 * browser), from a folder inside the repo so that `'zaris'` resolves to the
 * source through tsconfig paths.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
export const root = resolve(import.meta.dirname, '../..')

/** One fenced code block of a markdown file. */
export interface Block {
  /** The file, relative to the repo root. */
  file: string
  /** The line of the opening fence, 1-based. */
  line: number
  /** The fence's language (`ts`, `sh`, …; empty when none). */
  lang: string
  code: string
  /** The nearest heading above the block. */
  heading: string
  /** Why the block is not run, from a `<!-- not run: why -->` line just above it. */
  notRun?: string
}

/** Which test runs a block. */
export type Runner = 'node' | 'zaris-node' | 'redis' | 'browser' | 'cli' | 'etcd' | 'postgres' | 'package'

/** README.md and every docs/*.md, relative to the repo root. */
export function markdownFiles(): string[] {
  const docs = readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).sort()
  return ['README.md', ...docs.map((f) => `docs/${f}`)]
}

/** The text of a markdown file of the repo. */
export function markdown(file: string): string {
  return readFileSync(join(root, file), 'utf8')
}

/** One `## heading` section of a markdown file of the repo. */
export function section(file: string, heading: string): string {
  const text = markdown(file)
  const start = text.indexOf(`\n## ${heading}\n`)
  if (start === -1) throw new Error(`${file} has no section "## ${heading}"`)
  const end = text.indexOf('\n## ', start + 1)
  return text.slice(start, end === -1 ? undefined : end)
}

const NOT_RUN = /^<!-- not run: (.+?) -->$/

/** Every fenced block of `file`. */
export function blocksOf(file: string): Block[] {
  const lines = markdown(file).split('\n')
  const blocks: Block[] = []
  let heading = ''
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, '')
    const open = /^```(\S*)\s*$/.exec(line)
    if (!open) continue
    const end = lines.indexOf('```', i + 1)
    if (end === -1) throw new Error(`${file}:${i + 1}: a code block that is never closed`)
    const notRun = NOT_RUN.exec(lines[i - 1] ?? '')?.[1]
    blocks.push({ file, line: i + 1, lang: open[1]!, code: lines.slice(i + 1, end).join('\n') + '\n', heading, ...(notRun ? { notRun } : {}) })
    i = end
  }
  return blocks
}

/** The code of every ```ts block of a markdown text. */
export function tsBlocks(text: string): string[] {
  return [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!)
}

/** Every fenced block of README.md and docs/. */
export function allBlocks(): Block[] {
  return markdownFiles().flatMap(blocksOf)
}

/** The file a block is, from its first line (`// map-adapter.ts`): a file of a project a guide walks through. */
export function fileOf(block: Block): string | undefined {
  return /^\/\/ ([\w.-]+\.ts)\n/.exec(block.code)?.[1]
}

/** The test that runs `block`, or `undefined` when none would (a marked block, or one no runner knows). */
export function runnerOf(block: Block): Runner | undefined {
  // A terminal session of `$ zaris ...` commands and what they print: run by test/cli/docs.test.ts.
  if (block.notRun === undefined && block.lang === 'console' && /^\$ zaris /m.test(block.code)) return 'cli'
  if (block.notRun !== undefined || block.lang !== 'ts') return undefined
  const code = block.code
  if (fileOf(block)) return 'package'
  if (code.includes('zaris://idb/') || /from 'zaris\/(elect|tabs)'/.test(code)) return 'browser'
  if (code.includes('redis://') || code.includes("from 'ioredis'") || code.includes("from 'redis'")) return 'redis'
  if (code.includes('zaris://localhost:7861')) return 'zaris-node'
  if (code.includes('etcd://')) return 'etcd'
  if (code.includes('postgres://')) return 'postgres'
  // A store this file has no runner for (etcd, say) leaves the block unrun, and the coverage test says so.
  if (/from 'zaris(\/[a-z]+)?'/.test(code) && !/zaris:\/\/(?!inproc\/)|https?:\/\/|etcd:\/\//.test(code)) return 'node'
  return undefined
}

/** The blocks `runner` runs. */
export function blocksFor(runner: Runner): Block[] {
  return allBlocks().filter((b) => runnerOf(b) === runner)
}

/** A test title for a block: where it is and under which heading. */
export function titleOf(block: Block): string {
  return `${block.file}:${block.line} (${block.heading})`
}

/** Writes `code` to a fresh folder inside the repo (gitignored); `dispose` removes it. */
export function snippetFile(code: string): { file: string; dispose(): void } {
  const dir = mkdtempSync(join(root, 'test/readme/.run-'))
  const file = join(dir, 'example.ts')
  writeFileSync(file, code)
  return { file, dispose: () => rmSync(dir, { recursive: true, force: true }) }
}

/** Runs `code` as a module in a Node process of its own; rejects if it fails or outlives 20 s. */
export async function runSnippet(code: string): Promise<{ stdout: string; stderr: string }> {
  const snippet = snippetFile(code)
  try {
    return await run(process.execPath, ['--import', 'tsx', snippet.file], { cwd: root, timeout: 20_000 })
  } finally {
    snippet.dispose()
  }
}
