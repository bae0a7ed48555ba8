/**
 * zaris/elect leads on the gate's grant (real Chromium tabs, the harness
 * page): when the successor is granted the gate and the key is in a state
 * its gated take takes over anyway, `elected` fires and `isLeader` is true
 * at once, before the take's commit lands; the term (its token) follows.
 * Each race of that early leadership has a test here: a take held up past
 * the early lead's bound (a blocker tab holds a readwrite transaction, as
 * the closed tab's teardown does), the gate stolen while the take is under
 * way (what a taker without the gate does after its commit), a resign and a
 * close racing the grant.
 */
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'

const { withContext } = useRecordedTabs()

const ns = () => `early-${Math.random().toString(36).slice(2, 10)}`
const KEY = 'leader:early'

interface Seen {
  /** `elected` / `deposed` events: [type, time, isLeader then, token of `term` then, deposed code]. */
  events: Array<[string, number, boolean, number | null, string | null]>
  /** What the campaign resolved with, and when. */
  campaign: { token: number | null; at: number } | null
  /** When the resign or close done in the `elected` handler resolved. */
  answeredAt?: number
  /** The latest time after the first `elected` (ms, read for 110 ms) at which `isLeader` was true with no term yet. */
  earlyUntil?: number
  /** The first time after `earlyUntil` at which it was read false: the lead ended in (earlyUntil, endSeen]. */
  endSeen?: number
}

/**
 * In `tab`, an election-only candidate that campaigns and keeps what it saw;
 * `onElected` (`resign` or `close`) is done inside the first `elected`
 * handler; `spin` reads `isLeader` there for 200 ms (`earlyUntil`);
 * `signal` campaigns with a signal that `window.kept.abort()` aborts.
 */
async function candidate(tab: Page, store: string, id: string, onElected?: 'resign' | 'close' | 'spin' | 'signal'): Promise<void> {
  await tab.evaluate(
    ({ store, id, key, onElected }) => {
      const now = window.zarisNow
      const e = window.zarisElect.election(key, { namespace: store, id, ttl: 30_000 })
      const seen: Seen = { events: [], campaign: null }
      window.kept.election = e
      window.kept.seen = seen
      e.addEventListener('elected', () => {
        seen.events.push(['elected', now(), e.isLeader, e.term?.token ?? null, null])
        if (onElected === 'spin' && seen.events.length === 1) {
          // Read in a spin, with no event let in (no timer, no commit): `isLeader` then turns false exactly at the early
          // lead's own deadline, however loaded the machine. The thread may still be descheduled between two reads (a
          // loaded CI machine: 36 ms, then nothing until past 80), so the end is known as an interval, not a point.
          // 200 ms, and one read after: a thread descheduled across the end (CI: 30+ ms) still sees it.
          const t0 = now()
          seen.earlyUntil = 0
          const look = (t: number) => {
            if (e.isLeader && !e.term) (seen.earlyUntil = t - t0), (seen.endSeen = undefined)
            else seen.endSeen ??= t - t0
          }
          for (let t = t0; t - t0 < 200; t = now()) look(t)
          look(now())
        }
        if ((onElected === 'resign' || onElected === 'close') && seen.events.length === 1) window.kept.answer = (onElected === 'resign' ? e.resign() : e.close().then(() => true)).then((v) => ((seen.answeredAt = now()), v))
      })
      e.addEventListener('deposed', (ev) => seen.events.push(['deposed', now(), e.isLeader, e.term?.token ?? null, String((ev as CustomEvent).detail ?? null)]))
      const asked = new AbortController()
      window.kept.abort = () => asked.abort(new Error('the caller stopped asking'))
      window.kept.led = e.campaign(onElected === 'signal' ? { signal: asked.signal } : undefined).then((t) => (seen.campaign = { token: t?.token ?? null, at: now() }))
    },
    { store, id, key: KEY, onElected },
  )
}

/** The events as [type, isLeader then, 'token' if the term was known then, deposed code]. */
const told = (s: Seen) => s.events.map(([t, , l, tk, code]) => [t, l, tk === null ? null : 'token', code])
/** A lead on the grant that ended by its bound, then the term. */
const EXPIRED_THEN_TERM = [
  ['elected', true, null, null],
  ['deposed', false, null, 'EXPIRED'],
  ['elected', true, 'token', null],
]
const seen = (tab: Page) => tab.evaluate(() => window.kept.seen as Seen)
const campaigned = (tab: Page) => tab.evaluate(() => window.kept.led as Promise<{ token: number | null; at: number }>)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A leader that campaigned and leads (token known), and a waiter behind it. */
async function leaderAndWaiter(
  open: () => Promise<Page>,
  store: string,
  waiterAnswer?: 'resign' | 'close' | 'spin' | 'signal',
  prepare?: (waiter: Page) => Promise<void>,
): Promise<{ leader: Page; waiter: Page; token: number }> {
  const leader = await open()
  await candidate(leader, store, 'leader')
  const { token } = await campaigned(leader)
  const waiter = await open()
  await prepare?.(waiter)
  await candidate(waiter, store, 'waiter', waiterAnswer)
  // The waiter has read the key and asked for the gate.
  await sleep(150)
  return { leader, waiter, token: token! }
}

