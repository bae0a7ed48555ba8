/**
 * Runs Stryker's survivors of one file again, each against whole test files:
 *
 *   npx tsx test/mutation/recheck.ts reports/mutation-postgres/mutation.json \
 *     src/adapters/postgres/listener.ts test/postgres/listener.test.ts test/postgres/adapter.test.ts
 *
 * Why: with per-test coverage Stryker runs a mutant only against the tests
 * it saw reach the mutated code, and code behind a cache that lives as long
 * as the process (a schema made once per pool, one LISTEN connection per
 * pool) is reached by whichever test came first in the dry run. A survivor
 * there may be one that no test was asked about. Here each survivor (and
 * each mutant without coverage) is put into the file in place, the test
 * files run (`vitest run --bail=1`), and the file is put back. A file that
 * changed since the report gets the mutants of the report's source.
 *
 * Run it in a worktree of its own (it edits the file in place); the tests
 * are first run once unmutated, and must pass. Prints one line a mutant and
 * the ids still surviving. `IDS=3,17` runs only those mutants; `TIMEOUT_MS=60000`
 * counts a run that long as a kill (a mutant that hangs its page; default 10 min); `CONFIG=`
 * a vitest config (test/mutation/postgres.vitest.config.ts runs
 * contract.mutation.ts, the conformance suite on one shared Postgres).
 *
 * @module
 */
import { spawnSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'

interface Mutant {
  id: string
  mutatorName: string
  replacement?: string
  status: string
  location: { start: { line: number; column: number }; end: { line: number; column: number } }
}

const [report, file, ...tests] = process.argv.slice(2)
if (!report || !file || tests.length === 0) {
  console.error('usage: recheck.ts <mutation.json> <src file> <test file>...')
  process.exit(2)
}
const current = readFileSync(file, 'utf8')
const entry = (JSON.parse(readFileSync(report, 'utf8')) as { files: Record<string, { source: string; mutants: Mutant[] }> }).files[file]
if (!entry) throw new Error(`${report} has no mutants of ${file}`)
// Mutants apply to the source the report was made from; a file changed since (dead code taken out, say) is put back after.
const original = entry.source
if (original !== current) console.log(`${file} changed since the report: its mutants run on the report's source, with today's tests`)
const only = process.env.IDS?.split(',')
const mutants = entry.mutants.filter((m) => (only ? only.includes(m.id) : m.status === 'Survived' || m.status === 'NoCoverage'))

/** The offset of a 1-based line and column in `text`. */
function offset(text: string, line: number, column: number): number {
  let at = 0
  for (let l = 1; l < line; l++) at = text.indexOf('\n', at) + 1
  return at + column - 1
}

function run(): { ok: boolean; seconds: number } {
  const t = performance.now()
  const config = process.env.CONFIG ? ['--config', process.env.CONFIG] : []
  const r = spawnSync('npx', ['vitest', 'run', '--bail=1', ...config, ...tests], { stdio: 'ignore', timeout: Number(process.env.TIMEOUT_MS ?? 600_000) })
  return { ok: r.status === 0, seconds: (performance.now() - t) / 1000 }
}

const restore = () => writeFileSync(file, current)
process.on('SIGINT', () => {
  restore()
  process.exit(130)
})
const surviving: string[] = []
try {
  writeFileSync(file, original)
  const base = run()
  if (!base.ok) throw new Error(`the tests fail without a mutant (${base.seconds.toFixed(0)} s): fix them first`)
  console.log(`unmutated: pass in ${base.seconds.toFixed(0)} s; ${mutants.length} mutants to run`)
  for (const m of mutants) {
    const from = offset(original, m.location.start.line, m.location.start.column)
    const to = offset(original, m.location.end.line, m.location.end.column)
    writeFileSync(file, original.slice(0, from) + (m.replacement ?? '') + original.slice(to))
    const r = run()
    if (r.ok) surviving.push(m.id)
    const shown = original.slice(from, to).replace(/\s+/g, ' ').slice(0, 60)
    console.log(`${r.ok ? 'SURVIVED' : 'killed  '} #${m.id} ${m.location.start.line}:${m.location.start.column} ${m.mutatorName}: ${shown} -> ${(m.replacement ?? '').replace(/\s+/g, ' ').slice(0, 60)} (${r.seconds.toFixed(0)} s)`)
  }
} finally {
  restore()
}
console.log(`${mutants.length - surviving.length} of ${mutants.length} killed; surviving: ${surviving.join(',') || 'none'}`)
