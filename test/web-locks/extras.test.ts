/**
 * What zaris/web-locks adds to the Web Locks API, and where it refuses what
 * only zaris must refuse, on the memory store: the fencing token and the
 * `fence`, the signal of a lost hold and the `AbortError` (with its cause)
 * that rejects the request, a TTL with and without renewal, the prefix,
 * names and the keys they are stored under, working beside `client.locks`,
 * and how long a release waits for the waiters it lets through.
 */
import { getEventListeners } from 'node:events'
import { afterEach, describe, expect, test } from 'vitest'
import { Client, connect, isZarisError, type Adapter } from 'zaris'
import { webLocks, WebLock, type WebLocks } from 'zaris/web-locks'
import { GRANT_WAIT } from '../../src/web-locks/handover'

const opened: Client[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((c) => c.close()))
})

let n = 0
/** `count` managers, each over a client of its own, on a fresh memory store. */
async function managers(count: number, prefix?: string): Promise<WebLocks[]> {
  const url = `zaris://inproc/web-locks-extras-${++n}`
  const clients = await Promise.all(Array.from({ length: count }, (_, i) => connect(url, { id: `c${i}` })))
  opened.push(...clients)
  return clients.map((c) => webLocks(c, prefix === undefined ? undefined : { prefix }))
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

describe('the lock the callback gets', () => {
  test('a WebLock with name and mode, a token that rises with every holder, and a signal that aborts once released', async () => {
    const [locks] = await managers(1)
    const first = await locks!.request('job', (lock) => lock)
    const second = await locks!.request('job', { mode: 'shared' }, (lock) => lock)
    expect(first).toBeInstanceOf(WebLock)
    expect(first).toMatchObject({ name: 'job', mode: 'exclusive' })
    expect(second!.token).toBeGreaterThan(first!.token)
    expect(first!.signal.aborted).toBe(true)
    expect((first!.signal.reason as { code: string }).code).toBe('RELEASED')
  })

  test("lock.fence fences writes: refused once the lock was stolen, whose holder's request rejects with AbortError (cause STOLEN)", async () => {
    const [a, b] = await managers(2)
    const client = a!.client
    let stale: WebLock | undefined
    const [stolen, steal] = [a!.request('report', async (lock) => {
      stale = lock!
      await client.put('report:body', 'draft', { fence: lock!.fence })
      await new Promise((r) => lock!.signal.addEventListener('abort', r))
      return 'finished anyway'
    }), () => b!.request('report', { steal: true }, async (lock) => client.put('report:body', 'the thief', { fence: lock!.fence }))]
    await until(() => stale !== undefined)
    await steal()
    const err = (await stolen.catch((e: unknown) => e)) as DOMException & { cause?: { code: string } }
    expect(err.name).toBe('AbortError')
    expect(err.cause?.code).toBe('STOLEN')
    expect(stale!.signal.aborted).toBe(true)
    const refused = await client.put('report:body', 'stale', { fence: stale!.fence }).catch((e: unknown) => e)
    expect(isZarisError(refused, 'FENCED')).toBe(true)
    expect((await client.get('report:body'))!.value).toBe('the thief')
  })

  test('a shared lock fences with its own hold: its write is refused once that hold is gone, while another reader still holds', async () => {
    const [a, b] = await managers(2)
    const client = a!.client
    const [bHolds, letGo] = gate()
    let bReading = false
    const other = b!.request('doc', { mode: 'shared' }, async () => {
      bReading = true
      await bHolds
    })
    await until(() => bReading)
    const mine = await a!.request('doc', { mode: 'shared' }, async (lock) => {
      await client.put('doc:seen', 1, { fence: lock!.fence })
      return lock!
    })
    expect(isZarisError(await client.put('doc:seen', 2, { fence: mine!.fence }).catch((e: unknown) => e), 'FENCED')).toBe(true)
    letGo()
    await other
  })
})

describe('zaris options', () => {
  test('autoRenew (the default) keeps the lock past its TTL while the callback runs', async () => {
    const [a, b] = await managers(2)
    const result = await a!.request('long', { zaris: { ttl: 150 } }, async (lock) => {
      await sleep(450)
      const other = await b!.request('long', { ifAvailable: true }, (l) => l)
      return { held: !lock!.signal.aborted, other }
    })
    expect(result).toEqual({ held: true, other: null })
  })

  test('autoRenew: false: the lock ends at its TTL while the callback runs; the request rejects at once; the next holder gets it', async () => {
    const [a, b] = await managers(2)
    const [stop, done] = gate()
    const started = performance.now()
    const held = a!.request('capped', { zaris: { ttl: 200, autoRenew: false } }, async () => stop)
    const err = (await held.catch((e: unknown) => e)) as DOMException & { cause?: { code: string } }
    const ended = performance.now() - started
    expect(err.name).toBe('AbortError')
    expect(err.cause?.code).toBe('EXPIRED')
    expect(ended).toBeGreaterThanOrEqual(150)
    expect(ended).toBeLessThan(2_000)
    expect(await b!.request('capped', (lock) => lock!.mode)).toBe('exclusive')
    done()
  })

  test('bad zaris options are zaris errors (INVALID_ARGUMENT) naming the option', async () => {
    const [locks] = await managers(1)
    for (const zaris of [1, null, { ttl: 0 }, { ttl: 'soon' }, { autoRenew: 'yes' }]) {
      const err = await locks!.request('x', { zaris } as object, () => 'ran').catch((e: unknown) => e)
      expect(isZarisError(err, 'INVALID_ARGUMENT')).toBe(true)
      expect((err as Error).message).toMatch(/options\.zaris/)
    }
  })
})

describe('names and the prefix', () => {
  test('any DOMString is a name: given back unchanged by lock.name and query(), stored under the documented key', async () => {
    const [locks] = await managers(1)
    const client = locks!.client
    // name -> the key it is stored under (docs/web-locks.md, "Names").
    const cases: Array<[string, string]> = [
      ['plain', 'plain'],
      ['', '\uFFFD'],
      ['\uD800', '\uFFFD\uFFFDD800'],
      ['\uDC00\uD800', '\uFFFD\uFFFDDC00\uFFFDD800'],
      ['\uD83D\uDE00 ok', '\uD83D\uDE00 ok'],
      ['\uFFFD', '\uFFFD\uFFFDFFFD'],
      ['a\uFFFDD800', '\uFFFDa\uFFFDFFFDD800'],
      ['\u0001own', '\uFFFD\u0001own'],
      ['x\uD800\u0001', '\uFFFDx\uFFFDD800\u0001'],
    ]
    for (const [name, key] of cases) {
      const seen = await locks!.request(name, async (lock) => ({ name: lock!.name, held: (await locks!.query()).held.map((h) => h.name), holder: (await client.locks.holder(key))?.owner }))
      expect(seen, JSON.stringify(name)).toEqual({ name, held: [name], holder: 'c0' })
    }
    // Distinct names never share a key: each holds while the others are asked for.
    const all = cases.map(([name]) => name)
    const nested = async (i: number): Promise<number> => (i === all.length ? (await locks!.query()).held.length : locks!.request(all[i]!, () => nested(i + 1)))
    expect(await nested(0)).toBe(all.length)
  })

  test('a name too long for a zaris key once encoded (with the prefix) is refused as INVALID_ARGUMENT saying its length; one that fits works', async () => {
    const [locks] = await managers(1)
    const [prefixed] = await managers(1, 'app/')
    expect(await locks!.request('x'.repeat(1024), (lock) => lock!.name.length)).toBe(1024)
    expect(await prefixed!.request('x'.repeat(1020), (lock) => lock!.name.length)).toBe(1020)
    // 204 lone surrogates take 1 + 204 * 5 = 1021 units; 205 take 1026.
    expect(await locks!.request('\uDC00'.repeat(204), (lock) => lock!.name.length)).toBe(204)
    const refused: Array<[typeof locks, string, RegExp]> = [
      [locks, 'x'.repeat(1025), /1025 UTF-16 code units long; a zaris key holds 1024/],
      [prefixed, 'x'.repeat(1021), /1025 UTF-16 code units long with its prefix "app\/"/],
      [locks, '\uDC00'.repeat(205), /1026 UTF-16 code units long once encoded/],
    ]
    for (const [manager, name, message] of refused) {
      let ran = false
      const err = await manager!.request(name, () => (ran = true)).catch((e: unknown) => e)
      expect(isZarisError(err, 'INVALID_ARGUMENT')).toBe(true)
      expect((err as Error).message).toMatch(message)
      expect(ran).toBe(false)
    }
  })

  test('the prefix keeps names apart from other keys: query lists only its own, by name', async () => {
    const [app, plain] = await managers(2, 'app/')
    await plain!.client.locks.acquire('other', { ttl: 10_000 })
    const state = await app!.request('job', async () => app!.query())
    expect(state).toEqual({ held: [{ name: 'job', mode: 'exclusive', clientId: 'c0' }], pending: [] })
    expect(await app!.client.locks.holder('app/job')).toBeUndefined()
  })

  test('without a prefix the name is the key: client.locks sees the lock, and a lock taken there keeps the request waiting', async () => {
    const [locks] = await managers(1)
    const client = locks!.client
    const holder = await locks!.request('shared-key', async () => client.locks.holder('shared-key'))
    expect(holder).toMatchObject({ owner: 'c0', mode: 'exclusive' })
    const plain = (await client.locks.acquire('shared-key', { ttl: 10_000 }))!
    let granted = false
    const waiting = locks!.request('shared-key', () => (granted = true))
    await sleep(50)
    expect(granted).toBe(false)
    await plain.release()
    await waiting
    expect(granted).toBe(true)
  })
})

test("a WebLocks is a LockManager to TypeScript (lib.dom): code typed for navigator.locks takes it as it is", async () => {
  const [ours] = await managers(1)
  // Checked by the compiler (npm run typecheck): no cast.
  const locks: LockManager = ours!
  const seen = await locks.request('typed', { mode: 'shared' }, async (lock: Lock | null) => `${lock!.name} ${lock!.mode}`)
  expect(seen).toBe('typed shared')
  expect((await locks.query()).held).toEqual([])
})

describe('the client', () => {
  test('closing the client ends a held lock (AbortError, cause CLOSED) and rejects a waiting request', async () => {
    const [locks] = await managers(1)
    const [, never] = gate()
    let running = false
    const held = locks!.request('c', () => {
      running = true
      return new Promise(() => {})
    })
    await until(() => running)
    const waiting = locks!.request('c', () => 'ran')
    await until(async () => (await locks!.client.locks.query()).pending.length === 1)
    await locks!.client.close()
    const [h, w] = (await Promise.all([held.catch((e: unknown) => e), waiting.catch((e: unknown) => e)])) as Array<Error & { cause?: { code: string } }>
    expect(h!.name).toBe('AbortError')
    expect(h!.cause?.code).toBe('CLOSED')
    expect(isZarisError(w, 'CLOSED')).toBe(true)
    never()
  })
})

test('a signal kept for many requests keeps no listener of those that ended, however they ended', async () => {
  const [locks, other] = await managers(2)
  const signal = new AbortController().signal
  await locks!.request('kept', { signal }, () => 'granted')
  const closed = webLocks(other!.client)
  await other!.client.close()
  for (let i = 0; i < 5; i++) expect(isZarisError(await closed.request('kept', { signal }, () => 'ran').catch((e: unknown) => e), 'CLOSED')).toBe(true)
  expect(getEventListeners(signal, 'abort')).toHaveLength(0)
})

/**
 * An adapter whose commits can be held back (a fake pause of one client, named so): a waiter
 * that stands in line but cannot take the lock, as a frozen tab or a stopped process. Its
 * takes are not parked at the store (the capability hidden): it takes after the event.
 */
function pausable(inner: Adapter): { adapter: Adapter; pause(): void; resume(): void } {
  let gate: Promise<void> | undefined
  let open = () => {}
  const commit: Adapter['commit'] = async (checks, ops, options) => {
    while (gate) await gate
    return inner.commit(checks, ops, options)
  }
  const adapter = new Proxy(inner, {
    get(target, p) {
      if (p === 'commit') return commit
      if (p === 'capabilities') return { ...target.capabilities, commitOnChange: false, keepParked: false, handover: false }
      const v = Reflect.get(target, p, target) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
  return { adapter, pause: () => void (gate = new Promise((r) => (open = r))), resume: () => ((gate = undefined), open()) }
}

describe('a release and the waiters it lets through', () => {
  /** A holder of 'k' on one client, a waiter in line on another whose commits are paused from then on. */
  async function frozenWaiter() {
    const [locks] = await managers(1)
    const inner = await connect(`zaris://inproc/web-locks-extras-${n}`, { id: 'frozen-inner' })
    opened.push(inner)
    const slow = pausable(inner.adapter)
    const frozen = new Client(slow.adapter, { id: 'frozen' })
    const [letGo, release] = gate()
    const [holding, held] = gate()
    const holder = locks!.request('k', () => (held(), letGo))
    await holding
    const waiter = webLocks(frozen).request('k', () => 'granted at last')
    await until(async () => (await locks!.query()).pending.length === 1)
    slow.pause()
    return { locks: locks!, holder, release, waiter, slow, frozen }
  }

  test(`a frozen waiter holds up the request that released for ${GRANT_WAIT} ms at most; it is granted once it wakes`, async () => {
    const { holder, release, waiter, slow, frozen } = await frozenWaiter()
    const started = performance.now()
    release()
    await holder
    const waited = performance.now() - started
    expect(waited).toBeGreaterThanOrEqual(GRANT_WAIT - 50)
    expect(waited).toBeLessThan(GRANT_WAIT + 2_000)
    slow.resume()
    expect(await waiter).toBe('granted at last')
    await frozen.close()
  })

  test('closing the client while its request waits for the grants settles the request at once', async () => {
    const { locks, holder, release, waiter, slow, frozen } = await frozenWaiter()
    release()
    await sleep(100)
    const closing = performance.now()
    await locks.client.close()
    await holder
    expect(performance.now() - closing).toBeLessThan(GRANT_WAIT / 2)
    slow.resume()
    expect(await waiter).toBe('granted at last')
    await frozen.close()
  })
})

function gate(): [Promise<void>, () => void] {
  let open!: () => void
  return [new Promise<void>((r) => (open = r)), () => open()]
}

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return
    await sleep(5)
  }
  throw new Error('the condition never held')
}
