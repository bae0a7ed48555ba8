/**
 * A waiter's place in a lock's line (src/core/acquire/line.ts), when the
 * store no longer has it: the machine may leave a
 * raced `ahead()` running while it calls `ahead()` again, and the two must
 * join the line again once between them, not drop each other's new place.
 * A fault run on Postgres saw this as "acquire failed: Cannot read
 * properties of undefined (reading 'key')", with a new place left behind,
 * neither renewed nor deleted.
 */
import { expect, test } from 'vitest'
import { memoryAdapter } from '../../src/adapters/memory'
import { WaitQueue } from '../../src/core/acquire/line'
import type { Context } from '../../src/core/context'
import { systemClock } from '../../src/core/time/clock'

test('two ahead() at once after the store lost our place: one new place, kept, and no TypeError', async () => {
  const adapter = memoryAdapter()
  const ctx = { adapter, clock: systemClock, id: 'waiter', ttl: 5_000, ready: Promise.resolve(), open: new Set(), onClose: () => () => {}, assertOpen() {}, lost() {} } as unknown as Context
  const line = WaitQueue.for(ctx, 'lock')!
  try {
    expect(await line.ahead()).toBeUndefined()
    const first = line.entry!
    // The store loses the place (an expiry, or a delete this client did not make).
    expect((await adapter.commit([{ key: first.key, created: first.created }], [{ type: 'delete', key: first.key }])).ok).toBe(true)
    const answers = await Promise.allSettled([line.ahead(), line.ahead()])
    expect(answers).toEqual([
      { status: 'fulfilled', value: undefined },
      { status: 'fulfilled', value: undefined },
    ])
    // Joined again once, and the queue still knows (and so renews, then deletes) that place.
    const places = (await adapter.list('\u0001qlock\u0001')).entries
    expect(places.map((e) => e.key)).toEqual([line.entry?.key])
    expect(line.entry?.key).not.toBe(first.key)
  } finally {
    line.leave()
    await adapter.close()
  }
})
