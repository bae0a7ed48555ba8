/**
 * Recording a history at the adapter: every `get` and `commit` a client
 * sends — its own and the ones its holds send behind its back (renewals,
 * releases, the wait line) — as an invocation and a completion in the
 * Jepsen shape (test/lincheck/history.ts). Recording below the core makes
 * the history exactly the store's, so the model needs to know nothing of
 * how the core uses it.
 *
 * Runs in Node and in the browser (no imports beyond types).
 *
 * @module
 */
import type { Adapter, Check, CommitOptions, Op } from 'zaris'
import type { HistoryEvent } from './history'

/** Where events go, and the clock they are stamped with. */
export interface HistorySink {
  /**
   * Appends one event. A sink whose events travel (a page binding) returns a
   * promise that settles once the event has arrived: the recorder awaits it
   * for an invocation before sending the call, so a tab killed the moment
   * after never leaves a commit in the store that the history lacks.
   */
  push(event: HistoryEvent): void | Promise<void>
  /** Milliseconds on the clock every recorder of the history shares. */
  now(): number
  /** A process id never used before in this history. */
  newProcess(): number
}

/** A sink that keeps the events in memory. */
export class MemoryHistory implements HistorySink {
  readonly events: HistoryEvent[] = []
  #next: number
  constructor(
    readonly now: () => number,
    firstProcess = 0,
  ) {
    this.#next = firstProcess
  }
  push(event: HistoryEvent): void {
    this.events.push(event)
  }
  newProcess(): number {
    return this.#next++
  }
}

/** A sink that hands each event to `write` (a file append, a page binding), numbering processes from `firstProcess`. */
export function streamSink(write: (event: HistoryEvent) => void | Promise<void>, now: () => number, firstProcess: number): HistorySink {
  let next = firstProcess
  return { push: write, now, newProcess: () => next++ }
}

const ns = (ms: number) => Math.round(ms * 1e6)

/**
 * A commit as the model reads it: through a gate (capability `gates`: it may
 * take its key over a marked entry), and whether it was a kept take in line
 * (`keepParked` with `parkOrder`: a store may answer it failed with nothing
 * failed, held back behind an earlier waiter's turn), and its other ways.
 */
function commitInput(checks: Check[], ops: Op[], options: CommitOptions | undefined): Record<string, unknown> {
  const input: Record<string, unknown> = { checks, ops }
  if (options?.gate) input.gate = { key: options.gate.key, mode: options.gate.mode }
  if (options?.waitChange && options.keepParked && options.parkOrder !== undefined) input.inLine = true
  // Other ways (capability `orElse`, sent with keepParked): the store applies the first of them that holds.
  if (options?.orElse?.length && options.keepParked && options.waitChange) input.orElse = options.orElse
  return input
}

/** Whether an adapter's error proves the commit was not applied (bad input refused before anything was written). */
const refusedBeforeApplying = (err: unknown) => (err as { code?: string } | null)?.code === 'INVALID_ARGUMENT'

const errorOf = (err: unknown) => ({ code: (err as { code?: string } | null)?.code ?? null, message: err instanceof Error ? err.message : String(err) })


/**
 * Wraps `inner` so that `client`'s gets and commits are recorded into `sink`.
 * Operations in flight at once get distinct processes (a process does one
 * thing at a time, as Jepsen's do); a process whose operation ended in an
 * unknown outcome is not used again (Jepsen's crashed process). `tag`, if
 * given, names what the client was doing (kept on the invocation as `tag`).
 */
export function recordingAdapter(inner: Adapter, sink: HistorySink, client: string, tag?: () => string | undefined): Adapter {
  const idle: number[] = []
  const run = async <T>(f: string, input: unknown, call: () => Promise<T>, outcome: (r: T) => { type: 'ok' | 'fail'; value: unknown }): Promise<T> => {
    const process = idle.pop() ?? sink.newProcess()
    const invoke: HistoryEvent = { process, type: 'invoke', f, value: input, time: ns(sink.now()), client }
    const t = tag?.()
    if (t !== undefined) invoke.tag = t
    const delivered = sink.push(invoke)
    if (delivered) await delivered
    let result: T
    try {
      result = await call()
    } catch (err) {
      const type = refusedBeforeApplying(err) ? 'fail' : 'info'
      sink.push({ process, type, f, value: { error: errorOf(err) }, time: ns(sink.now()), client })
      if (type === 'fail') idle.push(process)
      throw err
    }
    const { type, value } = outcome(result)
    sink.push({ process, type, f, value, time: ns(sink.now()), client })
    idle.push(process)
    return result
  }
  const wrapped: Adapter = {
    name: inner.name,
    capabilities: inner.capabilities,
    get: (key) => run('get', { key }, () => inner.get(key), (entry) => ({ type: 'ok', value: { entry: entry ?? null } })),
    list: (prefix, options) => inner.list(prefix, options),
    commit: (checks: Check[], ops: Op[], options) =>
      run('commit', commitInput(checks, ops, options), () => inner.commit(checks, ops, options), (r) =>
        r.ok ? { type: 'ok', value: { revision: r.revision, entries: r.entries, deleted: r.deleted } } : { type: 'fail', value: { failed: r.failed.map((f) => ({ key: f.key, entry: f.entry ?? null })) } },
      ),
    watch: (prefix, sinkOfEvents, fromRevision) => inner.watch(prefix, sinkOfEvents, fromRevision),
    close: () => inner.close(),
  }
  if (inner.ownerGone) wrapped.ownerGone = inner.ownerGone.bind(inner)
  if (inner.registerOwner) wrapped.registerOwner = inner.registerOwner.bind(inner)
  if (inner.gate) wrapped.gate = inner.gate.bind(inner)
  return wrapped
}
