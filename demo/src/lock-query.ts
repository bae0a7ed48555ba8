/**
 * Who holds a lock and who waits for it, from `client.locks.query()`: read
 * now, again on every change of the lock key (a watch), and every 300 ms
 * (shared holds and places in line are zaris's own entries, which a watch of
 * the key does not show).
 */
import type { Client, LockQuery } from 'zaris'

/** Calls `onChange` with the holds and the line of `key` (that key only); the returned function stops and resolves once stopped. */
export function followLock(client: Client, key: string, onChange: (q: LockQuery) => void): () => Promise<void> {
  const closing = new AbortController()
  let reading: Promise<void> | undefined
  let again = false
  const read = async () => {
    const q = await client.locks.query(key)
    // The prefix also matches keys that extend this one.
    if (!closing.signal.aborted) onChange({ held: q.held.filter((h) => h.key === key), pending: q.pending.filter((p) => p.key === key) })
  }
  // One read at a time; a change during a read means one more read after it.
  const refresh = () => {
    if (closing.signal.aborted) return
    if (reading) {
      again = true
      return
    }
    reading = (async () => {
      do {
        again = false
        await read().catch(() => {})
      } while (again && !closing.signal.aborted)
      reading = undefined
    })()
  }
  const timer = setInterval(refresh, 300)
  const watch = client.watch(key, { signal: closing.signal })
  const watching = (async () => {
    try {
      await watch.ready
      refresh()
      for await (const _ of watch) refresh()
    } catch {
      // The panel is going away, or the store went: the timer keeps reading while it runs.
    }
  })()
  return async () => {
    closing.abort()
    clearInterval(timer)
    watch.close()
    await watching
    await reading
  }
}
