/**
 * Redis Functions against EVALSHA for zaris's lock script (issue 16, FINDINGS
 * §14 item 2 and §24): the same lock take + release as
 *
 * 1. `EVALSHA` of LOCK_SCRIPT, as the adapter runs it (its helpers, ~30
 *    closures, are built on every call);
 * 2. `FCALL` of the same text wrapped in a function (still built per call);
 * 3. `FCALL` of a library whose helpers are built once, when it loads: the
 *    prelude's per-call state moved into an `init` the function calls first;
 * 4. `EVALSHA` of that restructured text (to tell the restructure from FCALL).
 *
 * A throwaway harness: the transform below is textual and only good enough to
 * measure. The steps take turns in rounds on one redis-server.
 *
 *   npx tsx bench/tools/redis-functions.ts [cycles=2000]
 *
 * @module
 */
import { loadavg } from 'node:os'
import { Redis } from 'ioredis'
import { namespaceKeys } from '../../src/adapters/redis/codec'
import { CHECKED_PARTS, COMMIT_PARTS, PRELUDE } from '../../src/adapters/redis/prelude'
import { LOCK_SCRIPT } from '../../src/adapters/redis/scripts'
import { median } from '../lib/measure'
import { redis as startRedis } from '../lib/procs'
import { takeTurns } from './redis-profile'

const N = Number(process.argv[2] ?? 2000)
const ROUNDS = 10
const server = await startRedis()
const r = new Redis({ host: '127.0.0.1', port: server.port })
const admin = new Redis({ host: '127.0.0.1', port: server.port })

const body = LOCK_SCRIPT.slice(`${PRELUDE}${COMMIT_PARTS}${CHECKED_PARTS}`.length)
if (`${PRELUDE}${COMMIT_PARTS}${CHECKED_PARTS}${body}` !== LOCK_SCRIPT) throw new Error('LOCK_SCRIPT no longer starts with the prelude and parts')

/** The prelude with its per-call state (top-level `local X = expr` other than constants) moved into init(). */
function once(): { defs: string; init: string } {
  const declared: string[] = []
  const assigns: string[] = []
  const lines = PRELUDE.split('\n').map((line) => {
    const m = /^local ([A-Za-z_][\w, ]*?) = (.*)$/.exec(line)
    if (!m || line.startsWith('local function') || /^local (MAXREV|IX)/.test(line)) return line
    declared.push(m[1]!)
    assigns.push(`  ${m[1]} = ${m[2]}`)
    return `local ${m[1]}`
  })
  return { defs: `local KEYS, ARGV\n${lines.join('\n')}${COMMIT_PARTS}${CHECKED_PARTS}`, init: `local function init(k, a)\n  KEYS, ARGV = k, a\n${assigns.join('\n')}\nend\n` }
}

const { defs, init } = once()
const perCallLib = `#!lua name=zperc\nredis.register_function('zperc', function(KEYS, ARGV)\n${LOCK_SCRIPT}\nend)\n`
const onceLib = `#!lua name=zonce\n${defs}\n${init}\nredis.register_function('zonce', function(k, a)\n  init(k, a)\n${body}\nend)\n`
const onceScript = `local G_KEYS, G_ARGV = KEYS, ARGV\n${defs}\n${init}\ninit(G_KEYS, G_ARGV)\n${body}`

type Fn = (...a: Array<string | number>) => Promise<unknown>
r.defineCommand('fnLock', { numberOfKeys: 7, lua: LOCK_SCRIPT })
r.defineCommand('fnOnce', { numberOfKeys: 7, lua: onceScript })
const evalLock = (r as unknown as Record<string, Fn>).fnLock!.bind(r)
const evalOnce = (r as unknown as Record<string, Fn>).fnOnce!.bind(r)
await r.call('FUNCTION', 'LOAD', 'REPLACE', perCallLib)
await r.call('FUNCTION', 'LOAD', 'REPLACE', onceLib)
const fcall =
  (name: string): Fn =>
  (...a) =>
    r.call('FCALL', name, 7, ...a)

const owner = '=cbd0e903-4415-469e-bba0-ff0c921ebfe6'
let q = 0
const cycle = (f: Fn, ns: string) => async () => {
  const keys = namespaceKeys(ns)
  const a = (await f(...keys, 10_000, 500, 0, `r${++q}`, 120_000, 'x', 'r', '', 's', 'null', '30000', owner, '')) as unknown[]
  if (a[0] !== 'ok') throw new Error(`${ns} take: ${String(a[0])} ${String(a[3])}`)
  const b = (await f(...keys, 10_000, 500, 0, `r${++q}`, 120_000, 'x', 'c', String(a[3]).split(' ')[1]!, 'd', '', '', '', '')) as unknown[]
  if (b[0] !== 'ok') throw new Error(`${ns} release: ${String(b[0])}`)
}

/** Redis time of the scripts run since the last RESETSTAT, and how many. */
async function serverSince(): Promise<{ usec: number; calls: number }> {
  const info = await admin.info('commandstats')
  let usec = 0
  let calls = 0
  for (const m of info.matchAll(/cmdstat_(evalsha|fcall):calls=(\d+),usec=(\d+),/g)) {
    usec += Number(m[3])
    calls += Number(m[2])
  }
  return { usec, calls }
}

try {
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['EVALSHA lock script', cycle(evalLock, 'a')],
    ['FCALL, same text (helpers per call)', cycle(fcall('zperc'), 'b')],
    ['FCALL, helpers built once', cycle(fcall('zonce'), 'c')],
    ['EVALSHA, restructured text', cycle(evalOnce, 'd')],
  ]
  const srv = steps.map(() => [] as number[])
  for (const [, op] of steps) for (let i = 0; i < 200; i++) await op()
  const lat = await takeTurns(steps.map(([, op]) => op), N, ROUNDS, {
    before: () => admin.config('RESETSTAT'),
    after: async (j) => {
      const st = await serverSince()
      srv[j]!.push(st.usec / st.calls)
    },
  })
  console.log(`${N} cycles per step in ${ROUNDS} rounds; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  for (let j = 0; j < steps.length; j++) {
    console.log(`${steps[j]![0].padEnd(40)} cycle p50 ${median(lat[j]!).toFixed(0).padStart(4)} µs; Redis time per script, median of the ${ROUNDS} turns ${median(srv[j]!).toFixed(1)} µs`)
  }
} finally {
  r.disconnect()
  admin.disconnect()
  await server.dispose()
}
