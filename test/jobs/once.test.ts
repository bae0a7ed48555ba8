/**
 * `client.jobs.once` on the memory store, time moved by hand: what each call
 * resolves, what the slot's record says after it, and the paths a run takes
 * when its holder freezes or dies (a client whose own clock stands still
 * while the store's runs on: it neither renews nor notices its deadline, as
 * a stopped process) — retried once by the next call, never twice, and
 * unable to write once another run took over.
 */
import { describe, expect, test } from 'vitest'
import { Client, isZarisError, type Adapter, type Lock } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { ManualClock } from 'zaris/testing'
import { held as gate } from '../conformance/jobs.case'

let n = 0
function setup() {
  const store = new ManualClock()
  const namespace = `jobs-${++n}`
  /** A client on the shared store; `frozen` gives it a clock of its own that the test never moves. */
  const client = (id: string, frozen = false) => new Client(memoryAdapter({ namespace, clock: store }), { id, clock: frozen ? new ManualClock() : store })
  return { store, client }
}

describe('one call per slot', () => {
  test('the first call runs and records done; a later call skips it, naming who ran it', async () => {
    const { client } = setup()
    const a = client('a')
    const b = client('b')
    const first = await a.jobs.once('report', '2024-06-01', (lock) => ({ rows: 3, token: lock.token }))
    expect(first).toMatchObject({ status: 'ran', value: { rows: 3 }, attempt: 1 })
    const token = (first as { token: number }).token
    expect((first as { value: { token: number } }).value.token).toBe(token)
    expect(await a.jobs.record('report', '2024-06-01')).toEqual({ state: 'done', by: 'a', token, attempt: 1 })
    expect(await b.jobs.once('report', '2024-06-01', () => 'again')).toEqual({ status: 'skipped', state: 'done', by: 'a', token })
    // The lock is released after the run; the record is no user key.
    expect(await b.locks.holder('report@2024-06-01')).toBeUndefined()
    expect(await b.list('')).toEqual([])
    // Another slot, or another job, is another run.
    expect(await b.jobs.once('report', '2024-06-02', () => 2)).toMatchObject({ status: 'ran', value: 2 })
    expect(await b.jobs.once('other', '2024-06-01', () => 3)).toMatchObject({ status: 'ran', value: 3 })
    await Promise.all([a.close(), b.close()])
  })

  test('a call while the slot runs elsewhere skips it as running, by the holder, with its token', async () => {
    const { client } = setup()
    const a = client('a')
    const b = client('b')
    const g = gate(() => 'a')
    const running = a.jobs.once('report', 's1', g.fn)
    const lock = await g.running
    expect(await b.jobs.once('report', 's1', () => 'b')).toEqual({ status: 'skipped', state: 'running', by: 'a', token: lock.token })
    expect(await b.jobs.record('report', 's1')).toEqual({ state: 'started', by: 'a', token: lock.token, attempt: 1 })
    g.finish()
    expect(await running).toMatchObject({ status: 'ran', value: 'a' })
    await Promise.all([a.close(), b.close()])
  })

  test('twenty clients fire one slot at once: one runs, every other skips (running or done)', async () => {
    const { client } = setup()
    const clients = Array.from({ length: 20 }, (_, i) => client(`c${i}`))
    let runs = 0
    const results = await Promise.all(clients.map((c) => c.jobs.once('tick', 42, async () => ++runs)))
    expect(runs).toBe(1)
    expect(results.filter((r) => r.status === 'ran')).toHaveLength(1)
    const winner = results.find((r) => r.status === 'ran')!
    for (const r of results.filter((x) => x.status !== 'ran')) expect(r).toMatchObject({ status: 'skipped', token: winner.token })
    await Promise.all(clients.map((c) => c.close()))
  })

  test('a slot may be a Date (its ISO string) or a number', async () => {
    const { client } = setup()
    const a = client('a')
    const at = new Date('2024-06-01T03:00:00Z')
    await a.jobs.once('report', at, () => 1)
    expect(await a.jobs.record('report', '2024-06-01T03:00:00.000Z')).toMatchObject({ state: 'done' })
    await a.jobs.once('tick', 7, () => 1)
    expect(await a.jobs.record('tick', '7')).toMatchObject({ state: 'done' })
    await a.close()
  })
})

