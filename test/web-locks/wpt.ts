/**
 * The web-platform-tests `web-locks/*.any.js` subtests — acquire, held,
 * ifAvailable, mode-exclusive, mode-mixed, mode-shared, query-empty, query,
 * resource-names, signal, steal: 68 in all — each one test here, named as
 * the WPT names it, asserting what it asserts (written for this project
 * from the public files' cases, not copied). They run against any
 * `LockManager`: Chromium's own `navigator.locks`, and zaris/web-locks on
 * every store. Where a WPT case uses fixed names ('a', 'b') or the whole
 * snapshot, these use names of their own and filter the snapshot by name,
 * as the stores and the browser are shared by the other tests; where it
 * uses a worker as another context, these use the fixture's other context.
 */
import { describe, expect, test } from 'vitest'
import { bg, clientsOf, gate, modes, rejection, snooze, unique, until, withContext, type AnyLock, type AnyLockManager, type TestContext, type WebLocksFixture } from './helpers'

/** How many subtests the WPT `.any.js` files named above hold; every one is a test below. */
export const WPT_SUBTESTS = 68

/** Own properties, as the WPT's `assert_own_property`. */
const own = (o: object | undefined, p: string) => o !== undefined && Object.prototype.hasOwnProperty.call(o, p)

export function wptCases(open: () => Promise<WebLocksFixture>): void {
  const on = (fn: (t: TestContext) => Promise<void>) => withContext(open, fn)
  const any = (locks: AnyLockManager) => locks as unknown as { request(...args: unknown[]): Promise<unknown> }

  describe('web-platform-tests web-locks/*.any.js', () => {
    describe('query-empty', () => {
      test('query() returns dictionary with empty arrays when no locks are held', on(async ({ locks, empty }) => {
        const state = await (empty ? await empty() : locks).query()
        expect(own(state, 'pending') && own(state, 'held')).toBe(true)
        expect([state.pending, state.held]).toEqual([[], []])
      }))
    })

    describe('acquire', () => {
      test('navigator.locks.request requires a name and a callback', on(async ({ locks }) => {
        expect(await rejection(any(locks).request())).toBe('TypeError')
        expect(await rejection(any(locks).request(unique('a')))).toBe('TypeError')
      }))
      test('mode must be "shared" or "exclusive"', on(async ({ locks }) => {
        const res = unique('mode')
        expect(await rejection(locks.request(res, { mode: 'foo' }, () => {}))).toBe('TypeError')
        expect(await rejection(locks.request(res, { mode: null }, () => {}))).toBe('TypeError')
        expect(await locks.request(res, { mode: 'exclusive' }, (lock) => lock!.mode)).toBe('exclusive')
        expect(await locks.request(res, { mode: 'shared' }, (lock) => lock!.mode)).toBe('shared')
      }))
      const refused: Array<[string, (signal: AbortSignal) => object]> = [
        ["The 'steal' and 'ifAvailable' options are mutually exclusive", () => ({ steal: true, ifAvailable: true })],
        ["The 'steal' option must be used with exclusive locks", () => ({ mode: 'shared', steal: true })],
        ["The 'signal' and 'steal' options are mutually exclusive", (signal) => ({ signal, steal: true })],
        ["The 'signal' and 'ifAvailable' options are mutually exclusive", (signal) => ({ signal, ifAvailable: true })],
      ]
      for (const [name, options] of refused) {
        test(name, on(async ({ locks }) => {
          expect(await rejection(locks.request(unique('ns'), options(new AbortController().signal), () => {}))).toBe('NotSupportedError')
        }))
      }
      test('callback must be a function', on(async ({ locks }) => {
        const res = unique('cb')
        for (const cb of [undefined, null, 123, 'abc', [], {}, new Promise(() => {})]) expect(await rejection(any(locks).request(res, cb))).toBe('TypeError')
      }))
      test("navigator.locks.request's returned promise resolves after lock is released", on(async ({ locks }) => {
        const [promise, release] = gate()
        const returned = locks.request(unique('order'), () => promise)
        const order: string[] = []
        void returned.then(() => order.push('returned'))
        void promise.then(() => order.push('holding'))
        release()
        await Promise.all([returned, promise])
        expect(order).toEqual(['holding', 'returned'])
      }))
      for (const how of ['synchronously', 'asynchronously'] as const) {
        test(`Returned Promise rejects if callback throws ${how}`, on(async ({ locks }) => {
          const error = { name: 'test' }
          const p = locks.request(unique('throw'), how === 'synchronously' ? () => { throw error } : async () => { throw error })
          expect(Promise.resolve(p)).toBe(p)
          await expect(p).rejects.toBe(error)
        }))
      }
      test('If callback throws a thenable, its then() should not be invoked', on(async ({ locks }) => {
        let thenInvoked = false
        const error = { then: () => { thenInvoked = true } }
        const p = locks.request(unique('thenable'), async () => { throw error })
        expect(Promise.resolve(p)).toBe(p)
        await expect(p.then(() => 'fulfilled', (e: unknown) => e === error)).resolves.toBe(true)
        expect(thenInvoked).toBe(false)
      }))
    })

    describe('held', () => {
      test("callback's result is promisified if not async", on(async ({ locks }) => {
        const p = locks.request(unique('h'), () => 123)
        expect(Promise.resolve(p)).toBe(p)
        expect(await p).toBe(123)
      }))
      for (const settles of ['resolves', 'rejects'] as const) {
        test(`lock is held until callback's returned promise ${settles}`, on(async ({ locks }) => {
          const res = unique('h')
          const [granted, grant] = gate()
          let settle!: () => void
          const holding = new Promise<void>((resolve, reject) => (settle = settles === 'resolves' ? resolve : () => reject(new Error('expected'))))
          bg(locks.request(res, () => {
            grant()
            return holding
          }))
          await granted
          const order: string[] = []
          await Promise.all([
            snooze(50).then(() => {
              order.push(settles === 'resolves' ? '1st lock released' : 'reject')
              settle()
            }),
            locks.request(res, () => order.push('2nd lock granted')),
          ])
          expect(order).toEqual([settles === 'resolves' ? '1st lock released' : 'reject', '2nd lock granted'])
        }))
      }
      test('held lock prevents the same client from acquiring it', on(async ({ locks }) => {
        const res = unique('h')
        let called = false
        await locks.request(res, async () => locks.request(res, { ifAvailable: true }, (lock) => {
          called = true
          expect(lock).toBeNull()
        }))
        expect(called).toBe(true)
      }))
    })

    describe('ifAvailable', () => ifAvailableCases(on))

    describe('mode-exclusive', () => {
      test('Lock requests are granted in order', on(async ({ locks }) => {
        const res = unique('ex')
        const granted: number[] = []
        await Promise.all([1, 2, 3].map((n) => locks.request(res, () => granted.push(n))))
        expect(granted).toEqual([1, 2, 3])
      }))
      test('Requests for distinct resources can be granted', on(async ({ locks }) => {
        const [a, b] = [unique('ex-a'), unique('ex-b')]
        const granted: number[] = []
        let inner: Promise<unknown> | undefined
        await locks.request(a, async () => {
          inner = Promise.all([locks.request(a, () => granted.push(1)), locks.request(b, () => granted.push(2))])
        })
        await inner
        expect(granted).toEqual([2, 1])
      }))
    })

    describe('mode-shared', () => {
      test('Lock requests are granted in order', on(async ({ locks }) => {
        const [a, b, c] = [unique('sh-a'), unique('sh-b'), unique('sh-c')]
        const granted: number[] = []
        await Promise.all([a, b, c, a, b, c].map((name, i) => locks.request(name, { mode: 'shared' }, () => granted.push(i + 1))))
        expect(granted).toEqual([1, 2, 3, 4, 5, 6])
      }))
      test('Shared locks are not exclusive', on(async ({ locks }) => {
        const res = unique('sh')
        let [first, again] = [false, false]
        await locks.request(res, { mode: 'shared' }, async () => {
          first = true
          await locks.request(res, { mode: 'shared' }, () => (again = true))
        })
        expect([first, again]).toEqual([true, true])
      }))
    })

    describe('mode-mixed', () => modeMixedCases(on))
    describe('query', () => queryCases(on))
    describe('resource-names', () => resourceNameCases(on))
    describe('signal', () => signalCases(on))
    describe('steal', () => stealCases(on))
  })
}

