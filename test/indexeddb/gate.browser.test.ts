/**
 * The Web Lock gate itself (src/adapters/indexeddb/gate.ts), in Chromium's
 * own lock manager: its Web Lock name, exclusion and the wait line,
 * `ifAvailable`, shared holders, a steal and who is told, `taken()`, what a
 * commit made through it tells the store, releasing (once, a request
 * withdrawn while it waits never holding), the page's count of requests the
 * reaper asks about, and a page being discarded letting its gates go.
 * Frozen and closed tabs are in test/indexeddb/frozen.test.ts and
 * test/tabs (real tabs).
 */
import { afterEach, describe, expect, it } from 'vitest'
import { asked, gateName, WebLockGate } from '../../src/adapters/indexeddb/gate'

let ns = ''
const made: WebLockGate[] = []
const outside: Array<() => void> = []
afterEach(() => {
  for (const g of made.splice(0)) g.release()
  for (const letGo of outside.splice(0)) letGo()
})

/** A gate of key `key` in this test's namespace, released after the test. */
function gate(key = 'k', options: ConstructorParameters<typeof WebLockGate>[3] = {}, released?: (g: WebLockGate) => void): WebLockGate {
  const g = new WebLockGate(navigator.locks, ns, key, options, released)
  made.push(g)
  return g
}

/** The Web Locks of this namespace the lock manager reports, held and pending. */
async function query(): Promise<{ held: string[]; pending: string[] }> {
  const s = await navigator.locks.query()
  const mine = (ls: LockInfo[] | undefined) => (ls ?? []).map((l) => `${l.name}/${l.mode}`).filter((n) => n.startsWith(`zaris:${ns}:`))
  return { held: mine(s.held), pending: mine(s.pending) }
}

/** Holds the Web Lock `name` from outside any gate (another client) until the test ends or `letGo` is called. */
async function holdOutside(name: string, mode: LockMode = 'exclusive'): Promise<{ letGo: () => void; lost: Promise<unknown> }> {
  let letGo!: () => void
  let lost!: Promise<unknown>
  await new Promise<void>((held) => {
    lost = navigator.locks.request(name, { mode }, () => (held(), new Promise<void>((r) => (letGo = r)))).then(
      () => 'released',
      (e: unknown) => e,
    )
  })
  outside.push(letGo)
  return { letGo, lost }
}

const tick = () => new Promise((r) => setTimeout(r, 20))