/** An adapter whose first `get` is answered only when `gets` lets it go, and whose first granted commit waits for `afterTake` (both once). */
function staged(inner: Adapter) {
  const stage: { gets?: Promise<void>; afterTake?: () => Promise<void> } = {}
  const get: Adapter['get'] = async (key) => {
    const entry = await inner.get(key)
    const held = stage.gets
    stage.gets = undefined
    if (held) await held
    return entry
  }
  const commit: Adapter['commit'] = async (checks, ops, options) => {
    const r = await inner.commit(checks, ops, options)
    const after = r.ok ? stage.afterTake : undefined
    if (after) {
      stage.afterTake = undefined
      await after()
    }
    return r
  }
  const adapter = new Proxy(inner, {
    get(target, prop) {
      if (prop === 'get') return get
      if (prop === 'commit') return commit
      const v = Reflect.get(target, prop) as unknown
      return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v
    },
  })
  return { adapter, stage }
}

describe('a late look', () => {
  test('a call that looked before the run ended and finds the lock held by another late caller letting it go reports the run, not that caller', async () => {
    const store = new ManualClock()
    const namespace = `jobs-${++n}`
    const client = (id: string, adapter: Adapter = memoryAdapter({ namespace, clock: store })) => new Client(adapter, { id, clock: store })
    const y = staged(memoryAdapter({ namespace, clock: store }))
    const z = staged(memoryAdapter({ namespace, clock: store }))
    let letY!: () => void
    let letZ!: () => void
    y.stage.gets = new Promise<void>((resolve) => (letY = resolve))
    z.stage.gets = new Promise<void>((resolve) => (letZ = resolve))
    const [a, cy, cz] = [client('a'), client('y', y.adapter), client('z', z.adapter)]
    // y and z both look while nothing is recorded; a runs the slot to its end meanwhile.
    const yCall = cy.jobs.once('job', 'x', () => 'y')
    const zCall = cz.jobs.once('job', 'x', () => 'z')
    await new Promise((resolve) => setTimeout(resolve, 10))
    const ran = await a.jobs.once('job', 'x', () => 'a')
    expect(ran).toMatchObject({ status: 'ran', value: 'a' })
    // y takes the freed lock on its stale look; while it holds it (about to find the slot done), z tries.
    let zResult: unknown
    y.stage.afterTake = async () => {
      letZ()
      zResult = await zCall
    }
    letY()
    expect(await yCall).toEqual({ status: 'skipped', state: 'done', by: 'a', token: ran.token })
    expect(zResult).toEqual({ status: 'skipped', state: 'done', by: 'a', token: ran.token })
    await Promise.all([a.close(), cy.close(), cz.close()])
  })
})

