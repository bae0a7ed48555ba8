/**
 * The window checker of the lock-family conformance cases
 * (test/conformance/windows.ts) earns its trust here: it passes correct
 * histories, and it catches the bugs it is there for when they are planted
 * in a store — a store that skips the check a shared acquire makes on the
 * lock key (so a shared hold lands beside an exclusive one), and one that
 * skips the check on a semaphore's slot (so two permits share a slot and
 * the semaphore overfills). The planted stores wrap the real memory store
 * and drop those checks (a fake, named so).
 */
import { describe, expect, test } from 'vitest'
import { Client, type Adapter, type Check, type Op } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { checkWindows, WindowLog, type Window } from '../conformance/windows'

const w = (key: string, mode: Window['mode'], start: number, end: number, owner = 'x'): Window => ({ key, mode, owner, token: start, start, end })

describe('checkWindows', () => {
  test('shared windows may overlap; an exclusive one beside any other is reported', () => {
    expect(checkWindows([w('k', 'shared', 0, 10), w('k', 'shared', 5, 15)]).violations).toEqual([])
    expect(checkWindows([w('k', 'shared', 0, 10), w('k', 'shared', 5, 15)]).maxShared).toBe(2)
    expect(checkWindows([w('k', 'shared', 0, 10), w('k', 'exclusive', 9, 12)]).violations).toHaveLength(1)
    expect(checkWindows([w('k', 'exclusive', 0, 10), w('k', 'exclusive', 3, 4)]).violations).toHaveLength(1)
  })

  test('touching windows do not overlap; other keys do not count', () => {
    expect(checkWindows([w('k', 'exclusive', 0, 10), w('k', 'exclusive', 10, 20), w('j', 'exclusive', 5, 6)]).violations).toEqual([])
  })

  test('more permits than the limit at one instant is reported', () => {
    const ws = [w('s', 'permit', 0, 10), w('s', 'permit', 1, 10), w('s', 'permit', 2, 3)]
    expect(checkWindows(ws, 3).violations).toEqual([])
    expect(checkWindows(ws, 2).violations).toHaveLength(1)
    expect(checkWindows(ws, 3).maxPermits).toBe(3)
  })
})

/** The memory store, with every check that `drop` matches removed from commits: a planted bug. */
function dropping(inner: Adapter, drop: (check: Check, ops: Op[]) => boolean): Adapter {
  return { ...inner, name: 'memory (checks dropped: a planted bug)', commit: (checks, ops, o) => inner.commit(checks.filter((c) => !drop(c, ops)), ops, o) }
}

async function contend(adapter: () => Adapter, run: (c: Client, i: number, log: WindowLog) => Promise<void>) {
  const clients = Array.from({ length: 6 }, (_, i) => new Client(adapter(), { id: `c${i}` }))
  const log = new WindowLog()
  try {
    await Promise.all(clients.map((c, i) => run(c, i, log)))
  } finally {
    await Promise.all(clients.map((c) => c.close()))
  }
  return log
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function readersAndWriters(c: Client, i: number, log: WindowLog) {
  for (let r = 0; r < 10; r++) {
    const mode = (i + r) % 3 === 0 ? 'exclusive' : 'shared'
    const lock = await c.locks.acquire('rw', { mode, ttl: 20_000, wait: 20_000, autoRenew: false })
    if (!lock) continue
    const close = log.open('rw', mode, c.id, lock.token)
    await sleep(2 + ((i + r) % 5))
    close()
    await lock.release()
  }
}

async function uploaders(c: Client, i: number, log: WindowLog) {
  for (let r = 0; r < 10; r++) {
    const permit = await c.semaphores.acquire('uploads', { limit: 2, ttl: 20_000, wait: 20_000, autoRenew: false })
    if (!permit) continue
    const close = log.open('uploads', 'permit', c.id, permit.token)
    await sleep(2 + ((i + r) % 5))
    close()
    await permit.release()
  }
}

describe('the checker catches planted bugs in a store', () => {
  const ns = () => `checker-${Math.random().toString(36).slice(2)}`

  test('shared and exclusive holds on the correct store: no violation', async () => {
    const namespace = ns()
    const log = await contend(() => memoryAdapter({ namespace }), readersAndWriters)
    expect(log.check().violations).toEqual([])
    expect(log.check().maxShared).toBeGreaterThanOrEqual(2)
  })

  test('a store that skips a shared acquire\'s check on the lock key: shared beside exclusive, reported', async () => {
    const namespace = ns()
    // A shared acquire that starts a group (a `set` of the lock key beside its share entry, U+0001 s …):
    // drop its check that the lock key is free, so it may land over an exclusive holder.
    const startsGroup = (ops: Op[]) => ops.some((o) => o.key.startsWith('\u0001s')) && ops.some((o) => o.key === 'rw' && o.type === 'set')
    const log = await contend(() => dropping(memoryAdapter({ namespace }), (c, ops) => startsGroup(ops) && c.key === 'rw'), readersAndWriters)
    expect(log.check().violations.length).toBeGreaterThan(0)
  })

  test('a semaphore on the correct store: at most limit permits, and the limit is reached', async () => {
    const namespace = ns()
    const log = await contend(() => memoryAdapter({ namespace }), uploaders)
    expect(log.check(2).violations).toEqual([])
    expect(log.check(2).maxPermits).toBe(2)
  })

  test('a store that skips the check on a semaphore\'s slot: more permits than the limit, reported', async () => {
    const namespace = ns()
    const log = await contend(() => dropping(memoryAdapter({ namespace }), (c) => c.key.startsWith('\u0001p')), uploaders)
    expect(log.check(2).violations.length).toBeGreaterThan(0)
  })
})

describe('the intent is what serves an exclusive waiter among a stream of shared holders', () => {
  async function writerAmongReaders(adapter: () => Adapter): Promise<boolean> {
    const readers = Array.from({ length: 4 }, (_, i) => new Client(adapter(), { id: `r${i}` }))
    const writer = new Client(adapter(), { id: 'w' })
    let stop = false
    const stream = readers.map(async (c, i) => {
      await sleep(i * 15)
      while (!stop) {
        const lock = await c.locks.acquire('feed', { mode: 'shared', ttl: 20_000, wait: 20_000 })
        await sleep(40)
        await lock?.release()
      }
    })
    await sleep(100)
    const lock = await writer.locks.acquire('feed', { ttl: 20_000, wait: 1_500 })
    stop = true
    await lock?.release()
    await Promise.all(stream)
    await Promise.all([...readers, writer].map((c) => c.close()))
    return lock !== null
  }

  test('served on the correct store; starved on a store that drops the check on the intent (U+0001 x …)', async () => {
    const ok = `intent-${Math.random().toString(36).slice(2)}`
    expect(await writerAmongReaders(() => memoryAdapter({ namespace: ok }))).toBe(true)
    const bad = `intent-${Math.random().toString(36).slice(2)}`
    expect(await writerAmongReaders(() => dropping(memoryAdapter({ namespace: bad }), (c) => c.key.startsWith('\u0001x')))).toBe(false)
  }, 20_000)
})
