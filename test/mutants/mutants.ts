/**
 * Injected bugs: each one expression of one module of src/, rewritten when
 * the module is loaded by the mutants' vitest config (vitest.config.ts
 * here) with `ZARIS_MUTANT=<name>`. No hook in src/: the source under test
 * is the real one, patched in the loader. `npm run test:mutants` runs each
 * against the tests that should catch it and fails if any survives
 * (test/mutants/run.ts); the table goes to RELIABILITY.md.
 *
 * @module
 */

export interface Mutant {
  name: string
  /** What the bug does, in words. */
  bug: string
  /** The module (path from the repository root) and the exact text replaced. */
  file: string
  from: string
  to: string
  /** The test files that must fail with it. */
  tests: string[]
  /** Only the tests whose names match (vitest's `-t`), when the files hold many more. */
  filter?: string
}

const MODEL = 'test/model/memory.test.ts'
/** The lock-family conformance cases on the memory store, judged by the lock-family models (test/lincheck/family.ts). */
const FAMILY = 'test/memory/conformance.test.ts'
/** `client.jobs.once` on the memory store, time moved by hand. */
const JOBS = 'test/jobs/once.test.ts'
const JOB_BODY = 'src/core/jobs/body.ts'

export const MUTANTS: Mutant[] = [
  {
    name: 'fence-check-removed',
    bug: 'a fenced write is sent without its fence check (a plain write)',
    file: 'src/core/client.ts',
    from: 'checks.push(...fenceChecks(f as Fence))',
    to: 'void f',
    tests: [MODEL],
  },
  {
    name: 'overwrite-keeps-created',
    bug: "a write that changes the owner keeps created (issue 12's bug: an ownerless overwrite of a lock leaves its token alive)",
    file: 'src/adapters/kit/write.ts',
    from: 'const sameLife = existing !== undefined && !op.fresh && existing.owner === op.owner',
    to: 'const sameLife = existing !== undefined && !op.fresh',
    tests: [MODEL],
  },
  {
    name: 'release-without-token-check',
    bug: "release deletes the lock key whoever holds it now (no check of the token)",
    file: 'src/core/hold/hold.ts',
    from: 'const r = await this.#ctx.adapter.commit(this.#life.checks, this.#life.releaseOps())',
    to: 'const r = await this.#ctx.adapter.commit([], this.#life.releaseOps())',
    tests: [MODEL],
  },
  {
    name: 'renewal-extends-stolen-lock',
    bug: 'a renewal writes the lock without checking its token: it takes back a stolen lock',
    file: 'src/core/hold/hold.ts',
    from: "this.#ctx.adapter.commit(this.#life.checks, [{ type: 'set'",
    to: "this.#ctx.adapter.commit([], [{ type: 'set'",
    tests: [MODEL],
  },
  {
    name: 'expiry-without-revision',
    bug: "an expiry does not take a revision of its own (the next commit reuses the expire event's)",
    file: 'src/adapters/kit/local-store.ts',
    from: 'this.#revision = revision\n      this.#empty(top)',
    to: 'this.#empty(top)',
    tests: [MODEL],
  },
  {
    name: 'watch-drops-delete',
    bug: 'watchers are not told of deletes (a live subscriber misses the event)',
    file: 'src/adapters/kit/event-log.ts',
    from: 'for (const s of this.#subscribers) if (event.key.startsWith(s.prefix)) deliver(s, event)',
    to: "for (const s of this.#subscribers) if (event.key.startsWith(s.prefix) && event.type !== 'delete') deliver(s, event)",
    tests: [MODEL],
  },
  {
    name: 'semaphore-grants-limit-plus-one',
    bug: 'a semaphore of limit n takes its permits from n + 1 slots (one permit too many)',
    file: 'src/core/acquire/permit-part.ts',
    from: 'this.#limit = limit',
    to: 'this.#limit = limit + 1',
    tests: [FAMILY],
    filter: 'semaphore never has more than limit',
  },
  {
    name: 'shared-beside-exclusive',
    bug: 'a shared acquire that saw no group writes one without checking the key is free (a shared grant beside an exclusive holder)',
    file: 'src/core/acquire/shared-part.ts',
    from: 'checks.push({ key: this.#key, revision: null })\n      ops.push(newGroup)',
    to: 'ops.push(newGroup)',
    tests: [FAMILY],
    filter: 'shared holders overlap and never overlap an exclusive one',
  },
  {
    name: 'shared-hold-outlives-steal',
    bug: "a shared hold's fence checks only its own entry, not its group's life (its fenced writes pass after a steal)",
    file: 'src/core/hold/life.ts',
    from: 'if (life?.group) this.checks.push({ key: life.group.key, created: life.group.created })',
    to: 'if (life?.group) void life.group',
    tests: [FAMILY],
    filter: 'a steal ends every shared hold',
  },
  {
    name: 'parked-retry-without-checks',
    bug: "a node in front of a store that cannot hand over tries a parked commit again without its checks (it applies the ops once any checked key changes)",
    file: 'src/server/parking.ts',
    from: 'const r = await adapter.commit(checks, ops, options)',
    to: 'const r = await adapter.commit([], ops, options)',
    tests: ['test/model/node-park.test.ts'],
    filter: 'parking on its watch',
  },
  {
    name: 'handover-skips-checks',
    bug: "a store that hands over applies a parked commit on any change of a key it checks, without judging its checks (a second holder)",
    file: 'src/adapters/kit/parked.ts',
    from: 'if (outcomes.every(Boolean)) {',
    to: 'if (true) {',
    tests: [MODEL, 'test/model/node-park.test.ts'],
    filter: 'linearizable',
  },
  {
    name: 'handover-after-stop',
    bug: "a parked commit whose wait was ended (its waiter gave up, its adapter closed) stays parked and can still be applied",
    file: 'src/adapters/kit/parked.ts',
    from: 'const undo = options.stop(() => this.#settle(p, p.first))',
    to: 'const undo = options.stop(() => {})',
    tests: ['test/memory/handover.test.ts', 'test/memory/handover-race.test.ts'],
  },
  {
    name: 'handover-keeps-lost-place',
    bug: 'a take kept parked (keepParked) is not answered when a check that held on its first try fails (the waiter gave up and deleted its place)',
    file: 'src/adapters/kit/parked.ts',
    from: 'outcomes.some((h, i) => !h && (p.firstHeld[i] || this.#wakes(p, p.checks[i]!)))',
    to: 'outcomes.some((h, i) => !h && this.#wakes(p, p.checks[i]!))',
    tests: ['test/memory/handover.test.ts'],
  },
  {
    name: 'early-answer-sent-twice',
    bug: 'a framed connection writes a parked take\'s answer told early (in the release\'s step) and again when it settles: the client reads a stray second answer',
    file: 'src/server/frames.ts',
    from: 'if (!sent) this.#socket.write(a.frame)',
    to: 'this.#socket.write(a.frame)',
    tests: ['test/server/early-answer.test.ts'],
  },
  {
    name: 'early-answer-before-disk',
    bug: "a store whose answers wait for the disk (the SQLite node's) tells a handed-over take its answer early, before its write is durable",
    file: 'src/adapters/kit/local-adapter.ts',
    from: 'onAnswer: store.answersAtOnce ? options.onAnswer : undefined',
    to: 'onAnswer: options.onAnswer',
    tests: ['test/server/early-answer.test.ts'],
  },
  {
    name: 'frame-commit-waits-a-turn',
    bug: 'a commit frame waits a microtask for its open namespace before reaching the store: the handover is no longer in the release frame\'s own step',
    file: 'src/server/calls.ts',
    from: 'const adapter = this.#namespaces.opened(ns) ?? (await this.#namespaces.adapterOf(ns))',
    to: 'const adapter = await this.#namespaces.adapterOf(ns)',
    tests: ['test/server/early-answer.test.ts'],
  },
  {
    name: 'other-way-skips-checks',
    bug: "a store that hands over applies a parked commit's first other way (orElse) without judging its checks (a semaphore past its limit)",
    file: 'src/adapters/kit/parked.ts',
    from: 'alt.checks.every((c) => this.#host.holds(c)) && (order',
    to: 'true && (order',
    tests: ['test/memory/permit-handover.test.ts'],
  },
  {
    name: 'other-way-not-filed',
    bug: "a parked commit is not filed under the keys only its other ways check: a permit freed at such a slot is not handed over",
    file: 'src/adapters/kit/parked.ts',
    from: 'for (const alt of options.orElse ?? []) for (const c of alt.checks) keys.push(c.key)',
    to: 'void options',
    tests: ['test/memory/permit-handover.test.ts'],
  },
  {
    name: 'other-way-skips-place',
    bug: "a permit waiter's other ways do not check its place in line: a waiter that gave up can still be handed a permit",
    file: 'src/core/acquire/claim.ts',
    from: 'if (!place) return alt',
    to: 'return alt',
    tests: ['test/memory/permit-race.test.ts'],
  },
  {
    name: 'redis-other-way-skips-checks',
    bug: "the Redis store applies a parked commit's first other way without judging its checks (a semaphore past its limit)",
    file: 'src/adapters/redis/handover.ts',
    from: 'if #failures(way.c) == 0 and not behind_turn',
    to: 'if true and not behind_turn',
    tests: ['test/redis/permit-handover.test.ts'],
  },
  {
    name: 'redis-lock-script-skips-check',
    bug: "the Redis adapter's short script for a lock's take, renewal or release applies its op without checking the key (a second holder, a release of another's lock)",
    file: 'src/adapters/redis/scripts.ts',
    from: "if not holds(raw, ARGV[7], ARGV[8]) then return reply('fail', {key, raw}) end",
    to: "if false then return reply('fail', {key, raw}) end",
    tests: ['test/model/redis.test.ts'],
  },
  {
    name: 'redis-handover-skips-checks',
    bug: "the Redis store applies a parked commit whenever a key it checks changes, without judging its checks (a second holder)",
    file: 'src/adapters/redis/handover.ts',
    from: 'if #failed == 0 then\n    if not expired and not behind_turn(p.c, p.r) then grant(whole(p)) end',
    to: 'if true then\n    if not expired and not behind_turn(p.c, p.r) then grant(whole(p)) end',
    tests: ['test/model/redis.test.ts', 'test/redis/handover.test.ts'],
  },
  {
    name: 'turn-not-kept',
    bug: 'a store that hands over keeps no turn for a waiter between its parks: a release then goes to the waiter behind it',
    file: 'src/adapters/kit/parked.ts',
    from: 'if (p.options.keep && order !== undefined) this.#keepTurn(p, order)',
    to: 'if (false) this.#keepTurn(p, order!)',
    tests: ['test/memory/turns.test.ts'],
  },
  {
    name: 'redis-turn-ignored',
    bug: 'the Redis store grants a parked take held back by an earlier waiter\'s turn (a release between the first waiter\'s parks goes to the second)',
    file: 'src/adapters/redis/handover.ts',
    from: 'local function behind_turn(checks, order)\n  if not order',
    to: 'local function behind_turn(checks, order)\n  if true',
    tests: ['test/redis/turns.test.ts'],
  },
  {
    name: 'postgres-commit-skips-check',
    bug: "the Postgres adapter's commit function for a lock's take, renewal or release applies its op without checking the key once it holds the namespace (a second holder, a release of another's lock)",
    file: 'src/adapters/postgres/sql/commit.ts',
    from: "  IF p_ck IS NOT NULL AND NOT ${holds('c', 'p_cw', 'p_bc')} THEN",
    to: '  IF false THEN',
    tests: ['test/model/postgres.test.ts'],
  },
  {
    name: 'postgres-release-ignores-token',
    bug: "the Postgres adapter's one-statement release deletes the key whatever its token (a late release ends the next holder's lock)",
    file: 'src/adapters/postgres/lock-path.ts',
    from: '${e}.k = $3::bytea AND ${e}.created = $4::bigint AND',
    to: '${e}.k = $3::bytea AND $4::bigint IS NOT NULL AND',
    tests: ['test/model/postgres.test.ts'],
  },
  {
    name: 'postgres-owner-change-keeps-created',
    bug: "the Postgres adapter keeps created over a write that changes the owner (issue 12's bug, in SQL: an ownerless overwrite of a lock leaves its token alive)",
    file: 'src/adapters/postgres/sql/commit.ts',
    from: 'IF ${fresh} OR e.owner IS DISTINCT FROM ${own} THEN',
    to: 'IF ${fresh} THEN',
    tests: ['test/model/postgres.test.ts'],
  },
  {
    name: 'postgres-handover-skips-checks',
    bug: "the Postgres store's handover (and a waiting commit's first try) applies a way without judging its checks (a parked take granted over a live holder)",
    file: 'src/adapters/postgres/sql/park.ts',
    from: '      WHERE NOT EXISTS (SELECT 1 FROM ${CHECKS',
    to: '      WHERE true OR NOT EXISTS (SELECT 1 FROM ${CHECKS',
    // The checker sees it when its few Postgres scenarios (2 a run in `npm test`) grant over a live holder, not in every run.
    tests: ['test/model/postgres.test.ts', 'test/postgres/handover.test.ts'],
  },
  {
    name: 'postgres-fence-takes-no-row-lock',
    bug: "fence(tx, lock) checks the token but takes no row lock: a takeover goes through while the fenced transaction is still open",
    file: 'src/adapters/postgres/fence.ts',
    from: 'FOR KEY SHARE OF e',
    to: '',
    tests: ['test/postgres/fence.test.ts'],
  },
  {
    name: 'redis-function-keeps-live-cache',
    bug: "the Redis function library keeps its cache of entries read from one call to the next (a read or a check answered from another call's state)",
    file: 'src/adapters/redis/prelude.ts',
    from: "['LIVE', '{}'],",
    to: "['LIVE', 'LIVE or {}'],",
    tests: ['test/model/redis.test.ts'],
  },
  {
    name: 'file-failed-check-applied',
    bug: "the file:// store applies a commit whose check failed (a second holder of a lock, a stale fenced write)",
    file: 'src/adapters/file/ledger.ts',
    from: 'return this.judge(checks) ?? this.apply(ops, requestId)',
    to: 'return this.apply(ops, requestId)',
    tests: ['test/model/file.test.ts'],
  },
  {
    name: 'file-expires-early',
    bug: "the file:// store's write transactions expire entries 200 ms before their deadline (a lock granted again while its holder still counts on it)",
    file: 'src/adapters/file/ledger.ts',
    from: 'this.sql.due.all(this.ns, this.now)',
    to: 'this.sql.due.all(this.ns, this.now + 200)',
    tests: ['test/model/file.test.ts'],
  },
  {
    name: 'file-handover-skips-checks',
    bug: "the file:// store's handover applies a parked take without judging its checks (granted over a live holder)",
    file: 'src/adapters/file/parked.ts',
    from: 'const way = outcomes.every(Boolean) ? plan :',
    to: 'const way = plan ??',
    tests: ['test/model/file.test.ts'],
  },
  {
    name: 'file-live-owner-gone',
    bug: "the file:// store judges every registered process gone, the living too: a live holder's locks end as if its process had died",
    file: 'src/adapters/file/owners.ts',
    from: 'if (!this.#isAlive(r, now, fresh)) out.push(r)',
    to: 'out.push(r)',
    tests: ['test/model/file.test.ts', 'test/faults/file.test.ts'],
    filter: 'random scenarios|kill -9 of a holder',
  },
  {
    name: 'jobs-late-look-names-holder',
    bug: 'a call that finds the lock held names the holder as running without reading the record after it: a late caller letting go of a done slot is reported as its runner',
    file: 'src/core/jobs/body.ts',
    from: 'if (settled) return settled',
    to: 'if (settled && false) return settled',
    tests: ['test/jobs/once.test.ts'],
  },
  {
    name: 'jobs-done-slot-runs-again',
    bug: 'a call that finds the slot done runs it again (the record does not make a late instance skip)',
    file: JOB_BODY,
    from: "if (record.state === 'done' || (record.state",
    to: "if (false || (record.state",
    tests: [JOBS],
  },
  {
    name: 'jobs-start-ignores-record',
    bug: 'the start is written without checking the record read (a call that waited for a run overwrites its done record and runs again)',
    file: JOB_BODY,
    from: 'if (revision !== undefined) checks.push({ key: keys.record, revision })',
    to: 'void revision',
    tests: [JOBS],
  },
  {
    name: 'jobs-record-unfenced',
    bug: "the slot's record is written without the lock's fence (a run that outlived its lock records its outcome over the retry's)",
    file: JOB_BODY,
    from: 'const checks = [...fencing.checks(lock)]',
    to: 'const checks = []',
    tests: [JOBS],
  },
  {
    name: 'jobs-dead-run-retried-forever',
    bug: 'a run whose holder died is retried however many attempts died before (no limit of retries for dead runs)',
    file: JOB_BODY,
    from: "const exhausted = record?.state === 'started' && attempt > o.retries + 1",
    to: 'const exhausted = false',
    tests: [JOBS],
  },
  {
    name: 'jobs-failed-retry-off-by-one',
    bug: 'a slot whose last allowed attempt threw is run once more',
    file: JOB_BODY,
    from: "(record.state === 'failed' && record.attempt > retries)",
    to: "(record.state === 'failed' && record.attempt > retries + 1)",
    tests: [JOBS],
  },
  {
    name: 'jobs-lost-outcome-reported-ran',
    bug: "a run whose outcome was refused for its fence (its lock ended first) resolves 'ran'",
    file: JOB_BODY,
    from: "if (written === 'lost' && result.status === 'ran')",
    to: 'if (false)',
    tests: [JOBS],
  },
  {
    name: 'web-locks-resolve-before-grant',
    bug: "a Web Locks request settles once its release is sent, before the waiters it lets through hold (issue 32's deviation)",
    file: 'src/web-locks/request.ts',
    from: 'await someoneWaits(client, r.key))) await grantsAfterRelease(client, r.key)',
    to: 'await someoneWaits(client, r.key))) void grantsAfterRelease(client, r.key)',
    tests: ['test/web-locks/memory.test.ts'],
    filter: 'checked history',
  },
]
