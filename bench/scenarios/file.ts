/**
 * One machine, no server: the `file://` store (SQLite in WAL mode, shared by
 * the processes) against proper-lockfile (a lock directory beside the file,
 * its mtime refreshed while held), the lockfile library most Node programs
 * use. Two rows each:
 *
 * - acquire + release of an uncontended lock, one process;
 * - 16 clients (16 connections of one process) contending for one lock:
 *   zaris waits in its line (the file hands the lock over in the release's
 *   transaction), proper-lockfile retries every 10-20 ms;
 * - a holder process killed with kill -9 while another process waits: the
 *   time from the kill to the next holder. zaris ends a dead process's locks
 *   at once (its pid and start time); proper-lockfile takes a lock over once
 *   its mtime is older than `stale` (default 10 s; its holder refreshes the
 *   mtime every 5 s), with a waiter retrying every 25-100 ms.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import lockfile from 'proper-lockfile'
import { Client } from 'zaris'
import { fileAdapter } from 'zaris/file'
import { bundle } from '../../test/server/cli-bundle'
import { alternate } from '../lib/compare'
import { contention, oneClient, zarisPeer, type LockPeer } from '../lib/locks'
import { loop, type Trial } from '../lib/measure'
import { tempDir } from '../lib/procs'
import type { Scenario } from '../lib/report'
import type { BenchContext } from './context'
import { CLIENTS, contentionScenario } from './remote'

const HOLDER = 'bench/lib/lock-holder.ts'

export async function fileScenarios(ctx: BenchContext): Promise<Scenario[]> {
  const dir = tempDir('zaris-bench-file-')
  try {
    return [await uncontended(ctx, dir.path), await contended(ctx, dir.path), await killed(ctx, dir.path)]
  } finally {
    dir.remove()
  }
}

async function uncontended(ctx: BenchContext, dir: string): Promise<Scenario> {
  const zaris = zarisPeer(await fileAdapter({ path: join(dir, 'store.db'), namespace: 'bench' }))
  const target = join(dir, 'resource')
  writeFileSync(target, '')
  const dur = ctx.quick ? 250 : 600
  ctx.log('file: acquire + release, file:// vs proper-lockfile')
  try {
    const rows = await alternate(
      [
        { label: 'zaris file://', zaris: true, trial: () => oneClient(zaris, 'lock:file', dur) },
        {
          label: 'proper-lockfile',
          zaris: false,
          trial: () =>
            loop(async () => {
              const release = await lockfile.lock(target)
              await release()
            }, dur),
        },
      ],
      ctx.trials,
    )
    return {
      id: 'file-1',
      title: 'One machine: file:// store vs proper-lockfile',
      op: 'acquire + release of an uncontended lock, one process',
      metric: 'ops',
      rows,
      notes: [
        'zaris: a SQLite file in WAL mode, synchronous=NORMAL (a commit survives any process crash at once; tokens never repeat, even after a power cut); TTL 30 s with auto-renew, a fencing token per acquire.',
        'proper-lockfile: `lock(file)` and `release()` with its defaults (mkdir of `file.lock`, its mtime refreshed every 5 s); no token, no TTL of its own.',
      ],
    }
  } finally {
    await zaris.close()
  }
}

/** proper-lockfile as a contender: `lock(file)` retried every 10-20 ms until the wait runs out. */
function lockfilePeer(dir: string): LockPeer {
  let attempts = 0
  return {
    async acquire(key, waitMs) {
      const target = join(dir, key.replaceAll(':', '-'))
      writeFileSync(target, '', { flag: 'a' })
      const end = performance.now() + waitMs
      for (;;) {
        attempts++
        try {
          const release = await lockfile.lock(target)
          return () => release()
        } catch (err) {
          if ((err as { code?: string }).code !== 'ELOCKED' || performance.now() > end) return null
          await new Promise((r) => setTimeout(r, 10 + Math.random() * 10))
        }
      }
    },
    attempts: async () => attempts,
    close: async () => {},
  }
}

