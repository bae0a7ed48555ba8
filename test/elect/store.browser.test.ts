/**
 * zaris/elect's store on its own (src/elect/store.ts), in Chromium: commits
 * heard by this page (marked its own) and by another store of the namespace
 * (as another tab would, over the same BroadcastChannel), reads, errors named,
 * the freeze rule (the page's `freeze` and `resume` events dispatched by the
 * test: no transaction begins while frozen, one open at the freeze is run
 * again once, listeners told to read again), the liveness locks a
 * registration holds and the gone announcement, close, and one store per
 * namespace per page. Real frozen and closed tabs: test/elect/frozen.test.ts,
 * liveness.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { freeze, freezeMidTransaction, resume } from '../browser-harness/page-events'
import { announceLate, logReadsFrom } from '../browser-harness/idb-spies'
import type { LogRecord } from '../../src/adapters/indexeddb/schema'
import { FencedError } from '../../src/core/contract/errors'
import { shareStore, TermStore, unshareStore } from '../../src/elect/store'
import { dropNamespace } from '../browser-harness/drop-namespace'

let ns = ''
const opened: TermStore[] = []
afterEach(async () => {
  for (const s of opened.splice(0)) s.close()
  await dropNamespace(ns)
})

function fresh(): string {
  return (ns = `store-${Math.random().toString(36).slice(2, 10)}`)
}

function store(namespace = ns): TermStore {
  const s = new TermStore(namespace, navigator.locks)
  opened.push(s)
  return s
}

/** What a listener of `s` hears: the revisions of each call, and whether the call was marked local. */
function hear(s: TermStore): Array<{ revisions: number[]; local: boolean | undefined }> {
  const heard: Array<{ revisions: number[]; local: boolean | undefined }> = []
  s.listen((records: LogRecord[], local?: boolean) => heard.push({ revisions: records.map((r) => r.revision), local }))
  return heard
}

const put = (key: string, value: unknown = 1) => [{ type: 'set' as const, key, value: value as never }]
const tick = (ms = 30) => new Promise((r) => setTimeout(r, ms))

/** The Web Locks of this namespace held now, by name and mode. */
async function held(): Promise<string[]> {
  const s = await navigator.locks.query()
  return (s.held ?? [])
    .map((l) => `${l.name}/${l.mode}`)
    .filter((n) => n.startsWith(`zaris:${ns}:`))
    .sort()
}

