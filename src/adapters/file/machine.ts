/**
 * What the processes of one machine share besides the file: a clock, and
 * the kernel's word on which processes are alive.
 *
 * The clock is the machine's monotonic clock (`process.hrtime`, which is
 * CLOCK_MONOTONIC on Linux, mach_absolute_time on macOS and the performance
 * counter on Windows): one scale for every process of the machine, which no
 * wall-clock step (NTP, a hand-set date) moves. It is also the clock every
 * holder counts its own TTL on (`performance.now()` reads it too), so a
 * holder and the store measure a TTL with the same clock: no skew to allow
 * for. It restarts at boot; the store tells boots apart (see {@link bootId})
 * and restarts every TTL after a reboot.
 *
 * A process is named by its pid and its start time (Linux: field 22 of
 * `/proc/<pid>/stat`, in clock ticks since boot), so a pid the kernel gave
 * to another process since is not taken for the one that registered; and by
 * its host: the boot and the pid namespace it lives in, so a process in
 * another container (another pid namespace) sharing the file is never
 * judged from this one's `/proc`. A process is dead when `/proc/<pid>/stat`
 * shows a zombie or another start time, or the pid does not exist. Where
 * `/proc` does not show it (macOS, Windows, a `/proc` mounted with hidepid)
 * `process.kill(pid, 0)` says whether the pid exists, and the start time is
 * not known: a reused pid is taken for alive, so that owner's holds last
 * until their TTL (the safe way to be wrong).
 *
 * @module
 */
import { systemClock, type Clock } from '../../core/time/clock'
import { builtin } from './builtins'

const { readFileSync, readlinkSync } = builtin<typeof import('node:fs')>('node:fs')
const { hostname } = builtin<typeof import('node:os')>('node:os')

/** A process as the store records it. */
export interface ProcessId {
  pid: number
  /** Its start time (Linux); '' where it cannot be read. */
  start: string
  /** Where its pid means this process: the boot and pid namespace (Linux), or the host name. */
  host: string
}

/**
 * The machine's monotonic clock in milliseconds (with microseconds), shared
 * by every process of the machine; timers are the system's, unref'd.
 */
export const machineClock: Clock = {
  now: () => Number(process.hrtime.bigint() / 1000n) / 1000,
  setTimeout: systemClock.setTimeout,
  clearTimeout: systemClock.clearTimeout,
}

const read = (path: string): string | undefined => {
  try {
    return readFileSync(path, 'utf8').trim()
  } catch {
    return undefined
  }
}

/** This boot of the machine (Linux's boot_id), or '' where the system does not say. */
export function bootId(): string {
  return read('/proc/sys/kernel/random/boot_id') ?? ''
}

/**
 * The state (field 3) and start time (field 22) of a process from its
 * `/proc/<pid>/stat` text. The command name (field 2) is in parentheses and
 * may hold spaces and parentheses itself: fields are counted after the last `)`.
 */
export function parseStat(stat: string): { state: string; start: string } | undefined {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // fields[0] is field 3 (state); field 22 (starttime) is fields[19].
  if (fields.length < 20) return undefined
  return { state: fields[0]!, start: fields[19]! }
}

let self: ProcessId | undefined

/** This process (read once). */
export function thisProcess(): ProcessId {
  self ??= readThisProcess()
  return self
}

function readThisProcess(): ProcessId {
  const boot = bootId()
  const stat = read(`/proc/${process.pid}/stat`)
  const parsed = stat === undefined ? undefined : parseStat(stat)
  let pidns = ''
  try {
    pidns = readlinkSync('/proc/self/ns/pid')
  } catch {
    // Not Linux (or no /proc): the host name stands for the machine.
  }
  const host = boot !== '' && parsed ? `${boot}/${pidns}` : `host:${hostname()}`
  return { pid: process.pid, start: parsed?.start ?? '', host }
}

/**
 * False only when the process is known to be gone: on this host (the same
 * boot and pid namespace), its pid is free, a zombie, or another process's.
 * A process of another host, or one this system cannot look at, is alive.
 */
export function processAlive(p: ProcessId, here: ProcessId = thisProcess()): boolean {
  if (p.host !== here.host) return true
  if (here.start !== '') {
    const stat = read(`/proc/${p.pid}/stat`)
    const parsed = stat === undefined ? undefined : parseStat(stat)
    // A zombie has exited: only its parent has not collected it yet.
    if (parsed) return parsed.state !== 'Z' && parsed.start === p.start
  }
  // No /proc, or one that hides other users' processes (hidepid): ask the kernel whether the pid exists.
  try {
    process.kill(p.pid, 0)
    return true
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as { code?: string }).code !== 'ESRCH'
  }
}