describe('failures and retries', () => {
  test('a run that throws is failed with its error and recorded; the next call retries it once; then the slot is done', async () => {
    const { client } = setup()
    const a = client('a')
    const b = client('b')
    const boom = new Error('disk full')
    const first = await a.jobs.once('report', 's', () => Promise.reject(boom))
    expect(first).toMatchObject({ status: 'failed', error: boom, attempt: 1 })
    expect(await a.jobs.record('report', 's')).toMatchObject({ state: 'failed', by: 'a', attempt: 1, error: 'Error: disk full' })
    const retry = await b.jobs.once('report', 's', () => 'ok')
    expect(retry).toMatchObject({ status: 'ran', value: 'ok', attempt: 2 })
    expect(retry.token).toBeGreaterThan(first.token)
    expect(await a.jobs.once('report', 's', () => 'again')).toMatchObject({ status: 'skipped', state: 'done', by: 'b' })
    await Promise.all([a.close(), b.close()])
  })

  test('a retry that fails too spends the slot: later calls skip it as failed', async () => {
    const { client } = setup()
    const a = client('a')
    await a.jobs.once('report', 's', () => Promise.reject(new Error('one')))
    expect(await a.jobs.once('report', 's', () => Promise.reject(new Error('two')))).toMatchObject({ status: 'failed', attempt: 2 })
    const r = await a.jobs.record('report', 's')
    expect(r).toMatchObject({ state: 'failed', attempt: 2, error: 'Error: two' })
    expect(await a.jobs.once('report', 's', () => 'three')).toEqual({ status: 'skipped', state: 'failed', by: 'a', token: r!.token })
    await a.close()
  })

  test('retries: 0 never runs a failed slot again; retries: 3 runs it up to four times', async () => {
    const { client } = setup()
    const a = client('a')
    await a.jobs.once('j', 'zero', () => Promise.reject(new Error('x')), { retries: 0 })
    expect(await a.jobs.once('j', 'zero', () => 1, { retries: 0 })).toMatchObject({ status: 'skipped', state: 'failed' })
    let calls = 0
    for (let i = 0; i < 6; i++) await a.jobs.once('j', 'three', () => Promise.reject(new Error(`x${++calls}`)), { retries: 3 })
    expect(calls).toBe(4)
    expect(await a.jobs.record('j', 'three')).toMatchObject({ state: 'failed', attempt: 4, error: 'Error: x4' })
    await a.close()
  })

  test('a holder that froze past its TTL: the next call retries (attempt 2, a new token); the frozen run cannot write, and is told so', async () => {
    const { store, client } = setup()
    const frozen = client('frozen', true)
    const b = client('b')
    const g = gate(async (lock) => {
      await frozen.put('report:out', 'frozen', { fence: lock })
      return 'frozen'
    })
    const first = frozen.jobs.once('report', 's', g.fn, { ttl: 1_000 })
    const lock = await g.running
    // Still running, by the store's clock: skipped.
    expect(await b.jobs.once('report', 's', () => 'b')).toMatchObject({ status: 'skipped', state: 'running', by: 'frozen' })
    await store.advance(1_001) // the frozen client neither renewed nor noticed: its lock expired in the store
    const retry = await b.jobs.once('report', 's', async (l) => {
      await b.put('report:out', 'b', { fence: l })
      return 'b'
    })
    expect(retry).toMatchObject({ status: 'ran', value: 'b', attempt: 2 })
    expect(retry.token).toBeGreaterThan(lock.token)
    g.finish() // the frozen run goes on: its fenced write is refused, and so is its outcome
    const late = await first
    expect(late).toMatchObject({ status: 'failed', token: lock.token, attempt: 1 })
    expect(isZarisError((late as { error: unknown }).error, 'FENCED')).toBe(true)
    expect((await b.get('report:out'))?.value).toBe('b')
    expect(await b.jobs.record('report', 's')).toMatchObject({ state: 'done', by: 'b', attempt: 2 })
    await Promise.all([frozen.close(), b.close()])
  })

  test('a frozen run that writes nothing and returns is failed with the reason its hold ended (the record is not touched)', async () => {
    const { store, client } = setup()
    const frozen = client('frozen', true)
    const b = client('b')
    const g = gate(() => 'done?')
    const first = frozen.jobs.once('report', 's', g.fn, { ttl: 1_000 })
    const lock = await g.running
    void lock.signal // the run watches its lock, as a job that stops on abort does
    await store.advance(1_001)
    g.finish()
    const late = await first
    expect(late.status).toBe('failed')
    expect((late as { error: { code?: string } }).error.code).toBe('EXPIRED')
    // Its outcome was refused: the record still says started, so the next call counts it as failed and retries.
    expect(await b.jobs.record('report', 's')).toMatchObject({ state: 'started', by: 'frozen', attempt: 1 })
    expect(await b.jobs.once('report', 's', () => 'b')).toMatchObject({ status: 'ran', attempt: 2 })
    await Promise.all([frozen.close(), b.close()])
  })

  test('a dead run whose retry died too is recorded failed by the next call, which skips it', async () => {
    const { store, client } = setup()
    const d1 = client('dead-1', true)
    const d2 = client('dead-2', true)
    const c = client('c')
    const g1 = gate()
    void d1.jobs.once('job', 's', g1.fn, { ttl: 1_000 })
    await g1.running
    await store.advance(1_001)
    const g2 = gate()
    void d2.jobs.once('job', 's', g2.fn, { ttl: 1_000 })
    const second = await g2.running
    await store.advance(1_001)
    let ran = false
    expect(await c.jobs.once('job', 's', () => (ran = true))).toEqual({ status: 'skipped', state: 'failed', by: 'dead-2', token: second.token })
    expect(ran).toBe(false)
    expect(await c.jobs.record('job', 's')).toMatchObject({ state: 'failed', by: 'dead-2', attempt: 2, error: expect.stringMatching(/ended without writing its outcome/) })
    await Promise.all([d1.close(), d2.close(), c.close()])
  })
})

describe('waiting for a run under way', () => {
  test('with wait, a call waits for the running slot: done -> skipped; its holder died -> this call runs the retry', async () => {
    const { store, client } = setup()
    const a = client('a')
    const b = client('b')
    const g = gate(() => 'a')
    const running = a.jobs.once('j', 'done', g.fn)
    await g.running
    const waiting = b.jobs.once('j', 'done', () => 'b', { wait: 60_000 })
    await store.advance(10)
    g.finish()
    expect(await running).toMatchObject({ status: 'ran' })
    expect(await waiting).toMatchObject({ status: 'skipped', state: 'done', by: 'a' })

    const dead = client('dead', true)
    const gd = gate()
    void dead.jobs.once('j', 'died', gd.fn, { ttl: 1_000 })
    await gd.running
    const retrying = b.jobs.once('j', 'died', () => 'b', { wait: 60_000 })
    await store.advance(1_500)
    expect(await retrying).toMatchObject({ status: 'ran', value: 'b', attempt: 2 })
    await Promise.all([a.close(), b.close(), dead.close()])
  })

  test('a wait that runs out skips as running; an aborted wait rejects with the reason', async () => {
    const { store, client } = setup()
    const a = client('a')
    const b = client('b')
    const g = gate()
    void a.jobs.once('j', 's', g.fn)
    await g.running
    const out = b.jobs.once('j', 's', () => 'b', { wait: 500 })
    await store.advance(600)
    expect(await out).toMatchObject({ status: 'skipped', state: 'running', by: 'a' })
    const ac = new AbortController()
    const aborted = b.jobs.once('j', 's', () => 'b', { wait: Infinity, signal: ac.signal })
    ac.abort(new Error('shutting down'))
    await expect(aborted).rejects.toThrow('shutting down')
    g.finish()
    await Promise.all([a.close(), b.close()])
  })
})

