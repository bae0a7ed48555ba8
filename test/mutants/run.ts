/**
 * `npm run test:mutants`: proof that the checks can fail. Runs the tests
 * once as they are (they must pass), then once per injected bug of
 * mutants.ts with `ZARIS_MUTANT` set (they must fail), and prints the table
 * of RELIABILITY.md: mutant, how it is injected, the test that caught it,
 * the time to catch. Exit code 1 if a mutant survives or the baseline fails.
 *
 *   npm run test:mutants [-- name ...]     only the named mutants
 */
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MUTANTS, type Mutant } from './mutants'

const root = join(import.meta.dirname, '../..')
const only = process.argv.slice(2)
const chosen = only.length ? MUTANTS.filter((m) => only.includes(m.name)) : MUTANTS
if (only.length && chosen.length !== only.length) {
  console.error(`unknown mutant(s): ${only.filter((n) => !MUTANTS.some((m) => m.name === n)).join(', ')}`)
  process.exit(2)
}

interface Run {
  code: number | null
  /** The mutant's module was loaded and rewritten. */
  applied: boolean
  ms: number
  output: string
}

const marks = mkdtempSync(join(tmpdir(), 'zaris-mutants-'))
process.on('exit', () => rmSync(marks, { recursive: true, force: true }))

function vitest(files: string[], filter: string | undefined, mutant?: string): Promise<Run> {
  const started = performance.now()
  const mark = join(marks, mutant ?? 'baseline')
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--config', 'test/mutants/vitest.config.ts', '--project', 'node', '--maxWorkers=1', ...(filter ? ['-t', filter] : []), ...files], {
      cwd: root,
      // More random runs than npm test's 60: a race like a renewal in flight during a steal needs a few hundred to come up.
      env: { ...process.env, ZARIS_MODEL_RUNS: process.env.ZARIS_MODEL_RUNS ?? '300', ZARIS_MUTANT: mutant ?? '', ZARIS_MUTANT_MARK: mark, NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    child.on('exit', (code) => resolve({ code, ms: performance.now() - started, output: output.replace(/\x1b\[[0-9;]*m/g, ''), applied: existsSync(mark) }))
  })
}

/** The first failure's message, shortened, for the table. */
function firstFailure(output: string): string {
  // The report's first line that names a problem (not the summary of what passed).
  const caused = /Caused by: Error: ((?:[^\n]+\n?){1,12})/.exec(output)?.[1]?.split('\n') ?? []
  const lines = caused.map((l) => l.trim()).filter((l) => l !== '' && !/^linearizable:|^watch: \d+ events, 0 violation/.test(l))
  // A checker's verdict in an assertion's message (the lock-family conformance cases): the line that says why.
  const refused = /^\s*(refused: [^\n]+)/m.exec(output)?.[1]?.replace(/: expected '\w+' to be '\w+' \/\/ Object\.is equality$/, '')
  const line = lines.find((l) => /^refused:|^watch-\w+:|outside the token|after that life|never aborted|aborted at/.test(l)) ?? lines[0] ?? refused ?? /AssertionError: ([^\n]+)/.exec(output)?.[1] ?? /Error: ([^\n]+)/.exec(output)?.[1]
  return (line ?? '(no message)').trim().replace(/\s+/g, ' ').slice(0, 300)
}

// One baseline per set of files and name filter the chosen mutants use.
const runs = new Map<string, { files: string[]; filter: string | undefined }>()
for (const m of chosen) runs.set(`${m.tests.join(' ')}|${m.filter ?? ''}`, { files: m.tests, filter: m.filter })
for (const { files, filter } of runs.values()) {
  console.log(`baseline: ${files.join(' ')}${filter ? ` -t "${filter}"` : ''} without a mutant`)
  const baseline = await vitest(files, filter)
  if (baseline.code !== 0) {
    console.error(`the tests fail without a mutant; fix that first:\n${baseline.output.slice(-4000)}`)
    process.exit(1)
  }
  console.log(`  passed in ${(baseline.ms / 1000).toFixed(1)} s`)
}

const rows: Array<{ mutant: Mutant; caught: boolean; stale: boolean; ms: number; by: string; failure: string }> = []
for (const mutant of chosen) {
  const run = await vitest(mutant.tests, mutant.filter, mutant.name)
  const stale = !run.applied || /no longer contains|no such mutant/.test(run.output)
  const caught = run.code !== 0 && !stale
  const by = [...run.output.matchAll(/FAIL\s+(?:node\s+)?(test\/\S+\.test\.ts)/g)].map((m) => m[1]).filter((v, i, a) => a.indexOf(v) === i).join(', ')
  rows.push({ mutant, caught, stale, ms: run.ms, by, failure: stale ? (run.applied ? 'the mutant no longer applies' : 'its module was never loaded') : firstFailure(run.output) })
  console.log(`${caught ? 'caught  ' : stale ? 'STALE   ' : 'SURVIVED'} ${mutant.name} in ${(run.ms / 1000).toFixed(1)} s${by ? ` by ${by}` : ''}`)
  if (caught) console.log(`         ${rows.at(-1)!.failure}`)
}

const table = [
  '| mutant | how it is injected | caught by | time to catch |',
  '| --- | --- | --- | --- |',
  ...rows.map((r) => `| \`${r.mutant.name}\`: ${r.mutant.bug} | \`${r.mutant.file}\`: \`${r.mutant.from.split('\n')[0]}\` → \`${r.mutant.to.split('\n')[0]}\` | ${r.caught ? r.by || r.mutant.tests.join(', ') : r.stale ? 'STALE' : '**SURVIVED**'} | ${(r.ms / 1000).toFixed(1)} s |`),
]
console.log(`\n${table.join('\n')}`)
if (process.env.ZARIS_MUTANTS_REPORT) writeFileSync(process.env.ZARIS_MUTANTS_REPORT, JSON.stringify(rows.map((r) => ({ name: r.mutant.name, caught: r.caught, stale: r.stale, ms: Math.round(r.ms), by: r.by, failure: r.failure })), null, 2))
const bad = rows.filter((r) => !r.caught)
if (bad.length) {
  console.error(`\n${bad.length} mutant(s) not caught: ${bad.map((r) => r.mutant.name).join(', ')}`)
  process.exit(1)
}
console.log(`\nall ${rows.length} mutants caught`)
