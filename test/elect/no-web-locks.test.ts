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
      window.kept.led = e.campaign().then((t) => t && { token: t.token, at: Date.now() })
    },
    { ns, id, ttl: TTL },
  )
}

const led = (tab: Page) => tab.evaluate(() => window.kept.led as Promise<{ token: number; at: number }>)
const leading = (tab: Page) => tab.evaluate(() => (window.kept.election as { isLeader: boolean }).isLeader)

it('without navigator.locks: a resign hands the election on at once (of two waiters one wins, the other waits on, and closed answers null), a waiting campaign aborted rejects with its reason, a closed leader\'s term ends at its TTL; tokens rise; a zaris/tabs lock tries, waits and is handed on', async () => {
  await withContext(async (open) => {
    const ns = `nolocks-${Math.random().toString(36).slice(2, 10)}`
    const [a, b, c] = [await open(), await open(), await open()]
    const startedAt = Date.now()
    await candidate(a, ns, 'a')
    const first = await led(a)
    // A free key is taken at once.
    expect(first.at - startedAt).toBeLessThan(1_000)
    await candidate(b, ns, 'b')
    await candidate(c, ns, 'c')
    await new Promise((r) => setTimeout(r, 200))
    expect([await leading(a), await leading(b), await leading(c)]).toEqual([true, false, false])
    // A resign deletes the entry: both waiters hear it and take the key, one commit wins, the other is refused and waits on.
    const resignedAt = Date.now()
    await a.evaluate(() => (window.kept.election as { resign(): Promise<boolean> }).resign())
    const [winner, loser] = (await Promise.race([led(b).then(() => [b, c]), led(c).then(() => [c, b])])) as [Page, Page]
    const second = await led(winner)
    expect(second.token).toBeGreaterThan(first.token)
    expect(second.at - resignedAt).toBeLessThan(1_000)
    await new Promise((r) => setTimeout(r, 200))
    expect(await leading(loser)).toBe(false)
    // The one refused, closed while it waits: its campaign answers null.
    expect(await loser.evaluate(async () => {
      const e = window.kept.election as { close(): Promise<void> }
      await e.close()
      return (window.kept.led as Promise<unknown>).then((v) => v, (err: Error) => `rejected: ${err.message}`)
    })).toBeNull()
    // A campaign waiting with a signal, aborted: it rejects with the signal's reason.
    expect(await a.evaluate(async () => {
      const e = window.kept.election as { campaign(o: { signal: AbortSignal }): Promise<unknown> }
      const stop = new AbortController()
      const asked = e.campaign({ signal: stop.signal }).then(() => 'resolved', (err: Error) => err.message)
      setTimeout(() => stop.abort(new Error('no longer wanted')), 100)
      return asked
    })).toBe('no longer wanted')
    // The leader's page closes: nothing tells the others (no Web Lock frees, no liveness lock); its term ends at its TTL.
    const d = await open()
    await candidate(d, ns, 'd')
    await new Promise((r) => setTimeout(r, 200))
    // Refused commits (told to the other tabs with no records) while d waits: a waiter reads and waits, it does not retry.
    await a.evaluate((ns) => {
      const refused = { n: 0 }
      window.kept.refused = refused
      new BroadcastChannel(`zaris:idb:${ns}`).onmessage = (ev) => void ((ev.data as { records?: unknown[] })?.records?.length === 0 && refused.n++)
    }, ns)
    const closedAt = Date.now()
    await winner.close()
    const third = await led(d)
    expect(await a.evaluate(() => (window.kept.refused as { n: number }).n)).toBeLessThanOrEqual(1)
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
