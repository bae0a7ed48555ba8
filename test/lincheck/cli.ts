/**
 * `npm run check:history FILE [--slack MS] [--max-steps N]`: checks a
 * history file (Jepsen-shaped JSON lines or array; test/lincheck/history.ts)
 * for linearizability against the store model and its watches against
 * the acknowledged commits, prints the verdict and, on a
 * violation, the smallest failing partition with the operations involved.
 * Exit code 0: linearizable; 1: not; 2: undecided or unreadable.
 *
 * There is no model to choose: each operation's `f` says which model judges
 * it (model.ts's `MODELED`): `get` and `commit` the store's, the
 * `lock-*` and `permit-*` operations of a history recorded at the client
 * API the lock family's (family.ts); one file may hold both.
 */
import { readFileSync } from 'node:fs'
import { parseHistory } from './history'
import { verifyHistory } from './verify'

const args = process.argv.slice(2)
const flag = (name: string) => {
  const i = args.indexOf(name)
  if (i === -1) return undefined
  const [value] = args.splice(i, 2).slice(1)
  return value
}
const slack = Number(flag('--slack') ?? 0)
const maxSteps = flag('--max-steps')
const [file] = args
if (!file || args.length !== 1 || !Number.isFinite(slack)) {
  console.error('usage: npm run check:history FILE [--slack MS] [--max-steps N]')
  process.exit(2)
}
try {
  // A partition the search cannot decide is also checked on its writes alone; the report says so, and the exit code is 2.
  const verdict = verifyHistory(parseHistory(readFileSync(file, 'utf8')), { slack, fallback: true, maxSteps: maxSteps === undefined ? undefined : Number(maxSteps) })
  console.log(verdict.report)
  process.exit(verdict.ok ? 0 : verdict.linearizability.verdict === 'unknown' && verdict.watch.violations.length === 0 ? 2 : 1)
} catch (err) {
  console.error(`${file}: ${(err as Error).message}`)
  process.exit(2)
}
