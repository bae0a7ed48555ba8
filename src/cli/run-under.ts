/**
 * The verbs that run a command under coordination, each through the runner
 * of child.ts:
 *
 * - `zaris lock NAME [--ttl MS] [--wait MS] -- cmd args...`: one try by
 *   default, or waits up to `--wait` ms; exits {@link EXIT_HELD} (75,
 *   EX_TEMPFAIL) when the lock stays held, without running the command.
 * - `zaris elect NAME [--ttl MS] [--wait MS] [--candidate NAME] -- cmd`:
 *   campaigns (as long as it takes, or `--wait` ms), runs the command while
 *   this process leads, resigns after it.
 * - `zaris semaphore NAME --limit N [--ttl MS] [--wait MS] -- cmd`: one of
 *   `N` permits, as `lock` takes one lock.
 *
 * The hold is renewed while the command runs (every third of the TTL); the
 * command gets `ZARIS_LOCK_KEY`, `ZARIS_LOCK_TOKEN` and `ZARIS_URL`, so that
 * `zaris put --fence-token "$ZARIS_LOCK_TOKEN" ...` writes under it.
 *
 * @module
 */
import type { Client } from '../core/client'
import { MAX_PERMITS, MAX_TTL } from '../core/contract/limits'
import { integerArg, keyArg, UsageError, type Parsed } from './args'
import { runUnder, type Guard } from './child'
import { showKey } from './format'
import type { Io, Run } from './run'

/** Exit code when the hold could not be had (within `--wait`): the command did not run. */
export const EXIT_HELD = 75
/** Ms between SIGTERM and SIGKILL when the hold is lost, unless `--grace` says. */
const DEFAULT_GRACE_MS = 5_000

/** What every run verb reads: the name, the command, the hold's TTL, how long to wait, the grace. */
interface Common {
  key: string
  command: string[]
  ttl: number | undefined
  wait: number | undefined
  graceMs: number
  url: string
}

function common(p: Parsed): Common {
  const key = keyArg(p.args[0]!, 'NAME')
  if (p.command === undefined || p.command.length === 0 || p.command[0] === '') {
    throw new UsageError(`${p.verb} runs a command: put it after --, as in zaris ${p.verb} ${p.args[0]} -- ./job.sh`)
  }
  const ms = (name: 'ttl' | 'wait' | 'grace', min: number) => (p.options[name] === undefined ? undefined : integerArg(String(p.options[name]), `--${name}`, { min, max: MAX_TTL }))
  return { key, command: p.command, ttl: ms('ttl', 1), wait: ms('wait', 0), graceMs: ms('grace', 0) ?? DEFAULT_GRACE_MS, url: p.url }
}

/** The child's view of a hold on `key` with `token`. */
function envOf(c: Common, token: number): Record<string, string> {
  return { ZARIS_LOCK_KEY: c.key, ZARIS_LOCK_TOKEN: String(token), ZARIS_URL: c.url }
}

/** `zaris lock NAME [--ttl MS] [--wait MS] [--grace MS] -- cmd args...` */
export function prepareLock(p: Parsed): Run {
  const c = common(p)
  return async (client, io) => {
    const lock = await client.locks.acquire(c.key, { ttl: c.ttl, wait: c.wait ?? 0, autoRenew: true })
    if (!lock) return held(client, io, c, `the lock ${showKey(c.key)}`)
    const guard: Guard = { what: `the lock ${showKey(c.key)}`, env: envOf(c, lock.token), signal: lock.signal, release: () => lock.release() }
    return runUnder(c.command, guard, io, c)
  }
}

/** `zaris semaphore NAME --limit N [--ttl MS] [--wait MS] [--grace MS] -- cmd args...` */
export function prepareSemaphore(p: Parsed): Run {
  const c = common(p)
  if (p.options.limit === undefined) throw new UsageError(`semaphore needs --limit N: how many may run at once`)
  const limit = integerArg(String(p.options.limit), '--limit', { min: 1, max: MAX_PERMITS })
  return async (client, io) => {
    const permit = await client.semaphores.acquire(c.key, { limit, ttl: c.ttl, wait: c.wait ?? 0, autoRenew: true })
    if (!permit) {
      const holders = await client.semaphores.holders(c.key)
      io.err(`zaris: all ${limit} permits of ${showKey(c.key)} are taken (by ${holders.map((h) => h.owner).join(', ') || 'others'}); not running the command${c.wait ? '' : ' (--wait MS waits for one)'}`)
      return EXIT_HELD
    }
    const guard: Guard = { what: `a permit of ${showKey(c.key)}`, env: envOf(c, permit.token), signal: permit.signal, release: () => permit.release() }
    return runUnder(c.command, guard, io, c)
  }
}

/** `zaris elect NAME [--ttl MS] [--wait MS] [--candidate NAME] [--grace MS] -- cmd args...` */
export function prepareElect(p: Parsed): Run {
  const c = common(p)
  const candidate = p.options.candidate === undefined ? undefined : String(p.options.candidate)
  return async (client, io) => {
    const election = client.election(c.key, { ttl: c.ttl, candidate: candidate ?? client.id })
    const signal = c.wait === undefined ? undefined : AbortSignal.timeout(c.wait)
    const term = await election.campaign({ signal }).catch((err: unknown) => {
      if (signal?.aborted) return null
      throw err
    })
    if (!term) {
      const leader = election.leader
      io.err(`zaris: not the leader of ${showKey(c.key)} within ${c.wait} ms${leader ? ` (${leader.candidate} leads, token ${leader.token})` : ''}; not running the command`)
      return EXIT_HELD
    }
    const guard: Guard = { what: `the leadership of ${showKey(c.key)}`, env: envOf(c, term.token), signal: term.signal, release: () => election.resign() }
    return runUnder(c.command, guard, io, c)
  }
}

/** The lock is held: say by whom, and exit 75. */
async function held(client: Client, io: Io, c: Common, what: string): Promise<number> {
  const holder = await client.locks.holder(c.key).catch(() => undefined)
  const by = holder ? ` by ${holder.owner} (token ${holder.token})` : ''
  io.err(`zaris: ${what} is held${by}; not running the command${c.wait ? ` (waited ${c.wait} ms)` : ' (--wait MS waits for it)'}`)
  return EXIT_HELD
}
