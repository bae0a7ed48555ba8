/** Deletes a `zaris://idb` namespace's database (in a test page, after a test), whatever state it is in. */
export function dropNamespace(ns: string): Promise<void> {
  return new Promise<void>((resolve) => {
    const r = indexedDB.deleteDatabase(`zaris:${ns}`)
    r.onsuccess = r.onerror = r.onblocked = () => resolve()
  })
}