type On = (fn: (t: TestContext) => Promise<void>) => () => Promise<void>

function ifAvailableCases(on: On): void {
  /** `request(res, options, cb)` inside a held `outer` lock of `res`, the callback's lock seen: granted or null. */
  const inside = (outer: object, inner: object, expected: 'granted' | 'null') =>
    on(async ({ locks }) => {
      const res = unique('ia')
      let seen: AnyLock | null | undefined
      await locks.request(res, outer, async () => locks.request(res, inner, (lock) => (seen = lock)))
      expect(seen === undefined ? 'not called' : seen === null ? 'null' : 'granted').toBe(expected)
    })
  test('Lock request with ifAvailable - lock available', on(async ({ locks }) => {
    let seen: AnyLock | null | undefined
    await locks.request(unique('ia'), { ifAvailable: true }, (lock) => (seen = lock))
    expect(seen).toBeTruthy()
  }))
  test('Lock request with ifAvailable - lock not available', on(async ({ locks }) => {
    const res = unique('ia')
    const result = await locks.request(res, async () => locks.request(res, { ifAvailable: true }, async (lock) => (lock === null ? 123 : 'granted')))
    expect(result).toBe(123)
  }))
  test('Lock request with ifAvailable - lock not available, callback throws', on(async ({ locks }) => {
    const res = unique('ia')
    const thrown = await locks.request(res, async () => locks.request(res, { ifAvailable: true }, async (lock) => {
      throw lock === null ? 123 : 'granted'
    }).catch((e: unknown) => e))
    expect(thrown).toBe(123)
  }))
  test('Lock request with ifAvailable - unrelated lock held', on(async ({ locks }) => {
    let seen: AnyLock | null | undefined
    await locks.request(unique('ia'), async () => locks.request(unique('ia-different'), { ifAvailable: true }, (lock) => (seen = lock)))
    expect(seen).toBeTruthy()
  }))
  test('Shared lock request with ifAvailable - shared lock held', inside({ mode: 'shared' }, { mode: 'shared', ifAvailable: true }, 'granted'))
  test('Exclusive lock request with ifAvailable - shared lock held', inside({ mode: 'shared' }, { ifAvailable: true }, 'null'))
  test('Shared lock request with ifAvailable - exclusive lock held', inside({}, { mode: 'shared', ifAvailable: true }, 'null'))
  for (const [name, cb] of [
    ['Returned Promise rejects if callback throws synchronously', (error: object) => (lock: AnyLock | null) => { expect(lock).toBeNull(); throw error }],
    ['Returned Promise rejects if async callback yields rejected promise', (error: object) => async (lock: AnyLock | null) => { expect(lock).toBeNull(); throw error }],
  ] as const) {
    test(name, on(async ({ locks }) => {
      const res = unique('ia')
      await locks.request(res, async () => {
        const error = { name: 'test' }
        const p = locks.request(res, { ifAvailable: true }, cb(error))
        expect(Promise.resolve(p)).toBe(p)
        await expect(p).rejects.toBe(error)
      })
    }))
  }
  test('Locks are available once previous release is processed', on(async ({ locks }) => {
    const [a, b] = [unique('ia-a'), unique('ia-b')]
    const got = await locks.request(a, async () => {
      let called = false
      await locks.request(b, () => (called = true))
      expect(called).toBe(true)
      return locks.request(b, { ifAvailable: true }, (lock) => lock !== null)
    })
    expect(got).toBe(true)
  }))
}

