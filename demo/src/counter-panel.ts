/** The counter panel: one shared counter, incremented atomically from any tab. */
import type { Client } from 'zaris'
import { h } from './dom'

const COUNTER = 'demo:counter'

export function counterPanel(root: HTMLElement, client: Client, say: (msg: string, error?: boolean) => void): () => void {
  const value = h('span', { class: 'counter', 'data-testid': 'counter', 'aria-live': 'polite' }, '0')
  const add = h('button', { type: 'button', 'data-testid': 'increment', onclick: () => void client.counters.increment(COUNTER).catch((e) => say(e.message, true)) }, '+1')
  const addTen = h('button', {
    type: 'button',
    class: 'secondary',
    onclick: () => void Promise.all(Array.from({ length: 10 }, () => client.counters.increment(COUNTER))).catch((e) => say(e.message, true)),
  }, '+10 at once')
  root.replaceChildren(h('h2', { id: 'counter-title' }, 'Shared counter'), h('div', { class: 'row' }, value, add, addTen))

  const watch = client.watch(COUNTER)
  void (async () => {
    await watch.ready
    value.textContent = String(await client.counters.get(COUNTER))
    for await (const ev of watch) value.textContent = String(ev.type === 'put' ? ev.value : 0)
  })().catch((err) => say(`Counter watch failed: ${err.message}`, true))
  return () => watch.close()
}
