/**
 * The IndexedDB adapter's options and what it asks of the browser
 * (src/adapters/indexeddb/index.ts), in Chromium: bad options are refused by
 * name, `liveness: false` and a browser without Web Locks turn gates and
 * owner news off, a page without IndexedDB or BroadcastChannel is told what
 * to use instead, and `openIndexedDb` fails at once on a database it cannot
 * open. A browser without Web Locks or BroadcastChannel cannot be had in
 * this Chromium: those tests remove the API by hand, and say so.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { isZarisError, type Adapter } from 'zaris'
import { indexedDbAdapter, openIndexedDb } from 'zaris/indexeddb'
import { dropNamespace } from '../browser-harness/drop-namespace'

const opened: Adapter[] = []
const names: string[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((a) => a.close()))
  await Promise.all(names.splice(0).map((ns) => dropNamespace(ns)))
})

function namespace(): string {
  const ns = `opt-${Math.random().toString(36).slice(2, 10)}`
  names.push(ns)
  return ns
}

function keep(a: Adapter): Adapter {
  opened.push(a)
  return a
}

/** What `fn` throws (or undefined). */
function thrown(fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  return undefined
}

/** Runs `fn` with `name` on `target` replaced by `value`, then puts back what was there (the window's own property, or the prototype's). */
async function without<T>(target: object, name: string, value: unknown, fn: () => Promise<T> | T): Promise<T> {
  const own = Object.getOwnPropertyDescriptor(target, name)
  Object.defineProperty(target, name, { value, configurable: true, writable: true })
  try {
    return await fn()
  } finally {
    if (own) Object.defineProperty(target, name, own)
    else delete (target as Record<string, unknown>)[name]
  }
}

