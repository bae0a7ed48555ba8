/**
 * Temporary folders for the data of the stores the tests start (etcd's
 * --data-dir, a node's SQLite --data file): in memory (/dev/shm) where the
 * machine has one with room to spare, else under the usual tmpdir.
 *
 * Why: every acknowledged write of etcd and of a SQLite node is fsynced, and
 * on the shared 2-core machine's disk an fsync took 8-30 ms (500 etcd puts:
 * 8.5-30 ms a put on disk, 4-5.4 ms in /dev/shm, measured alternately at
 * load 13). What the tests do to stores — kill -9, SIGSTOP, a restart on the
 * same data — keeps what was written either way: a killed process's writes
 * are in the page cache, whichever file system holds them. No test cuts the
 * machine's power, the one fault an fsync is for.
 */
import { mkdtempSync, statfsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const SHM = '/dev/shm'
/** Room /dev/shm must have: etcd preallocates 64 MB of WAL a member, and a test file runs up to three. */
const ROOM = 1024 ** 3

let base: string | undefined

/** /dev/shm when it exists with at least 1 GiB free, else tmpdir(). Once per process. */
export function storeTmpdir(): string {
  if (base !== undefined) return base
  try {
    const s = statfsSync(SHM)
    base = s.bavail * s.bsize >= ROOM ? SHM : tmpdir()
  } catch {
    base = tmpdir()
  }
  return base
}

/** A new folder for a store's data, named `prefix` plus a random tail (mkdtemp). The caller removes it. */
export function storeDir(prefix: string): string {
  return mkdtempSync(join(storeTmpdir(), prefix))
}
