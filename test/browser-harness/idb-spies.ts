/**
 * Spies on IndexedDB's own prototypes, for tests that must see what a store
 * asks the browser (how many transactions, where a read starts), not only
 * what it answers. Each puts the real method back when `run` ends.
 */

/** How many readwrite transactions this page began while `run` ran (a spy on `IDBDatabase.prototype.transaction`). */
export async function writesDuring(run: () => Promise<unknown>): Promise<number> {
  const begin = IDBDatabase.prototype.transaction
  let writes = 0
  IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<typeof begin>) {
    if (args[1] === 'readwrite') writes++
    return begin.apply(this, args)
  } as typeof begin
  try {
    await run()
  } finally {
    IDBDatabase.prototype.transaction = begin
  }
  return writes
}

/** How many reads of one entry (a `get` on `entries` outside any commit: a readonly transaction) this page made while `run` ran. */
export async function entryReadsDuring(run: () => Promise<unknown>): Promise<number> {
  const get = IDBObjectStore.prototype.get
  let reads = 0
  IDBObjectStore.prototype.get = function (this: IDBObjectStore, ...args: Parameters<typeof get>) {
    if (this.name === 'entries' && this.transaction.mode === 'readonly') reads++
    return get.apply(this, args)
  } as typeof get
  try {
    await run()
  } finally {
    IDBObjectStore.prototype.get = get
  }
  return reads
}

/** The lower bounds of the change log's key reads (`getAllKeys` on `log`) while `run` ran: where each commit looked for the revision. */
export async function logReadsFrom(run: () => Promise<unknown>): Promise<unknown[]> {
  const read = IDBObjectStore.prototype.getAllKeys
  const from: unknown[] = []
  IDBObjectStore.prototype.getAllKeys = function (this: IDBObjectStore, ...args: Parameters<typeof read>) {
    if (this.name === 'log') from.push((args[0] as IDBKeyRange).lower)
    return read.apply(this, args)
  } as typeof read
  try {
    await run()
  } finally {
    IDBObjectStore.prototype.getAllKeys = read
  }
  return from
}

/** Another tab's announcement of an old revision, arriving late on `namespace`'s channel. */
export function announceLate(namespace: string, revision: number): void {
  const raw = new BroadcastChannel(`zaris:idb:${namespace}`)
  raw.postMessage({ records: [{ revision, events: [] }] })
  raw.close()
}
