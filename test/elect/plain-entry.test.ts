/**
 * A campaign granted the gate while an entry no gate takes over stands at
 * the key (real tabs: Chromium, the harness page):
 *
 * - a plain `put` with a TTL: the campaign takes the key once that TTL
 *   passes, on a store where nobody sweeps expiries (no full client, no
 *   watch) and so no tab hears the entry end; the same for a zaris/tabs
 *   lock that waits;
 * - a full client's lock of several keys (taken without gates): the
 *   candidate must not lead on the grant, nor at all, until it is released;
 * - no entry, but the gate held by a tab that takes no key: the candidate
 *   waits for the gate (up to 2 s) before it takes the key without it;
 * - an expired entry under a held gate (a frozen holder): 100 ms, not 2 s;
 * - a live leader that renews: the waiting candidate commits nothing.
 */
import { expect, it } from 'vitest'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'

const { withContext } = useRecordedTabs()

it('a campaign granted the gate over a plain entry with a TTL leads once that TTL passes, on a store nobody sweeps; so does a waiting zaris/tabs lock', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const ns = `plain-${Math.random().toString(36).slice(2, 10)}`
    const r = await tab.evaluate(async (ns) => {
      const TTL = 400
      const writer = window.zarisTabs.tabs(ns)
      const put = await writer.put('leader:plain', 'not a term', { ttl: TTL })
      const lock = await writer.put('lock:plain', 'not a hold', { ttl: TTL })
      await writer.close()
      let ledAfter = NaN
      let heldAfter = NaN
      const t0 = performance.now()
      const e = window.zarisElect.election('leader:plain', { namespace: ns, ttl: 5_000 })
      const waiter = window.zarisTabs.tabs(ns)
      const [term, held] = await Promise.all([
        e.campaign({ signal: AbortSignal.timeout(5_000) }).then(
          (t) => ((ledAfter = performance.now() - t0), t),
          (err: Error) => err.message,
        ),
        waiter.locks.acquire('lock:plain', { wait: 5_000 }).then((l) => ((heldAfter = performance.now() - t0), l)),
      ])
      const leader = e.leader
      await e.close()
      await held?.release()
      await waiter.close()
      return {
        token: typeof term === 'string' ? term : term?.token,
        over: { put: put.revision, lock: lock.revision },
        ledAfter,
        leader: leader?.candidate === e.candidate,
        lockToken: held?.token,
        heldAfter,
      }
    }, ns)
    console.log(JSON.stringify(r))
    // Led with a token above the plain entry's write, after its TTL, and well before the 5 s give-up.
    expect(r.token).toBeGreaterThan(r.over.put)
    expect(r.leader).toBe(true)
    expect(r.ledAfter).toBeLessThan(400 + 1_000)
    expect(r.lockToken).toBeGreaterThan(r.over.lock)
    expect(r.heldAfter).toBeLessThan(400 + 1_000)
  })
}, 60_000)

it('granted while a full client\'s lock of several keys holds the election\'s key (an entry no gate takes over): no lead, on the grant or after, until that lock is released', async () => {
  await withContext(async (open) => {
    const [holder, candidate] = [await open(), await open()]
    const ns = `multi-${Math.random().toString(36).slice(2, 10)}`
    await holder.evaluate(async (ns) => {
      const c = await window.zaris.connect(`zaris://idb/${ns}`)
      window.kept.set = await c.locks.acquire(['leader:multi', 'other:multi'], { ttl: 30_000 })
      // Another tab's grantee holds the election's gate a moment (as a waiter granted before it took the key would):
      // the candidate reads the key while it waits, then is granted with that entry in view.
      void navigator.locks.request(`zaris:${ns}:gate:leader:multi`, () => new Promise((r) => setTimeout(r, 400)))
    }, ns)
    await candidate.evaluate((ns) => {
      const e = window.zarisElect.election('leader:multi', { namespace: ns, ttl: 5_000 })
      const events: Array<[string, number]> = []
      window.kept.events = events
      e.addEventListener('elected', () => events.push(['elected', Date.now()]))
      e.addEventListener('deposed', () => events.push(['deposed', Date.now()]))
      window.kept.led = e.campaign().then((t) => ({ token: t!.token, at: Date.now() }))
    }, ns)
    await new Promise((r) => setTimeout(r, 1_000))
    const before = await candidate.evaluate(() => window.kept.events as Array<[string, number]>)
    const releasedAt = Date.now()
    const setToken = await holder.evaluate(async () => {
      const set = window.kept.set as { locks: Array<{ key: string; token: number }>; release(): Promise<unknown> }
      await set.release()
      return set.locks.find((l) => l.key === 'leader:multi')!.token
    })
    const led = await candidate.evaluate(() => window.kept.led as Promise<{ token: number; at: number }>)
    const after = await candidate.evaluate(() => window.kept.events as Array<[string, number]>)
    expect(before).toEqual([])
    expect(after.map(([t]) => t)).toEqual(['elected'])
    expect(led.at).toBeGreaterThanOrEqual(releasedAt)
    expect(led.token).toBeGreaterThan(setToken)
  })
}, 60_000)

