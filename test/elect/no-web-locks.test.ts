/**
 * zaris/elect and zaris/tabs where a page has no `navigator.locks` (an
 * insecure page, an old browser): real tabs (Chromium, the harness page)
 * whose `navigator.locks` is hidden before the entry first runs, so they
 * take the path without gates: a campaign waits for the key to be free or
 * past its TTL and takes it in one commit, and a closed leader's term ends
 * at its TTL rather than at once.
 */
import { expect, it } from 'vitest'
import type { Page } from 'playwright'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'

const { withContext } = useRecordedTabs()
const TTL = 1_500

/** In `tab`, hides `navigator.locks` (before any zaris entry runs there) and starts a candidate `id`; `window.kept.led` resolves with its token. */
async function candidate(tab: Page, ns: string, id: string): Promise<void> {
  await tab.evaluate(
    ({ ns, id, ttl }) => {
      Object.defineProperty(navigator, 'locks', { get: () => undefined, configurable: true })
      const e = window.zarisElect.election('leader:nolocks', { namespace: ns, id, ttl })
      window.kept.election = e
      window.kept.led = e.campaign().then((t) => ({ token: t!.token, at: Date.now() }))
    },
    { ns, id, ttl: TTL },
  )
}

const led = (tab: Page) => tab.evaluate(() => window.kept.led as Promise<{ token: number; at: number }>)
const leading = (tab: Page) => tab.evaluate(() => (window.kept.election as { isLeader: boolean }).isLeader)

it('without navigator.locks: a resign hands the election on at once, a closed leader\'s term ends at its TTL; tokens rise; a zaris/tabs lock tries, waits and is handed on', async () => {
  await withContext(async (open) => {
    const ns = `nolocks-${Math.random().toString(36).slice(2, 10)}`
    const [a, b] = [await open(), await open()]
    await candidate(a, ns, 'a')
    const first = await led(a)
    await candidate(b, ns, 'b')
    await new Promise((r) => setTimeout(r, 200))
    expect([await leading(a), await leading(b)]).toEqual([true, false])
    // A resign deletes the entry: the waiter hears it and takes the key in one commit.
    const resignedAt = Date.now()
    await a.evaluate(() => (window.kept.election as { resign(): Promise<boolean> }).resign())
    const second = await led(b)
    expect(second.token).toBeGreaterThan(first.token)
    expect(second.at - resignedAt).toBeLessThan(1_000)
    // The leader's page closes: nothing tells the others (no Web Lock frees, no liveness lock); its term ends at its TTL.
    const c = await open()
    await candidate(c, ns, 'c')
    await new Promise((r) => setTimeout(r, 200))
    const closedAt = Date.now()
    await b.close()
    const third = await led(c)
    expect(third.token).toBeGreaterThan(second.token)
    // Its last renewal came at most TTL/3 before the close: not before 2/3 of the TTL, and within the TTL and a second.
    expect(third.at - closedAt).toBeGreaterThan((TTL * 2) / 3 - 100)
    expect(third.at - closedAt).toBeLessThan(TTL + 1_000)
    // zaris/tabs locks, on the same pages: a try while held answers null, a wait is handed the lock on release.
    const r = await a.evaluate(async (ns) => {
      const one = window.zarisTabs.tabs(ns)
      const two = window.zarisTabs.tabs(ns)
      const held = (await one.locks.acquire('lock:nolocks'))!
      const tried = await two.locks.acquire('lock:nolocks')
      const waiting = two.locks.acquire('lock:nolocks', { wait: 5_000 })
      await new Promise((res) => setTimeout(res, 100))
      const t0 = Date.now()
      await held.release()
      const next = (await waiting)!
      const after = Date.now() - t0
      await next.release()
      await Promise.all([one.close(), two.close()])
      return { tried, held: held.token, next: next.token, after }
    }, ns)
    expect(r.tried).toBeNull()
    expect(r.next).toBeGreaterThan(r.held)
    expect(r.after).toBeLessThan(1_000)
  })
}, 60_000)
