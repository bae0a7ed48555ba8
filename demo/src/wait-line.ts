/**
 * Who waits for a lock, in line order — read straight from the store.
 *
 * zaris keeps a lock's wait line in the store itself: one entry per waiter
 * under a reserved prefix (U+0001 `q`, the lock key, U+0001), owned by the
 * waiter, ordered by `created` (src/core/wait-queue.ts). Those keys are
 * hidden from `client.list` and `client.watch`, so this module reads them
 * through the adapter. It is the one place that knows this layout: when
 * `client.locks.query()` lands, it replaces this module.
 */
import type { Client, Entry } from 'zaris'

const QUEUE_PREFIX = '\u0001q'
const SEP = '\u0001'

/** One waiter: its client id, and the revision at which it joined the line. */
export interface Waiter {
  owner: string
  since: number
}

/** Calls `onChange` with the line of `lockKey` now and on every change; the returned function stops and resolves once stopped. */
export function followLine(client: Client, lockKey: string, onChange: (line: Waiter[]) => void): () => Promise<void> {
  const prefix = QUEUE_PREFIX + lockKey + SEP
  let stopped = false
  let reading: Promise<void> | undefined
  let again = false
  let unwatch: (() => void) | undefined

  const read = async () => {
    // The adapter's list is being paged (`{ entries, more }`) on another branch; take either shape.
    const answer = (await client.adapter.list(prefix)) as unknown as Entry[] | { entries: Entry[] }
    const entries = Array.isArray(answer) ? answer : answer.entries
    const line = entries
      .filter((e) => e.owner !== undefined && !e.key.slice(prefix.length).includes(SEP))
      .sort((a, b) => a.created - b.created)
      .map((e) => ({ owner: e.owner!, since: e.created }))
    if (!stopped) onChange(line)
  }
  // One read at a time; a change during a read means one more read after it.
  const refresh = () => {
    if (stopped) return
    if (reading) {
      again = true
      return
    }
    reading = (async () => {
      do {
        again = false
        await read().catch(() => {})
      } while (again && !stopped)
      reading = undefined
    })()
  }

  const started = client.adapter
    .watch(prefix, { event: refresh, error: () => {} })
    .then((u) => {
      if (stopped) u()
      else unwatch = u
      refresh()
    })
    .catch(() => {})

  return async () => {
    stopped = true
    await started
    unwatch?.()
    await reading
  }
}
