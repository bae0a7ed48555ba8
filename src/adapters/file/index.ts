/**
 * The `file://` store: the processes of one machine coordinate through one
 * SQLite file (`better-sqlite3`, loaded only when used), with no server to
 * run. `file:///var/lib/app/zaris.db?ns=jobs`.
 *
 * Everything the contract asks, across processes: compare-and-set commits,
 * the new-life rule, tokens that never go back, TTLs on the machine's
 * monotonic clock, watch from a revision, and the client features built on
 * them (the wait line, counters, election). The line hands over
 * (capabilities `handover`, `keepParked`, `orElse`): a release grants the
 * lock or permit to the first parked take in its own transaction. And one more, capability
 * `ownerGone`: a process that dies (`kill -9`, a crash, an exit without
 * closing) has its locks, leases and places in line ended at once, as
 * expiries, for every reader — within tens of milliseconds, not the TTL;
 * a process that is only stopped keeps them until their TTL.
 *
 * How, in brief (each module says more):
 * - `ledger.ts`: every write is one SQLite transaction under the file's
 *   write lock, with one reading of the clock: expiries due, gone owners
 *   ended, the commit, the namespace's revision; tokens never repeat, even
 *   after a power cut (a reservation synced to disk);
 * - `machine.ts`: the shared clock, and which processes are alive (pid and
 *   start time, so a reused pid is not taken for the dead one);
 * - `owners.ts`: registrations, and when who looks for the gone;
 * - `tail.ts`: watches follow the file's change log, woken by the kernel's
 *   note that the log was written (`fs.watch`), with a poll as backstop;
 *   `shared-tail.ts`: one reader of the log per process and namespace;
 * - `parked.ts`: parked commits as rows, handed over in each write;
 *   `waits.ts`: this process's waits for their answers;
 * - `schema.ts`: the tables; `url.ts`: the connection string.
 *
 * Limits: one machine, a local file system (SQLite's locks are not
 * dependable over NFS or SMB); processes in other pid namespaces
 * (containers) sharing a file are never judged dead, so their holds last
 * their TTL; a process stopped in the middle of a write transaction (a few
 * microseconds) holds every other's writes until it runs again.
 *
 * @module
 */
import type BetterSqlite3 from 'better-sqlite3'
import type { Adapter, Capabilities } from '../../core/contract/adapter'
import type { Clock } from '../../core/time/clock'
import { InvalidArgumentError, UnavailableError } from '../../core/contract/errors'
import { checkCommitArgs, checkKey, checkListOptions, checkOrElse, checkOwner, checkPrefix, checkRequestId, checkSignal, checkWatchArgs, describe } from '../../core/contract/validate'
import { AdapterLife } from '../kit/life'
import { loadOptional } from '../kit/load'
import { boundLog } from './checkpoint'
import { machineClock, type ProcessId } from './machine'
import { migrate } from './schema'
import { FileStore, retry } from './store'
import { POLL_MS } from './tail'
import { parseFileUrl } from './url'

export { parseFileUrl, type FileTarget } from './url'

/**
 * Options of {@link fileAdapter}.
 *
 * @example
 * const options: FileAdapterOptions = { path: '/var/lib/app/zaris.db', namespace: 'jobs' }
 */
export interface FileAdapterOptions {
  /** The SQLite file: created if missing (its folder must exist); shared by every process that opens it. */
  path: string
  /** The namespace: a store of its own within the file. */
  namespace: string
  /**
   * `normal` (default): a commit survives any process's crash at once, and
   * the machine's after the next checkpoint; tokens never repeat either way.
   * `full`: every commit is synced to disk before it is answered.
   */
  sync?: 'normal' | 'full'
  /** Events kept in the file for watches that resume from a revision. Default 10 000. */
  historySize?: number
  /** @internal The store's clock (tests); every process sharing the file must use the same one. Default: the machine's monotonic clock. */
  clock?: Clock
  /** @internal This process as the store records it (tests). */
  self?: ProcessId
  /** @internal Whether a registered process is alive (tests). */
  alive?: (p: ProcessId, here: ProcessId) => boolean
  /** @internal How long a call waits for another process's write before UNAVAILABLE, in ms (tests). Default 10 000. */
  busyLimitMs?: number
  /**
   * @internal Whether watches hear of other processes' commits from the
   * kernel (fs.watch on the write-ahead log) besides the poll. Default: yes,
   * unless `ZARIS_FILE_NO_NOTIFY=1` (where file notifications misbehave).
   */
  notify?: boolean
  /** @internal How often watches look at the file in any case, in ms. Default 100. */
  pollMs?: number
  /** @internal This boot of the machine, '' for unknown (tests). Default: Linux's boot id. */
  boot?: string
}

/** How long SQLite itself waits for another process's write before answering busy (then the store waits without blocking), in ms. */
const BUSY_TIMEOUT_MS = 5

const CAPABILITIES: Capabilities = Object.freeze({ history: true, ownerGone: true, commitOnChange: true, keepParked: true, handover: true, orElse: true })

/** The longest a commit parks in the file, in ms (a longer `waitChange` is cut to it; the core parks at most as long). */
export const MAX_PARK_MS = 30_000

