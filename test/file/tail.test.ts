/**
 * Watches of the `file://` store, which follow the file's change log: woken
 * by another connection's commit, in order when a watcher commits from its
 * callback or opens another watch there, unharmed by a watcher that throws,
 * ended with COMPACTED when the log was pruned past them, and quiet once
 * every watch ended.
 */
import { describe, expect, test } from 'vitest'
import type { WatchEvent } from 'zaris'
import { collect, newFile, open, raw, REVISION, until } from './helpers'

const set = (key: string, value: unknown = 1) => ({ type: 'set' as const, key, value: value as null })

describe('watch', () => {
  test('another connection\'s commits reach a watcher, in order, once each', async () => {
    const path = newFile()
    const [a, b] = [await open({ path }), await open({ path })]
    const w = collect()
    await b.watch('k', w.sink)
    for (let i = 0; i < 20; i++) await a.commit([], [set(`k${i % 3}`, i)])
    await until(() => w.events.length === 20)
    expect(w.events.map((e) => e.value)).toEqual(Array.from({ length: 20 }, (_, i) => i))
    expect(w.events.every((e, i) => i === 0 || e.revision > w.events[i - 1]!.revision)).toBe(true)
  })

  test('a watcher that commits from its callback, or opens a watch there, sees every event in order', async () => {
    const a = await open()
    const seen: WatchEvent[] = []
    const inner: WatchEvent[] = []
    let reacted = false
    await a.watch('', {
      event: (ev) => {
        seen.push(ev)
        if (ev.key === 'first' && !reacted) {
          reacted = true
          void a.commit([], [set('reaction')])
          void a.watch('', { event: (e) => void inner.push(e), error: () => {} })
        }
      },
      error: () => {},
    })
    const outer: string[] = []
    await a.watch('', { event: (ev) => void outer.push(ev.key), error: () => {} })
    await a.commit([], [set('first'), set('second')])
    await a.commit([], [set('third')])
    await until(() => seen.length === 4)
    // Another watch of the same adapter sees each event once.
    expect(outer).toEqual(['first', 'second', 'reaction', 'third'])
    await new Promise((r) => setTimeout(r, 20))
    expect(seen.map((e) => e.key)).toEqual(['first', 'second', 'reaction', 'third'])
    expect(seen.every((e, i) => i === 0 || e.revision >= seen[i - 1]!.revision)).toBe(true)
    // The watch opened in the callback starts after the event being delivered, and misses nothing after it.
    expect(inner.map((e) => e.key)).toEqual(['reaction', 'third'])
  })

  test('a watcher that throws does not stop the others', async () => {
    const a = await open()
    const w = collect()
    await a.watch('', { event: () => { throw new Error('careless') }, error: () => {} })
    await a.watch('', w.sink)
    await a.commit([], [set('x')])
    await a.commit([], [set('y')])
    expect(w.events.map((e) => e.key)).toEqual(['x', 'y'])
  })

  test('from a revision: the log after it, then what follows; from the future: nothing up to it', async () => {
    const a = await open()
    const r1 = await a.commit([], [set('h/a')])
    await a.commit([], [set('h/b'), set('other')])
    const w = collect()
    await a.watch('h/', w.sink, r1.ok ? r1.revision : 0)
    await a.commit([], [set('h/c')])
    expect(w.events.map((e) => e.key)).toEqual(['h/b', 'h/c'])
    const future = collect()
    await a.watch('', future.sink, 5)
    await a.commit([], [set('four')]) // revision 4
    await a.commit([], [set('five')])
    await a.commit([], [set('six')])
    expect(future.events.map((e) => e.key)).toEqual(['six'])
  })

  test('a watch that fell behind the pruned log ends with COMPACTED', async () => {
    const path = newFile()
    const [a, b] = [await open({ path }), await open({ path })]
    const w = collect()
    await b.watch('', w.sink)
    await a.commit([], [set('x')])
    await until(() => w.events.length === 1)
    // As if 10 000 revisions went by while this process was stopped.
    raw(path).prepare(`UPDATE zaris_file_spaces SET compacted = ${REVISION} + 5, revision = ${REVISION} + 10, reserved = ${REVISION} + 10000`).run()
    await a.commit([], [set('y')])
    await until(() => w.errors.length === 1)
    expect(w.errors[0]).toMatchObject({ code: 'COMPACTED', message: expect.stringMatching(/fell behind/) })
  })

  test('unsubscribed and closed: no more events, and the adapter refuses calls', async () => {
    const path = newFile()
    const [a, b] = [await open({ path }), await open({ path })]
    const w = collect()
    const stop = await b.watch('', w.sink)
    await a.commit([], [set('x')])
    await until(() => w.events.length === 1)
    stop()
    stop()
    await a.commit([], [set('y')])
    const open2 = collect()
    await b.watch('', open2.sink)
    await b.close()
    await a.commit([], [set('z')])
    await new Promise((r) => setTimeout(r, 150))
    expect(w.events.map((e) => e.key)).toEqual(['x'])
    expect(open2.events).toEqual([])
    await expect(b.get('x')).rejects.toMatchObject({ code: 'CLOSED' })
    await expect(b.commit([], [])).rejects.toMatchObject({ code: 'CLOSED' })
    await expect(b.watch('', w.sink)).rejects.toMatchObject({ code: 'CLOSED' })
  })
})
