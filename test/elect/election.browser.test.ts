/**
 * zaris/elect's `TabElection` (src/elect/index.ts) in one Chromium page:
 * candidates of different ids on one namespace (each as another tab's would
 * be, on the page's one store), and a second store of the namespace writing
 * as another tab. What a user of the election sees: `elected` / `deposed`
 * in turn with their codes, `isLeader`, `term`, `leader` and its event,
 * `observe`, `put` fenced by a term, `resign`, `close`, and bad arguments
 * named. Real tabs (closed, frozen, two pages): test/elect/*.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { election, type Leader, type TabElection } from '../../src/elect/index'
import { commitBatch } from '../../src/adapters/indexeddb/transactions'
import { HISTORY, TermStore } from '../../src/elect/store'
import { dropNamespace } from '../browser-harness/drop-namespace'
import { WebLockGate } from '../../src/adapters/indexeddb/gate'
import { entryReadsDuring } from '../browser-harness/idb-spies'

let ns = ''
const made: TabElection[] = []
const stores: TermStore[] = []
afterEach(async () => {
  for (const e of made.splice(0)) await e.close()
  for (const s of stores.splice(0)) s.close()
  await dropNamespace(ns)
})

function fresh(): string {
  return (ns = `election-${Math.random().toString(36).slice(2, 10)}`)
}

/** A candidate on this test's namespace. */
function candidate(name: string, options: { ttl?: number; id?: string } = {}): TabElection {
  const e = election('leader', { namespace: ns, candidate: name, id: options.id ?? `id-${name}`, ttl: options.ttl ?? 10_000 })
  made.push(e)
  return e
}

/** Another tab's store of the namespace. */
function otherTab(): TermStore {
  const s = new TermStore(ns, navigator.locks)
  stores.push(s)
  return s
}

/** Every `elected`, `deposed` (with its code) and `leader` (with its candidate) event of `e`, in order. */
function events(e: TabElection): string[] {
  const log: string[] = []
  e.addEventListener('elected', () => log.push('elected'))
  e.addEventListener('deposed', (ev) => log.push(`deposed:${(ev as CustomEvent<string>).detail}`))
  e.addEventListener('leader', (ev) => log.push(`leader:${(ev as CustomEvent<Leader | undefined>).detail?.candidate ?? '-'}`))
  return log
}

/** Observes `e` (its candidates' names, undefined for nobody) until `stop()`; resolves once the first value came. */
async function observed(e: TabElection): Promise<{ seen: Array<string | undefined>; stop(): Promise<void> }> {
  const seen: Array<string | undefined> = []
  const stopping = new AbortController()
  const observing = (async () => {
    for await (const l of e.observe({ signal: stopping.signal })) seen.push(l?.candidate)
  })()
  await until(() => seen.length === 1)
  return { seen, stop: () => (stopping.abort(), observing) }
}

const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms))
async function until(what: () => boolean, ms = 3_000): Promise<void> {
  const end = performance.now() + ms
  while (!what()) {
    if (performance.now() > end) throw new Error('timed out waiting')
    await tick(10)
  }
}

