/**
 * An election-only tab registers its liveness as a full client does, so a
 * full client's reaper ends its term the moment its tab closes, with nobody
 * waiting to take the key over: a full client in another tab (real Chromium
 * tabs, the harness page) that only watches the election sees the leader
 * gone well under the 30 s TTL, and its own entry read gone.
 */
import { expect, it } from 'vitest'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'

const { withContext } = useRecordedTabs()

it('an election-only leader\'s tab closes with nobody waiting: a full client that watches sees no leader within 2 s (TTL 30 s), and the entry gone', async () => {
  await withContext(async (open) => {
    const ns = `live-${Math.random().toString(36).slice(2, 10)}`
    const [leader, watcher] = [await open(), await open()]
    const token = await leader.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:live', { namespace: ns, id: 'only', ttl: 30_000 })
      window.kept.election = e
      return (await e.campaign())!.token
    }, ns)
    await watcher.evaluate(async (ns) => {
      const c = await window.zaris.connect(`zaris://idb/${ns}`)
      window.kept.client = c
      const e = c.election('leader:live')
      const seen: Array<{ candidate: string | null; at: number }> = []
      window.kept.seen = seen
      void (async () => {
        for await (const l of e.observe()) seen.push({ candidate: l?.candidate ?? null, at: Date.now() })
      })()
    }, ns)
    const seen = () => watcher.evaluate(() => window.kept.seen as Array<{ candidate: string | null; at: number }>)
    for (let i = 0; i < 100 && (await seen()).at(-1)?.candidate !== 'only'; i++) await new Promise((r) => setTimeout(r, 20))
    expect((await seen()).at(-1)?.candidate).toBe('only')
    const closedAt = Date.now()
    await leader.close()
    for (let i = 0; i < 150 && (await seen()).at(-1)?.candidate !== null; i++) await new Promise((r) => setTimeout(r, 20))
    const last = (await seen()).at(-1)!
    expect(last.candidate).toBeNull()
    expect(last.at - closedAt).toBeLessThan(2_000)
    const entry = await watcher.evaluate(async () => (await (window.kept.client as import('zaris').Client).get('leader:live')) ?? null)
    expect(entry).toBeNull()
    expect(token).toBeGreaterThan(0)
  })
}, 60_000)

it('a closing election-only tab says so before the browser frees its locks: its registration (id and nonce) is posted on the namespace\'s `gone` channel, and the announcement names nothing else', async () => {
  await withContext(async (open) => {
    const ns = `gone-${Math.random().toString(36).slice(2, 10)}`
    const [leader, listener] = [await open(), await open()]
    await listener.evaluate((ns) => {
      const heard: unknown[] = []
      window.kept.heard = heard
      new BroadcastChannel(`zaris:idb:${ns}:gone`).onmessage = (ev) => heard.push(ev.data)
    }, ns)
    await leader.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:gone', { namespace: ns, id: 'closing', ttl: 30_000 })
      await e.campaign()
    }, ns)
    await leader.close({ runBeforeUnload: false })
    let heard: Array<{ owner?: string; nonce?: string }> = []
    for (let i = 0; i < 50 && heard.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 20))
      heard = await listener.evaluate(() => window.kept.heard as Array<{ owner?: string; nonce?: string }>)
    }
    expect(heard.map((a) => a.owner)).toEqual(['closing'])
    expect(heard[0]!.nonce).toMatch(/^[0-9a-f]{24}$/)
  })
}, 60_000)

it('registrations: two tabs of one candidate id both hold the id\'s liveness lock, shared, each with its own exclusive one; an election closed lets both go at once', async () => {
  await withContext(async (open) => {
    const ns = `reg-${Math.random().toString(36).slice(2, 10)}`
    const [a, b, looker] = [await open(), await open(), await open()]
    for (const tab of [a, b]) {
      await tab.evaluate((ns) => {
        const e = window.zarisElect.election('leader:reg', { namespace: ns, id: 'same', ttl: 30_000 })
        window.kept.election = e
        void e.campaign()
      }, ns)
    }
    /** The liveness locks of the namespace, held and pending, as [mode, kind of name]. */
    const liveness = () =>
      looker.evaluate(async (ns) => {
        const s = await navigator.locks.query()
        const kind = (name: string) => (name.startsWith(`zaris:${ns}:owner:`) ? 'owner' : name.startsWith(`zaris:${ns}:instance:`) ? 'instance' : null)
        const of = (list: LockInfo[] | undefined) => (list ?? []).filter((l) => kind(l.name!)).map((l) => `${l.mode} ${kind(l.name!)}`).sort()
        return { held: of(s.held), pending: of(s.pending) }
      }, ns)
    let seen = await liveness()
    for (let i = 0; i < 50 && seen.held.length < 4; i++) await new Promise((r) => setTimeout(r, 20)), (seen = await liveness())
    expect(seen).toEqual({ held: ['exclusive instance', 'exclusive instance', 'shared owner', 'shared owner'], pending: [] })
    await a.evaluate(() => (window.kept.election as import('zaris/elect').TabElection).close())
    await b.evaluate(() => (window.kept.election as import('zaris/elect').TabElection).close())
    seen = await liveness()
    for (let i = 0; i < 50 && seen.held.length > 0; i++) await new Promise((r) => setTimeout(r, 20)), (seen = await liveness())
    expect(seen).toEqual({ held: [], pending: [] })
  })
}, 60_000)

it('a registration made while a prober holds the id\'s liveness lock (as a full client\'s reaper does for an instant) counts at once: the campaign does not wait for the prober', async () => {
  await withContext(async (open) => {
    const ns = `probe-${Math.random().toString(36).slice(2, 10)}`
    const [prober, candidate] = [await open(), await open()]
    // The prober holds the owner name exclusively for 4 s.
    await prober.evaluate(
      (name) => new Promise<void>((held) => void navigator.locks.request(name, { mode: 'exclusive' }, () => (held(), new Promise((r) => setTimeout(r, 4_000))))),
      `zaris:${ns}:owner:probed`,
    )
    const ms = await candidate.evaluate(async (ns) => {
      const t0 = performance.now()
      const e = window.zarisElect.election('leader:probe', { namespace: ns, id: 'probed', ttl: 30_000 })
      await e.campaign()
      const ms = performance.now() - t0
      await e.close()
      return ms
    }, ns)
    // Queued behind the prober, the registration is seen and believed: the campaign leads long before the prober lets go.
    expect(ms).toBeLessThan(3_000)
  })
}, 60_000)
