/**
 * Rules that need the fixture's help to reach: a store that restarts (the
 * `seen` rule), one that drops old history (compaction), one at the end of
 * its revisions (exhaustion), one out of reach (UnavailableError). Each test
 * runs where the fixture gives its hook (see StoreFixture) and is skipped,
 * with the reason, where it does not. Runs in Node and the browser.
 */
import { expect } from 'vitest'
import { isZarisError, type Adapter, type CommitResult, type WatchEvent } from 'zaris'
import type { FixtureFactory } from './fixture'
import { eventually, notChecked, onFreshAdapter, onFreshStore, rule, sleep, type Named } from './util'

const MAX = Number.MAX_SAFE_INTEGER

function ok(r: CommitResult): Extract<CommitResult, { ok: true }> {
  if (!r.ok) throw new Error(`a commit was refused: ${JSON.stringify(r.failed)}`)
  return r
}

/** `fn`'s result, calling it again while it fails with UNAVAILABLE (a store coming back), for up to `ms`. */
async function once<T>(fn: () => Promise<T>, ms: number): Promise<T> {
  const deadline = performance.now() + ms
  for (;;) {
    try {
      return await fn()
    } catch (err) {
      if (!isZarisError(err, 'UNAVAILABLE') || performance.now() > deadline) throw err
      await sleep(100)
    }
  }
}

/** What a call came to within `ms`: its error's code, `resolved`, or `no answer`. */
function outcome(p: Promise<unknown>, ms: number): Promise<string> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(`no answer within ${ms} ms`), ms)
    p.then(
      () => resolve('resolved'),
      (err: unknown) => resolve(isZarisError(err) ? err.code : `${(err as Error)?.name}: ${(err as Error)?.message}`),
    ).finally(() => clearTimeout(timer))
  })
}

/** Watches `prefix` from `from` on `a`: the events it replays and the error it ends with, once it caught up to `last` or ended. */
async function replay(a: Adapter, prefix: string, from: number, last: number): Promise<{ events: WatchEvent[]; error: unknown }> {
  const events: WatchEvent[] = []
  let error: unknown
  let unwatch = () => {}
  try {
    unwatch = await a.watch(prefix, { event: (e) => events.push(e), error: (err) => (error = err) }, from)
  } catch (err) {
    return { events, error: err }
  }
  await eventually(() => error !== undefined || (events.at(-1)?.revision ?? from) >= last, 3_000)
  unwatch()
  return { events, error }
}

