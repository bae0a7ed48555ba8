/**
 * A zaris/tabs lock whose holder tab is frozen (`Page.setWebLifecycleState`
 * frozen, in a Chromium whose tabs really freeze: test/browser-harness/
 * real-tabs.ts) past its TTL: a waiting tab holds within TTL + 1 s with a
 * larger token, the thawed holder is told (its signal aborts) and its fenced
 * write is refused. The holder keeps its Web Lock while frozen, so the
 * waiter must take the key without it and steal it (the campaign's path
 * zaris/elect runs too). The test first checks that the freeze happened.
 * Every commit is recorded and the history judged by the checker, the pause
 * included.
 */
import { expect, it } from 'vitest'
import { openHarnessTab } from '../browser-harness/server'
import { useRecordedRealTabs } from '../browser-harness/recorded-tabs'
import { assertHistory } from '../faults/checker'

const tabs = useRecordedRealTabs()
const { records, operations } = tabs

it('a zaris/tabs lock frozen past its TTL: the waiting tab holds within TTL + 1 s with a larger token; the thawed holder is told and its fenced write is refused', async () => {
  const store = `tabs-frozen-${Math.random().toString(36).slice(2, 10)}`
  const ttl = 2_000
  const [holder, waiter] = [await openHarnessTab(tabs.real.context, tabs.harness.url), await openHarnessTab(tabs.real.context, tabs.harness.url)]
  try {
    // In `tab`, client `id` (recorded) waits for the lock and writes under it; `window.kept.got` resolves with its token and when.
    const take = (tab: typeof holder, id: string) =>
      tab.evaluate(
        async ({ store, id, ttl }) => {
          const now = window.zarisNow
          const events: Array<[string, number]> = []
          window.kept.lifecycle = events
          for (const type of ['freeze', 'resume']) document.addEventListener(type, () => events.push([type, now()]))
          window.zarisRecordElect(id)
          const app = window.zarisTabs.tabs(store, { id, ttl })
          window.kept.app = app
          const invokedAt = now()
          window.kept.got = app.locks.acquire(`lock:${store}`, { wait: 30_000 }).then(async (lock) => {
            void window.zarisRecord({ type: 'acquire', client: id, lock: `lock:${store}`, token: lock!.token, invokedAt, at: now() })
            lock!.signal.addEventListener('abort', () => void window.zarisRecord({ type: 'loss', client: id, lock: `lock:${store}`, token: lock!.token, reason: (lock!.signal.reason as { code: string }).code, at: now() }))
            window.kept.lock = lock
            await app.put(`res:${store}`, id, { fence: lock! })
            return { token: lock!.token, at: Date.now() }
          })
        },
        { store, id, ttl },
      )
    await take(holder, `holder-${store}`)
    const first = await holder.evaluate(() => window.kept.got as Promise<{ token: number; at: number }>)
    await take(waiter, `waiter-${store}`)
    await new Promise((r) => setTimeout(r, 300))
    const cdp = await tabs.real.context.newCDPSession(holder)
    const frozenAt = Date.now()
    await cdp.send('Page.setWebLifecycleState', { state: 'frozen' })
    const got = await waiter.evaluate(() => window.kept.got as Promise<{ token: number; at: number }>)
    await new Promise((r) => setTimeout(r, 200))
    await cdp.send('Page.setWebLifecycleState', { state: 'active' })
    await cdp.detach()
    const woke = await holder.evaluate(async () => {
      const lock = window.kept.lock as { key: string; token: number; signal: AbortSignal; held: boolean }
      const app = window.kept.app as ReturnType<typeof window.zarisTabs.tabs>
      const fenced = await app.put(`res:${app.namespace}`, 'stale', { fence: lock }).then(
        () => 'accepted',
        (err: { code?: string }) => err.code,
      )
      if (!lock.signal.aborted) await new Promise((r) => lock.signal.addEventListener('abort', r, { once: true }))
      return { fenced, held: lock.held, reason: (lock.signal.reason as { code?: string }).code }
    })
    const events = await holder.evaluate(() => window.kept.lifecycle as Array<[string, number]>)
    const froze = events.find(([t]) => t === 'freeze')
    const thawed = events.find(([t]) => t === 'resume')
    expect(froze, 'the tab froze').toBeDefined()
    expect(thawed, 'the tab resumed').toBeDefined()
    records.push({ type: 'pause', client: `holder-${store}`, lock: `lock:${store}`, token: first.token, ttl, at: froze![1], until: thawed![1] })
    const data = await waiter.evaluate(async () => (await (window.kept.app as ReturnType<typeof window.zarisTabs.tabs>).get(`res:${(window.kept.app as { namespace: string }).namespace}`))?.value)
    console.log(`tabs lock frozen (TTL ${ttl} ms): the waiter held ${got.at - frozenAt} ms after the freeze (token ${first.token} -> ${got.token}); after the thaw the holder's write was ${woke.fenced}, its signal said ${woke.reason}`)
    expect(got.token).toBeGreaterThan(first.token)
    expect(got.at - frozenAt).toBeLessThanOrEqual(ttl + 1_000)
    expect(woke).toEqual({ fenced: 'FENCED', held: false, reason: expect.stringMatching(/^(EXPIRED|STOLEN|LOST)$/) })
    expect(data).toBe(`waiter-${store}`)
    await new Promise((r) => setTimeout(r, 100))
    assertHistory(records, operations, { clockMargin: 5 })
  } finally {
    await holder.close().catch(() => {})
    await waiter.close().catch(() => {})
  }
}, 60_000)
