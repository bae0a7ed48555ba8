/**
 * Adapters with one bug each: the Map adapter of docs/writing-an-adapter.md
 * (an adapter written from the guide alone) with one rule of the contract
 * broken the way a store's author might break it. bugs.test.ts runs the
 * suite's cases for each and checks that they fail, naming the rule.
 *
 * Each bug is a list of text edits of the guide's `map-adapter.ts`; an edit
 * whose text the guide no longer has fails the test (update it here).
 */

export interface Bug {
  name: string
  /** The rule it breaks, as the suite's messages name it (`[rule …]`). */
  rule: string
  /** The bug, as it would come about in a store of one's own. */
  what: string
  /** `[text of the guide's adapter, what it becomes]`, applied in order. */
  edits: Array<[string, string]>
  /** Titles of the suite's tests that must fail on it. */
  caughtBy: string[]
}

const T = {
  checks: 'a failed check writes nothing and returns the current entries of the failed checks',
  expiryRevision: 'revision rises strictly across commits, deletes and expiry',
  expiresOnce: 'an entry expires at its TTL: absent to reads and checks, reported once as expire',
  race: 'of many racing create-if-absent commits on one key, exactly one wins',
  load: 'watch under load: every event of 240 racing commits arrives once, in revision order; a loss is named',
  clock: "the store's clock decides TTLs: with the client's clock 2 s ahead or behind, an entry lives its TTL",
  reCreate: 'new life: a key its own owner creates again after its entry expired gets a new created (token), after an expire event; a client re-taking its own expired lock, a larger token',
  requestId: 'request id: a commit sent again with its id is answered as the first time and applied once, also from another connection',
  seen: 'seen: after the store restarts, a client is never handed a revision at or below one it has seen',
  compaction: 'compaction: a watch from before the history the store keeps is refused with CompactedError, never served part of it',
  exhaustion: 'exhaustion: at Number.MAX_SAFE_INTEGER a store refuses commits with RevisionExhaustedError, writes nothing and still answers reads',
  fractional: 'fractional TTLs: taken as they are, never rounded to "no TTL"; each entry expires',
} as const

export const BUGS: Bug[] = [
  {
    name: 'delete-ignores-its-check',
    rule: 'checks',
    what: "a delete ignores the commit's checks on its key (deleting what is gone is harmless, the author thought)",
    edits: [['const failed = checks.filter((c) => !holds(', "const failed = checks.filter((c) => !ops.some((op) => op.type === 'delete' && op.key === c.key) && !holds("]],
    caughtBy: [T.checks],
  },
  {
    name: 'fence-ignored',
    rule: 'checks',
    what: 'a check on created (a fenced write) always holds',
    edits: [['return (e?.created ?? null) === check.created', 'return true']],
    caughtBy: [T.checks],
  },
  {
    name: 'expiry-without-a-revision',
    rule: 'expiry-revision',
    what: 'an expiry is logged at the current revision instead of taking the next',
    edits: [['      this.revision = this.nextRevision()\n      this.append({ type: \'expire\'', "      this.append({ type: 'expire'"]],
    caughtBy: [T.expiryRevision, T.expiresOnce],
  },
  {
    name: 'checks-before-the-lock',
    rule: 'atomic',
    what: "the checks are read before the commit's lock is taken (here: an await between the checks and the writes), so racing commits all pass them",
    edits: [
      ['  commit(checks: Check[], ops: Op[], seen: number, requestId: string | undefined): CommitResult {', '  async commit(checks: Check[], ops: Op[], seen: number, requestId: string | undefined): Promise<CommitResult> {'],
      ['    const revision = this.nextRevision()\n', '    await Promise.resolve()\n    const revision = this.nextRevision()\n'],
      ['const result = s.commit(', 'const result = await s.commit('],
    ],
    caughtBy: [T.race],
  },
  {
    name: 'watch-skips-past-a-page',
    rule: 'watch-complete',
    what: 'a watcher that read a page of the log moves its cursor to the head of the log, skipping what was past the page under load',
    edits: [['            cursor = page.at(-1)!.revision', '            cursor = s.revision']],
    caughtBy: [T.load],
  },
  {
    name: 'ttl-on-the-client-clock',
    rule: 'store-clock',
    what: "a deadline is worked out on the client's clock (Date.now()) and judged on the store's",
    edits: [['expiresAt: now + op.ttl', 'expiresAt: Date.now() + op.ttl']],
    caughtBy: [T.clock],
  },
  {
    name: 'created-kept-after-expiry',
    rule: 'new-life',
    what: 'a commit does not sweep lapsed entries first (reads and checks skip them, a timer sweeps later): a set by the same owner over a lapsed entry keeps its created',
    edits: [['    this.sweep(now)\n    const failed', '    const failed']],
    caughtBy: [T.reCreate],
  },
  {
    name: 'request-id-ignored',
    rule: 'request-id',
    what: 'answers are kept by request id, but a commit sent again is applied again',
    edits: [['    if (kept) return structuredClone(kept.answer)\n', '']],
    caughtBy: [T.requestId],
  },
  {
    name: 'seen-ignored',
    rule: 'seen',
    what: 'a store that restarted empty starts again from revision 1, whatever its clients saw',
    edits: [['    this.revision = Math.max(this.revision, Math.min(seen, SEEN_REVISION_LIMIT))\n', '']],
    caughtBy: [T.seen],
  },
  {
    name: 'compaction-served-partly',
    rule: 'compaction',
    what: 'a watch from before the kept history replays what is left instead of refusing',
    edits: [['          if (cursor < s.floor) return watcher.end(', '          if (cursor < -1) return watcher.end(']],
    caughtBy: [T.compaction],
  },
  {
    name: 'revisions-past-the-end',
    rule: 'exhaustion',
    what: 'revisions go on past Number.MAX_SAFE_INTEGER, where they lose their order',
    edits: [['    if (this.revision >= Number.MAX_SAFE_INTEGER) throw new RevisionExhaustedError(', '    if (this.revision > Infinity) throw new RevisionExhaustedError(']],
    caughtBy: [T.exhaustion],
  },
  {
    name: 'ttl-in-whole-milliseconds',
    rule: 'fractional-ttl',
    what: 'a TTL is kept in whole milliseconds, and one below 1 ms becomes no TTL',
    edits: [['  if (op.ttl !== undefined) Object.assign(e, { ttl: op.ttl, expiresAt: now + op.ttl })', '  const ttl = Math.trunc(op.ttl ?? 0)\n  if (ttl > 0) Object.assign(e, { ttl, expiresAt: now + ttl })']],
    caughtBy: [T.fractional],
  },
]

/** `code` with `bug`'s edits, or an error naming the first edit whose text is not there. */
export function withBug(code: string, bug: Bug): string {
  for (const [from, to] of bug.edits) {
    if (!code.includes(from)) throw new Error(`bug ${bug.name}: the guide's map-adapter.ts no longer contains ${JSON.stringify(from)} (update test/conformance/bugs/bugs.ts)`)
    code = code.replace(from, to)
  }
  return code
}
