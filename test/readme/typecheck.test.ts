/**
 * The examples of README.md and docs/*.md typecheck, as a TypeScript user
 * would paste them: every block a test runs is written out as a module and
 * checked with the repo's tsconfig (strict), `'zaris'` resolving to the source.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { promisify } from 'node:util'
import { expect, test } from 'vitest'
import { allBlocks, fileOf, root, runnerOf, titleOf } from './snippets'

const run = promisify(execFile)

test('every example that runs also typechecks', async () => {
  const blocks = allBlocks().filter((b) => b.lang === 'ts' && runnerOf(b) !== undefined)
  expect(blocks.length).toBeGreaterThanOrEqual(20)
  const dir = mkdtempSync(join(root, 'test/readme/.run-'))
  try {
    const names = new Map<string, string>()
    blocks.forEach((b, i) => {
      // A file of a guide's project keeps its name: the project's other files import it.
      const name = fileOf(b) ?? `example-${i}.ts`
      names.set(name, titleOf(b))
      writeFileSync(join(dir, name), b.code)
    })
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ extends: relative(dir, join(root, 'tsconfig.json')), compilerOptions: { baseUrl: relative(dir, root) }, include: ['*.ts'] }))
    const tsc = join(root, 'node_modules/typescript/bin/tsc')
    const result = await run(process.execPath, [tsc, '--noEmit', '-p', join(dir, 'tsconfig.json')], { cwd: root }).then(
      () => '',
      (err: { stdout?: string }) => err.stdout ?? String(err),
    )
    // Name each error by the block it came from, not by the temporary file.
    const errors = result.replace(/^.*?([\w.-]+\.ts)\((\d+),\d+\)/gm, (_, name: string, line: string) => `${names.get(name) ?? name}, line ${line} of the block`)
    expect(errors).toBe('')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}, 120_000)
