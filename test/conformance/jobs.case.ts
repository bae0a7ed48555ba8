/**
 * `client.jobs.once` on every store: one run per slot however many clients
 * fire it, a failed run retried once, a frozen run (a client whose own clock
 * stands still while the store's runs: it neither renews nor notices its
 * deadline, as a stopped process) retried by the next call and unable to
 * write once the retry took over, and a record kept for its retention.
 * Real time, short TTLs (a store's TTL granularity added: etcd counts whole
 * seconds). The store operations of the racing cases are recorded at the
 * adapter and checked for linearizability (test/lincheck). Runs in Node and
 * the browser.
 */
import { expect } from 'vitest'
import { Client, type ClientOptions, type JobResult, type Lock } from 'zaris'
import { ManualClock } from 'zaris/testing'
import { checkHistory, formatResult } from '../lincheck/check'
import { MemoryHistory, recordingAdapter } from '../lincheck/recorder'
import type { FixtureFactory, StoreFixture } from './fixture'
import { late, onFreshStore, sleep, type Named } from './util'

/** Clients on the fixture's store whose store operations are recorded into one history. */
function recorded(f: StoreFixture) {
  const history = new MemoryHistory(() => performance.now())
  const connect = async (options: ClientOptions & { id: string }) => new Client(recordingAdapter(await f.adapter(), history, options.id), options)
  /** The history is linearizable (slack for timer rounding; entries may outlive their TTL by the store's granularity). */
  const check = (client: Client) => {
    const r = checkHistory(history.events, { slack: 5, lateExpiry: late(client), maxMs: 60_000 })
    expect(r.verdict, formatResult(r)).toBe('ok')
    expect(r.operations).toBeGreaterThan(0)
  }
  return { connect, check }
}

/** A job function that runs until `finish()`, and tells when it started (with the lock it got). */
export function held<T>(body: (lock: Lock) => Promise<T> | T = () => undefined as T) {
  let open!: () => void
  let started!: (lock: Lock) => void
  const opened = new Promise<void>((r) => (open = r))
  const running = new Promise<Lock>((r) => (started = r))
  const fn = async (lock: Lock) => {
    started(lock)
    await opened
    return body(lock)
  }
  return { fn, running, finish: () => open() }
}

export function jobCases(factory: FixtureFactory, t: Named): void {
  const withStore = onFreshStore(factory)

  t.group('jobs: once per slot', () => {
    t('five clients fire each of three slots at once: each slot runs once, the others skip it, its record names the runner, and the history is linearizable', withStore(async (f) => {
      const h = recorded(f)
      const clients = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => h.connect({ id })))
      for (const slot of ['s1', 's2', 's3']) {
        const runs: string[] = []
        const results = await Promise.all(
          clients.map((c) =>
            c.jobs.once('tick', slot, () => {
              runs.push(c.id)
              return c.id
            }),
          ),
        )
        expect(runs, slot).toHaveLength(1)
        const ran = results.filter((r) => r.status === 'ran')
        expect(ran).toHaveLength(1)
        for (const r of results) if (r.status !== 'ran') expect(r).toMatchObject({ status: 'skipped', token: ran[0]!.token })
        expect(await clients[0]!.jobs.record('tick', slot)).toEqual({ state: 'done', by: runs[0], token: ran[0]!.token, attempt: 1 })
        expect(await clients[0]!.locks.holder(`tick@${slot}`)).toBeUndefined()
      }
      expect(await clients[0]!.list('')).toEqual([]) // records are zaris's own keys
      h.check(clients[0]!)
      await Promise.all(clients.map((c) => c.close()))
    }))

    t('a run that throws is recorded failed and retried once by a later call; a failed retry spends the slot', withStore(async (f) => {
      const a = await f.connect({ id: 'a' })
      const b = await f.connect({ id: 'b' })
      const first = await a.jobs.once('job', 'x', () => Promise.reject(new Error('no disk')))
      expect(first).toMatchObject({ status: 'failed', attempt: 1 })
      expect(await b.jobs.record('job', 'x')).toMatchObject({ state: 'failed', by: 'a', attempt: 1, error: 'Error: no disk' })
      const retry = await b.jobs.once('job', 'x', () => Promise.reject(new Error('still no disk')))
      expect(retry).toMatchObject({ status: 'failed', attempt: 2 })
      expect(retry.token).toBeGreaterThan(first.token)
      expect(await a.jobs.once('job', 'x', () => 'never')).toEqual({ status: 'skipped', state: 'failed', by: 'b', token: retry.token })
    }))

    t('a run frozen past its TTL is retried by the next call (a new token); its late fenced write and outcome are refused, its result says failed, and the history is linearizable', withStore(async (f) => {
      const h = recorded(f)
      const frozen = await h.connect({ id: 'frozen', clock: new ManualClock() })
      const b = await h.connect({ id: 'b' })
      const ttl = 300 + late(frozen)
      const job = held(async (lock) => {
        await frozen.put('out', 'frozen', { fence: lock })
        return 'frozen'
      })
      const first = frozen.jobs.once('job', 'x', job.fn, { ttl })
      const lock = await job.running
      expect(await b.jobs.once('job', 'x', () => 'b')).toMatchObject({ status: 'skipped', state: 'running', by: 'frozen', token: lock.token })
      // Waits in the lock's line until the frozen run's lock expires in the store, then runs the retry.
      const retry = await b.jobs.once('job', 'x', async (l) => {
        await b.put('out', 'b', { fence: l })
        return 'b'
      }, { wait: 10_000 + 2 * ttl })
      expect(retry).toMatchObject({ status: 'ran', value: 'b', attempt: 2 })
      expect(retry.token).toBeGreaterThan(lock.token)
      job.finish()
      const stale: JobResult<string> = await first
      expect(stale).toMatchObject({ status: 'failed', token: lock.token, attempt: 1, error: { code: 'FENCED' } })
      expect((await b.get('out'))?.value).toBe('b')
      expect(await b.jobs.record('job', 'x')).toMatchObject({ state: 'done', by: 'b', token: retry.token, attempt: 2 })
      h.check(b)
      await Promise.all([frozen.close(), b.close()])
    }), 30_000)

    t('the record lives for its retention after the run: late calls skip until then, and after it the slot runs anew', withStore(async (f) => {
      const a = await f.connect({ id: 'a' })
      const retention = 300 + late(a)
      expect(await a.jobs.once('job', 'x', () => 1, { ttl: retention, retention })).toMatchObject({ status: 'ran', attempt: 1 })
      expect(await a.jobs.once('job', 'x', () => 2, { ttl: retention, retention })).toMatchObject({ status: 'skipped', state: 'done' })
      await sleep(retention + late(a) + 200)
      expect(await a.jobs.record('job', 'x')).toBeUndefined()
      expect(await a.jobs.once('job', 'x', () => 3, { ttl: retention, retention })).toMatchObject({ status: 'ran', value: 3, attempt: 1 })
    }), 20_000)
  })
}
