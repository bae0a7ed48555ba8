/**
 * A frozen leader loses its term to a waiting tab within TTL + 1 s, with a
 * larger token, and its fenced write after the thaw is refused — while two
 * other tabs write in loops, whose slowest write stays under a second. Real
 * freezes (`Page.setWebLifecycleState` frozen, in a Chromium whose tabs
 * really freeze: test/browser-harness/real-tabs.ts); each test first checks
 * that the freeze happened (the tab's `freeze` and `resume` events). Every
 * commit is recorded and the history judged by the checker, the pause
 * included (a frozen leader past its TTL whose signal never aborted fails).
 */
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright'
import { openHarnessTab } from '../browser-harness/server'
import { useRecordedRealTabs } from '../browser-harness/recorded-tabs'
import type { HistoryEvent } from '../lincheck/history'
import { assertHistory, type HistoryRecord } from '../faults/checker'

const tabs = useRecordedRealTabs()
const { records, operations } = tabs

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const ns = () => `elect-frozen-${Math.random().toString(36).slice(2, 10)}`

async function open(pages: Page[]): Promise<Page> {
  const page = await openHarnessTab(tabs.real.context, tabs.harness.url)
  pages.push(page)
  await page.evaluate(() => {
    const events: Array<[string, number, number]> = []
    window.kept.lifecycle = events
    for (const type of ['freeze', 'resume']) document.addEventListener(type, () => events.push([type, Date.now(), window.zarisNow()]))
  })
  return page
}

/** Starts a loop of recorded full-client increments in `tab`; `stopWriting` ends it and reports. */
function startWriting(tab: Page, store: string, id: string): Promise<void> {
  return tab.evaluate(
    async ({ store, id }) => {
      const c = await window.zarisRecorded(store, id)
      const stats = { n: 0, slowest: 0, running: true }
      window.kept.writing = stats
      window.kept.done = (async () => {
        while (stats.running) {
          const t0 = Date.now()
          await c.counters.increment(`count:${id}`)
          stats.n++
          stats.slowest = Math.max(stats.slowest, Date.now() - t0)
        }
      })()
    },
    { store, id },
  )
}

async function stopWriting(tab: Page): Promise<{ n: number; slowest: number }> {
  return tab.evaluate(async () => {
    const stats = window.kept.writing as { n: number; slowest: number; running: boolean }
    stats.running = false
    await window.kept.done
    return { n: stats.n, slowest: stats.slowest }
  })
}

/** In `tab`, an election-only candidate `id` (recorded) that campaigns; `window.kept.led` resolves with its term's token and when. */
function campaign(tab: Page, store: string, id: string, ttl: number): Promise<void> {
  return tab.evaluate(
    async ({ store, id, ttl }) => {
      window.zarisRecordElect(id)
      const now = window.zarisNow
      // Keys named after the store: the checker knows keys, not namespaces.
      const e = window.zarisElect.election(`leader:${store}`, { namespace: store, id, ttl })
      window.kept.election = e
      const invokedAt = now()
      window.kept.led = e.campaign().then(async (term) => {
        const at = now()
        void window.zarisRecord({ type: 'acquire', client: id, lock: `leader:${store}`, token: term!.token, invokedAt, at })
        window.kept.term = term
        await e.put(`res:${store}`, id, { fence: term! })
        term!.signal.addEventListener('abort', () => void window.zarisRecord({ type: 'loss', client: id, lock: `leader:${store}`, token: term!.token, reason: (term!.signal.reason as { code: string }).code, at: now() }))
        return { token: term!.token, at: Date.now() }
      })
    },
    { store, id, ttl },
  )
}

/**
 * Freezes an election-only leader past its TTL while another election-only
 * tab waits, and (with `writers`) two full-client tabs write in loops; their
 * stores sweep the expired term and announce it, which a frozen page still
 * hears. Without them nobody announces the expiry: the waiter takes the key
 * without the gate and steals it.
 */