describe('bad input is refused at the call', () => {
  test.each([
    ['an empty name', () => ['', 's', () => 1], /name must not be empty/],
    ['a name with @', () => ['a@b', 's', () => 1], /name must not contain "@"/],
    ['a reserved name', () => ['\u0001x', 's', () => 1], /must not start with U\+0001/],
    ['an empty slot', () => ['j', '', () => 1], /slot must not be empty/],
    ['an invalid Date', () => ['j', new Date(NaN), () => 1], /slot must be a string, a finite number or a valid Date/],
    ['an object slot', () => ['j', {}, () => 1], /slot must be a string/],
    ['a lone surrogate', () => ['j', '\uD800', () => 1], /lone surrogate/],
    ['a slot too long', () => ['j', 'x'.repeat(1022), () => 1], /slot must be at most 1020/],
    ['no function', () => ['j', 's', 'run'], /needs a function/],
    ['ttl 0', () => ['j', 's', () => 1, { ttl: 0 }], /ttl must be a positive/],
    ['retention under ttl', () => ['j', 's', () => 1, { ttl: 5_000, retention: 1_000 }], /retention \(1000 ms\) must be at least the lock's ttl/],
    ['retries -1', () => ['j', 's', () => 1, { retries: -1 }], /retries must be an integer from 0 to 100/],
    ['retries 1.5', () => ['j', 's', () => 1, { retries: 1.5 }], /retries must be an integer/],
    ['wait -1', () => ['j', 's', () => 1, { wait: -1 }], /wait must be/],
    ['options not an object', () => ['j', 's', () => 1, 'fast'], /options must be an object/],
  ] as const)('%s', async (_, args, message) => {
    const { client } = setup()
    const a = client('a')
    const call = (a.jobs.once as (...x: unknown[]) => Promise<unknown>)(...args())
    await expect(call).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) })
    expect(await a.list('')).toEqual([])
    await a.close()
  })

  test('a closed client refuses, and nothing runs', async () => {
    const { client } = setup()
    const a = client('a')
    await a.close()
    let ran = false
    await expect(a.jobs.once('j', 's', () => (ran = true))).rejects.toMatchObject({ code: 'CLOSED' })
    expect(ran).toBe(false)
  })
})

describe('resources', () => {
  /** The memory adapter, counting the watches open on it. */
  function counting(inner: Adapter) {
    let open = 0
    const adapter: Adapter = {
      name: `${inner.name} (watches counted)`,
      get: (k) => inner.get(k),
      list: (p, o) => inner.list(p, o),
      commit: (c, o, x) => inner.commit(c, o, x),
      close: () => inner.close(),
      async watch(p, sink, from) {
        const un = await inner.watch(p, sink, from)
        open++
        let closed = false
        return () => {
          if (!closed) open--
          closed = true
          un()
        }
      },
    }
    return { adapter, open: () => open }
  }

  test('calls that wait in the line, run, throw and skip leave no watch open', async () => {
    const { store } = setup()
    const namespace = `jobs-watches-${++n}`
    const made = Array.from({ length: 6 }, (_, i) => {
      const c = counting(memoryAdapter({ namespace, clock: store }))
      return { ...c, client: new Client(c.adapter, { id: `c${i}`, clock: store }) }
    })
    for (let slot = 0; slot < 8; slot++) {
      const calls = made.map(({ client }, i) =>
        client.jobs.once(
          'j',
          slot,
          async (lock) => {
            void lock.signal // watched while it runs, as a job that stops on abort is
            await new Promise((r) => setTimeout(r, 5))
            if (i % 3 === 0 && slot % 2 === 0) throw new Error('no')
          },
          { ttl: 500, wait: 2_000 },
        ),
      )
      await Promise.all(calls)
    }
    expect(made.map((m) => m.open())).toEqual(made.map(() => 0))
    await Promise.all(made.map((m) => m.client.close()))
  })
})
