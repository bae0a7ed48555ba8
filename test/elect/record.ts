/**
 * Records the commits of zaris/elect (its store, src/elect/store.ts) in the
 * shape test/lincheck/recorder.ts gives a full client's, so the checker
 * judges the terms and fenced writes of election-only tabs and full-client
 * tabs in one history. Runs in the harness page: the page serves the
 * sources, so `TermStore` here is the class the entry uses, and its
 * `commit` is wrapped in place (the recorder sends the invocation before the
 * commit goes, as for a client). Reads are not recorded: the terms are
 * decided by commits alone.
 *
 * @module
 */
import type { Adapter, CommitOptions, Gate } from 'zaris'
import type { ThroughGate } from '../../src/adapters/indexeddb/transactions'
import { TermStore } from '../../src/elect/store'
import type { HistoryEvent } from '../lincheck/history'
import { recordingAdapter, streamSink } from '../lincheck/recorder'

/** Makes every election-only store of this page record its commits as client `id` through `push`, timed on `now` (the tabs' shared clock, test/browser-harness/tab-clock.ts). */
export function recordElections(id: string, push: (event: HistoryEvent) => Promise<void>, now: () => number): void {
  // Process numbers of its own, apart from the page's recorded clients (2^20 blocks of 1000).
  const sink = streamSink(push, now, (1 + Math.floor(Math.random() * 2 ** 20)) * 1000)
  const commit = TermStore.prototype.commit
  const recorders = new WeakMap<TermStore, Adapter>()
  /** The real gate of a commit under way, by its checks array. */
  const gates = new WeakMap<object, ThroughGate>()
  const of = (store: TermStore): Adapter => {
    let a = recorders.get(store)
    if (a) return a
    const inner: Adapter = {
      name: 'elect',
      get: () => Promise.reject(new Error('not recorded')),
      list: () => Promise.reject(new Error('not recorded')),
      commit: (checks, ops) => commit.call(store, checks, ops as Parameters<TermStore['commit']>[1], gates.get(checks)),
      watch: () => Promise.reject(new Error('not recorded')),
      close: async () => {},
    }
    recorders.set(store, (a = recordingAdapter(inner, sink, id)))
    return a
  }
  TermStore.prototype.commit = function (this: TermStore, checks, ops, gate) {
    if (!gate) return of(this).commit(checks, ops)
    gates.set(checks, gate)
    const options: CommitOptions = { gate: { key: gate.key, mode: gate.mode === 'x' ? 'exclusive' : 'shared' } as Gate }
    return of(this).commit(checks, ops, options)
  }
}
