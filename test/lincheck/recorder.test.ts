/**
 * The recorder's one promise to a killed tab: a commit reaches the store only
 * after its invocation has reached the history. A sink whose events travel
 * (a page binding to the test process) is awaited for the invocation; were it
 * not, a tab closed the moment after would leave in the store a commit the
 * history lacks, and the checker would see a revision nobody wrote.
 */
import { describe, expect, test } from 'vitest'
import { memoryAdapter } from '../../src/adapters/memory'
import type { HistoryEvent } from './history'
import { recordingAdapter, streamSink } from './recorder'

describe('recordingAdapter with a sink whose events travel', () => {
  test('a commit is sent only once its invocation has arrived', async () => {
    const store = memoryAdapter()
    const arrived: HistoryEvent[] = []
    let deliver = () => {}
    const inFlight = new Promise<void>((resolve) => (deliver = resolve))
    let first = true
    const sink = streamSink((e) => {
      if (!first) return void arrived.push(e)
      first = false
      return inFlight.then(() => void arrived.push(e))
    }, () => Date.now(), 0)
    const recorded = recordingAdapter(store, sink, 'tab')
    const committed = recorded.commit([], [{ type: 'set', key: 'k', value: 1 }])
    await new Promise((r) => setTimeout(r, 20))
    expect(await store.get('k'), 'the commit ran before its invocation arrived').toBeUndefined()
    deliver()
    await committed
    expect((await store.get('k'))?.value).toBe(1)
    expect(arrived.map((e) => e.type)).toEqual(['invoke', 'ok'])
  })
})
