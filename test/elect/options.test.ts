/**
 * zaris/elect's constructor: where it can run, and what it says of bad
 * arguments. In Node (no IndexedDB) it refuses plainly; in a page
 * (Chromium, the harness) an election defaults to the `default` namespace
 * and its id as candidate, and names the argument it refuses.
 */
import { expect, it } from 'vitest'
import { election } from 'zaris/elect'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'

const { withContext } = useRecordedTabs()

it('outside a page (Node: BroadcastChannel, no IndexedDB) it refuses with UNSUPPORTED, naming what it needs', () => {
  expect(globalThis.BroadcastChannel).toBeDefined()
  expect(() => election('leader')).toThrow(expect.objectContaining({ code: 'UNSUPPORTED', message: expect.stringMatching(/IndexedDB and BroadcastChannel/) }))
})

it('in a page: the namespace defaults to "default", the candidate to the id, resign() before any campaign says false; a bad name, namespace or candidate is refused naming which', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const r = await tab.evaluate(async () => {
      const refusal = (f: () => unknown) => {
        try {
          f()
          return 'accepted'
        } catch (err) {
          return `${(err as { code?: string }).code}: ${(err as Error).message}`
        }
      }
      const e = window.zarisElect.election('leader:options')
      const named = window.zarisElect.election('leader:options', { candidate: 'tab-a' })
      // Neither leading nor campaigning: nothing to resign.
      const out = { namespace: e.namespace, byId: e.candidate === e.id, candidate: named.candidate, resigned: await e.resign() }
      await Promise.all([e.close(), named.close()])
      const candidate = (c: unknown) => refusal(() => window.zarisElect.election('leader:options', { candidate: c as string }))
      return {
        ...out,
        name: refusal(() => window.zarisElect.election('')),
        ns: refusal(() => window.zarisElect.election('leader:options', { namespace: '' })),
        empty: candidate(''),
        number: candidate(5),
      }
    })
    expect(r.namespace).toBe('default')
    expect(r.byId).toBe(true)
    expect(r.candidate).toBe('tab-a')
    expect(r.resigned).toBe(false)
    expect(r.name).toMatch(/^INVALID_ARGUMENT: name /)
    expect(r.ns).toMatch(/^INVALID_ARGUMENT: namespace /)
    expect([r.empty, r.number]).toEqual(['INVALID_ARGUMENT: candidate must be a non-empty string', 'INVALID_ARGUMENT: candidate must be a non-empty string'])
  })
})

it('a campaign after close resolves null and opens nothing: no Web Lock asked, no database left open', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const ns = `closed-${Math.random().toString(36).slice(2, 10)}`
    const r = await tab.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:closed', { namespace: ns })
      await e.close()
      const term = await e.campaign()
      const locks = await navigator.locks.query()
      const names = [...(locks.held ?? []), ...(locks.pending ?? [])].map((l) => l.name).filter((n) => n?.includes(ns))
      // An open connection to the namespace's database would block its deletion.
      const blocked = await new Promise<boolean>((resolve) => {
        const req = indexedDB.deleteDatabase(`zaris:${ns}`)
        req.onblocked = () => resolve(true)
        req.onsuccess = () => resolve(false)
        req.onerror = () => resolve(true)
      })
      return { term, names, blocked }
    }, ns)
    expect(r).toEqual({ term: null, names: [], blocked: false })
  })
})

it('a campaign the browser refuses the gate to rejects with UNAVAILABLE, not null (navigator.locks.request stubbed to refuse the gate: a fake, the browser has no switch for it)', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const ns = `denied-${Math.random().toString(36).slice(2, 10)}`
    const r = await tab.evaluate(async (ns) => {
      const locks = navigator.locks as { request: (...a: unknown[]) => Promise<unknown> }
      const request = locks.request.bind(navigator.locks)
      locks.request = (name: unknown, ...rest: unknown[]) => (String(name).includes(':gate:') ? Promise.reject(new DOMException('refused by the test', 'NotSupportedError')) : request(name, ...rest))
      const e = window.zarisElect.election('leader:denied', { namespace: ns })
      try {
        return await e.campaign().then(
          (t) => `resolved ${String(t)}`,
          (err: { code?: string }) => err.code,
        )
      } finally {
        locks.request = request
        await e.close()
      }
    }, ns)
    expect(r).toBe('UNAVAILABLE')
  })
})