describe("zaris/elect's store", () => {
  it('a commit is heard by this page marked as its own, and by another store of the namespace (another tab) unmarked', async () => {
    fresh()
    const a = store()
    const b = store()
    const [ha, hb] = [hear(a), hear(b)]
    const r = await a.commit([{ key: 'k', revision: null }], put('k'))
    expect(r.ok).toBe(true)
    await tick()
    expect(ha).toEqual([{ revisions: [1], local: true }])
    expect(hb).toEqual([{ revisions: [1], local: undefined }])
    expect((await b.read('k'))?.value).toBe(1)
    expect(await b.read('other')).toBeUndefined()
  })

  it('a commit through a gate marks the entry with its mode; one without leaves no mark', async () => {
    fresh()
    const a = store()
    await a.commit([], put('plain'), undefined)
    await a.commit([], put('k'), { key: 'k', mode: 's', held: () => true })
    const mark = async (key: string) => ((await a.read(key)) as { gate?: string } | undefined)?.gate
    expect(await mark('k')).toBe('s')
    expect(await mark('plain')).toBeUndefined()
  })

  it('a check that fails is an answer, not an error; a listener removed hears nothing more', async () => {
    fresh()
    const a = store()
    const heard = hear(a)
    const stop = a.listen(() => heard.push({ revisions: [-1], local: undefined }))
    await a.commit([], put('k'))
    stop()
    const r = await a.commit([{ key: 'k', revision: null }], put('k', 2))
    expect(r.ok).toBe(false)
    await a.commit([], put('k', 3))
    expect(heard.filter((h) => h.revisions[0] === -1)).toHaveLength(1)
    expect((await a.read('k'))?.value).toBe(3)
  })

  it('a store out of revisions refuses the commit with REVISION_EXHAUSTED', async () => {
    fresh()
    const a = store()
    await a.commit([], put('k'))
    // Another tab's log record at the last safe revision (as the adapter's test writes it).
    await new Promise<void>((resolve, reject) => {
      const open = indexedDB.open(`zaris:${ns}`)
      open.onsuccess = () => {
        const tx = open.result.transaction(['log'], 'readwrite')
        tx.objectStore('log').put({ revision: Number.MAX_SAFE_INTEGER, events: [] })
        tx.oncomplete = () => (open.result.close(), resolve())
        tx.onerror = () => reject(tx.error)
      }
    })
    await expect(a.commit([], put('k', 2))).rejects.toMatchObject({ code: 'REVISION_EXHAUSTED' })
  })

  it('run: a zaris error is passed on as it is; any other (a DOMException too) is UNAVAILABLE, naming it, with the cause', async () => {
    fresh()
    const a = store()
    const coded = new FencedError('mine')
    await expect(a.run(() => Promise.reject(coded))).rejects.toBe(coded)
    // A DOMException has a numeric code of its own: it is not one of zaris's.
    const plain = new DOMException('the disk is full', 'QuotaExceededError')
    const err = await a.run(() => Promise.reject(plain)).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'UNAVAILABLE', message: 'IndexedDB refused the transaction: the disk is full', cause: plain })
  })

  it('frozen while the database opens: nothing begins until the page resumes', async () => {
    fresh()
    const a = store()
    let done = false
    const committing = a.commit([], put('a')).then(() => (done = true))
    freeze()
    await tick(80)
    expect(done).toBe(false)
    resume()
    await committing
  })

  it('while frozen no transaction begins; on resume it runs once and every listener is told to read again', async () => {
    fresh()
    const a = store()
    await a.read('warm')
    const heard = hear(a)
    const before = a.freezes
    freeze()
    expect(a.freezes).toBe(before + 1)
    let done = false
    const committing = a.commit([], put('k')).then((r) => ((done = true), r))
    const reading = a.read('k')
    await tick(80)
    expect(done).toBe(false)
    expect(heard).toEqual([])
    resume()
    expect(heard[0]).toEqual({ revisions: [], local: undefined })
    expect((await committing).ok).toBe(true)
    // The read waited too: it ran after the resume, and may see the commit or not, but it ran.
    await reading
    expect(heard.map((h) => h.revisions)).toEqual([[], [1]])
    // A second freeze and resume: counted again, one wake each.
    freeze()
    resume()
    expect(a.freezes).toBe(before + 2)
    expect(heard.map((h) => h.revisions)).toEqual([[], [1], []])
  })

  it('frozen twice before one resume: what waited since the first freeze runs at the resume; a resume with no freeze only wakes', async () => {
    fresh()
    const a = store()
    await a.read('warm')
    const heard = hear(a)
    freeze()
    const committing = a.commit([], put('k'))
    freeze()
    resume()
    expect((await committing).ok).toBe(true)
    resume()
    expect(heard.map((h) => h.revisions)).toEqual([[], [1], []])
  })

  it('a transaction open at the freeze is aborted and run again once the page resumes: written once', async () => {
    fresh()
    const a = store()
    await a.read('warm')
    for (let i = 0; i < 5; i++) {
      expect(await freezeMidTransaction((fn) => a.run(fn), `k${i}`)).toEqual({ atFreeze: 1, ran: 2 })
      expect((await a.read(`k${i}`))?.value).toBe(2)
    }
  })

  it('an error in a transaction that no freeze aborted is not run again', async () => {
    fresh()
    const a = store()
    let ran = 0
    await expect(a.run(() => (ran++, Promise.reject(new Error('once'))))).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    expect(ran).toBe(1)
  })

  it('closed: commits and reads fail with CLOSED, what another tab commits is not heard, close twice is harmless; a frozen wait ends with CLOSED', async () => {
    fresh()
    const a = store()
    const b = store()
    const heard = hear(a)
    freeze()
    const waiting = a.read('k').catch((e: unknown) => e)
    a.close()
    a.close()
    expect(await waiting).toMatchObject({ code: 'CLOSED', message: 'the election was closed' })
    resume()
    await expect(a.commit([], put('k'))).rejects.toMatchObject({ code: 'CLOSED' })
    await b.commit([], put('k'))
    await tick()
    expect(heard).toEqual([])
  })

  it('a commit in flight when the store closes lands, and no listener hears it', async () => {
    fresh()
    const a = store()
    await a.read('k') // open
    const heard = hear(a)
    // Closed as soon as the commit's transaction has begun.
    const begin = IDBDatabase.prototype.transaction
    IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<typeof begin>) {
      IDBDatabase.prototype.transaction = begin
      const tx = begin.apply(this, args)
      a.close()
      return tx
    } as typeof begin
    const landing = a.commit([], put('k'))
    expect((await landing).ok).toBe(true)
    await tick()
    expect(heard).toEqual([])
  })

  it('close stops listening to the page: a freeze after it counts nothing and wakes nobody', async () => {
    fresh()
    const a = store()
    const heard = hear(a)
    a.close()
    const before = a.freezes
    freeze()
    resume()
    expect(a.freezes).toBe(before)
    expect(heard).toEqual([])
  })

  it('a message of another shape on the channel is heard as a wake, with no page error', async () => {
    fresh()
    const a = store()
    const heard = hear(a)
    const other = new BroadcastChannel(`zaris:idb:${ns}`)
    other.postMessage(null)
    other.postMessage({ records: [{ revision: 7, events: [] }] })
    await tick()
    other.close()
    expect(heard).toEqual([
      { revisions: [], local: undefined },
      { revisions: [7], local: undefined },
    ])
  })

  it('register holds the id shared and the registration exclusive, once per owner, until close; close says the registration is gone, once', async () => {
    fresh()
    const a = store()
    const gone = new BroadcastChannel(`zaris:idb:${ns}:gone`)
    const told: unknown[] = []
    gone.onmessage = (ev) => told.push(ev.data)
    const first = a.register('me')
    expect(a.register('me')).toBe(first)
    await first
    const locks = await held()
    expect(locks).toHaveLength(2)
    expect(locks[0]).toMatch(new RegExp(`^zaris:${ns}:instance:[0-9a-f]{24}:me/exclusive$`))
    expect(locks[1]).toBe(`zaris:${ns}:owner:me/shared`)
    const nonce = locks[0]!.split(':')[3]
    a.close()
    a.close()
    dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false }))
    await tick()
    expect(await held()).toEqual([])
    // Once: a second close, and a pagehide after the close, say nothing more.
    expect(told).toEqual([{ owner: 'me', nonce }])
    gone.close()
  })

  it('register answers even when the store closes before the browser granted anything, and holds nothing after', async () => {
    fresh()
    const a = store()
    const registering = a.register('early')
    a.close()
    await registering
    await tick()
    expect(await held()).toEqual([])
  })

  it('register resolves while another client probes the id (holds its shared name for an instant)', async () => {
    fresh()
    let letGo!: () => void
    await new Promise<void>((got) => void navigator.locks.request(`zaris:${ns}:owner:me`, { mode: 'exclusive' }, () => (got(), new Promise<void>((r) => (letGo = r)))))
    const a = store()
    let done = false
    const registering = a.register('me').then(() => (done = true))
    await tick(50)
    // Queued behind the prober: while anyone holds the id's name, the id counts as alive.
    expect(done).toBe(true)
    letGo()
    await registering
  })

  it('a page being discarded announces its registrations gone; kept in the back/forward cache, it does not', async () => {
    fresh()
    const a = store()
    await a.register('x')
    const gone = new BroadcastChannel(`zaris:idb:${ns}:gone`)
    const told: Array<{ owner: string }> = []
    gone.onmessage = (ev) => told.push(ev.data)
    dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true }))
    await tick()
    expect(told).toEqual([])
    dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false }))
    await tick()
    expect(told.map((t) => t.owner)).toEqual(['x'])
    await a.register('y')
    dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false }))
    await tick()
    expect(told.map((t) => t.owner)).toEqual(['x', 'x', 'y'])
    gone.close()
  })

  it("a commit reads the log from the highest revision this page has seen, its own or another tab's, never from a lower one announced late (a spy on getAllKeys)", async () => {
    fresh()
    const a = store()
    const other = store()
    await a.commit([], put('a'))
    await other.commit([], put('b'))
    await tick()
    const from = await logReadsFrom(async () => {
      await a.commit([], put('c'))
      announceLate(ns, 1)
      await tick()
      await a.commit([], put('d'))
    })
    expect(from).toEqual([2, 3])
  })

  it('a database that failed to open is opened again by the next call; one another tab deleted is opened anew', async () => {
    fresh()
    // Another tab's newer version: this page cannot open it.
    await new Promise<void>((resolve) => {
      const open = indexedDB.open(`zaris:${ns}`, 999)
      open.onsuccess = () => (open.result.close(), resolve())
    })
    const a = store()
    await expect(a.commit([], put('k'))).rejects.toMatchObject({ code: 'UNAVAILABLE', cause: { name: 'VersionError' } })
    await dropNamespace(ns)
    expect((await a.commit([], put('k'))).ok).toBe(true)
    await dropNamespace(ns)
    const again = await a.commit([], put('k'))
    expect(again.ok && again.revision).toBe(1)
  })

  it('one store per namespace per page: shared, closed by the last unshare only; a store not shared is left alone', async () => {
    const n1 = fresh()
    const s = shareStore(n1)
    expect(shareStore(n1)).toBe(s)
    expect(s.locks).toBe(navigator.locks)
    const other = shareStore(`${n1}-b`)
    expect(other).not.toBe(s)
    unshareStore(store())
    unshareStore(store(`${n1}-never-shared`))
    unshareStore(s)
    expect((await s.commit([], put('k'))).ok).toBe(true)
    unshareStore(s)
    await expect(s.commit([], put('k'))).rejects.toMatchObject({ code: 'CLOSED' })
    // A new share after the last one is a new store.
    const again = shareStore(n1)
    expect(again).not.toBe(s)
    unshareStore(again)
    unshareStore(other)
  })
})
