/**
 * The recorded steps of a fault-suite client, shared by worker processes
 * (worker.ts) and the clients tests run in their own process: each step does
 * one thing with zaris and appends what happened to the history.
 */
import { Client, connect, isZarisError, type Adapter, type Lock } from 'zaris'
import type { HistoryEvent } from '../lincheck/history'
import { recordingAdapter, streamSink, type HistorySink } from '../lincheck/recorder'
import { sharedNow, type HistoryRecord } from './checker'

/** Where a client's records go. */
export type Recorder = (record: HistoryRecord) => void

/** The resource a lock guards: `lock:X` guards `res:X`. */
export const resourceOf = (lock: string) => `res:${lock.replace(/^lock:/, '')}`

let nextProcesses = 10_000_000

/**
 * A history kept in memory, for clients in the test's own process: their
 * observations (`history`, through `record`) and their store operations
 * (`operations`, through `sink`: give it to {@link recordedClient}).
 */
export function memoryHistory(): { history: HistoryRecord[]; record: Recorder; operations: HistoryEvent[]; sink: HistorySink } {
  const history: HistoryRecord[] = []
  const operations: HistoryEvent[] = []
  const sink = streamSink((e) => void operations.push(e), sharedNow, (nextProcesses += 10_000))
  return { history, record: (r) => void history.push(r), operations, sink }
}

/** A client whose store operations are recorded into `sink` (test/lincheck/recorder.ts): `connect(url)`'s adapter, wrapped. */
export async function recordedClient(url: string, id: string, sink: HistorySink): Promise<Client> {
  return recordedOver((await connect(url, { id })).adapter, id, sink)
}

/** A client on `adapter` whose store operations are recorded into `sink`. */
export function recordedOver(adapter: Adapter, id: string, sink: HistorySink): Client {
  return new Client(recordingAdapter(adapter, sink, id), { id })
}

export interface RecordedOps {
  /** One acquisition; `undefined` when the wait ran out or the store failed. Records the acquire and, later, a loss. */
  take(lock: string, options: { ttl: number; wait: number; autoRenew?: boolean; signal?: AbortSignal }): Promise<Lock | undefined>
  /** One write to the lock's resource fenced by it. */
  write(lock: Lock, seq: number): Promise<'accepted' | 'refused' | 'unknown'>
  /** One unfenced write. */
  plainPut(key: string, value: number): Promise<'accepted' | 'unknown'>
  release(lock: Lock): Promise<void>
  note(text: string, extra?: Record<string, unknown>): void
}

export function recordedOps(client: Client, id: string, record: Recorder): RecordedOps {
  const note = (text: string, extra: Record<string, unknown> = {}) => record({ type: 'note', client: id, text, at: sharedNow(), ...extra })
  return {
    note,
    async take(lock, options) {
      const invokedAt = sharedNow()
      let held: Lock | null
      try {
        held = await client.locks.acquire(lock, { ttl: options.ttl, wait: options.wait, autoRenew: options.autoRenew ?? true, signal: options.signal })
      } catch (err) {
        note(`acquire failed: ${(err as Error).message}`)
        return undefined
      }
      if (!held) {
        note(`acquire of ${lock} waited ${options.wait} ms in vain`)
        return undefined
      }
      record({ type: 'acquire', client: id, lock, token: held.token, invokedAt, at: sharedNow() })
      const token = held.token
      held.signal.addEventListener('abort', () => {
        const code = (held.signal.reason as { code?: string })?.code ?? 'unknown'
        if (code !== 'RELEASED' && code !== 'CLOSED') record({ type: 'loss', client: id, lock, token, reason: code, at: sharedNow() })
      })
      return held
    },
    async write(lock, seq) {
      const resource = resourceOf(lock.key)
      const invokedAt = sharedNow()
      try {
        const e = await client.put(resource, { token: lock.token, by: id, seq }, { fence: lock })
        record({ type: 'write', client: id, resource, lock: lock.key, token: lock.token, outcome: 'accepted', revision: e.revision, invokedAt, at: sharedNow() })
        return 'accepted'
      } catch (err) {
        const outcome = isZarisError(err, 'FENCED') ? 'refused' : 'unknown'
        record({ type: 'write', client: id, resource, lock: lock.key, token: lock.token, outcome, invokedAt, at: sharedNow() })
        if (outcome === 'unknown') note(`write failed: ${(err as Error).message}`)
        return outcome
      }
    },
    async plainPut(key, value) {
      const invokedAt = sharedNow()
      try {
        const e = await client.put(key, value)
        record({ type: 'write', client: id, resource: key, outcome: 'accepted', revision: e.revision, invokedAt, at: sharedNow() })
        return 'accepted'
      } catch (err) {
        record({ type: 'write', client: id, resource: key, outcome: 'unknown', invokedAt, at: sharedNow() })
        note(`put failed: ${(err as Error).message}`)
        return 'unknown'
      }
    },
    async release(lock) {
      const invokedAt = sharedNow()
      try {
        const released = await lock.release()
        record({ type: 'release', client: id, lock: lock.key, token: lock.token, released, invokedAt, at: sharedNow() })
      } catch (err) {
        note(`release failed: ${(err as Error).message}`)
      }
    },
  }
}

/**
 * Follows `prefix` through the adapter itself (below the client's own
 * de-duplication), recording every event; `end(through)` closes it.
 */
export async function recordedWatch(client: Client, id: string, watch: string, prefix: string, from: number, record: Recorder): Promise<{ end(through?: number): void; last(): number; endedWith(): string | undefined }> {
  let last = from
  let ended = false
  let endedWith: string | undefined
  record({ type: 'watch-start', client: id, watch, prefix, from, at: sharedNow() })
  const unsubscribe = await client.adapter.watch(
    prefix,
    {
      event(ev) {
        if (ended) return
        last = Math.max(last, ev.revision)
        record({ type: 'watch-event', client: id, watch, key: ev.key, kind: ev.type, revision: ev.revision, at: sharedNow() })
      },
      error(err) {
        if (ended) return
        ended = true
        endedWith = `${(err as { code?: string }).code ?? ''} ${err.message}`
        record({ type: 'watch-end', client: id, watch, reason: (err as { code?: string }).code ?? err.message, at: sharedNow() })
      },
    },
    from,
  )
  return {
    last: () => last,
    endedWith: () => endedWith,
    end(through) {
      if (ended) return
      ended = true
      unsubscribe()
      record({ type: 'watch-end', client: id, watch, reason: 'closed', through, at: sharedNow() })
    },
  }
}

/**
 * The final state of every resource an accepted write of `history` wrote,
 * read through `client`, as `final` records (for the lost-write check), and
 * the newest revision accepted on a `res:` key (what a watcher must reach).
 */
export async function finalRecords(client: Client, history: HistoryRecord[]): Promise<{ finals: HistoryRecord[]; lastResourceRevision: number }> {
  const finals: HistoryRecord[] = []
  const resources = new Set(history.flatMap((r) => (r.type === 'write' && r.outcome === 'accepted' ? [r.resource] : [])))
  for (const resource of resources) {
    const e = await client.get<{ token?: number }>(resource)
    const value = e?.value
    finals.push({ type: 'final', resource, revision: e?.revision ?? 0, token: typeof value === 'object' && value !== null ? value.token : undefined, at: sharedNow() })
  }
  const lastResourceRevision = Math.max(0, ...history.flatMap((r) => (r.type === 'write' && r.outcome === 'accepted' && r.resource.startsWith('res:') ? [r.revision!] : [])))
  return { finals, lastResourceRevision }
}