function modeMixedCases(on: On): void {
  test('Lock requests are granted in order', on(async ({ locks }) => {
    const [a, b] = [unique('mx-a'), unique('mx-b')]
    const [blocked, unblock] = gate()
    const granted: string[] = []
    const shared = [1, 2, 3].map((n) => locks.request(a, { mode: 'shared' }, async () => {
      granted.push(`a-shared-${n}`)
      await blocked
    }))
    let exclusiveLock: AnyLock | undefined
    const exclusive = locks.request(a, async (lock) => {
      granted.push('a-exclusive')
      exclusiveLock = lock!
    })
    await locks.request(b, { mode: 'exclusive' }, () => granted.push('b-exclusive'))
    expect(granted).toEqual(['a-shared-1', 'a-shared-2', 'a-shared-3', 'b-exclusive'])
    unblock()
    await exclusive
    expect(exclusiveLock!.mode).toBe('exclusive')
    expect(granted).toEqual(['a-shared-1', 'a-shared-2', 'a-shared-3', 'b-exclusive', 'a-exclusive'])
    await Promise.all(shared)
  }))
  test('Releasing exclusive lock grants multiple shared locks', on(async ({ locks, hold }) => {
    const res = unique('mx-grant')
    const [promise, resolve] = gate()
    const exclusive = locks.request(res, () => promise)
    for (let i = 0; i < 5; i++) bg(hold(res, { mode: 'shared' }))
    let answer = await locks.query()
    expect(modes(answer.held, res), 'an exclusive lock is held').toEqual(['exclusive'])
    expect(modes(answer.pending, res), 'requests for shared locks are pending').toHaveLength(5)
    resolve()
    await exclusive
    answer = await locks.query()
    expect(modes(answer.held, res), 'shared locks are held').toEqual(Array(5).fill('shared'))
  }))
  test('An exclusive lock between shared locks', on(async ({ locks, hold }) => {
    const res = unique('mx-between')
    const [sharedPromise, sharedResolve] = gate()
    const [exclusivePromise, exclusiveResolve] = gate()
    const sharedReleased = Promise.all(Array.from({ length: 5 }, () => locks.request(res, { mode: 'shared' }, () => sharedPromise)))
    const exclusiveReleased = locks.request(res, () => exclusivePromise)
    for (let i = 0; i < 5; i++) bg(hold(res, { mode: 'shared' }))
    let answer = await locks.query()
    expect(modes(answer.held, res), 'shared locks are held').toEqual(Array(5).fill('shared'))
    sharedResolve()
    await sharedReleased
    answer = await locks.query()
    expect(modes(answer.held, res), 'an exclusive lock is held').toEqual(['exclusive'])
    exclusiveResolve()
    await exclusiveReleased
    answer = await locks.query()
    expect(modes(answer.held, res), 'the next shared locks are held').toEqual(Array(5).fill('shared'))
  }))
}

