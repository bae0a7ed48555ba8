/**
 * Rules of the adapter contract that a store can break while every plain
 * read and write looks right: the new life of a key its own owner creates
 * again, request ids, fractional TTLs, the store's clock deciding TTLs,
 * expiries told once, watch completeness under load, and what `close`
 * does to watches. Each assertion names its rule. Runs in Node and the
 * browser.
 */
import { expect } from 'vitest'
import { isZarisError, type CommitResult, type Op, type WatchEvent } from 'zaris'
import type { FixtureFactory } from './fixture'
import { withSkew } from './skew'
import { blockFor, eventually, late, notChecked, onFreshAdapter, onFreshStore, requestId, rule, settled, sleep, type Named } from './util'
import { describeLoss, expectedEvents } from './watch-loss'

/** The commit's answer, or a thrown error naming what failed. */
function ok(r: CommitResult, what: string): Extract<CommitResult, { ok: true }> {
  if (!r.ok) throw new Error(`${what}: the commit was refused (${JSON.stringify(r.failed)})`)
  return r
}

export function ruleCases(factory: FixtureFactory, t: Named): void {
  const withAdapter = onFreshAdapter(factory)
  const withStore = onFreshStore(factory)

  t.group('contract rules', () => {
    t('new life: a key its own owner creates again after its entry expired gets a new created (token), after an expire event; a client re-taking its own expired lock, a larger token', withStore(async (f) => {
      const a = await f.adapter()
      const c = await f.connect({ id: 'again' })
      const events: WatchEvent[] = []
      const unwatch = await a.watch('re/', { event: (e) => events.push(e), error: () => {} })
      const ttl = 40
      const first = ok(await a.commit([{ key: 're/lock', revision: null }], [{ type: 'set', key: 're/lock', value: null, ttl, owner: 'o' }]), 'the first acquire')
      const old = (await c.locks.acquire('lock:again', { ttl, autoRenew: false }))!
      // Nothing of this process runs meanwhile (no expiry timer of an in-process store): the next commit is the first to meet the lapsed entry.
      blockFor(ttl + late(a) + 30)
      const again = await a.commit([{ key: 're/lock', revision: null }], [{ type: 'set', key: 're/lock', value: null, ttl: 5_000, owner: 'o' }])
      expect(again.ok, rule('expiry', 'a create-if-absent right after the entry\'s TTL ran out was refused: a lapsed entry must be absent to every check')).toBe(true)
      const second = ok(again, 'the second acquire')
      expect(second.entries[0]!.created, rule('new-life', `the same owner's create after its entry expired kept created ${first.revision}: the expired life's token handed out twice; expiry ends a life`)).toBe(second.revision)
      expect(second.revision).toBeGreaterThan(first.revision)

      // Through a client: its own expired lock taken again has a larger token, and the old one fences nothing.
      const next = await c.locks.acquire('lock:again', { ttl: 5_000, wait: 3_000 + late(c), autoRenew: false })
      expect(next).not.toBeNull()
      expect(next!.token, rule('new-life', `the client took its own expired lock again and got token ${next!.token}, not above its old token ${old.token}`)).toBeGreaterThan(old.token)
      const stale = await c.put('again:data', 'stale', { fence: old }).then(() => 'accepted', (err: unknown) => (isZarisError(err, 'FENCED') ? 'FENCED' : String(err)))
      expect(stale, rule('new-life', 'a fenced write with the expired hold was accepted while the same client holds the lock again')).toBe('FENCED')
      await next!.release()

      await eventually(() => events.length >= 3, 2_000)
      unwatch()
      const seen = events.map((e) => `${e.type} ${e.revision}`)
      const expiry = events.find((e) => e.type === 'expire')
      expect(expiry, rule('expiry-revision', `the first life ended by expiry, but the watcher saw no expire event: ${seen.join(', ')}`)).toBeDefined()
      expect(expiry!.revision > first.revision && expiry!.revision < second.revision, rule('expiry-revision', `the expiry must take a revision between the write it ends (${first.revision}) and the next write (${second.revision}); the watcher saw ${seen.join(', ')}`)).toBe(true)
    }))

    t('new life: a key its own owner creates again after a delete gets a new created', withAdapter(async (a) => {
      const first = ok(await a.commit([], [{ type: 'set', key: 'rd', value: 1, owner: 'o' }]), 'the first set')
      ok(await a.commit([], [{ type: 'delete', key: 'rd' }]), 'the delete')
      const second = ok(await a.commit([{ key: 'rd', created: null }], [{ type: 'set', key: 'rd', value: 2, owner: 'o' }]), 'the second set')
      expect(second.entries[0]!.created, rule('new-life', `the same owner's create after a delete kept created ${first.revision}: a delete ends a life`)).toBe(second.revision)
    }))

    t('request id: a commit sent again with its id is answered as the first time and applied once, also from another connection', withAdapter(async (a, another) => {
      const create: [Array<{ key: string; revision: null }>, Op[]] = [[{ key: 'rq/lock', revision: null }], [{ type: 'set', key: 'rq/lock', value: null, ttl: 30_000, owner: 'o' }]]
      const id = requestId()
      const first = ok(await a.commit(...create, { requestId: id }), 'the first send')
      const resent = await a.commit(...create, { requestId: id })
      expect(resent, rule('request-id', `a create-if-absent sent again with its request id was not answered as the first time (ok, revision ${first.revision}): applied again, its check failed`)).toMatchObject({ ok: true, revision: first.revision })
      const b = await another()
      const reconnected = await b.commit(...create, { requestId: id })
      expect(reconnected, rule('request-id', 'the same commit sent again over another connection (a reconnect) was not answered as the first time')).toMatchObject({ ok: true, revision: first.revision })

      const add: Op[] = [{ type: 'add', key: 'rq/n', delta: 1 }]
      const addId = requestId()
      const added = ok(await a.commit([], add, { requestId: addId }), 'the add')
      await a.commit([], add, { requestId: addId })
      await b.commit([], add, { requestId: addId })
      expect((await a.get('rq/n'))?.value, rule('request-id', 'an add sent three times with one request id was applied more than once')).toBe(1)
      expect((await a.get('rq/n'))?.revision).toBe(added.revision)
      const other = ok(await a.commit([], add, { requestId: requestId() }), 'an add with another id')
      expect(other.entries[0]!.value, rule('request-id', 'a commit with a new request id must be applied')).toBe(2)
    }))

    t('fractional TTLs: taken as they are, never rounded to "no TTL"; each entry expires', withAdapter(async (a) => {
      const r = await a.commit([], [
        { type: 'set', key: 'fr/long', value: 1, ttl: 150.5 },
        { type: 'set', key: 'fr/half', value: 2, ttl: 0.5 },
        { type: 'set', key: 'fr/one', value: 3, ttl: 1.5 },
      ]).catch((err: Error) => err)
      expect(r instanceof Error ? `${r.name}: ${r.message}` : 'taken', rule('fractional-ttl', 'a commit with TTLs of 150.5, 0.5 and 1.5 ms was refused')).toBe('taken')
      const live = await a.get('fr/long')
      if (live) expect(live.ttl! > 0 && live.ttl! <= 151, rule('fractional-ttl', `an entry with TTL 150.5 ms reads ttl ${live.ttl}`)).toBe(true)
      const short = await eventually(async () => (await a.get('fr/half')) === undefined && (await a.get('fr/one')) === undefined, 300 + late(a))
      expect(short, rule('fractional-ttl', `entries with TTLs of 0.5 and 1.5 ms are still live ${300 + late(a)} ms later: a TTL below 1 ms must not become "no TTL"`)).toBe(true)
      const long = await eventually(async () => (await a.get('fr/long')) === undefined, 450 + late(a))
      expect(long, rule('fractional-ttl', 'an entry with TTL 150.5 ms never expired')).toBe(true)
    }))

    t('the store\'s clock decides TTLs: with the client\'s clock 2 s ahead or behind, an entry lives its TTL', withStore(async (f) => {
      const ttl = 300
      const a = await f.adapter()
      const off = (skew: number) => `while the client's clock ran ${skew > 0 ? '2 s ahead of' : '2 s behind'} the store's`
      // Each entry written and read with the client's clock off one way; both waited for at once.
      for (const skew of [2_000, -2_000]) {
        await withSkew(skew, async () => {
          const sent = performance.now()
          ok(await a.commit([], [{ type: 'set', key: `clock/${skew}`, value: 1, ttl }]), 'the set')
          const e = await a.get(`clock/${skew}`)
          // Judged only when the read came back well within the TTL (a loaded machine may take longer).
          if (e === undefined && performance.now() - sent >= ttl / 2) return
          expect(e, rule('store-clock', `an entry with TTL ${ttl} ms was gone at once ${off(skew)}: TTLs must be judged by the store's clock, never a client's`)).toBeDefined()
          expect(e!.ttl! > 0 && e!.ttl! <= ttl, rule('store-clock', `an entry with TTL ${ttl} ms read back ttl ${e!.ttl} ${off(skew)}`)).toBe(true)
        })
      }
      const live = new Set([2_000, -2_000])
      const deadline = performance.now() + ttl + late(a) + 400
      while (live.size > 0 && performance.now() < deadline) {
        for (const skew of [...live]) await withSkew(skew, async () => void ((await a.get(`clock/${skew}`)) === undefined && live.delete(skew)))
        await sleep(5)
      }
      for (const skew of live) expect.fail(rule('store-clock', `an entry with TTL ${ttl} ms was still live ${ttl + late(a) + 400} ms later ${off(skew)}: TTLs must be judged by the store's clock`))
    }), 2)

    t('expiry: entries that lapse while several connections read them are each told once, as expire, with a revision above their write', withAdapter(async (a, another) => {
      const readers = [a, await another(), await another()]
      const events: WatchEvent[] = []
      const unwatch = await a.watch('lapse/', { event: (e) => events.push(e), error: () => {} })
      const keys = Array.from({ length: 6 }, (_, i) => `lapse/${i}`)
      const put = ok(await a.commit([], keys.map((key) => ({ type: 'set' as const, key, value: 1, ttl: 60 }))), 'the set')
      // Every connection meets the lapsed entries at once, as processes each sweeping would.
      const deadline = performance.now() + 60 + late(a) + 150
      while (performance.now() < deadline) await Promise.all(readers.flatMap((r) => [r.list('lapse/'), r.get(keys[0]!)]))
      await eventually(() => events.filter((e) => e.type === 'expire').length >= keys.length, 1_000)
      await sleep(50)
      unwatch()
      for (const key of keys) {
        const ends = events.filter((e) => e.key === key && e.type !== 'put')
        expect(ends.map((e) => e.type), rule('expiry-revision', `the expiry of ${key} was told ${ends.length} times (${ends.map((e) => `${e.type} ${e.revision}`).join(', ')}): exactly once, as expire, by whoever ended it`)).toEqual(['expire'])
        expect(ends[0]!.revision, rule('expiry-revision', `the expiry of ${key} has revision ${ends[0]!.revision}, not above its write ${put.revision}`)).toBeGreaterThan(put.revision)
      }
      const revisions = events.map((e) => e.revision)
      expect(revisions.every((r, i) => i === 0 || r >= revisions[i - 1]!), rule('watch-order', `events out of revision order: ${revisions.join(', ')}`)).toBe(true)
    }))

    t('watch under load: every event of 240 racing commits arrives once, in revision order; a loss is named', withAdapter(async (a, another) => {
      const writers = [a, await another(), await another()]
      const watcher = await another()
      const events: WatchEvent[] = []
      let failure: Error | undefined
      const unwatch = await watcher.watch('load/', { event: (e) => events.push(e), error: (err) => (failure = err) })
      const results = await Promise.all(
        Array.from({ length: 240 }, (_, i) => {
          // Sets of one and two keys, deletes, and a key outside the prefix now and then.
          const ops: Op[] = i % 5 === 4 ? [{ type: 'delete', key: `load/${i % 7}` }] : [{ type: 'set', key: `load/${i % 7}`, value: i }]
          if (i % 3 === 0) ops.push({ type: 'set', key: i % 2 === 0 ? `load/x${i % 4}` : `other/${i}`, value: i })
          return writers[i % writers.length]!.commit([], ops)
        }),
      )
      const expected = expectedEvents(results, 'load/')
      const last = Math.max(...expected.map((e) => e.revision))
      // Until it caught up, failed, or got nothing new for two seconds: a watch that lost events never catches up.
      await settled(() => failure !== undefined || (events.at(-1)?.revision ?? 0) >= last, () => events.length, 10_000)
      await sleep(50)
      unwatch()
      expect(failure, rule('watch-complete', `the watch failed under load: ${String(failure)}`)).toBeUndefined()
      expect(describeLoss(expected, events), rule('watch-complete', `a watcher of 240 racing commits (${expected.length} events, revisions up to ${last})`)).toBe('none lost, doubled or out of order')
    }), 2)

    t('close ends the adapter\'s watches: no event after it, sink.error at most once and only with ClosedError', withAdapter(async (a, another) => {
      const b = await another()
      const events: WatchEvent[] = []
      const errors: unknown[] = []
      await b.watch('cl/', { event: (e) => events.push(e), error: (err) => errors.push(err) })
      ok(await a.commit([], [{ type: 'set', key: 'cl/1', value: 1 }]), 'the first set')
      await eventually(() => events.length === 1, 2_000)
      await b.close()
      ok(await a.commit([], [{ type: 'set', key: 'cl/2', value: 2 }]), 'the second set')
      await sleep(100)
      expect(events.map((e) => e.key), rule('close', 'a watch of a closed adapter delivered an event after close() resolved')).toEqual(['cl/1'])
      expect(errors.length <= 1 && errors.every((e) => isZarisError(e, 'CLOSED')), rule('close', `close() ended its watch with ${errors.map(String).join(', ')}: at most one sink.error, a ClosedError`)).toBe(true)
      await expect(b.commit([], [{ type: 'set', key: 'cl/3', value: 3 }]), rule('close', 'a closed adapter took a commit')).rejects.toMatchObject({ code: 'CLOSED' })
    }))

    t('a watch from a revision that is not one (negative, fractional) is refused with INVALID_ARGUMENT', withAdapter(async (a) => {
      for (const bad of [-1, 1.5]) {
        const err = await a.watch('w/', { event: () => {}, error: () => {} }, bad).then(() => undefined, (e: unknown) => e)
        expect(isZarisError(err, 'INVALID_ARGUMENT'), rule('watch-args', `a watch from revision ${bad} was not refused with INVALID_ARGUMENT (checkWatchArgs does it)`)).toBe(true)
      }
    }))

    t('capability commitOnChange: a commit whose check fails waits for a change at its keys and is tried once more', withAdapter(async (a, another) => {
      if (!a.capabilities?.commitOnChange) notChecked('the adapter does not declare capability commitOnChange')
      const b = await another()
      const held = ok(await a.commit([], [{ type: 'set', key: 'oc/lock', value: 1, owner: 'h' }]), 'the holder')
      const started = performance.now()
      const waiting = b.commit([{ key: 'oc/lock', revision: null }], [{ type: 'set', key: 'oc/lock', value: 2, owner: 'w' }], { waitChange: 5_000 })
      await sleep(100)
      ok(await a.commit([{ key: 'oc/lock', revision: held.revision }], [{ type: 'delete', key: 'oc/lock' }]), 'the release')
      const r = await waiting
      expect(r.ok, rule('commit-on-change', 'a waiting commit was not tried again when its key was deleted')).toBe(true)
      expect(performance.now() - started).toBeLessThan(4_000)
      const none = await b.commit([{ key: 'oc/lock', revision: null }], [{ type: 'set', key: 'oc/other', value: 1 }], { waitChange: 200 })
      expect(none.ok, rule('commit-on-change', 'a waiting commit with no change at its keys succeeded')).toBe(false)
    }))
  })
}
