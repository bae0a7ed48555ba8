/**
 * The commands, each on a connected client: `get`, `put`, `del`, `ls`,
 * `locks`, `release --force` and `counter` print one result (a table, or one
 * JSON value with `--json`); `watch` (watch.ts) streams; `lock`, `elect` and
 * `semaphore` run a command under a hold (run-under.ts). Each resolves its
 * exit code: 0 done, 1 not found or refused (or the command's own). Usage
 * mistakes throw `UsageError` before anything connects.
 *
 * @module
 */
import type { Value } from '../core/contract/adapter'
import { isZarisError } from '../core/contract/errors'
import { MAX_TTL } from '../core/contract/limits'
import { integerArg, keyArg, UsageError, type Parsed } from './args'
import { ENTRY_HEADER, entryRow, showKey, showTtl, table } from './format'
import { readLocks } from './lock-table'
import type { Run } from './run'
import { prepareElect, prepareLock, prepareSemaphore } from './run-under'
import { prepareWatch } from './watch'


/** Each verb's argument count and option check, resolving what to run. */
export const VERBS: Record<string, { args: [number, number]; options: string[]; prepare(p: Parsed): Run }> = {
  get: { args: [1, 1], options: [], prepare: (p) => get(keyArg(p.args[0]!), p.json) },
  put: { args: [2, 2], options: ['ttl', 'string', 'fence-token', 'fence-key'], prepare: preparePut },
  del: { args: [1, 1], options: ['fence-token', 'fence-key'], prepare: (p) => del(keyArg(p.args[0]!), fenceOf(p), p.json) },
  ls: { args: [0, 1], options: [], prepare: (p) => ls(p.args[0] ?? '', p.json) },
  watch: { args: [0, 1], options: ['from'], prepare: prepareWatch },
  locks: { args: [0, 1], options: [], prepare: (p) => locks(p.args[0] ?? '', p.json) },
  release: { args: [1, 1], options: ['force'], prepare: prepareRelease },
  counter: { args: [1, 2], options: [], prepare: prepareCounter },
  lock: { args: [1, 1], options: ['ttl', 'wait', 'grace'], prepare: prepareLock },
  elect: { args: [1, 1], options: ['ttl', 'wait', 'grace', 'candidate'], prepare: prepareElect },
  semaphore: { args: [1, 1], options: ['ttl', 'wait', 'grace', 'limit'], prepare: prepareSemaphore },
}

/**
 * The fence of a write under a hold: `--fence-token T` and the lock's key,
 * `--fence-key K` or the `ZARIS_LOCK_KEY` that `zaris lock` gives its command.
 */
function fenceOf(p: Parsed): { key: string; token: number } | undefined {
  const raw = p.options['fence-token']
  if (raw === undefined) {
    if (p.options['fence-key'] !== undefined) throw new UsageError('--fence-key goes with --fence-token T: the token the key must still be held with')
    return undefined
  }
  const token = integerArg(String(raw), '--fence-token', { min: 1, max: Number.MAX_SAFE_INTEGER })
  const key = p.options['fence-key'] ?? p.env.ZARIS_LOCK_KEY
  if (key === undefined || key === '') throw new UsageError('--fence-token needs the lock\'s key: --fence-key KEY, or ZARIS_LOCK_KEY (zaris lock gives it to its command)')
  return { key: keyArg(String(key), '--fence-key'), token }
}

const json = (value: unknown) => JSON.stringify(value)

function get(key: string, asJson: boolean): Run {
  return async (client, io) => {
    const entry = await client.get(key)
    if (asJson) io.out(json(entry ?? null))
    if (!entry) {
      io.err(`zaris: no entry at ${showKey(key)}`)
      return 1
    }
    if (!asJson) io.out(table(ENTRY_HEADER, [entryRow(entry)]))
    return 0
  }
}