function queryCases(on: On): void {
  /** Inside a held exclusive `res`: a blocked request of `mode`s, an ifAvailable miss, and then `check` of a snapshot. */
  const blockedThenQuery = (blocked: string[], check: (state: Awaited<ReturnType<AnyLockManager['query']>>, res: string) => void) =>
    on(async ({ locks }) => {
      const res = unique('q')
      await locks.request(res, async () => {
        const acquired = blocked.map(() => false)
        blocked.forEach((mode, i) => bg(locks.request(res, { mode }, () => (acquired[i] = true))))
        await locks.request(res, { ifAvailable: true }, async (lock) => {
          expect(lock).toBeNull()
          expect(acquired.some(Boolean)).toBe(false)
          check(await locks.query(), res)
        })
      })
    })
  test('query() returns dictionaries with expected properties', blockedThenQuery(['exclusive'], (state, res) => {
    expect(own(state, 'pending') && Array.isArray(state.pending) && own(state, 'held') && Array.isArray(state.held)).toBe(true)
    for (const info of [state.pending!.find((i) => i.name === res), state.held!.find((i) => i.name === res)]) {
      expect(['name', 'mode', 'clientId'].map((p) => own(info, p))).toEqual([true, true, true])
    }
  }))
  test('query() reports individual held locks', on(async ({ locks }) => {
    const res = unique('q')
    await locks.request(res, async () => expect(modes((await locks.query()).held, res)).toEqual(['exclusive']))
    await locks.request(res, { mode: 'shared' }, async () => expect(modes((await locks.query()).held, res)).toEqual(['shared']))
  }))
  test('query() reports multiple held locks', on(async ({ locks }) => {
    const [a, b] = [unique('q-a'), unique('q-b')]
    await locks.request(a, async () => locks.request(b, { mode: 'shared' }, async () => {
      const state = await locks.query()
      expect([modes(state.held, a), modes(state.held, b)]).toEqual([['exclusive'], ['shared']])
    }))
  }))
  test('query() reports pending and held locks', blockedThenQuery(['exclusive'], (state, res) => {
    expect([modes(state.pending, res), modes(state.held, res)]).toEqual([['exclusive'], ['exclusive']])
  }))
  test('query() reports held shared locks with appropriate count', on(async ({ locks }) => {
    const res = unique('q')
    await locks.request(res, { mode: 'shared' }, async () => locks.request(res, { mode: 'shared' }, async () => {
      expect(modes((await locks.query()).held, res)).toEqual(['shared', 'shared'])
    }))
  }))
  test('query() reports pending shared locks with appropriate count', blockedThenQuery(['shared', 'shared'], (state, res) => {
    expect([modes(state.held, res), modes(state.pending, res)]).toEqual([['exclusive'], ['shared', 'shared']])
  }))
  test('query() reports the same clientId for held locks from the same context', on(async ({ locks }) => {
    const [a, b] = [unique('q-a'), unique('q-b')]
    await locks.request(a, async () => locks.request(b, async () => {
      const state = await locks.query()
      expect([clientsOf(state.held, a).length, clientsOf(state.held, b).length]).toEqual([1, 1])
      expect(clientsOf(state.held, b)).toEqual(clientsOf(state.held, a))
    }))
  }))
  test('query() reports different ids for held locks from different contexts', on(async ({ locks, other }) => {
    const res = unique('q')
    const them = await other()
    const [theirsReleased, releaseTheirs] = gate()
    const [theirsHeld, held] = gate()
    const theirs = them.request(res, { mode: 'shared' }, () => (held(), theirsReleased))
    await theirsHeld
    await locks.request(res, { mode: 'shared' }, async () => {
      const ids = clientsOf((await locks.query()).held, res)
      expect(ids).toHaveLength(2)
      expect(ids[0]).not.toBe(ids[1])
    })
    releaseTheirs()
    await theirs
  }))
  test('query() can observe a deadlock', on(async ({ locks, other }) => {
    const [res1, res2] = [unique('dl-1'), unique('dl-2')]
    const them = await other()
    const [letGo, release] = gate()
    const [theyHold, held] = gate()
    const theirs = them.request(res1, () => (held(), letGo))
    await theyHold
    const [ourHold, ours] = gate()
    const mine = locks.request(res2, () => (ours(), letGo))
    await ourHold
    const theirWait = them.request(res2, () => {})
    await until(async () => modes((await locks.query()).pending, res2).length === 1)
    expect(await them.request(res2, { ifAvailable: true }, (lock) => (lock === null ? 'failed' : 'granted'))).toBe('failed')
    const ourWait = locks.request(res1, () => {})
    const state = await locks.query()
    const [heldBy1, heldBy2, waitFor1, waitFor2] = [clientsOf(state.held, res1), clientsOf(state.held, res2), clientsOf(state.pending, res1), clientsOf(state.pending, res2)]
    expect([heldBy1.length, heldBy2.length, waitFor1.length, waitFor2.length]).toEqual([1, 1, 1, 1])
    expect(heldBy1[0]).toBe(waitFor2[0])
    expect(heldBy2[0]).toBe(waitFor1[0])
    // The WPT leaves the page to end it; here the holders let go.
    release()
    await Promise.all([theirs, mine, theirWait, ourWait])
  }))
}

