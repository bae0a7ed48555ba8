/**
 * What the tests start — Postgres, PgBouncer, redis-server, etcd, zaris
 * nodes, worker processes, Chromium — must not outlive the test process
 * that started it. A run stopped hard (`kill -9`, a crashed worker, Stryker
 * stopped) used to leave them running with their ports, memory and
 * `/dev/shm` folders (ten Postgres servers and 680 MB once).
 *
 * {@link spawnWatched} starts one in a process group of its own, beside a
 * watchdog: a shell whose stdin is a pipe from the test process and that
 * kills the whole group once that pipe closes, which happens when the test
 * process ends, however it ends. When the process exits first (a test's
 * own kill or stop), its watchdog goes with it, so no later process that
 * reuses the id is ever signalled.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'

/**
 * `spawn(command, args, options)` in a process group of its own, killed with
 * the test process (see the module doc); `removes`: a folder of its data,
 * removed then too (a server's in /dev/shm is memory).
 */
export function spawnWatched(command: string, args: readonly string[], options: SpawnOptions = {}, removes = ''): ChildProcess {
  const proc = spawn(command, args, { ...options, detached: true })
  if (proc.pid === undefined) return proc // not started: its 'error' event says why
  const script = 'cat > /dev/null; kill -KILL "-$0" 2> /dev/null; [ -z "$1" ] || rm -rf -- "$1"'
  const watchdog = spawn('/bin/sh', ['-c', script, String(proc.pid), removes], { stdio: ['pipe', 'ignore', 'ignore'], detached: true })
  // The watchdog never keeps the test process alive: the pipe closes with it, which is the point.
  watchdog.unref()
  ;(watchdog.stdin as unknown as { unref?(): void } | null)?.unref?.()
  proc.once('exit', () => watchdog.kill('SIGKILL'))
  return proc
}
