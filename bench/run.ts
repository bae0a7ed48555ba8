/**
 * `npm run bench`: every scenario of issue 7, zaris and its peers side by
 * side in one run. Prints the table, writes bench/RESULTS.md,
 * bench/results.json, bench/results.svg and bench/SUMMARY.md (the README's table).
 *
 * Environment: BENCH_ONLY=memory,browser,... runs some groups (results go to
 * bench/.partial/ instead of the tracked files); BENCH_QUICK=1 shortens every
 * trial; BENCH_TRIALS=N sets the trials per contender (default 5).
 *
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { machine, versions } from './lib/machine'
import { markdownReport, readmeSummary, svgChart, textReport, type Results, type Scenario } from './lib/report'
import { evaluateTargets } from './lib/targets'
import type { BenchContext } from './scenarios/context'

type Group = (ctx: BenchContext) => Promise<Scenario | Scenario[]>

/** After this long, the remaining groups run short trials (BENCH_QUICK). */
const BUDGET_MS = 150_000

/** Loaded one at a time, so a group that fails to load or run is reported and the others still run. */
const groups: Record<string, () => Promise<Group>> = {
  memory: async () => (await import('./scenarios/memory')).memoryScenario,
  browser: async () => (await import('./scenarios/browser')).browserScenarios,
  remote: async () => (await import('./scenarios/remote')).remoteScenarios,
  durable: async () => (await import('./scenarios/durable')).durableScenarios,
  redis: async () => (await import('./scenarios/redis')).redisScenarios,
  etcd: async () => (await import('./scenarios/etcd')).etcdScenarios,
  postgres: async () => (await import('./scenarios/postgres')).postgresScenarios,
  counters: async () => (await import('./scenarios/counters')).counterScenarios,
  scale: async () => (await import('./scenarios/scale')).scaleScenarios,
  bundle: async () => (await import('./scenarios/bundle')).bundleScenario,
  handover: async () => (await import('./scenarios/handover')).handoverScenarios,
  file: async () => (await import('./scenarios/file')).fileScenarios,
}

async function main(): Promise<void> {
  const started = performance.now()
  const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim()).filter(Boolean)
  for (const name of only ?? []) if (!groups[name]) throw new Error(`BENCH_ONLY: no group ${name}; groups: ${Object.keys(groups).join(', ')}`)
  const ctx: BenchContext = {
    trials: Number(process.env.BENCH_TRIALS ?? 5),
    quick: process.env.BENCH_QUICK === '1',
    log: (line) => process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}\n`),
  }
  const date = new Date().toISOString()
  const m = machine()
  const scenarios: Scenario[] = []
  for (const [name, load] of Object.entries(groups)) {
    if (only && !only.includes(name)) continue
    // A heavily loaded machine stretches every trial; shorter trials keep the whole run under 5 minutes.
    if (!ctx.quick && performance.now() - started > BUDGET_MS) {
      ctx.quick = true
      ctx.log(`over ${BUDGET_MS / 1000} s: short trials from here on`)
    }
    ctx.log(`${name}...`)
    try {
      const out = await (await load())(ctx)
      scenarios.push(...(Array.isArray(out) ? out : [out]))
    } catch (err) {
      const why = `the ${name} group failed: ${(err as Error).message.split('\n').slice(0, 3).join(' ')}`
      ctx.log(why)
      scenarios.push({ id: name, title: `${name} (failed)`, op: '-', metric: 'ops', rows: [], skipped: why })
    }
  }
  const results: Results = {
    date,
    machine: m,
    versions: versions(),
    durationSec: (performance.now() - started) / 1000,
    loadAtEnd: machine().load,
    scenarios,
    targets: evaluateTargets(scenarios),
  }
  console.log(textReport(results))
  const dir = fileURLToPath(new URL(only ? './.partial/' : './', import.meta.url))
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'RESULTS.md'), markdownReport(results))
  writeFileSync(join(dir, 'results.svg'), svgChart(results))
  writeFileSync(join(dir, 'results.json'), JSON.stringify(results, null, 1) + '\n')
  // The table README.md's Benchmarks section shows (copied by hand: the README is not generated).
  writeFileSync(join(dir, 'SUMMARY.md'), `Measured ${date.slice(0, 10)} on ${m.cpu}, ${m.cores} cores (shared, loaded).\n\n${readmeSummary(results)}\n`)
  ctx.log(`done in ${results.durationSec.toFixed(0)} s; wrote ${join(dir, 'RESULTS.md')}`)
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err)
    process.exit(1)
  },
)
