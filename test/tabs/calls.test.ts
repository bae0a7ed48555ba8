/**
 * zaris/tabs's calls one by one in a real tab (Chromium, the harness page),
 * each checked against what a full client over `zaris://idb` of the same
 * namespace sees: defaults (namespace, TTL, id), `get` of an expired entry,
 * `put` with a TTL, `delete` and fenced deletes, bad input, `close()` and
 * every call after it, and the refusal where a page has no IndexedDB.
 */
import { expect, it } from 'vitest'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'

const { withContext } = useRecordedTabs()

it('defaults, get, put, delete, bad input, close and no IndexedDB: what a full client of the same store sees', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const ns = `calls-${Math.random().toString(36).slice(2, 10)}`
    const r = await tab.evaluate(async (ns) => {
      const { tabs } = window.zarisTabs
      const code = async (f: () => unknown) => {
        try {
          await f()
          return 'none'
        } catch (err) {
          return (err as { code?: string }).code ?? String(err)
        }
      }
      const full = await window.zaris.connect(`zaris://idb/${ns}`)
      const fullDefault = await window.zaris.connect('zaris://idb/default')
      // Defaults: namespace `default`, TTL 30 s, a random id; and each as given.
      const plain = tabs()
      const key = `k-${ns}`
      const l0 = (await plain.locks.acquire(key))!
      const byDefault = await fullDefault.locks.holder(key)
      await l0.release()
      const app = tabs(ns, { id: `me-${ns}`, ttl: 5_000 })
      const l1 = (await app.locks.acquire('lock:a'))!
      const holder = await full.locks.holder('lock:a')
      const l2 = (await app.locks.acquire('lock:b', { ttl: 60_000 }))!
      const holder2 = await full.locks.holder('lock:b')
      // get: the live entry, as the client reads it; an entry past its TTL reads as absent before anyone expires it.
      const put = await app.put('v', { n: 1 })
      const got = await app.get('v')
      const viaFull = await full.get('v')
      await app.put('short', 1, { ttl: 60 })
      const shortTtl = (await full.get('short'))?.ttl
      // Past its TTL on a store no full client sweeps: the entry is still there, and reads as absent.
      const lean = tabs(`${ns}-lean`)
      await lean.put('short', 1, { ttl: 60 })
      const before = (await lean.get('short'))?.value
      await new Promise((res) => setTimeout(res, 120))
      const expired = await lean.get('short')
      await lean.close()
      const missing = await app.get('never')
      // delete: true for a live entry, false for none; fenced by a held lock, refused once it is released.
      const deleted = await app.delete('v')
      const deletedAgain = await app.delete('v')
      await app.put('w', 1)
      const fencedOk = await app.delete('w', { fence: l1 })
      await app.put('w', 2)
      await l1.release()
      const fencedLate = await code(() => app.delete('w', { fence: l1 }))
      const wLeft = (await full.get('w'))?.value
      // A held lock's `held`, and `await using`'s dispose releasing it.
      const h = (await app.locks.acquire('lock:h'))!
      const heldThen = h.held
      await h[Symbol.asyncDispose]()
      const heldAfter = h.held
      const again = (await full.locks.acquire('lock:h'))!
      const disposedFreed = again.token > h.token
      await again.release()
      // A wait with no end, aborted: rejects with the reason; a wait under way when the tabs object closes: CLOSED.
      const blocker = (await full.locks.acquire('lock:w'))!
      const abort = new AbortController()
      const endless = app.locks.acquire('lock:w', { wait: Infinity, signal: abort.signal }).then(() => 'held', (err: Error) => err.message)
      setTimeout(() => abort.abort(new Error('stop waiting')), 50)
      const endlessAborted = await endless
      const other = tabs(ns)
      const pending = other.locks.acquire('lock:w', { wait: 10_000 }).then(() => 'held', (err: { code?: string }) => err.code)
      await new Promise((res) => setTimeout(res, 50))
      await other.close()
      const closedWhileWaiting = await pending
      await blocker.release()
      // Bad input: each names its problem.
      const bad = [
        await code(() => tabs('')),
        await code(() => tabs(ns, { id: '' })),
        await code(() => tabs(ns, { ttl: 0 })),
        await code(() => tabs(ns, 'x' as never)),
        await code(() => app.locks.acquire('k', { ttl: -1 })),
        await code(() => app.locks.acquire('k', 'x' as never)),
        await code(() => app.put('k', undefined as never)),
        await code(() => app.put('k', 1, { ttl: 0 })),
        await code(() => app.put('k', 1, { fence: null as never })),
        await code(() => app.put('k', 1, { fence: { key: '\u0001x', token: 1 } })),
        await code(() => app.delete('\u0001x')),
        await code(() => app.watch('\u0001q')),
        await code(() => app.watch('k', { prefix: 1 as never })),
        await code(() => app.watch('k', { fromRevision: null as never })),
        await code(() => app.get('\u0001x')),
      ]
      // close(): its locks released (the full client takes one at once), its watches and elections ended, every call refused.
      const w = app.watch('x:', { prefix: true })
      await w.ready
      const election = app.election('leader:calls')
      await election.campaign()
      await app.close()
      const takenAfterClose = (await full.locks.acquire('lock:b'))?.token
      const watchDone = await w.next()
      const after = [
        await code(() => app.locks.acquire('k')),
        await code(() => app.put('k', 1)),
        await code(() => app.get('k')),
        await code(() => app.delete('k')),
        await code(() => app.watch('k')),
        await code(() => app.election('e')),
      ]
      await app.close()
      // No IndexedDB (an insecure context, a worker without it): refused plainly.
      const saved = Object.getOwnPropertyDescriptor(globalThis, 'indexedDB')!
      Object.defineProperty(globalThis, 'indexedDB', { value: undefined, configurable: true })
      const noIdb = await code(() => tabs(ns))
      Object.defineProperty(globalThis, 'indexedDB', saved)
      await plain.close()
      return {
        byDefault: byDefault && { owner: byDefault.owner === plain.id, ttl: byDefault.ttl },
        holder: holder && { owner: holder.owner, ttl: holder.ttl, token: holder.token === l1.token },
        holder2: holder2?.ttl,
        l2: l2.token,
        put: { revision: put.revision === got?.revision, value: got?.value, full: viaFull?.value, created: got?.created === put.created },
        shortTtl,
        before,
        heldThen,
        heldAfter,
        disposedFreed,
        endlessAborted,
        closedWhileWaiting,
        expired: expired ?? null,
        missing: missing ?? null,
        deleted,
        deletedAgain,
        fencedOk,
        fencedLate,
        wLeft,
        bad,
        takenAfterClose: takenAfterClose !== undefined && takenAfterClose > l2.token,
        watchDone: watchDone.done,
        isLeader: election.isLeader,
        after,
        noIdb,
        plainId: plain.id.length > 0 && plain.namespace === 'default',
      }
    }, ns)
    expect(r.byDefault).toEqual({ owner: true, ttl: expect.any(Number) })
    expect(r.byDefault!.ttl).toBeGreaterThan(25_000)
    expect(r.byDefault!.ttl).toBeLessThanOrEqual(30_000)
    expect(r.holder).toEqual({ owner: expect.stringMatching(/^me-calls-/), ttl: expect.any(Number), token: true })
    expect(r.holder!.ttl).toBeGreaterThan(3_000)
    expect(r.holder!.ttl).toBeLessThanOrEqual(5_000)
    expect(r.holder2).toBeGreaterThan(55_000)
    expect(r.put).toEqual({ revision: true, value: { n: 1 }, full: { n: 1 }, created: true })
    expect(r.shortTtl).toBeGreaterThan(0)
    expect(r.shortTtl).toBeLessThanOrEqual(60)
    expect(r.before).toBe(1)
    expect([r.heldThen, r.heldAfter, r.disposedFreed]).toEqual([true, false, true])
    expect(r.endlessAborted).toBe('stop waiting')
    expect(r.closedWhileWaiting).toBe('CLOSED')
    expect(r.expired).toBeNull()
    expect(r.missing).toBeNull()
    expect([r.deleted, r.deletedAgain, r.fencedOk]).toEqual([true, false, true])
    expect(r.fencedLate).toBe('FENCED')
    expect(r.wLeft).toBe(2)
    expect(r.bad).toEqual(Array(15).fill('INVALID_ARGUMENT'))
    expect(r.takenAfterClose).toBe(true)
    expect(r.watchDone).toBe(true)
    expect(r.isLeader).toBe(false)
    expect(r.after).toEqual(Array(6).fill('CLOSED'))
    expect(r.noIdb).toBe('UNSUPPORTED')
    expect(r.plainId).toBe(true)
  })
}, 60_000)