describe('the Web Lock gate', () => {
  afterEach(() => {
    ns = ''
  })
  const fresh = () => (ns = `gate-${Math.random().toString(36).slice(2, 10)}`)

  it('is the exclusive Web Lock zaris:<namespace>:gate:<key>, held while `held`, free at once after release', async () => {
    fresh()
    expect(gateName(ns, 'a:b')).toBe(`zaris:${ns}:gate:a:b`)
    const g = gate('a:b')
    expect(g.key).toBe('a:b')
    expect(g.mode).toBe('exclusive')
    expect(await g.granted).toBe(true)
    expect(g.held).toBe(true)
    expect(await query()).toEqual({ held: [`zaris:${ns}:gate:a:b/exclusive`], pending: [] })
    g.release()
    expect(g.held).toBe(false)
    await tick()
    expect(await query()).toEqual({ held: [], pending: [] })
  })

  it('excludes: a second gate of the key waits in line and is granted at the release, in request order', async () => {
    fresh()
    const a = gate()
    expect(await a.granted).toBe(true)
    const order: string[] = []
    const b = gate()
    const c = gate()
    void b.granted.then((ok) => order.push(`b:${ok}`))
    void c.granted.then((ok) => order.push(`c:${ok}`))
    await tick()
    expect([b.held, c.held, order]).toEqual([false, false, []])
    expect((await query()).pending).toHaveLength(2)
    a.release()
    expect(await b.granted).toBe(true)
    await tick()
    expect([b.held, c.held, order]).toEqual([true, false, ['b:true']])
    b.release()
    expect(await c.granted).toBe(true)
    expect(order).toEqual(['b:true', 'c:true'])
  })

  it('a gate of another key or another namespace is independent', async () => {
    fresh()
    const a = gate('x')
    expect(await a.granted).toBe(true)
    expect(await gate('y').granted).toBe(true)
    const other = new WebLockGate(navigator.locks, `${ns}-other`, 'x', {})
    made.push(other)
    expect(await other.granted).toBe(true)
  })

  it('ifAvailable: granted when free; denied at once (false, never held) while another holds it', async () => {
    fresh()
    const a = gate('k', { ifAvailable: true })
    expect(await a.granted).toBe(true)
    const denied = gate('k', { ifAvailable: true })
    expect(await denied.granted).toBe(false)
    expect(denied.held).toBe(false)
    expect((await query()).pending).toEqual([])
    // Denied, it counts for nothing: the holder's release leaves nobody asking.
    denied.release()
    expect(asked(ns, 'k')).toBe(true)
    a.release()
    expect(asked(ns, 'k')).toBe(false)
  })

  it('shared: shared gates hold together; an exclusive one waits for all of them, and a shared one asked after it waits behind it', async () => {
    fresh()
    const s1 = gate('k', { mode: 'shared' })
    const s2 = gate('k', { mode: 'shared' })
    expect(s1.mode).toBe('shared')
    expect([await s1.granted, await s2.granted]).toEqual([true, true])
    const x = gate('k')
    const s3 = gate('k', { mode: 'shared' })
    await tick()
    expect([x.held, s3.held]).toEqual([false, false])
    s1.release()
    await tick()
    expect(x.held).toBe(false)
    s2.release()
    expect(await x.granted).toBe(true)
    await tick()
    expect(s3.held).toBe(false)
    x.release()
    expect(await s3.granted).toBe(true)
  })

  it('release while waiting withdraws the request: granted resolves false, the gate is never held, the next in line is granted', async () => {
    fresh()
    const a = gate()
    expect(await a.granted).toBe(true)
    let told = 0
    const w = gate('k', {}, () => told++)
    const next = gate()
    await tick()
    w.release()
    expect(await w.granted).toBe(false)
    expect(told).toBe(1)
    a.release()
    expect(await next.granted).toBe(true)
    expect(w.held).toBe(false)
    expect((await query()).held).toEqual([`zaris:${ns}:gate:k/exclusive`])
  })

  it('released before an answer that cannot be withdrawn (ifAvailable, steal): the grant that comes after is let go at once', async () => {
    fresh()
    const i = gate('k', { ifAvailable: true })
    i.release()
    expect(await i.granted).toBe(false)
    const s = gate('k', { steal: true })
    s.release()
    expect(await s.granted).toBe(false)
    expect([i.held, s.held]).toEqual([false, false])
    await tick()
    expect(await query()).toEqual({ held: [], pending: [] })
    expect(await gate('k', { ifAvailable: true }).granted).toBe(true)
  })

  it('release is harmless twice: the store is told once, the count of askers falls once', async () => {
    fresh()
    let told = 0
    const a = gate('k', {}, () => told++)
    const b = gate('k')
    expect(await a.granted).toBe(true)
    a.release()
    a.release()
    expect(told).toBe(1)
    // b still asks (and is granted): a second release of a must not count b out.
    expect(asked(ns, 'k')).toBe(true)
    expect(await b.granted).toBe(true)
    expect(asked(ns, 'k')).toBe(true)
    b.release()
    expect(asked(ns, 'k')).toBe(false)
  })

  it("asked(): true from the request on, while waiting and holding, for this page's gates of that key only", async () => {
    fresh()
    expect(asked(ns, 'k')).toBe(false)
    const { letGo } = await holdOutside(gateName(ns, 'k'))
    // Held by another client, not by a gate of this page: not asked.
    expect(asked(ns, 'k')).toBe(false)
    const w = gate()
    expect(asked(ns, 'k')).toBe(true)
    expect(asked(ns, 'other')).toBe(false)
    expect(asked(`${ns}-other`, 'k')).toBe(false)
    letGo()
    expect(await w.granted).toBe(true)
    expect(asked(ns, 'k')).toBe(true)
    w.release()
    expect(asked(ns, 'k')).toBe(false)
  })

  it('steal from another holder: held at once with a new grant; the holder loses it', async () => {
    fresh()
    const holder = await holdOutside(gateName(ns, 'k'))
    const g = gate()
    await tick()
    expect(g.held).toBe(false)
    await g.steal()
    expect(g.held).toBe(true)
    expect(await holder.lost).toMatchObject({ name: 'AbortError' })
    // The request that waited was withdrawn: it never comes back as a second grant.
    expect(await g.granted).toBe(false)
    expect((await query()).held).toEqual([`zaris:${ns}:gate:k/exclusive`])
    expect((await query()).pending).toEqual([])
    g.release()
    await tick()
    expect(await query()).toEqual({ held: [], pending: [] })
  })

  it('a gate stolen from: `held` turns false and onLost is called once, whether registered before or after', async () => {
    fresh()
    const a = gate()
    expect(await a.granted).toBe(true)
    let lost = 0
    a.onLost(() => lost++)
    const thief = gate()
    await thief.steal()
    await tick()
    expect(a.held).toBe(false)
    expect(lost).toBe(1)
    let late = 0
    a.onLost(() => late++)
    expect(late).toBe(1)
    // Its release after the loss lets go of nothing: the thief still holds.
    a.release()
    await tick()
    expect(thief.held).toBe(true)
    expect((await query()).held).toEqual([`zaris:${ns}:gate:k/exclusive`])
    expect(lost).toBe(1)
  })

  it('a gate released (not stolen) never calls onLost', async () => {
    fresh()
    const a = gate()
    expect(await a.granted).toBe(true)
    let lost = 0
    a.onLost(() => lost++)
    a.release()
    await tick()
    const b = gate()
    expect(await b.granted).toBe(true)
    expect(lost).toBe(0)
  })

  it('steal of a gate already held changes nothing: granted, or held by an earlier steal', async () => {
    fresh()
    const a = gate()
    expect(await a.granted).toBe(true)
    let lost = 0
    a.onLost(() => lost++)
    await a.steal()
    await tick()
    expect([a.held, lost]).toEqual([true, 0])
    await holdOutside(gateName(ns, 'k2'))
    const b = gate('k2')
    b.onLost(() => lost++)
    await b.steal()
    await b.steal()
    await tick()
    expect([b.held, lost]).toEqual([true, 0])
    expect((await query()).held.sort()).toEqual([`zaris:${ns}:gate:k/exclusive`, `zaris:${ns}:gate:k2/exclusive`])
  })

  it('steal while the grant of a free gate waits for a busy page: held once, nothing lost (in Chromium the withdrawal wins; where the grant would, the gate keeps it)', async () => {
    fresh()
    const g = gate()
    let lost = 0
    g.onLost(() => lost++)
    // Keep the page busy while the lock manager grants the free lock: the grant's callback waits for the page.
    const until = performance.now() + 100
    while (performance.now() < until);
    expect(g.held).toBe(false)
    await g.steal()
    // Chromium: a grant the page has not yet run counts as waiting, and the steal's withdrawal ends it.
    expect(await g.granted).toBe(false)
    await tick()
    expect([g.held, lost]).toEqual([true, 0])
    expect((await query()).held).toEqual([`zaris:${ns}:gate:k/exclusive`])
  })

  it('steal after release: a clear UNAVAILABLE error, and nothing is held', async () => {
    fresh()
    const { letGo } = await holdOutside(gateName(ns, 'k'))
    const g = gate()
    g.release()
    await expect(g.steal()).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('"k" was released before it could be stolen') })
    letGo()
    await tick()
    expect(await query()).toEqual({ held: [], pending: [] })
  })

  it('steal option: takes the gate at once from its holder', async () => {
    fresh()
    const a = gate()
    expect(await a.granted).toBe(true)
    const s = gate('k', { steal: true })
    expect(await s.granted).toBe(true)
    await tick()
    expect([a.held, s.held]).toEqual([false, true])
  })

  it('taken(): whether another client holds or waits for the gate, its own request left out once over', async () => {
    fresh()
    const a = gate()
    expect(await a.granted).toBe(true)
    a.release()
    expect(await a.taken()).toBe(false)
    const b = gate()
    expect(await b.granted).toBe(true)
    // Held by b: a asks about the others, and b is one.
    expect(await a.taken()).toBe(true)
    const waiter = gate()
    b.release()
    expect(await waiter.granted).toBe(true)
    expect(await b.taken()).toBe(true)
    waiter.release()
    expect(await b.taken()).toBe(false)
    const { letGo } = await holdOutside(gateName(ns, 'k'))
    expect(await b.taken()).toBe(true)
    letGo()
    await tick()
    // Another key's lock is not this gate's.
    await holdOutside(gateName(ns, 'k:other'))
    expect(await b.taken()).toBe(false)
  })

  it('taken() waits for its own request to be over: a denied ifAvailable gate sees the holder', async () => {
    fresh()
    const a = gate()
    expect(await a.granted).toBe(true)
    const d = gate('k', { ifAvailable: true })
    expect(await d.taken()).toBe(true)
    a.release()
    d.release()
    await tick()
    expect(await d.taken()).toBe(false)
  })

  it('taken() resolves false when the lock manager cannot say (a LockManager whose query fails: a fake around the real one)', async () => {
    fresh()
    const failing = { request: navigator.locks.request.bind(navigator.locks), query: () => Promise.reject(new DOMException('no', 'InvalidStateError')) } as unknown as LockManager
    const a = gate()
    expect(await a.granted).toBe(true)
    const g = new WebLockGate(failing, ns, 'k', { ifAvailable: true })
    made.push(g)
    expect(await g.granted).toBe(false)
    expect(await g.taken()).toBe(false)
    // The same with the real lock manager says true: a holds it.
    expect(await gate('k', { ifAvailable: true }).taken()).toBe(true)
  })

  it('through(): what a commit through it tells the store of its namespace — key, mode, held now; nothing for another namespace or a foreign gate', async () => {
    fresh()
    const x = gate('k')
    const t = WebLockGate.through(x, ns)!
    expect([t.key, t.mode]).toEqual(['k', 'x'])
    const w = gate('k')
    const tw = WebLockGate.through(w, ns)!
    expect(await x.granted).toBe(true)
    expect([t.held(), tw.held()]).toEqual([true, false])
    x.release()
    expect(t.held()).toBe(false)
    expect(await w.granted).toBe(true)
    expect(tw.held()).toBe(true)
    const s = gate('s', { mode: 'shared' })
    expect(WebLockGate.through(s, ns)!.mode).toBe('s')
    expect(WebLockGate.through(x, `${ns}-other`)).toBeUndefined()
    expect(WebLockGate.through(undefined, ns)).toBeUndefined()
    const foreign = { key: 'k', mode: 'exclusive', held: true, granted: Promise.resolve(true), steal: async () => {}, onLost() {}, taken: async () => false, release() {} } as const
    expect(WebLockGate.through(foreign, ns)).toBeUndefined()
  })

  it('a page being discarded (pagehide, not persisted) lets go of every gate it holds at once; kept in the back/forward cache, it keeps them', async () => {
    fresh()
    const a = gate('a')
    const b = gate('b', { mode: 'shared' })
    expect([await a.granted, await b.granted]).toEqual([true, true])
    dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true }))
    await tick()
    expect([a.held, b.held]).toEqual([true, true])
    expect((await query()).held).toHaveLength(2)
    dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false }))
    expect([a.held, b.held]).toEqual([false, false])
    expect([asked(ns, 'a'), asked(ns, 'b')]).toEqual([false, false])
    await tick()
    expect((await query()).held).toEqual([])
    // A gate asked for after it is a gate like any other.
    const again = gate('a')
    expect(await again.granted).toBe(true)
  })
})