it('the gate held by a tab that writes no entry (a grantee slow to take the key): a candidate waits for it, up to 2 s, before it takes the free key without the gate', async () => {
  await withContext(async (open) => {
    const [grantee, candidate] = [await open(), await open()]
    const ns = `slow-${Math.random().toString(36).slice(2, 10)}`
    await grantee.evaluate(
      (name) =>
        new Promise<void>((held) => void navigator.locks.request(name, () => (held(), new Promise((r) => setTimeout(r, 1_000))))),
      `zaris:${ns}:gate:leader:slow`,
    )
    const heldAt = Date.now()
    const r = await candidate.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:slow', { namespace: ns, ttl: 5_000 })
      const term = (await e.campaign())!
      await e.close()
      return { token: term.token, at: Date.now() }
    }, ns)
    // Granted when the grantee let go (1 s), well before the 2 s grace; not at the 100 ms grace of an expired entry.
    expect(r.at - heldAt).toBeGreaterThan(800)
    expect(r.token).toBeGreaterThan(0)
  })
}, 60_000)

it('the gate held by a frozen holder whose entry is already past its TTL when the candidate comes: it takes the key and then the gate after the 100 ms grace, not the 2 s one', async () => {
  await withContext(async (open) => {
    const [holder, candidate] = [await open(), await open()]
    const ns = `past-${Math.random().toString(36).slice(2, 10)}`
    // As a holder frozen past its TTL looks: its entry expired, its gate held (here for 5 s, then let go).
    await holder.evaluate(async (ns) => {
      const t = window.zarisTabs.tabs(ns)
      await t.put('leader:past', 'expired soon', { ttl: 100 })
      await t.close()
      await new Promise<void>((held) => void navigator.locks.request(`zaris:${ns}:gate:leader:past`, () => (held(), new Promise((r) => setTimeout(r, 5_000)))))
      await new Promise((r) => setTimeout(r, 200))
    }, ns)
    const r = await candidate.evaluate(async (ns) => {
      const t0 = Date.now()
      const e = window.zarisElect.election('leader:past', { namespace: ns, ttl: 5_000 })
      const term = (await e.campaign())!
      const at = Date.now() - t0
      await e.close()
      return { token: term.token, at }
    }, ns)
    expect(r.token).toBeGreaterThan(1)
    expect(r.at).toBeLessThan(1_000)
  })
}, 60_000)

it('a candidate waiting behind a live leader that renews makes no commit of its own until it is granted', async () => {
  await withContext(async (open) => {
    const [leader, waiter, listener] = [await open(), await open(), await open()]
    const ns = `quiet-${Math.random().toString(36).slice(2, 10)}`
    // Refused commits reach the other tabs as messages with no records; renewals carry one.
    await listener.evaluate((ns) => {
      const seen = { refused: 0, renewals: 0 }
      window.kept.seen = seen
      new BroadcastChannel(`zaris:idb:${ns}`).onmessage = (ev) => {
        const n = (ev.data as { records?: unknown[] })?.records?.length
        if (n === 0) seen.refused++
        else if (n) seen.renewals++
      }
    }, ns)
    const start = (ns: string) => {
      const e = window.zarisElect.election('leader:quiet', { namespace: ns, ttl: 600 })
      window.kept.election = e
      window.kept.led = e.campaign().then((t) => t!.token)
    }
    await leader.evaluate(start, ns)
    await leader.evaluate(() => window.kept.led)
    await waiter.evaluate(start, ns)
    // The leader renews every 200 ms: five renewals or so while the waiter waits.
    await new Promise((r) => setTimeout(r, 1_000))
    const seen = await listener.evaluate(() => window.kept.seen as { refused: number; renewals: number })
    expect(seen.renewals).toBeGreaterThanOrEqual(3)
    expect(seen.refused).toBe(0)
    await leader.evaluate(() => (window.kept.election as { resign(): Promise<boolean> }).resign())
    expect(await waiter.evaluate(() => window.kept.led)).toBeGreaterThan(0)
  })
}, 60_000)