/** The WPT's name of a string case: its code units in hex. */
const codePoints = (s: string) => [...s].map((c) => `0x${c.charCodeAt(0).toString(16).toUpperCase()}`).join(' ')

function resourceNameCases(on: On): void {
  for (const name of ['', 'abc\x00def', '\uD800', '\uDC00', '\uDC00\uD800', '\uFFFF']) {
    test(`DOMString: ${codePoints(name)}`, on(async ({ locks }) => {
      expect(await locks.request(name, (lock) => lock!.name === name)).toBe(true)
    }))
  }
  test('Resource names that are not valid UTF-16 are not mangled', on(async ({ locks }) => {
    await locks.request('\uD800', async (lock) => {
      expect(lock!.name).toBe('\uD800')
      // Held while '\uFFFD' is asked for: a name mangled to it would wait for ever.
      expect(await locks.request('\uFFFD', (lock2) => lock2!.name)).toBe('\uFFFD')
    })
  }))
  test('Names cannot start with "-"', on(async ({ locks }) => {
    for (const name of ['-', '-foo']) expect(await rejection(locks.request(name, () => {}))).toBe('NotSupportedError')
    expect(await locks.request('x-anything', () => 'granted')).toBe('granted')
  }))
}

function signalCases(on: On): void {
  const never = () => {
    throw new Error('the callback should not run')
  }
  test('The signal option must be an AbortSignal', on(async ({ locks }) => {
    for (const signal of ['string', 12.34, false, {}, Symbol('s'), () => {}, globalThis]) {
      expect(await rejection(locks.request(unique('sig'), { signal }, never))).toBe('TypeError')
    }
  }))
  test('Passing an already aborted signal aborts', on(async ({ locks }) => {
    expect(await rejection(locks.request(unique('sig'), { signal: AbortSignal.abort() }, never))).toBe('AbortError')
  }))
  test('Passing an already aborted signal rejects with the custom abort reason.', on(async ({ locks }) => {
    await expect(locks.request(unique('sig'), { signal: AbortSignal.abort('My dog ate it.') }, never)).rejects.toBe('My dog ate it.')
  }))
  test('Passing an already aborted signal rejects with the default abort reason.', on(async ({ locks }) => {
    const signal = AbortSignal.abort()
    await expect(locks.request(unique('sig'), { signal }, never)).rejects.toBe(signal.reason)
  }))
  for (const when of ['at once', 'after a timeout'] as const) {
    test(when === 'at once' ? 'An aborted request results in AbortError' : 'Abort after a timeout', on(async ({ locks, hold }) => {
      const res = unique('sig')
      bg(hold(res))
      const c = new AbortController()
      const promise = locks.request(res, { signal: c.signal }, when === 'at once' ? never : () => {})
      const state = await locks.query()
      expect([modes(state.held, res).length, modes(state.pending, res).length]).toEqual([1, 1])
      const rejected = rejection(promise)
      let aborted = false
      if (when === 'at once') c.abort()
      else setTimeout(() => ((aborted = true), c.abort()), 10)
      expect(await rejected).toBe('AbortError')
      if (when === 'after a timeout') expect(aborted).toBe(true)
    }))
  }
  test('Signal that is not aborted', on(async ({ locks }) => {
    let got = false
    await locks.request(unique('sig'), { signal: new AbortController().signal }, async () => (got = true))
    expect(got).toBe(true)
  }))
  test('Synchronously signaled abort', on(async ({ locks }) => {
    const res = unique('sig')
    const c = new AbortController()
    let got = false
    const p = locks.request(res, { signal: c.signal }, () => (got = true))
    c.abort()
    expect(await rejection(p)).toBe('AbortError')
    expect(got).toBe(false)
    await locks.request(res, () => (got = true))
    expect(got).toBe(true)
  }))
  for (const abortFirst of [true, false]) {
    test(`Abort signaled after lock ${abortFirst ? 'granted' : 'released'}`, on(async ({ locks }) => {
      const c = new AbortController()
      const [acquired, acquire] = gate()
      const [waiting, release] = gate<string>()
      const released = locks.request(unique('sig'), { signal: c.signal }, () => (acquire(), waiting))
      await acquired
      if (abortFirst) c.abort()
      release('resolved ok')
      if (!abortFirst) c.abort()
      expect(await released).toBe('resolved ok')
    }))
  }
  test('Abort should process the next pending lock request', on(async ({ locks, hold }) => {
    const res = unique('sig')
    const c = new AbortController()
    const first = hold(res, { signal: c.signal })
    const next = locks.request(res, () => 'resolved')
    c.abort()
    expect(await rejection(first)).toBe('AbortError')
    expect(await next).toBe('resolved')
  }))
  test('Aborted promise should reject with the custom abort reason', on(async ({ hold }) => {
    const c = new AbortController()
    const promise = hold(unique('sig'), { signal: c.signal })
    c.abort('My cat handled it')
    await expect(promise).rejects.toBe('My cat handled it')
  }))
  test('Aborted promise should reject with the default abort reason', on(async ({ hold }) => {
    const c = new AbortController()
    const promise = hold(unique('sig'), { signal: c.signal })
    c.abort()
    await expect(promise).rejects.toBe(c.signal.reason)
  }))
}