describe('indexeddb adapter options', () => {
  it('refuses options that are not an object, a bad namespace and a historySize that is not a positive integer, by name', () => {
    for (const bad of [null, 'app', 7]) {
      const err = thrown(() => indexedDbAdapter(bad as never))
      expect(isZarisError(err, 'INVALID_ARGUMENT'), String(bad)).toBe(true)
      expect((err as Error).message).toMatch(/options must be an object/)
    }
    const ns = thrown(() => indexedDbAdapter({ namespace: '' }))
    expect(isZarisError(ns, 'INVALID_ARGUMENT')).toBe(true)
    expect((ns as Error).message).toMatch(/namespace/)
    for (const historySize of [0, -1, 1.5, Number.NaN]) {
      const err = thrown(() => indexedDbAdapter({ namespace: 'x', historySize }))
      expect(isZarisError(err, 'INVALID_ARGUMENT'), String(historySize)).toBe(true)
      expect((err as Error).message).toMatch(new RegExp(`historySize must be a positive integer, got ${String(historySize)}`))
    }
  })

  it('takes a historySize of 1 and no namespace (the database `zaris:default`)', async () => {
    names.push('default')
    const a = keep(indexedDbAdapter({ historySize: 1 }))
    expect((await a.commit([], [{ type: 'set', key: 'k', value: 1 }])).ok).toBe(true)
    const dbs = await indexedDB.databases()
    expect(dbs.map((d) => d.name)).toContain('zaris:default')
  })

  it('with `liveness: false`, no gates and no owner news; by default both', () => {
    const off = keep(indexedDbAdapter({ namespace: namespace(), liveness: false }))
    expect(off.capabilities).toMatchObject({ gates: false, ownerGone: false })
    expect(off.gate).toBeUndefined()
    expect(off.ownerGone).toBeUndefined()
    const on = keep(indexedDbAdapter({ namespace: namespace() }))
    expect(on.capabilities).toMatchObject({ gates: true, ownerGone: true })
    expect(typeof on.gate).toBe('function')
  })

  it('navigator.locks removed by hand, or without `request`: no gates, and commits still work', async () => {
    for (const locks of [undefined, {}]) {
      await without(navigator, 'locks', locks, async () => {
        const a = keep(indexedDbAdapter({ namespace: namespace() }))
        expect(a.capabilities).toMatchObject({ gates: false, ownerGone: false })
        expect((await a.commit([{ key: 'k', revision: null }], [{ type: 'set', key: 'k', value: 1, ttl: 1_000, owner: 'o' }])).ok).toBe(true)
      })
    }
  })

  it('BroadcastChannel or indexedDB removed by hand: UNSUPPORTED, naming what to use instead', async () => {
    for (const name of ['BroadcastChannel', 'indexedDB']) {
      const err = await without(globalThis, name, undefined, () => thrown(() => indexedDbAdapter({ namespace: 'x' })))
      expect(isZarisError(err, 'UNSUPPORTED'), name).toBe(true)
      expect((err as Error).message).toMatch(/needs IndexedDB and BroadcastChannel, which this environment does not have/)
      expect((err as Error).message).toMatch(/zaris:\/\/inproc\/<namespace>/)
    }
  })

  it('openIndexedDb answers an open adapter, and rejects at once on a database it cannot open (a newer version), closing what it made', async () => {
    const fine = keep(await openIndexedDb({ namespace: namespace() }))
    expect((await fine.commit([], [{ type: 'set', key: 'k', value: 1 }])).ok).toBe(true)
    const ns = namespace()
    await new Promise<void>((resolve, reject) => {
      const open = indexedDB.open(`zaris:${ns}`, 99)
      open.onerror = () => reject(open.error)
      open.onsuccess = () => (open.result.close(), resolve())
    })
    const err = await openIndexedDb({ namespace: ns }).then(
      (a) => (keep(a), undefined),
      (e: unknown) => e,
    )
    expect(err).toBeDefined()
    expect((err as Error).name).toBe('VersionError')
  })

  it('a closed adapter says it is the indexeddb adapter', async () => {
    const a = indexedDbAdapter({ namespace: namespace() })
    await a.close()
    const err = await a.commit([], [{ type: 'set', key: 'k', value: 1 }]).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isZarisError(err, 'CLOSED')).toBe(true)
    expect((err as Error).message).toMatch(/the indexeddb adapter is closed/)
    expect(a.name).toBe('indexeddb')
    for (const call of [() => a.get('k'), () => a.list(''), () => a.watch('', { event: () => {}, error: () => {} })]) {
      const e = await call().then(
        () => undefined,
        (x: unknown) => x,
      )
      expect(isZarisError(e, 'CLOSED')).toBe(true)
    }
  })

  it('a closed adapter refuses reads and watches while another adapter of the page keeps the store open', async () => {
    const ns = namespace()
    const other = keep(indexedDbAdapter({ namespace: ns }))
    await other.commit([], [{ type: 'set', key: 'k', value: 1 }])
    const a = indexedDbAdapter({ namespace: ns })
    expect((await a.get('k'))?.value).toBe(1)
    await a.close()
    for (const call of [() => a.get('k'), () => a.list(''), () => a.watch('', { event: () => {}, error: () => {} })]) {
      const e = await call().then(
        () => undefined,
        (x: unknown) => x,
      )
      expect(isZarisError(e, 'CLOSED')).toBe(true)
      expect((e as Error).message).toMatch(/the indexeddb adapter is closed/)
    }
    expect((await other.get('k'))?.value).toBe(1)
  })

  it('on its store clock (option `clock`) past an entry\'s deadline, before any sweep: get and list see it gone', async () => {
    let now = Date.now()
    // A clock whose timers never fire: no sweep runs, the entries stay stored past their deadlines.
    const clock = { now: () => now, setTimeout: () => ({}) as never, clearTimeout: () => {} }
    const a = keep(indexedDbAdapter({ namespace: namespace(), clock, liveness: false }))
    const short = (key: string) => ({ type: 'set' as const, key, value: key, ttl: 100 })
    const long = (key: string) => ({ type: 'set' as const, key, value: key, ttl: 10_000 })
    await a.commit([], [short('a'), long('b'), short('c'), long('d'), short('e')])
    expect((await a.get('a'))?.value).toBe('a')
    now += 1_000
    expect(await a.get('a')).toBeUndefined()
    expect((await a.get('b'))?.ttl).toBe(9_000)
    const keys = (page: { entries: Array<{ key: string }>; more: boolean }) => [page.entries.map((e) => e.key), page.more]
    expect(keys(await a.list(''))).toEqual([['b', 'd'], false])
    // A page of one, read past the expired records that take places in each read.
    expect(keys(await a.list('', { limit: 1 }))).toEqual([['b'], true])
    expect(keys(await a.list('', { limit: 1, after: 'b' }))).toEqual([['d'], false])
    expect(keys(await a.list('', { limit: 2 }))).toEqual([['b', 'd'], false])
  })
})
