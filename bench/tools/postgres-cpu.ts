/**
 * The CPU Postgres backends used, read from /proc (the bench tools run the
 * server on this machine): what a statement costs the server, apart from
 * the client's own CPU and from time spent waiting.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import type pg from 'pg'

/** CPU (µs, user + system) the process `pid` used so far; 0 once it is gone. */
export function processCpu(pid: number): number {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return (Number(f[11]) + Number(f[12])) * 10_000
  } catch {
    return 0
  }
}

/** CPU (µs) used so far by every client backend but `admin`'s own. */
export async function backendCpu(admin: pg.Client): Promise<number> {
  const pids = (await admin.query("SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")).rows.map((r) => r.pid as number)
  return pids.reduce((us, pid) => us + processCpu(pid), 0)
}