function stealCases(on: On): void {
  const neverSettled = () => new Promise(() => {})
  test('Lock available', on(async ({ locks }) => {
    expect(await locks.request(unique('st'), { steal: true }, (lock) => lock !== null)).toBe(true)
  }))
  test('Lock not available', on(async ({ locks }) => {
    const res = unique('st')
    bg(locks.request(res, neverSettled))
    expect(await locks.request(res, { steal: true }, (lock) => lock !== null)).toBe(true)
  }))
  test("Broken lock's release promise rejects", on(async ({ locks }) => {
    const res = unique('st')
    const broken = rejection(locks.request(res, neverSettled))
    await locks.request(res, { steal: true }, () => {})
    expect(await broken).toBe('AbortError')
  }))
  test("Requested lock's release promise is deferred", on(async ({ locks }) => {
    const res = unique('st')
    bg(locks.request(res, neverSettled))
    let granted = false
    const promise = locks.request(res, () => (granted = true))
    await locks.request(res, { steal: true }, () => expect(granted, 'steal should override request').toBe(false))
    await promise
    expect(granted).toBe(true)
  }))
  test('Last caller wins', on(async ({ locks }) => {
    const res = unique('st')
    bg(locks.request(res, neverSettled))
    const first = rejection(locks.request(res, { steal: true }, neverSettled))
    await locks.request(res, { steal: true }, () => {})
    expect(await first).toBe('AbortError')
  }))
}
