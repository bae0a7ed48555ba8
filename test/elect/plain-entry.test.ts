/**
 * A campaign granted the gate while a plain entry (written without the gate,
 * with a TTL: a `put` of the election's key) stands at the key: it must take
 * the key once that entry's TTL passes, on a store where nobody sweeps
 * expiries (no full client, no watch) and so no tab hears the entry end.
 * Real tabs (Chromium, the harness page); the same for a zaris/tabs lock
 * that waits.
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