async function frozenLeader(writers: boolean): Promise<void> {
    const pages: Page[] = []
    try {
      const store = ns()
      const [leader, waiter] = [await open(pages), await open(pages)]
      const [a, b] = writers ? [await open(pages), await open(pages)] : []
      const ttl = 2_000
      // Ids of this test's own: a closing tab of an earlier test may still record.
      const id = (name: string) => `${name}-${store}`
      await campaign(leader, store, id('leader'), ttl)
      const first = await leader.evaluate(() => window.kept.led as Promise<{ token: number; at: number }>)
      await campaign(waiter, store, id('waiter'), ttl)
      if (a && b) {
        await startWriting(a, store, id('a'))
        await startWriting(b, store, id('b'))
      }
      await sleep(300)
      const cdp = await tabs.real.context.newCDPSession(leader)
      const frozenAt = Date.now()
      await cdp.send('Page.setWebLifecycleState', { state: 'frozen' })
      const got = await waiter.evaluate(() => window.kept.led as Promise<{ token: number; at: number }>)
      await sleep(200)
      await cdp.send('Page.setWebLifecycleState', { state: 'active' })
      await cdp.detach()
      const woke = await leader.evaluate(async () => {
        const term = window.kept.term as { key: string; token: number; signal: AbortSignal }
        const e = window.kept.election as import('zaris/elect').TabElection
        const fenced = await e.put(`res:${e.namespace}`, 'stale', { fence: term }).then(() => 'accepted', (err: { code?: string }) => err.code)
        if (!term.signal.aborted) await new Promise((r) => term.signal.addEventListener('abort', r, { once: true }))
        return { fenced, isLeader: e.isLeader, reason: (term.signal.reason as { code?: string }).code }
      })
      const events = await leader.evaluate(() => window.kept.lifecycle as Array<[string, number, number]>)
      const froze = events.find(([t]) => t === 'freeze')
      const thawed = events.find(([t]) => t === 'resume')
      expect(froze, 'the tab froze').toBeDefined()
      expect(thawed, 'the tab resumed').toBeDefined()
      const resumed = thawed![1]
      records.push({ type: 'pause', client: id('leader'), lock: `leader:${store}`, token: first.token, ttl, at: froze![2], until: thawed![2] })
      const [ra, rb] = a && b ? [await stopWriting(a), await stopWriting(b)] : [{ n: 0, slowest: 0 }, { n: 0, slowest: 0 }]
      const data = await waiter.evaluate(async () => (await (await window.zaris.connect(`zaris://idb/${(window.kept.election as { namespace: string }).namespace}`)).get(`res:${(window.kept.election as { namespace: string }).namespace}`))?.value)
      console.log(
        `leader frozen (TTL ${ttl} ms): the waiter led ${got.at - frozenAt} ms after the freeze (token ${first.token} -> ${got.token}); ` +
          `after the thaw the leader's write was ${woke.fenced}, its signal said ${woke.reason}; writers did ${ra.n} + ${rb.n} increments, slowest ${ra.slowest} / ${rb.slowest} ms`,
      )
      expect(got.token).toBeGreaterThan(first.token)
      expect(got.at).toBeLessThan(resumed)
      expect(got.at - frozenAt).toBeLessThanOrEqual(ttl + 1_000)
      expect(woke).toEqual({ fenced: 'FENCED', isLeader: false, reason: expect.stringMatching(/^(EXPIRED|STOLEN|LOST)$/) })
      expect(data).toBe(id('waiter'))
      expect(Math.max(ra.slowest, rb.slowest)).toBeLessThan(1_000)
      await sleep(100)
      const mine = (e: HistoryRecord | HistoryEvent) => ('client' in e && typeof e.client === 'string' ? e.client.endsWith(store) : false)
      assertHistory(records.filter(mine), operations.filter(mine), { clockMargin: 5 })
    } finally {
      for (const p of pages) await p.close().catch(() => {})
    }
}

describe('zaris/elect: a frozen leader', () => {
  it('frozen past its TTL while two full-client tabs write: a waiting tab leads within TTL + 1 s with a larger token; after the thaw the frozen leader is told and its fenced write is refused', () => frozenLeader(true), 60_000)
  it('frozen past its TTL with nobody to announce the expiry: the waiting tab takes the key and steals the gate within TTL + 1 s; the thawed leader\'s fenced write is refused', () => frozenLeader(false), 60_000)
})
