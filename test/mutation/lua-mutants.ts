/**
 * Mutation testing of the Redis adapter's Lua, which Stryker cannot do (to
 * it a script is one string literal). Each mutant changes one place of the
 * Lua text in a TypeScript file (a comparison, `and`/`or`, a `not`, a
 * boolean, a `+ 1`/`- 1`, or a whole statement dropped), the named vitest
 * files run against it (stopping at the first failure), and the file is put
 * back. Killed: a test failed. Survived: all passed.
 *
 *   FILE=src/adapters/redis/handover.ts LINES=73-412 \
 *   TESTS="test/redis/handover.test.ts test/redis/turns.test.ts" \
 *   npx tsx test/mutation/lua-mutants.ts
 *
 * Run it in a worktree of its own (the file is changed in place while a
 * mutant runs). `ONLY=12,40` runs those mutants alone; `LIST=1` only lists
 * them. Results go to reports/mutation/lua-<file>.json as they come.
 *
 * @module
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename } from 'node:path'

interface Mutant {
  id: number
  line: number
  col: number
  what: string
  text: string
}

/** Token swaps: a regexp for the place and what it becomes. */
const SWAPS: Array<[RegExp, string, string]> = [
  [/==/g, '~=', '== → ~='],
  [/~=/g, '==', '~= → =='],
  [/<=/g, '<', '<= → <'],
  [/>=/g, '>', '>= → >'],
  [/(?<![<\-=~])<(?![=])/g, '<=', '< → <='],
  [/(?<![>\-=~])>(?![=])/g, '>=', '> → >='],
  [/ and /g, ' or ', 'and → or'],
  [/ or /g, ' and ', 'or → and'],
  [/\bnot /g, '', 'not dropped'],
  [/\btrue\b/g, 'false', 'true → false'],
  [/\bfalse\b/g, 'true', 'false → true'],
  [/ \+ 1\b/g, ' - 1', '+ 1 → - 1'],
  [/ - 1\b/g, ' + 1', '- 1 → + 1'],
]

/** A line that is one whole statement that can be dropped (a call or an assignment to a name already declared). */
const STATEMENT = /^\s*(redis\.call\(.*\)|[A-Za-z_][\w.[\]'"]* = .+|[a-z_]+\(.*\)|break)\s*$/

/** The spans of `${...}` (TypeScript, not Lua) in a line. */
function interpolations(line: string): Array<[number, number]> {
  const out: Array<[number, number]> = []
  for (const m of line.matchAll(/\$\{[^}]*\}/g)) out.push([m.index, m.index + m[0].length])
  return out
}

function mutantsOf(text: string, from: number, to: number): Mutant[] {
  const lines = text.split('\n')
  const out: Mutant[] = []
  for (let n = from; n <= Math.min(to, lines.length); n++) {
    const line = lines[n - 1]!
    const code = line.replace(/--.*$/, '')
    if (code.trim() === '' || code.includes('`')) continue
    const skip = interpolations(code)
    const inSkip = (i: number) => skip.some(([a, b]) => i >= a && i < b)
    // Quoted Lua strings are data, not logic.
    const strings = [...code.matchAll(/'(?:[^'\\]|\\.)*'/g)].map((m) => [m.index, m.index + m[0].length] as const)
    const inString = (i: number) => strings.some(([a, b]) => i > a && i < b)
    for (const [re, to, what] of SWAPS) {
      for (const m of code.matchAll(re)) {
        if (inSkip(m.index) || inString(m.index)) continue
        const changed = line.slice(0, m.index) + to + line.slice(m.index + m[0].length)
        out.push({ id: 0, line: n, col: m.index + 1, what, text: changed })
      }
    }
    if (STATEMENT.test(code) && !/^\s*local /.test(code)) out.push({ id: 0, line: n, col: 1, what: `dropped: ${code.trim()}`, text: line.replace(/^(\s*)/, '$1do end -- ') })
  }
  out.forEach((m, i) => (m.id = i + 1))
  return out
}

const file = process.env.FILE
const tests = (process.env.TESTS ?? '').split(/\s+/).filter(Boolean)
if (!file || tests.length === 0) {
  console.error('FILE and TESTS are required (see the module doc)')
  process.exit(2)
}
// One range or several (`73-410,422-453`): a TypeScript comment inside a Lua export is left out so.
const ranges = (process.env.LINES ?? '1-100000').split(',').map((r) => r.split('-').map(Number) as [number, number])
const original = readFileSync(file, 'utf8')
const lines = original.split('\n')
let mutants = ranges.flatMap(([from, to]) => mutantsOf(original, from, to))
mutants.forEach((m, i) => (m.id = i + 1))
if (process.env.ONLY) {
  const only = new Set(process.env.ONLY.split(',').map(Number))
  mutants = mutants.filter((m) => only.has(m.id))
}
if (process.env.LIST) {
  for (const m of mutants) console.log(`#${m.id} ${file}:${m.line}:${m.col} ${m.what}`)
  process.exit(0)
}

const report = `reports/mutation/lua-${basename(file, '.ts')}.json`
mkdirSync('reports/mutation', { recursive: true })
const results: Array<Mutant & { status: 'killed' | 'survived' | 'timeout'; by?: string }> = []
const put = (text: string) => writeFileSync(file, text)
process.on('SIGINT', () => {
  put(original)
  process.exit(130)
})
try {
  for (const m of mutants) {
    const changed = [...lines]
    changed[m.line - 1] = m.text
    put(changed.join('\n'))
    const t0 = Date.now()
    const run = spawnSync('npx', ['vitest', 'run', '--bail', '1', ...tests], { encoding: 'utf8', timeout: Number(process.env.TIMEOUT_MS ?? 240_000), env: { ...process.env, CI: 'true' } })
    const out = (run.stdout + run.stderr).replace(/\x1b\[[0-9;]*m/g, '')
    const status = run.signal ? 'timeout' : run.status === 0 ? 'survived' : 'killed'
    const by = /^\s*(?:×|FAIL)\s+(.+)$/m.exec(out)?.[1]?.slice(0, 160)
    results.push({ ...m, status, by })
    console.log(`#${m.id} (${results.length}/${mutants.length}) ${status.padEnd(8)} ${file}:${m.line}:${m.col} ${m.what} (${((Date.now() - t0) / 1000).toFixed(0)} s)${status === 'killed' && by ? ` by ${by}` : ''}`)
    writeFileSync(report, JSON.stringify({ file, lines: ranges, tests, results }, null, 1))
  }
} finally {
  put(original)
}
const killed = results.filter((r) => r.status !== 'survived').length
console.log(`\n${killed}/${results.length} killed (${((100 * killed) / Math.max(1, results.length)).toFixed(1)} %); survived:`)
for (const r of results.filter((x) => x.status === 'survived')) console.log(`  #${r.id} ${file}:${r.line}:${r.col} ${r.what}`)
