/**
 * The HTTP adapter's retry pause (`pause` in src/adapters/http/watch-stream.ts):
 * many calls retrying at once on one adapter (a node restarting under
 * them) wait on its one close signal without Node's "possible memory leak"
 * warning, and its close ends every one of them at once.
 */
import { afterEach, expect, test } from 'vitest'
import { pause } from '../../src/adapters/http/watch-stream'

const warnings: Error[] = []
const onWarning = (w: Error) => warnings.push(w)
afterEach(() => {
  process.off('warning', onWarning)
  warnings.length = 0
})

test('50 pauses on one signal: no listener warning, and the abort ends them all at once', async () => {
  process.on('warning', onWarning)
  const closer = new AbortController()
  const t0 = performance.now()
  const all = Promise.all(Array.from({ length: 50 }, () => pause(10_000, closer.signal)))
  await new Promise((r) => setTimeout(r, 20))
  closer.abort()
  await all
  expect(performance.now() - t0).toBeLessThan(2_000)
  expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([])
})

test('a pause ends at its time, leaving nothing to end at the abort; an aborted signal does not pause', async () => {
  const closer = new AbortController()
  const t0 = performance.now()
  await pause(30, closer.signal)
  expect(performance.now() - t0).toBeGreaterThanOrEqual(25)
  closer.abort()
  const t1 = performance.now()
  await pause(10_000, closer.signal)
  expect(performance.now() - t1).toBeLessThan(100)
})