describe('zaris/elect: TabElection', () => {
  it('bad arguments are named: name, namespace, ttl, id, candidate, options, signal', async () => {
    fresh()
    const bad: Array<[() => unknown, RegExp]> = [
      [() => election('', { namespace: ns }), /name/],
      [() => election('x', { namespace: '' }), /namespace/],
      [() => election('x', { namespace: ns, ttl: -1 }), /ttl/],
      [() => election('x', { namespace: ns, id: '' }), /id/],
      [() => election('x', { namespace: ns, candidate: '' }), /candidate/],
      [() => election('x', { namespace: ns, candidate: 5 as never }), /candidate/],
      [() => election('x', 'options' as never), /options/],
    ]
    for (const [make, names] of bad) {
      let err: { code?: string; message?: string } | undefined
      try {
        made.push(make() as TabElection)
      } catch (e) {
        err = e as typeof err
      }
      expect(err?.code).toBe('INVALID_ARGUMENT')
      expect(err?.message).toMatch(names)
    }
    const e = candidate('a')
    await expect(e.campaign({ signal: 'now' as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    expect(e.id).toBe('id-a')
    expect(e.candidate).toBe('a')
    expect(e.namespace).toBe(ns)
    expect(e.name).toBe('leader')
    // Defaults: a random id, shown as the candidate; the default namespace.
    const d = election('leader-default')
    made.push(d)
    expect(d.candidate).toBe(d.id)
    expect(d.id.length).toBeGreaterThan(8)
    expect(d.namespace).toBe('default')
  })

  it('a free key: elected once, isLeader, a term with a token, the leader named (event and getter); campaign again gives the same term', async () => {
    fresh()
    const a = candidate('a')
    const log = events(a)
    expect(a.isLeader).toBe(false)
    expect(a.term).toBeUndefined()
    const term = await a.campaign()
    expect(term).not.toBeNull()
    expect(a.isLeader).toBe(true)
    expect(a.term).toBe(term)
    expect(a.leader).toEqual({ candidate: 'a', token: term!.token })
    expect(term!.key).toBe('leader')
    expect(term!.signal.aborted).toBe(false)
    expect(await a.campaign()).toBe(term)
    await tick(50)
    expect(log.filter((l) => l === 'elected')).toEqual(['elected'])
    expect(log).toContain('leader:a')
    expect(log.filter((l) => l.startsWith('deposed'))).toEqual([])
  })

  it('the same candidate elected again is news: a leader event with the new token; at its own deposed the leader is already nobody', async () => {
    fresh()
    const a = candidate('a')
    const tokens: Array<number | undefined> = []
    a.addEventListener('leader', (ev) => tokens.push((ev as CustomEvent<Leader | undefined>).detail?.token))
    const leaderAtDeposed: Array<Leader | undefined> = []
    a.addEventListener('deposed', () => leaderAtDeposed.push(a.leader))
    const t1 = (await a.campaign())!
    await a.resign()
    const t2 = (await a.campaign())!
    expect(t2.token).toBeGreaterThan(t1.token)
    await until(() => tokens.includes(t2.token))
    expect(tokens.filter((t) => t !== undefined)).toEqual([t1.token, t2.token])
    expect(a.leader).toEqual({ candidate: 'a', token: t2.token })
    expect(leaderAtDeposed).toEqual([undefined])
  })

  it("a new term under the same candidate name, straight after the last (another tab's takeover), is news", async () => {
    fresh()
    const w = candidate('w')
    const seen: Array<Leader | undefined> = []
    w.addEventListener('leader', (ev) => seen.push((ev as CustomEvent<Leader | undefined>).detail))
    await w.campaign()
    const store = otherTab()
    const r1 = await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'x' }, ttl: 10_000, owner: 'o1' }])
    const r2 = await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'x' }, ttl: 10_000, owner: 'o2' }])
    if (!r1.ok || !r2.ok) throw new Error('setup')
    await until(() => seen.at(-1)?.token === r2.entries[0]!.created)
    expect(seen.filter((l) => l?.candidate === 'x').map((l) => l!.token)).toEqual([r1.entries[0]!.created, r2.entries[0]!.created])
  })

  it('two campaign calls at once share one campaign', async () => {
    fresh()
    const a = candidate('a')
    const [t1, t2] = await Promise.all([a.campaign(), a.campaign()])
    expect(t1).toBe(t2)
  })

  it('a second candidate waits, names the first; the first resigns: RELEASED, and the second is elected with a larger token; both name it', async () => {
    fresh()
    const a = candidate('a')
    const b = candidate('b')
    const logA = events(a)
    const logB = events(b)
    const ta = await a.campaign()
    const pb = b.campaign()
    await until(() => b.leader?.candidate === 'a')
    expect(b.isLeader).toBe(false)
    expect(await a.resign()).toBe(true)
    expect(a.isLeader).toBe(false)
    expect(a.term).toBeUndefined()
    expect(ta!.signal.aborted).toBe(true)
    expect((ta!.signal.reason as { code: string }).code).toBe('RELEASED')
    const tb = await pb
    expect(tb!.token).toBeGreaterThan(ta!.token)
    await until(() => a.leader?.candidate === 'b')
    expect(b.leader).toEqual({ candidate: 'b', token: tb!.token })
    expect(a.leader).toEqual({ candidate: 'b', token: tb!.token })
    expect(logA.filter((l) => l === 'elected' || l.startsWith('deposed'))).toEqual(['elected', 'deposed:RELEASED'])
    expect(logB.filter((l) => l === 'elected' || l.startsWith('deposed'))).toEqual(['elected'])
    // A resign while not leading: false, and nothing told.
    expect(await a.resign()).toBe(false)
  })

  it('resign while leading on the grant (before the token came): true, the campaign resolves null, the take is undone', async () => {
    fresh()
    const a = candidate('a')
    await a.campaign()
    const b = candidate('b')
    const logB = events(b)
    let resigned: Promise<boolean> | undefined
    b.addEventListener('elected', () => {
      if (!b.term) resigned = b.resign()
    })
    const pb = b.campaign()
    await until(() => b.leader?.candidate === 'a')
    await a.resign()
    const result = await pb
    if (resigned) {
      // Led on the grant: resigned then.
      expect(await resigned).toBe(true)
      expect(result).toBeNull()
      expect(b.isLeader).toBe(false)
      expect(logB).toContain('deposed:RELEASED')
      await until(() => b.leader === undefined)
    } else {
      // The token came with the grant: a plain term, which the test resigns.
      expect(result).not.toBeNull()
    }
  })

  it('put: fenced by a live term it writes; after the term ends it is refused with FENCED and writes nothing; a bad fence is named', async () => {
    fresh()
    const a = candidate('a')
    const term = (await a.campaign())!
    const value = { n: 1 }
    await a.put('cursor', value, { fence: term })
    value.n = 2
    const store = otherTab()
    expect((await store.read('cursor'))?.value).toEqual({ n: 1 })
    await a.resign()
    await expect(a.put('cursor', 3, { fence: term })).rejects.toMatchObject({ code: 'FENCED' })
    expect((await store.read('cursor'))?.value).toEqual({ n: 1 })
    await expect(a.put('cursor', 3, { fence: null as never })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(a.put('cursor', 3, { fence: { key: 'leader', token: '1' as never } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(a.put('', 3, { fence: term })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(a.put('cursor', (() => 1) as never, { fence: term })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(a.put('cursor', 1, undefined as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    await expect(a.put('cursor', 1, { fence: { key: '', token: 1 } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/fence\.key/) })
  })

  it("another tab's takeover of the key (a new life) ends the term at once: deposed STOLEN, the leader is the new one", async () => {
    fresh()
    const a = candidate('a')
    const log = events(a)
    const term = (await a.campaign())!
    const store = otherTab()
    const r = await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'z' }, ttl: 10_000, owner: 'id-z' }])
    if (!r.ok) throw new Error('setup')
    await until(() => term.signal.aborted)
    expect((term.signal.reason as { code: string }).code).toBe('STOLEN')
    expect(a.isLeader).toBe(false)
    await until(() => a.leader?.candidate === 'z')
    expect(a.leader?.token).toBe(r.entries[0]!.created)
    expect(log.filter((l) => l === 'elected' || l.startsWith('deposed'))).toEqual(['elected', 'deposed:STOLEN'])
  })

  it("another tab's delete of the key ends the term: EXPIRED, and nobody leads", async () => {
    fresh()
    const a = candidate('a')
    const term = (await a.campaign())!
    await otherTab().commit([], [{ type: 'delete', key: 'leader' }])
    await until(() => term.signal.aborted)
    expect((term.signal.reason as { code: string }).code).toBe('EXPIRED')
    await until(() => a.leader === undefined)
  })

  it("observe: the leader now first, then each change; another tab's entry of odd shape names nobody; an entry's TTL passing unannounced names nobody", async () => {
    fresh()
    const watcher = candidate('w')
    const { seen, stop } = await observed(watcher)
    expect(seen).toEqual([undefined])
    const store = otherTab()
    await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'x' }, ttl: 400, owner: 'id-x' }])
    await until(() => seen.length === 2)
    expect(seen[1]).toBe('x')
    expect(watcher.leader?.candidate).toBe('x')
    // Nobody writes the expiry: the election looks again at the entry's deadline.
    await until(() => seen.length === 3, 2_000)
    expect(seen[2]).toBeUndefined()
    for (const value of [5, 'y', [1], { candidate: 7 }, null]) {
      await store.commit([], [{ type: 'set', key: 'leader', value, owner: 'id-odd' }])
    }
    await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'y' }, owner: 'id-y' }])
    await until(() => seen.at(-1) === 'y')
    expect(seen.filter((c) => c !== undefined && c !== 'x' && c !== 'y')).toEqual([])
    await stop()
    const before = seen.length
    await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'q' }, owner: 'id-q' }])
    await tick(100)
    expect(seen.length).toBe(before)
  })

  it('observe ends when the election closes; a leader seen at the start is the entry there (also when written before the election existed)', async () => {
    fresh()
    const store = otherTab()
    const r = await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'early' }, ttl: 10_000, owner: 'id-early' }])
    if (!r.ok) throw new Error('setup')
    const e = candidate('w')
    const seen: Array<Leader | undefined> = []
    const done = (async () => {
      for await (const l of e.observe()) seen.push(l)
    })()
    await until(() => seen.length === 1)
    expect(seen[0]).toEqual({ candidate: 'early', token: r.entries[0]!.created })
    await e.close()
    await done
  })

  it('close: a campaign under way resolves null, a term is resigned (the next candidate takes over), nothing is told after; campaign after close is null', async () => {
    fresh()
    const a = candidate('a')
    const b = candidate('b')
    await a.campaign()
    const pb = b.campaign()
    await until(() => b.leader?.candidate === 'a')
    await b.close()
    expect(await pb).toBeNull()
    expect(await b.campaign()).toBeNull()
    const c = candidate('c')
    const pc = c.campaign()
    await until(() => c.leader?.candidate === 'a')
    const logA = events(a)
    await a.close()
    expect(logA).toContain('deposed:RELEASED')
    const tc = await pc
    expect(tc).not.toBeNull()
    await tick(50)
    const after = logA.length
    await c.resign()
    await tick(100)
    expect(logA.length).toBe(after)
    await a.close()
  })

  it('campaign with a signal: aborting it while waiting rejects with the reason; the election can campaign again after', async () => {
    fresh()
    const a = candidate('a')
    await a.campaign()
    const b = candidate('b')
    const stop = new AbortController()
    const pb = b.campaign({ signal: stop.signal })
    await tick(100)
    const reason = new Error('not now')
    stop.abort(reason)
    await expect(pb).rejects.toBe(reason)
    const again = b.campaign()
    await a.resign()
    expect(await again).not.toBeNull()
    expect(b.isLeader).toBe(true)
  })

  it('two candidates of one id in one page are two candidates: the one in line names the other, and leads after it', async () => {
    fresh()
    const a = candidate('a', { id: 'same' })
    const b = candidate('b', { id: 'same' })
    const ta = await a.campaign()
    const pb = b.campaign()
    await until(() => b.leader?.candidate === 'a')
    expect(b.leader?.token).toBe(ta!.token)
    await a.resign()
    const tb = await pb
    await until(() => a.leader?.candidate === 'b')
    expect(a.leader?.token).toBe(tb!.token)
  })

  it('observe leaves nothing behind: its listeners on the election and on its signal go when it ends, by its signal or by a break', async () => {
    fresh()
    const e = candidate('w')
    const listening = { leader: 0, abort: 0 }
    const add = EventTarget.prototype.addEventListener
    const remove = EventTarget.prototype.removeEventListener
    const count = (target: EventTarget, type: string, by: number) => {
      if (type === 'leader' && target === e) listening.leader += by
      if (type === 'abort' && target instanceof AbortSignal) listening.abort += by
    }
    EventTarget.prototype.addEventListener = function (this: EventTarget, type: string, ...rest: [never, never]) {
      count(this, type, 1)
      return add.call(this, type, ...rest)
    }
    EventTarget.prototype.removeEventListener = function (this: EventTarget, type: string, ...rest: [never, never]) {
      count(this, type, -1)
      return remove.call(this, type, ...rest)
    }
    try {
      const stop = new AbortController()
      const seen: unknown[] = []
      const byStop = (async () => {
        for await (const l of e.observe({ signal: stop.signal })) seen.push(l)
      })()
      await until(() => seen.length === 1)
      expect(listening).toEqual({ leader: 1, abort: 1 })
      stop.abort()
      await byStop
      expect(listening).toEqual({ leader: 0, abort: 0 })
      for await (const l of e.observe()) {
        expect(l).toBeUndefined()
        expect(listening).toEqual({ leader: 1, abort: 1 })
        break
      }
      expect(listening).toEqual({ leader: 0, abort: 0 })
    } finally {
      EventTarget.prototype.addEventListener = add
      EventTarget.prototype.removeEventListener = remove
    }
  })

  it("an election of another name in the namespace is not this one's news; the leader renewing its own entry is no news either", async () => {
    fresh()
    const a = candidate('a')
    const log = events(a)
    const ta = (await a.campaign())!
    const other = election('other', { namespace: ns, candidate: 'b', id: 'id-b' })
    made.push(other)
    expect(await other.campaign()).not.toBeNull()
    await until(() => other.leader?.candidate === 'b')
    // Another tab's leader, renewed in place (same owner, same life): one leader event for it, not two.
    const store = otherTab()
    await a.resign()
    const put = await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'z' }, ttl: 10_000, owner: 'id-z' }])
    if (!put.ok) throw new Error('setup')
    await until(() => a.leader?.candidate === 'z')
    const renewed = await store.commit([{ key: 'leader', created: put.entries[0]!.created }], [{ type: 'set', key: 'leader', value: { candidate: 'z' }, ttl: 10_000, owner: 'id-z' }])
    expect(renewed.ok && renewed.entries[0]!.created).toBe(put.entries[0]!.created)
    await tick(150)
    expect(a.leader).toEqual({ candidate: 'z', token: put.entries[0]!.created })
    // Its own term's end: nobody leads here before deposed is told.
    expect(log).toEqual(['leader:a', 'elected', 'leader:-', 'deposed:RELEASED', 'leader:z'])
    expect(ta.token).toBeLessThan(put.entries[0]!.created)
  })

  it('close twice leaves the store to the page\'s other elections of the namespace, and tells nothing after, however many observe ran', async () => {
    fresh()
    const a = candidate('a')
    const b = candidate('b')
    const log = events(a)
    const stop = new AbortController()
    const views = [a.observe({ signal: stop.signal }), a.observe({ signal: stop.signal }), b.observe({ signal: stop.signal })]
    await Promise.all(views.map((v) => v.next()))
    await a.close()
    await a.close()
    // b's store (the page's one of the namespace) is still open: b campaigns and hears another tab.
    expect(await b.campaign()).not.toBeNull()
    await b.resign()
    const store = otherTab()
    await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'z' }, ttl: 10_000, owner: 'id-z' }])
    await until(() => b.leader?.candidate === 'z')
    await tick(100)
    expect(log).toEqual([])
    stop.abort()
    await Promise.all(views.map((v) => v.return(undefined)))
  })

  it("the namespace's last election to close (or be disposed of) closes its store: the page's liveness locks of the namespace go", async () => {
    fresh()
    const a = candidate('a')
    const b = candidate('b')
    const held = async () => ((await navigator.locks.query()).held ?? []).filter((l) => l.name?.startsWith(`zaris:${ns}:`)).length
    await a.campaign()
    const pb = b.campaign()
    await until(() => b.leader?.candidate === 'a')
    expect(await held()).toBeGreaterThan(0)
    await a.close()
    expect(await pb).not.toBeNull()
    expect(await held()).toBeGreaterThan(0)
    await b[Symbol.asyncDispose]()
    expect(await b.campaign()).toBeNull()
    // Let go as the store closes (their requests settle a moment later).
    for (let end = performance.now() + 2_000; (await held()) > 0 && performance.now() < end; ) await tick(10)
    expect(await held()).toBe(0)
  })

  it('a page that wakes reads the leader again: a change it never heard of (made while it slept) is seen at the wake', async () => {
    fresh()
    const { seen, stop } = await observed(candidate('w'))
    // Written with no message to any tab, as a change whose message a sleeping page missed.
    await otherTab().run((db) => commitBatch(db, [{ checks: [], ops: [{ type: 'set', key: 'leader', value: { candidate: 'quiet' }, owner: 'id-q', ttl: 10_000 }] }], Date.now, HISTORY, 0))
    await tick(100)
    expect(seen).toEqual([undefined])
    document.dispatchEvent(new Event('freeze'))
    document.dispatchEvent(new Event('resume'))
    await until(() => seen.length === 2)
    expect(seen[1]).toBe('quiet')
    await stop()
  })

  it('a leader event that names this candidate comes with its term: the term is set and its token is the one named (its own take heard first is not news)', async () => {
    fresh()
    const a = candidate('a')
    const b = candidate('b')
    // Nothing to give up yet.
    expect(await a.resign()).toBe(false)
    const wrong: string[] = []
    for (const e of [a, b]) {
      e.addEventListener('leader', (ev) => {
        const l = (ev as CustomEvent<Leader | undefined>).detail
        if (l?.candidate === e.candidate && e.term?.token !== l.token) wrong.push(`${e.candidate}: ${l.token} named, term ${e.term?.token}`)
      })
    }
    await a.campaign()
    const pb = b.campaign()
    await until(() => b.leader?.candidate === 'a')
    await a.resign()
    await pb
    await b.resign()
    expect(await a.campaign()).not.toBeNull()
    await until(() => b.leader?.candidate === 'a')
    expect(wrong).toEqual([])
  })

  it('a term that ended here while its entry stands (its gate stolen) names nobody here, also when read afresh; another candidate still names it', async () => {
    fresh()
    const a = candidate('a')
    const b = candidate('b')
    const term = (await a.campaign())!
    const pb = b.campaign()
    pb.catch(() => {})
    await until(() => b.leader?.candidate === 'a')
    // Another tab steals the key's gate, as a taker without it does, and has not written yet.
    const thief = new WebLockGate(navigator.locks, ns, 'leader', { steal: true })
    try {
      await thief.granted
      await until(() => term.signal.aborted)
      expect((term.signal.reason as { code: string }).code).toBe('STOLEN')
      expect(a.leader).toBeUndefined()
      // A fresh read finds a's entry standing: it is a's own take, vouched for only while its term lasts here.
      const seen = a.observe()
      expect((await seen.next()).value).toBeUndefined()
      await seen.return(undefined)
      expect(b.leader?.candidate).toBe('a')
    } finally {
      thief.release()
    }
  })

  it("while it campaigns, only this candidate's own take is no news: another tab's take under its id, and another candidate's take in this page, are", async () => {
    fresh()
    const a = candidate('a')
    const b = candidate('b', { id: 'same' })
    const c = candidate('c')
    const ta = (await a.campaign())!
    const [pb, pc] = [b.campaign(), c.campaign()]
    pb.catch(() => {})
    pc.catch(() => {})
    await until(() => b.leader?.candidate === 'a' && c.leader?.candidate === 'a')
    // Another tab, under b's id, takes the key over (a new life): news to b, though the owner is b's id.
    const r = await otherTab().commit([], [{ type: 'set', key: 'leader', value: { candidate: 'z' }, ttl: 10_000, owner: 'same', fresh: true }])
    if (!r.ok) throw new Error('setup')
    await until(() => ta.signal.aborted)
    await until(() => b.leader?.candidate === 'z' && c.leader?.candidate === 'z')
    // z's entry deleted: the next in line here takes it; the other, still campaigning in this page, names it.
    await otherTab().commit([], [{ type: 'delete', key: 'leader' }])
    const first = await Promise.race([pb.then(() => b), pc.then(() => c)])
    const other = first === b ? c : b
    await until(() => other.leader?.candidate === first.candidate)
    expect(other.isLeader).toBe(false)
  })

  it("a candidate of the same id that only observes in this page names the other's take: it is not its own", async () => {
    fresh()
    const watcher = candidate('w', { id: 'same' })
    const { seen, stop } = await observed(watcher)
    const a = candidate('a', { id: 'same' })
    const ta = (await a.campaign())!
    await until(() => watcher.leader?.candidate === 'a')
    expect(watcher.leader?.token).toBe(ta.token)
    await stop()
    expect(seen).toEqual([undefined, 'a'])
  })

  it('an observer reads the entry again only at a deadline it heard of: never while nobody leads or for an entry without a TTL, once for one with', async () => {
    fresh()
    const watcher = candidate('w')
    const { seen, stop } = await observed(watcher)
    const store = otherTab()
    // Nobody leads: there is no deadline to look at again.
    expect(await entryReadsDuring(() => tick(300))).toBe(0)
    const noTtl = await entryReadsDuring(async () => {
      await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'x' }, owner: 'id-x' }])
      await until(() => seen.length === 2)
      await tick(300)
    })
    expect(noTtl).toBe(0)
    // Nobody renews it or writes its expiry: one look, after its deadline, finds it gone.
    const withTtl = await entryReadsDuring(async () => {
      await store.commit([], [{ type: 'set', key: 'leader', value: { candidate: 'y' }, owner: 'id-y', ttl: 500 }])
      await until(() => seen.length === 4)
      await tick(300)
    })
    expect(seen).toEqual([undefined, 'x', 'y', undefined])
    expect(withTtl).toBe(1)
    await stop()
  })

  it("observe yields changes in the order they were made, also when one message brings several (another tab's commits grouped in one transaction)", async () => {
    fresh()
    const watcher = candidate('w')
    const { seen, stop } = await observed(watcher)
    // As a full client's page store commits what was queued together: one transaction, one message of two records.
    const store = otherTab()
    const take = (candidate: string) => ({ checks: [], ops: [{ type: 'set' as const, key: 'leader', value: { candidate }, owner: `id-${candidate}`, ttl: 10_000 }] })
    const { outcome } = await store.run((db) => commitBatch(db, [take('x'), take('y')], Date.now, HISTORY, 0))
    expect(outcome.records.length).toBe(2)
    store.tell(outcome)
    await until(() => seen.length === 3)
    await tick(100)
    expect(seen).toEqual([undefined, 'x', 'y'])
    expect(watcher.leader?.candidate).toBe('y')
    await stop()
  })

  it('a leader that reads its entry again (an observe begun while it leads, a wake) still names itself, with its term\'s token', async () => {
    fresh()
    const a = candidate('a')
    const term = (await a.campaign())!
    const log = events(a)
    const seen = a.observe()
    expect((await seen.next()).value).toEqual({ candidate: 'a', token: term.token })
    await seen.return(undefined)
    document.dispatchEvent(new Event('freeze'))
    document.dispatchEvent(new Event('resume'))
    await tick(200)
    expect(a.isLeader).toBe(true)
    expect(a.leader).toEqual({ candidate: 'a', token: term.token })
    expect(log).toEqual([])
  })

  it("observe says nobody leads with undefined throughout, its own term's end too; the leader event's detail says it with null (as a full client's)", async () => {
    fresh()
    const a = candidate('a')
    const details: unknown[] = []
    a.addEventListener('leader', (ev) => details.push((ev as CustomEvent).detail))
    const seen: unknown[] = []
    const stop = new AbortController()
    const observing = (async () => {
      for await (const l of a.observe({ signal: stop.signal })) seen.push(l)
    })()
    await until(() => seen.length === 1)
    const term = (await a.campaign())!
    await a.resign()
    await until(() => seen.length === 3)
    const leader = { candidate: 'a', token: term.token }
    expect(seen).toStrictEqual([undefined, leader, undefined])
    expect(details).toStrictEqual([leader, null])
    stop.abort()
    await observing
  })
})