it("a lock taken at once (no wait) ends for every tab when its tab closes, nobody waiting: a full client's reaper ends it, long before its TTL", async () => {
  await withContext(async (open) => {
    const [holder, other] = [await open(), await open()]
    const ns = `reap-${Math.random().toString(36).slice(2, 10)}`
    const token = await holder.evaluate(async (ns) => {
      const app = window.zarisTabs.tabs(ns, { ttl: 30_000 })
      window.kept.app = app
      return (await app.locks.acquire('lock:mine'))!.token
    }, ns)
    const before = await other.evaluate(async (ns) => {
      const c = await window.zaris.connect(`zaris://idb/${ns}`)
      window.kept.client = c
      return (await c.locks.holder('lock:mine'))?.token ?? null
    }, ns)
    const closedAt = Date.now()
    await holder.close()
    const endedIn = await other.evaluate(async () => {
      const c = window.kept.client as Awaited<ReturnType<typeof window.zaris.connect>>
      const t0 = Date.now()
      while ((await c.locks.holder('lock:mine')) !== undefined) {
        if (Date.now() - t0 > 10_000) return null
        await new Promise((r) => setTimeout(r, 50))
      }
      return Date.now()
    })
    expect(before).toBe(token)
    expect(endedIn, 'the entry ended before 10 s (TTL 30 s)').not.toBeNull()
    console.log(`a closed tab's zaris/tabs lock ended for another tab ${endedIn! - closedAt} ms after the close`)
  })
}, 60_000)