/** In `tab`, makes every 80 ms timer (the early lead's bound) fire at `at` ms instead (1 s), as a hidden tab's timers may: by hand, not a real throttle. */
const throttleEarlyTimer = (tab: Page, at = 1_000) =>
  tab.evaluate((at) => {
    const real = window.setTimeout
    window.setTimeout = ((fn: TimerHandler, ms?: number, ...args: unknown[]) => real(fn, ms === 80 ? at : ms, ...args)) as typeof setTimeout
  }, at)

/** In `tab`, holds a readwrite transaction on the store's database for `ms` (from now): every commit behind it waits. */
async function block(tab: Page, store: string, ms: number): Promise<void> {
  await tab.evaluate(
    async ({ name, ms }) => {
      const db = await new Promise<IDBDatabase>((resolve, reject) => {
        const r = indexedDB.open(name)
        r.onsuccess = () => resolve(r.result)
        r.onerror = () => reject(r.error)
      })
      const tx = db.transaction(['entries', 'log'], 'readwrite')
      const until = performance.now() + ms
      const entries = tx.objectStore('entries')
      // Keeps the transaction alive with reads until `until`.
      const spin = () => {
        if (performance.now() < until) entries.get('nothing').onsuccess = spin
      }
      await new Promise<void>((resolve) => (entries.get('nothing').onsuccess = () => (spin(), resolve())))
      window.kept.blocked = new Promise<void>((r) => (tx.oncomplete = () => (db.close(), r())))
    },
    { name: `zaris:${store}`, ms },
  )
}

