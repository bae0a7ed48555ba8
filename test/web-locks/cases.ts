/**
 * The Web Locks API's behaviour, as the web-platform-tests `web-locks/`
 * directory checks it, written once against any `LockManager`: Chromium's
 * own `navigator.locks`, and zaris/web-locks over memory, IndexedDB, a
 * node, a node with --data, Redis and etcd. The WPT's `.any.js` subtests
 * are wpt.ts (68, each a test named as the WPT names it); here, what the
 * WPT checks elsewhere or not at all that a page can rely on — the grant
 * a release makes seen from another context, query ordering (the HTML
 * file's cases that mean something outside a page), writers not starved,
 * the lock's attributes. The same expectations for both managers.
 *
 * A fixture gives the manager under test and, for the tests that need a
 * second context (another tab or worker in a browser), another manager on
 * the same locks: in Chromium an iframe's `navigator.locks`, with zaris
 * another client of the same store. Every test uses names of its own, as
 * the WPT's `uniqueName` does, since a browser's locks are shared by every
 * page of the origin.
 */
import { describe, expect, test } from 'vitest'
import { bg, gate, holdUntilReleased, modes, names, rejection, unique, until, withContext, type TestContext, type WebLocksFixture } from './helpers'
import { wptCases } from './wpt'

export type { AnyInfo, AnyLock, AnyLockManager, WebLocksFixture } from './helpers'

export function webLocksCases(label: string, open: () => Promise<WebLocksFixture>): void {
  const on = (fn: (t: TestContext) => Promise<void>) => withContext(open, fn)

  describe(`Web Locks API: ${label}`, () => {
    wptCases(open)

    describe('beyond the .any.js files', () => {
      test("the issue's example: right after an exclusive release resolves, the shared waiters hold (held [3 shared], pending [])", on(async ({ locks }) => {
        const res = unique('example')
        const [p, release] = gate()
        const exclusive = locks.request(res, () => p)
        for (let i = 0; i < 3; i++) bg(locks.request(res, { mode: 'shared' }, () => new Promise(() => {})))
        release()
        await exclusive
        const state = await locks.query()
        expect([modes(state.held, res), modes(state.pending, res)]).toEqual([['shared', 'shared', 'shared'], []])
        // A shared ifAvailable request beside them is granted, as in a browser.
        expect(await locks.request(res, { mode: 'shared', ifAvailable: true }, (lock) => lock !== null)).toBe(true)
        // Ended by a steal: the three never let go.
        await locks.request(res, { steal: true }, () => {})
      }))

      test('the requests a release lets through are granted before it settles, also when they wait in another context', on(async ({ locks, other }) => {
        const res = unique('handover')
        const them = await other()
        const [p, release] = gate()
        const [granted, grant] = gate()
        const exclusive = locks.request(res, () => (grant(), p))
        await granted
        const [letGo, done] = gate()
        const theirs = [0, 1].map(() => them.request(res, { mode: 'shared' }, () => letGo))
        await until(async () => modes((await locks.query()).pending, res).length === 2)
        release()
        await exclusive
        const state = await locks.query()
        expect([modes(state.held, res), modes(state.pending, res)]).toEqual([['shared', 'shared'], []])
        done()
        await Promise.all(theirs)
      }))

      test('a shared request made while an exclusive one waits is granted after it (readers do not starve a writer)', on(async ({ locks }) => {
        const res = unique('mx-order')
        const order: string[] = []
        const reader = await holdUntilReleased(locks, res, { mode: 'shared' })
        const writer = locks.request(res, () => order.push('exclusive'))
        const late = locks.request(res, { mode: 'shared' }, () => order.push('late shared'))
        // Not granted beside the first reader: the writer waits before it.
        await locks.request(res, { mode: 'shared', ifAvailable: true }, (lock) => order.push(lock ? 'ifAvailable granted' : 'ifAvailable null'))
        reader.release()
        await Promise.all([writer, late])
        expect(order).toEqual(['ifAvailable null', 'exclusive', 'late shared'])
      }))
      test('the same, with the shared request from another context', on(async ({ locks, other }) => {
        const res = unique('mx-ctx')
        const them = await other()
        const order: string[] = []
        const reader = await holdUntilReleased(locks, res, { mode: 'shared' })
        const writer = locks.request(res, () => order.push('exclusive'))
        await until(async () => modes((await locks.query()).pending, res).length === 1)
        const late = them.request(res, { mode: 'shared' }, () => order.push('late shared'))
        await until(async () => modes((await locks.query()).pending, res).length === 2)
        reader.release()
        await Promise.all([writer, late])
        expect(order).toEqual(['exclusive', 'late shared'])
      }))
      test('null while an earlier request waits, though a shared lock is held', on(async ({ locks }) => {
        const res = unique('ia-line')
        const reader = await holdUntilReleased(locks, res, { mode: 'shared' })
        const writer = locks.request(res, () => 'written')
        expect(await locks.request(res, { mode: 'shared', ifAvailable: true }, (lock) => lock !== null)).toBe(false)
        reader.release()
        expect(await writer).toBe('written')
      }))
      // The specification orders a snapshot's pending requests per name, in the order made, and
      // nothing else: no order across names, none for held locks (Chromium lists them by name).
      test('pending requests of one name appear in the order they were made', on(async ({ locks }) => {
        const [a, b] = [unique('qo-a'), unique('qo-b')]
        const holds = await Promise.all([a, b].map((n) => holdUntilReleased(locks, n)))
        const made: Array<[string, string]> = [[a, 'shared'], [b, 'exclusive'], [a, 'exclusive'], [b, 'shared'], [a, 'shared']]
        for (const [n, mode] of made) bg(locks.request(n, { mode }, () => {}))
        const { pending } = await locks.query()
        expect(modes(pending, a)).toEqual(['shared', 'exclusive', 'shared'])
        expect(modes(pending, b)).toEqual(['exclusive', 'shared'])
        expect(names(pending, [a, b])).toHaveLength(5)
        for (const h of holds) h.release()
      }))
      test('every grant is listed once, also after releases in another order and after steals', on(async ({ locks }) => {
        const [a, b, c] = [unique('qo-a'), unique('qo-b'), unique('qo-c')]
        const holds = await Promise.all([a, b, c].map((n) => holdUntilReleased(locks, n)))
        const next = [a, b, c].map((n) => holdUntilReleased(locks, n))
        await locks.request(unique('qo-sync'), () => {})
        for (const i of [1, 2, 0]) holds[i]!.release()
        const granted = await Promise.all(next)
        let state = await locks.query()
        expect(names(state.held, [a, b, c]).sort()).toEqual([a, b, c].sort())
        expect(names(state.pending, [a, b, c])).toEqual([])
        const stolen = await Promise.all([c, a, b].map((n) => holdUntilReleased(locks, n, { steal: true })))
        await Promise.all(granted.map((g) => rejection(g.done)))
        state = await locks.query()
        expect(names(state.held, [a, b, c]).sort()).toEqual([a, b, c].sort())
        for (const h of stolen) h.release()
      }))
      test('the lock has the name and mode requested', on(async ({ locks }) => {
        const res = unique('attr')
        expect(await locks.request(res, (lock) => [lock!.name, lock!.mode])).toEqual([res, 'exclusive'])
        expect(await locks.request(res, { mode: 'shared' }, (lock) => [lock!.name, lock!.mode])).toEqual([res, 'shared'])
      }))
    })
  })
}