async function contended(ctx: BenchContext, dir: string): Promise<Scenario> {
  const path = join(dir, 'contended.db')
  const zs = await Promise.all(Array.from({ length: CLIENTS }, async () => zarisPeer(await fileAdapter({ path, namespace: 'bench' }))))
  const polls = Array.from({ length: CLIENTS }, () => lockfilePeer(dir))
  const dur = ctx.quick ? 400 : 800
  ctx.log(`file: ${CLIENTS} clients, file:// vs proper-lockfile`)
  try {
    const rows = await alternate(
      [
        { label: 'zaris file://, wait', zaris: true, trial: (i) => contention(zs, `lock:many:${i}`, dur) },
        { label: 'proper-lockfile, retry every 10-20 ms', zaris: false, trial: (i) => contention(polls, `lock:many:lockfile:${i}`, dur) },
      ],
      ctx.trials,
    )
    return { ...contentionScenario('file-16', `One machine: ${CLIENTS} contending clients, file:// vs proper-lockfile`, rows) }
  } finally {
    await Promise.allSettled(zs.map((z) => z.close()))
  }
}

/** Starts a holder process of `kind` and resolves it once it holds. */
async function holder(kind: 'zaris' | 'lockfile', file: string): Promise<ChildProcess> {
  const script = bundle('zaris-bench-holder', [HOLDER])[HOLDER]!
  const proc = spawn(process.execPath, [script, kind, file], { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise<void>((resolve, reject) => {
    let out = ''
    proc.stdout!.on('data', (d) => {
      out += d
      if (out.includes('held')) resolve()
    })
    proc.once('exit', (code) => reject(new Error(`the ${kind} holder exited (${code}) before it held`)))
  })
  return proc
}

/** `rounds` times: a holder process takes the lock, a waiter here waits, the holder is killed; the latency is kill -> held. */
async function killRounds(rounds: number, kind: 'zaris' | 'lockfile', take: () => Promise<() => Promise<unknown>>, file: string): Promise<Trial> {
  const lat: number[] = []
  const start = performance.now()
  for (let i = 0; i < rounds; i++) {
    const proc = await holder(kind, file)
    const waiting = take().then((release) => ({ release, at: performance.now() }))
    await new Promise((r) => setTimeout(r, 100)) // the waiter is waiting
    const exited = new Promise((r) => proc.once('exit', r))
    const killedAt = performance.now()
    proc.kill('SIGKILL')
    const { release, at } = await waiting
    lat.push(at - killedAt)
    await release()
    await exited
  }
  return { ops: rounds, ms: performance.now() - start, lat }
}

async function killed(ctx: BenchContext, dir: string): Promise<Scenario> {
  const path = join(dir, 'killed.db')
  const client = new Client(await fileAdapter({ path, namespace: 'bench' }))
  const target = join(dir, 'killed-resource')
  writeFileSync(target, '')
  ctx.log('file: killed holder -> next holder, file:// vs proper-lockfile (about 10 s a round)')
  try {
    const rows = await alternate(
      [
        {
          label: 'zaris file://',
          zaris: true,
          trial: () =>
            killRounds(ctx.quick ? 2 : 5, 'zaris', async () => {
              const lock = await client.locks.acquire('lock:killed', { ttl: 30_000, wait: 60_000 })
              if (!lock) throw new Error('the waiter did not get the lock within 60 s')
              return () => lock.release()
            }, path),
        },
        {
          label: 'proper-lockfile (stale 10 s)',
          zaris: false,
          trial: () => killRounds(1, 'lockfile', () => lockfile.lock(target, { retries: { retries: 1_000, minTimeout: 25, maxTimeout: 100 } }), target),
        },
      ],
      // Each proper-lockfile round waits out its 10 s stale time.
      Math.min(ctx.trials, ctx.quick ? 1 : 2),
      { warmup: false, throughput: false },
    )
    return {
      id: 'file-killed',
      title: 'Killed holder -> next holder: file:// vs proper-lockfile',
      op: 'kill -9 of the holder process -> a waiting process holds the lock',
      metric: 'latency',
      rows,
      notes: [
        'zaris: TTL 30 s; the waiter learns the holder is gone from its pid and start time (polled every 10 ms while it waits) and its lock ends at once, as an expiry.',
        'proper-lockfile: default stale 10 s (mtime refreshed every 5 s by the holder, so a takeover comes 5-10 s after the kill); the waiter retries every 25-100 ms.',
      ],
    }
  } finally {
    await client.close()
  }
}
