/**
 * Answers lost on the way back. A wrapper around the real memory adapter
 * applies a commit and then throws as a transport would (a fake transport
 * fault, named as such); the next call must still behave.
 */
import { expect, test } from 'vitest'
import { Client, type Adapter } from 'zaris'
import { memoryAdapter } from 'zaris/memory'

function droppingAnswers(inner: Adapter) {
  let dropNext = false
  const adapter: Adapter = {
    ...inner,
    name: 'memory (answers dropped on demand)',
    async commit(checks, ops) {
      const result = await inner.commit(checks, ops)
      if (dropNext) {
        dropNext = false
        throw new Error('connection reset (fake: the commit was applied, the answer lost)')
      }
      return result
    },
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
  }
  return { adapter, drop: () => (dropNext = true) }
}

test('fake transport fault: a renewal whose answer was lost does not make the next renewal or fenced write fail', async () => {
  const ns = `lost-${Math.random()}`
  const { adapter, drop } = droppingAnswers(memoryAdapter({ namespace: ns }))
  const client = new Client(adapter)
  const lock = (await client.locks.acquire('lock:x', { ttl: 5_000, autoRenew: false }))!
  drop()
  await expect(lock.renew()).rejects.toThrow('connection reset')
  expect(lock.held).toBe(true)
  expect(await lock.renew()).toBe(true)
  await client.put('res', 1, { fence: lock })
  expect(await lock.release()).toBe(true)
  await client.close()
})

test('fake transport fault: a release whose answer was lost still freed the lock, and a second release is harmless', async () => {
  const ns = `lost-${Math.random()}`
  const { adapter, drop } = droppingAnswers(memoryAdapter({ namespace: ns }))
  const client = new Client(adapter)
  const other = new Client(memoryAdapter({ namespace: ns }))
  const lock = (await client.locks.acquire('lock:y'))!
  drop()
  await expect(lock.release()).rejects.toThrow('connection reset')
  expect(lock.signal.aborted).toBe(true)
  expect(await lock.release()).toBe(false)
  expect(await other.locks.acquire('lock:y')).not.toBeNull()
  await Promise.all([client.close(), other.close()])
})