function preparePut(p: Parsed): Run {
  const key = keyArg(p.args[0]!)
  const raw = p.args[1]!
  let value: Value = raw
  if (p.options.string !== true) {
    try {
      value = JSON.parse(raw) as Value
    } catch {
      // Not JSON: the words as a string.
    }
  }
  const ttl = p.options.ttl === undefined ? undefined : integerArg(String(p.options.ttl), '--ttl', { min: 1, max: MAX_TTL })
  const fence = fenceOf(p)
  return async (client, io) => {
    const entry = await client.put(key, value, { ...(ttl === undefined ? {} : { ttl }), ...(fence ? { fence } : {}) })
    io.out(p.json ? json(entry) : `put ${showKey(key)} at revision ${entry.revision}${ttl === undefined ? '' : `, expires in ${showTtl(ttl)}`}`)
    return 0
  }
}

function del(key: string, fence: { key: string; token: number } | undefined, asJson: boolean): Run {
  return async (client, io) => {
    const deleted = await client.delete(key, fence ? { fence } : undefined)
    if (asJson) io.out(json({ deleted }))
    else if (deleted) io.out(`deleted ${showKey(key)}`)
    if (!deleted) io.err(`zaris: no entry at ${showKey(key)}`)
    return deleted ? 0 : 1
  }
}

function ls(prefix: string, asJson: boolean): Run {
  return async (client, io) => {
    const entries = await client.list(prefix)
    if (asJson) io.out(json(entries))
    else if (entries.length === 0) io.err(`no entries${prefix === '' ? '' : ` under ${showKey(prefix)}`}`)
    else io.out(table(ENTRY_HEADER, entries.map(entryRow)))
    return 0
  }
}

function locks(prefix: string, asJson: boolean): Run {
  return async (client, io) => {
    const rows = await readLocks(client, prefix)
    if (asJson) io.out(json(rows))
    else if (rows.length === 0) io.err(`nothing held${prefix === '' ? '' : ` under ${showKey(prefix)}`}`)
    else {
      const lines = rows.flatMap((r) => [
        ...(r.holders.length === 0 ? [[showKey(r.key), 'free', '-', '-', showTtl(undefined)]] : []),
        ...r.holders.map((h) => [showKey(r.key), h.mode === 'shared' ? 'shared' : 'holder', h.owner, String(h.token), showTtl(h.ttl)]),
        ...r.waiters.map((w, i) => [showKey(r.key), `waiter ${i + 1}${w.mode === 'shared' ? ' (shared)' : ''}`, w.owner, '-', `since revision ${w.since}`]),
      ])
      io.out(table(['KEY', 'ROLE', 'OWNER', 'TOKEN', 'TIME LEFT'], lines))
    }
    return 0
  }
}

function prepareRelease(p: Parsed): Run {
  if (p.options.force !== true) {
    throw new UsageError('release ends a hold another process has (its token dies at once): say release --force KEY')
  }
  const key = keyArg(p.args[0]!)
  return async (client, io) => {
    const entry = await client.get(key)
    if (!entry || entry.owner === undefined) {
      if (p.json) io.out(json({ released: false, key }))
      io.err(entry ? `zaris: ${showKey(key)} is not held (it has no owner); zaris del deletes it` : `zaris: ${showKey(key)} is not held`)
      return 1
    }
    try {
      // Only the hold we read: if the key changed hands meanwhile, the new holder keeps it.
      await client.delete(key, { fence: { key, token: entry.created } })
    } catch (err) {
      if (!isZarisError(err, 'FENCED')) throw err
      if (p.json) io.out(json({ released: false, key }))
      io.err(`zaris: ${showKey(key)} changed hands while releasing (it was token ${entry.created}); nothing was freed, look again with zaris locks`)
      return 1
    }
    if (p.json) io.out(json({ released: true, key, owner: entry.owner, token: entry.created }))
    else io.out(`released ${showKey(key)} (held by ${entry.owner} with token ${entry.created})`)
    return 0
  }
}

function prepareCounter(p: Parsed): Run {
  const key = keyArg(p.args[0]!)
  const raw = p.args[1]
  const delta = raw === undefined ? undefined : integerArg(raw, 'N', { min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER })
  return async (client, io) => {
    const value = delta === undefined ? await client.counters.get(key) : await client.counters.increment(key, delta)
    io.out(p.json ? json(value) : String(value))
    return 0
  }
}
