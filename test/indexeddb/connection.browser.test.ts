/**
 * A page's connection to its database (src/adapters/indexeddb/connection.ts)
 * in Chromium: what `abortOpen` (the page's `freeze`) aborts — every
 * transaction still open, which then wrote nothing — and what it leaves: one
 * already committing, which finishes, and those begun after it. Real frozen
 * tabs are in test/indexeddb/frozen.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { Connection } from '../../src/adapters/indexeddb/connection'

let name = ''
let db: IDBDatabase | undefined
afterEach(async () => {
  db?.close()
  db = undefined
  await new Promise<void>((resolve) => {
    const r = indexedDB.deleteDatabase(name)
    r.onsuccess = r.onerror = r.onblocked = () => resolve()
  })
})

async function connect(): Promise<Connection> {
  name = `connection-${Math.random().toString(36).slice(2, 10)}`
  db = await new Promise<IDBDatabase>((resolve, reject) => {
    const open = indexedDB.open(name, 1)
    open.onupgradeneeded = () => open.result.createObjectStore('s')
    open.onsuccess = () => resolve(open.result)
    open.onerror = () => reject(open.error)
  })
  return new Connection(db)
}

/** How `tx` ended: `complete`, or `abort` with its error's name. */
function ended(tx: IDBTransaction): Promise<string> {
  return new Promise((resolve) => {
    tx.oncomplete = () => resolve('complete')
    tx.onabort = () => resolve(`abort ${tx.error?.name ?? 'by the page'}`)
  })
}

function read(c: Connection, key: string): Promise<unknown> {
  return new Promise((resolve) => {
    const r = c.transaction('s', 'readonly').objectStore('s').get(key)
    r.onsuccess = () => resolve(r.result)
  })
}

describe('a connection', () => {
  it('abortOpen aborts every transaction still open: none writes, and a readonly one ends too', async () => {
    const c = await connect()
    const w = c.transaction('s', 'readwrite')
    w.objectStore('s').put(1, 'a')
    const r = c.transaction('s', 'readonly')
    r.objectStore('s').get('a')
    const [we, re] = [ended(w), ended(r)]
    c.abortOpen()
    expect([await we, await re]).toEqual(['abort by the page', 'abort by the page'])
    expect(await read(c, 'a')).toBeUndefined()
  })

  it('leaves one already committing (commit() called) to finish, and those begun after it', async () => {
    const c = await connect()
    const committing = c.transaction('s', 'readwrite')
    committing.objectStore('s').put(1, 'a')
    committing.commit()
    const first = ended(committing)
    expect(() => c.abortOpen()).not.toThrow()
    expect(await first).toBe('complete')
    const after = c.transaction('s', 'readwrite')
    after.objectStore('s').put(2, 'b')
    expect(await ended(after)).toBe('complete')
    expect([await read(c, 'a'), await read(c, 'b')]).toEqual([1, 2])
  })

  it('a transaction that completed is not aborted later: a later abortOpen ends only what is open then', async () => {
    const c = await connect()
    const done = c.transaction('s', 'readwrite')
    done.objectStore('s').put(1, 'a')
    expect(await ended(done)).toBe('complete')
    const open = c.transaction('s', 'readwrite')
    open.objectStore('s').put(2, 'b')
    const e = ended(open)
    expect(() => c.abortOpen()).not.toThrow()
    expect(await e).toBe('abort by the page')
    expect([await read(c, 'a'), await read(c, 'b')]).toEqual([1, undefined])
  })

  it('close closes the database: a transaction after it is refused', async () => {
    const c = await connect()
    c.close()
    expect(() => c.transaction('s', 'readonly')).toThrow(expect.objectContaining({ name: 'InvalidStateError' }))
  })
})
