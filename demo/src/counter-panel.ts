/** The counter panel: one shared counter, incremented atomically from any tab. */
import type { Client } from 'zaris'
import { follow, h, quietly, type Say, type Unmount } from './dom'

const COUNTER = 'demo:counter'

export function counterPanel(root: HTMLElement, client: Client, say: Say): Unmount {
  const closing = new AbortController()
  const value = h('output', { class: 'counter', 'data-testid': 'counter', 'aria-live': 'polite' }, '0')
  const fail = (e: Error) => say(`Increment failed: ${e.message}`, true)
  const add = h('button', { type: 'button', 'data-testid': 'increment', onclick: () => void client.counters.increment(COUNTER).catch(fail) }, '+1')
  const addTen = h('button', {
    type: 'button',
    class: 'secondary',
    onclick: () => void Promise.all(Array.from({ length: 10 }, () => client.counters.increment(COUNTER))).catch(fail),
  }, '+10 at once')
  root.replaceChildren(h('h2', { id: 'counter-title' }, 'Shared counter'), h('div', { class: 'row' }, value, add, addTen))

  const watch = client.watch(COUNTER, { signal: closing.signal })
  const watching = (async () => {
    await quietly(watch.ready)
    value.textContent = String((await quietly(client.counters.get(COUNTER))) ?? 0)
    await follow(watch, (ev) => (value.textContent = String(ev.type === 'put' ? ev.value : 0)), closing.signal, say, 'Counter watch')
  })()
  return async () => {
    closing.abort()
    watch.close()
    await watching
  }
}