export function hookCases(factory: FixtureFactory, t: Named): void {
  const withStore = onFreshStore(factory)
  const withAdapter = onFreshAdapter(factory)

  t.group('rules the fixture helps reach', () => {
    t('seen: after the store restarts, a client is never handed a revision at or below one it has seen', withStore(async (f) => {
      if (!f.restart) notChecked('the fixture gives no restart hook (needed to check the seen rule)')
      const c = await f.connect({ id: 'seer' })
      let seen = 0
      for (let i = 0; i < 5; i++) seen = Math.max(seen, (await c.put('seen/k', i)).revision)
      const lock = (await c.locks.acquire('lock:seen', { ttl: 30_000, autoRenew: false }))!
      seen = Math.max(seen, lock.token)
      await lock.release()
      await f.restart()
      // The client reaches the store again; a few calls may fail with UNAVAILABLE meanwhile.
      const next = (await once(() => c.locks.acquire('lock:after', { ttl: 30_000, autoRenew: false }), 15_000))!
      expect(next.token, rule('seen', `after the store restarted, the client was handed token ${next.token}, at or below revision ${seen} it had seen: the adapter must tell the store what it saw (CommitOptions.seen), and a store that lost its state must start above it`)).toBeGreaterThan(seen)
      const put = await once(() => c.put('seen/k', 'after'), 15_000)
      expect(put.revision, rule('seen', `after the store restarted, a put of the client was answered revision ${put.revision}, at or below ${seen}`)).toBeGreaterThan(seen)
      await next.release()
    }), 3)

    t('compaction: a watch from before the history the store keeps is refused with CompactedError, never served part of it', withAdapter(async (a, _another, f) => {
      const kept = f.historyKept
      if (kept === undefined) notChecked('the fixture does not say how much history the store keeps (historyKept)')
      const from = ok(await a.commit([], [{ type: 'set', key: 'cp/start', value: 0 }])).revision
      let last = from
      let written = 0
      const step = Math.max(16, Math.ceil(kept / 4))
      while (written < 3 * kept + 256) {
        const n = written === 0 ? kept : step
        for (let i = 0; i < n; i++) last = ok(await a.commit([], [{ type: 'set', key: `cp/${i % 10}`, value: i }])).revision
        written += n
        const { events, error } = await replay(a, 'cp/', from, last)
        if (error !== undefined) {
          expect(isZarisError(error, 'COMPACTED'), rule('compaction', `a watch from revision ${from}, ${written} commits back, ended with ${String(error)}, not a CompactedError`)).toBe(true)
          expect(events, rule('compaction', 'a watch refused with CompactedError delivered events first')).toEqual([])
          // History the store still keeps is replayed as ever.
          const recent = await replay(a, 'cp/', last - 5, last)
          expect(recent.error, rule('compaction', `a watch from 5 revisions back failed: ${String(recent.error)}`)).toBeUndefined()
          expect(recent.events.map((e) => e.revision), rule('compaction', 'a watch from 5 revisions back did not replay them')).toEqual([last - 4, last - 3, last - 2, last - 1, last])
          return
        }
        const firstAt = events[0]?.revision
        expect(events.length, rule('compaction', `a watch from revision ${from} replayed ${events.length} of the ${written} events after it, from revision ${firstAt}: history that is gone must be refused with CompactedError, not skipped`)).toBe(written)
      }
      expect.fail(rule('compaction', `after ${written} commits a watch from revision ${from} still replayed them all: the store keeps more than the ${kept} revisions the fixture says (historyKept)`))
    }), 3)

    t('exhaustion: at Number.MAX_SAFE_INTEGER a store refuses commits with RevisionExhaustedError, writes nothing and still answers reads', withAdapter(async (a, _another, f) => {
      if (!f.setRevision) notChecked('the fixture gives no setRevision hook (needed to reach the end of the revisions)')
      ok(await a.commit([], [{ type: 'set', key: 'ex/before', value: 1 }]))
      await f.setRevision(MAX - 2)
      const revisions: number[] = []
      let refused: unknown
      for (let i = 0; i < 4 && refused === undefined; i++) {
        try {
          revisions.push(ok(await a.commit([], [{ type: 'set', key: `ex/${i}`, value: i }])).revision)
        } catch (err) {
          refused = err
        }
      }
      const past = revisions.filter((r, i) => r > MAX || (i > 0 && r <= revisions[i - 1]!))
      expect(past, rule('exhaustion', `the store answered revisions ${revisions.join(', ')}: past Number.MAX_SAFE_INTEGER (${MAX}) revisions lose their order`)).toEqual([])
      expect(isZarisError(refused, 'REVISION_EXHAUSTED'), rule('exhaustion', `after revisions ${revisions.join(', ')} the store ${refused === undefined ? 'took every commit' : `failed with ${String(refused)}`}: a commit that needs a revision past Number.MAX_SAFE_INTEGER is refused with RevisionExhaustedError`)).toBe(true)
      expect(await a.get(`ex/${revisions.length}`), rule('exhaustion', 'the refused commit wrote its key')).toBeUndefined()
      expect((await a.get('ex/before'))?.value, rule('exhaustion', 'a store out of revisions must still answer reads')).toBe(1)
    }))

    t('unavailable: every call to a store out of reach fails with UnavailableError, neither hanging nor crashing', withStore(async (f) => {
      if (!f.unreachable) notChecked('the fixture gives no unreachable hook (needed to check UnavailableError)')
      const limit = 20_000
      // An adapter that connects as it opens may refuse to open instead: that is the same answer.
      const opened = await f.unreachable().catch((err: unknown) => err)
      if (!('commit' in (opened as object))) {
        expect(`open: ${await outcome(Promise.reject(opened), limit)}`, rule('unavailable', 'opening an adapter on a store out of reach must fail with UNAVAILABLE, if it fails')).toBe('open: UNAVAILABLE')
        return
      }
      const a = opened as Adapter
      let watchError: unknown
      const watched = a.watch('', { event: () => {}, error: (err) => (watchError = err) }).then(async (unwatch) => {
        // A watch may resolve and report the failure to its sink instead.
        if (!(await eventually(() => watchError !== undefined, limit))) return unwatch()
        throw watchError
      })
      const calls = { get: a.get('k'), list: a.list(''), commit: a.commit([], [{ type: 'set', key: 'k', value: 1 }]), watch: watched }
      const outcomes = await Promise.all(Object.entries(calls).map(async ([name, p]) => `${name}: ${await outcome(p, limit)}`))
      expect(outcomes, rule('unavailable', 'calls to a store out of reach must fail with UNAVAILABLE')).toEqual(['get: UNAVAILABLE', 'list: UNAVAILABLE', 'commit: UNAVAILABLE', 'watch: UNAVAILABLE'])
    }), 3)
  })
}