describe('zaris/elect leads on the grant', () => {
  it('leader tab closed: the waiter leads at the grant (isLeader, no token yet), the term with a larger token follows, one `elected`', async () => {
    await withContext(async (open) => {
      const store = ns()
      const { leader, waiter, token } = await leaderAndWaiter(open, store)
      await leader.close()
      const got = await campaigned(waiter)
      const s = await seen(waiter)
      expect(s.events).toHaveLength(1)
      const [type, at, isLeader, termToken] = s.events[0]!
      expect([type, isLeader, termToken]).toEqual(['elected', true, null])
      expect(got.token).toBeGreaterThan(token)
      expect(got.at).toBeGreaterThanOrEqual(at)
      const after = await waiter.evaluate(async (key) => {
        const e = window.kept.election as import('zaris/elect').TabElection
        await e.put(`${key}:data`, 1, { fence: e.term! })
        return { isLeader: e.isLeader, token: e.term?.token, leader: e.leader?.candidate }
      }, KEY)
      expect(after).toEqual({ isLeader: true, token: got.token, leader: 'waiter' })
      console.log(`led on the grant ${(got.at - at).toFixed(1)} ms before the term's token came`)
    })
  }, 60_000)

  it('the take held up past the early lead\'s bound: the early lead ends (`deposed` EXPIRED, isLeader false), then `elected` again with the term', async () => {
    await withContext(async (open) => {
      const store = ns()
      const { leader, waiter, token } = await leaderAndWaiter(open, store, 'spin')
      const blocker = await open()
      await block(blocker, store, 600)
      await leader.close()
      const got = await campaigned(waiter)
      const s = await seen(waiter)
      expect(told(s)).toEqual(EXPIRED_THEN_TERM)
      // Leading on the grant for its bound (80 ms: the ungated takeover's 100 ms grace less a margin) and never past it, however
      // late the timers (`deposed` is told by one, after the spin). The spin begins when `elected` is handled, which a loaded
      // machine may run well after the lead began (CI: the end seen 28 ms into the spin), so only the bound is judged here.
      expect(s.earlyUntil).toBeLessThan(80)
      expect(s.endSeen).toBeDefined()
      expect(got.token).toBeGreaterThan(token)
      expect(got.at - s.events[0]![1]).toBeGreaterThan(300)
    })
  }, 60_000)

  it('the take lands past the bound before the lead\'s timer fires (timers throttled by hand, as in a background tab): `deposed` EXPIRED when the term begins, then `elected` with it', async () => {
    await withContext(async (open) => {
      const store = ns()
      // The early lead's 80 ms timer fires at 1 s, as a hidden tab's timers may: its bound stands all the same.
      const { leader, waiter, token } = await leaderAndWaiter(open, store, undefined, throttleEarlyTimer)
      const blocker = await open()
      await block(blocker, store, 300)
      await leader.close()
      const got = await campaigned(waiter)
      const s = await seen(waiter)
      expect(told(s)).toEqual(EXPIRED_THEN_TERM)
      // Told when the term began (the blocker let go), long before the throttled timer.
      expect(s.events[1]![1] - s.events[0]![1]).toBeGreaterThan(80)
      expect(s.events[1]![1] - s.events[0]![1]).toBeLessThan(900)
      expect(got.token).toBeGreaterThan(token)
    })
  }, 60_000)

  it('a plain write lands between the grant and the take: the take is refused, the early lead ends at once (`deposed` LOST, not at its bound), and the term comes once the write is gone', async () => {
    await withContext(async (open) => {
      const store = ns()
      // The early lead's timer throttled to 5 s (an end told before it fires is the refusal's).
      // The writer's client is up first: its start wakes the others' reads, which must not queue behind the blocker.
      const writer = await open()
      await writer.evaluate(async (store) => {
        window.kept.client = await window.zaris.connect(`zaris://idb/${store}`)
      }, store)
      const { leader, waiter, token } = await leaderAndWaiter(open, store, undefined, (tab) => throttleEarlyTimer(tab, 5_000))
      const blocker = await open()
      // 1.2 s: the waiter must be granted (and lead on the grant) before the put lands, which a loaded machine took 400 ms past.
      await block(blocker, store, 1_200)
      // Queued behind the blocker before the waiter's take exists: it lands first, a plain entry no gate takes over.
      await writer.evaluate(() => void (window.kept.put = (window.kept.client as import('zaris').Client).put('leader:early', 'plain')))
      await leader.close()
      await writer.evaluate(() => window.kept.put)
      let s = await seen(waiter)
      for (let i = 0; i < 50 && s.events.length < 2; i++) await sleep(20), (s = await seen(waiter))
      expect(told(s)).toEqual([
        ['elected', true, null, null],
        ['deposed', false, null, 'LOST'],
      ])
      await writer.evaluate(() => (window.kept.client as import('zaris').Client).delete('leader:early'))
      const got = await campaigned(waiter)
      expect(got.token).toBeGreaterThan(token)
      expect(told(await seen(waiter)).at(-1)).toEqual(['elected', true, 'token', null])
    })
  }, 60_000)

  it('the gate stolen while the take is under way: deposed STOLEN at once, the take refused, and the campaign goes on to lead once the gate comes back', async () => {
    // The steal must land inside the early lead (80 ms from `elected`): on a busy machine the thief's message can come later,
    // and then EXPIRED is the right answer. That precondition is tried up to 3 times; the assertions are strict once it holds.
    for (let attempt = 1; ; attempt++) {
      if (await stolenEarly()) return
      expect(attempt, 'the steal landed inside the early lead in one of 3 tries').toBeLessThan(3)
    }
  }, 120_000)

  /** One try of the test above: false if the steal came too late to test anything. */
  const stolenEarly = (): Promise<boolean> =>
    new Promise((resolve, reject) => void withContext(async (open) => {
      const store = ns()
      const { leader, waiter, token } = await leaderAndWaiter(open, store)
      const blocker = await open()
      const thief = await open()
      // The thief steals the gate when the waiter says it leads (within the early lead's 80 ms), and keeps it 800 ms.
      await thief.evaluate((name) => {
        window.kept.held = new Promise<number>((stole) => {
          new BroadcastChannel('early-test').onmessage = () => {
            void navigator.locks.request(name, { steal: true }, async () => {
              // When the steal landed (granted), not when it was asked for: under load the two lie apart.
              stole(window.zarisNow())
              await new Promise((r) => setTimeout(r, 800))
            })
          }
        })
      }, `zaris:${store}:gate:${KEY}`)
      await waiter.evaluate(() => {
        const e = window.kept.election as EventTarget
        e.addEventListener('elected', () => new BroadcastChannel('early-test').postMessage('steal'), { once: true })
      })
      await block(blocker, store, 1_000)
      await leader.close()
      const stolenAt = await thief.evaluate(() => window.kept.held as Promise<number>)
      // Read once `deposed` is told, or after 1 s (a late `deposed` then fails on the time below, a missing one on the list).
      let mid = await seen(waiter)
      for (let i = 0; i < 50 && mid.events.length < 2; i++) await sleep(20), (mid = await seen(waiter))
      const electedAt = mid.events[0]![1]
      if (stolenAt - electedAt > 50) {
        console.log(`the steal came ${Math.round(stolenAt - electedAt)} ms after \`elected\`: too late to test a steal inside the early lead; again`)
        return resolve(false)
      }
      expect(mid.events.map(([t, , l, , code]) => [t, l, code])).toEqual([
        ['elected', true, null],
        ['deposed', false, 'STOLEN'],
      ])
      // Told at the steal, not at the take's end (the blocker holds it 1 s): 300 ms is room for a loaded machine's tabs.
      expect(mid.events[1]![1] - stolenAt).toBeLessThan(300)
      expect(mid.campaign).toBeNull()
      const got = await campaigned(waiter)
      expect(got.token).toBeGreaterThan(token)
      expect(got.at - stolenAt).toBeGreaterThan(700)
      expect((await seen(waiter)).events.at(-1)!.slice(0, 1)).toEqual(['elected'])
      resolve(true)
    }).catch(reject))

  it('resign in the early `elected` handler while the key is free (the leader resigned): the take lands all the same and is undone, the entry deleted; the campaign answers null', async () => {
    await withContext(async (open) => {
      const store = ns()
      const { leader, waiter } = await leaderAndWaiter(open, store, 'resign')
      await leader.evaluate(() => (window.kept.election as import('zaris/elect').TabElection).resign())
      expect(await campaigned(waiter)).toMatchObject({ token: null })
      expect(told(await seen(waiter))).toEqual([
        ['elected', true, null, null],
        ['deposed', false, null, 'RELEASED'],
      ])
      // Its take, landed after the resign, is deleted: the key is free, and nobody leads.
      let entry: unknown = 'unread'
      for (let i = 0; i < 50 && entry !== null; i++) {
        await sleep(20)
        entry = await leader.evaluate(async (store) => (await (await window.zaris.connect(`zaris://idb/${store}`)).get('leader:early')) ?? null, store)
      }
      expect(entry).toBeNull()
      expect(await waiter.evaluate(() => (window.kept.election as import('zaris/elect').TabElection).isLeader)).toBe(false)
    })
  }, 60_000)

  it('a campaign\'s signal aborted after it won (it led on the grant first): the term and its gate stay; a waiting tab is not granted', async () => {
    await withContext(async (open) => {
      const store = ns()
      const { leader, waiter } = await leaderAndWaiter(open, store, 'signal')
      const third = await open()
      await candidate(third, store, 'third')
      await sleep(150)
      await leader.close()
      const got = await campaigned(waiter)
      expect(got.token).not.toBeNull()
      expect(told(await seen(waiter))).toEqual([['elected', true, null, null]])
      await waiter.evaluate(() => (window.kept.abort as () => void)())
      await sleep(300)
      expect(await waiter.evaluate(() => (window.kept.election as import('zaris/elect').TabElection).isLeader)).toBe(true)
      expect((await seen(third)).events).toEqual([])
    })
  }, 60_000)

  for (const answer of ['resign', 'close'] as const) {
    it(`${answer} in the early \`elected\` handler, its take held up: deposed ${answer === 'resign' ? 'RELEASED' : 'CLOSED'}, the gate goes at once (the next waiter leads on its grant), the campaign answers null, and the next waiter's term has a larger token`, async () => {
      await withContext(async (open) => {
        const store = ns()
        const { leader, waiter, token } = await leaderAndWaiter(open, store, answer)
        const third = await open()
        await candidate(third, store, 'third')
        await sleep(150)
        // The waiter's take is held up (1.2 s from before the close): its gate must go at the resign, not when the take lands.
        const blocker = await open()
        await block(blocker, store, 1_200)
        const closedAt = Date.now()
        await leader.close()
        const next = await campaigned(third)
        const ledIn = Date.now() - closedAt
        expect(await waiter.evaluate(() => window.kept.answer)).toBe(true)
        expect(await campaigned(waiter)).toMatchObject({ token: null })
        const s = await seen(waiter)
        // It answers once the campaign has (its held-up take landed and undone), not at once.
        expect(s.answeredAt! - s.campaign!.at).toBeGreaterThan(-50)
        expect(s.events.map(([t, , l, tk, code]) => [t, l, tk, code])).toEqual([
          ['elected', true, null, null],
          ['deposed', false, null, answer === 'resign' ? 'RELEASED' : 'CLOSED'],
        ])
        expect(next.token).toBeGreaterThan(token)
        expect(ledIn).toBeLessThan(2_000)
        // The third was granted, and led on the grant, long before the waiter's held-up take landed.
        expect((await seen(third)).events[0]![1] - s.events[1]![1]).toBeLessThan(600)
        await sleep(100)
        const state = await third.evaluate(() => {
          const e = window.kept.election as import('zaris/elect').TabElection
          return { isLeader: e.isLeader, leader: e.leader?.candidate }
        })
        expect(state).toEqual({ isLeader: true, leader: 'third' })
        expect(await waiter.evaluate(() => (window.kept.election as import('zaris/elect').TabElection).isLeader)).toBe(false)
      })
    }, 60_000)
  }
})