/**
 * Opens a namespace of a SQLite file shared by the processes of this
 * machine. Needs the optional peer dependency `better-sqlite3`.
 *
 * @example
 * const adapter = await fileAdapter({ path: '/var/lib/app/zaris.db', namespace: 'jobs' })
 * const client = new Client(adapter)
 */
export async function fileAdapter(options: FileAdapterOptions): Promise<Adapter> {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('fileAdapter needs options: { path, namespace }')
  const { path, namespace } = options
  if (typeof path !== 'string' || path === '' || path.includes('\0')) throw new InvalidArgumentError(`path must name a file, got ${describe(path)}`)
  if (typeof namespace !== 'string' || !/^[A-Za-z0-9._~-]{1,128}$/.test(namespace)) {
    throw new InvalidArgumentError(`namespace must be letters, digits and . _ ~ - (at most 128), got ${describe(namespace)}`)
  }
  const sync = options.sync ?? 'normal'
  if (sync !== 'normal' && sync !== 'full') throw new InvalidArgumentError(`sync must be 'normal' or 'full', got ${describe(sync)}`)
  const historySize = options.historySize ?? 10_000
  if (!Number.isSafeInteger(historySize) || historySize < 1) throw new InvalidArgumentError(`historySize must be a whole number >= 1, got ${describe(historySize)}`)
  const { mod, inner } = await loadOptional('better-sqlite3', 'better-sqlite3', 'the file:// store')
  const Database = (inner ?? mod) as unknown as typeof BetterSqlite3
  let db: BetterSqlite3.Database
  try {
    db = new Database(path)
  } catch (err) {
    throw new UnavailableError(`cannot open ${path}: ${(err as Error).message} (its folder must exist, and be writable)`, { cause: err })
  }
  try {
    const store = await retry(path, () => {
      // WAL: readers never wait for the writer, and processes share one log.
      db.pragma('journal_mode = WAL')
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`)
      db.pragma('synchronous = NORMAL')
      boundLog(db)
      migrate(db, path)
      return new FileStore({
        ...options,
        db,
        file: path,
        sync,
        historySize,
        clock: options.clock ?? machineClock,
        notify: options.notify ?? process.env.ZARIS_FILE_NO_NOTIFY !== '1',
        pollMs: options.pollMs ?? POLL_MS,
      })
    }, options.busyLimitMs)
    return adapterOf(store)
  } catch (err) {
    db.close()
    throw err
  }
}

/**
 * `connect`'s way in: opens the store a `file://` URL names.
 *
 * @example
 * const adapter = await fromUrl('file:///var/lib/app/zaris.db?ns=jobs')
 */
export async function fromUrl(url: string): Promise<Adapter> {
  const { path, namespace, sync } = parseFileUrl(url)
  return fileAdapter({ path, namespace, sync })
}

/** The Adapter over a store: arguments checked, calls refused once closed, SQLite's busy waited out. */
function adapterOf(store: FileStore): Adapter {
  const life = new AdapterLife('file')
  // Checked at every try: a close while a call waits for the file ends the call with CLOSED.
  const run = <T>(op: () => T): Promise<T> =>
    retry(
      store.file,
      () => {
        life.assertOpen()
        return op()
      },
      store.busyLimitMs,
    )
  return {
    name: 'file',
    capabilities: CAPABILITIES,
    async get(key) {
      checkKey(key)
      return run(() => store.get(key))
    },
    async list(prefix, options) {
      checkPrefix(prefix)
      const { after, limit } = checkListOptions(options)
      return run(() => store.list(prefix, after, limit))
    },
    async commit(checks, ops, options) {
      checkCommitArgs(checks, ops)
      const requestId = checkRequestId(options?.requestId)
      // A wait of whole ms, cut to MAX_PARK_MS; none (undefined, 0, negative, NaN) does not park.
      const wait = options?.waitChange
      if (!(wait! > 0)) return run(() => store.commit(checks, ops, requestId))
      life.assertOpen()
      const { keepParked, wakeOwner, parkOrder, orElse, onParked } = options!
      checkOrElse(orElse)
      if (wakeOwner !== undefined && typeof wakeOwner !== 'string') throw new InvalidArgumentError(`wakeOwner must be a client id, got ${describe(wakeOwner)}`)
      if (parkOrder !== undefined && !Number.isSafeInteger(parkOrder)) throw new InvalidArgumentError(`parkOrder must be a safe integer, got ${describe(parkOrder)}`)
      const keep = keepParked === true
      const req = { checks, ops, orElse: keep ? (orElse ?? []).map((w) => ({ checks: w.checks, ops: w.ops })) : [], keep, wakeOwner, order: parkOrder, requestId, ms: Math.min(Math.ceil(wait!), MAX_PARK_MS) }
      return store.park(req, checkSignal(options!.signal), onParked)
    },
    async watch(prefix, sink, fromRevision) {
      checkWatchArgs(prefix, sink, fromRevision)
      return life.track(await run(() => store.watch(prefix, sink, fromRevision)))
    },
    async history(prefix, after, limits) {
      checkPrefix(prefix)
      return run(() => store.history(prefix, after, limits))
    },
    async registerOwner(owner) {
      checkOwner(owner)
      return run(() => store.register(owner))
    },
    async ownerGone(owner, signal) {
      life.assertOpen()
      return store.ownerGone(owner, signal)
    },
    async close() {
      if (life.close()) await store.close()
    },
  }
}
