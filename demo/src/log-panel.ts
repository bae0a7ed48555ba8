/** The watch log: every change under `demo:` as the store reports it, newest first. */
import type { Client, WatchEvent } from 'zaris'
import { h } from './dom'

const KEEP = 60

export function logPanel(root: HTMLElement, client: Client, say: (msg: string, error?: boolean) => void): () => void {
  const list = h('ol', { class: 'log', 'data-testid': 'log', 'aria-live': 'off', reversed: true })
  root.replaceChildren(h('h2', { id: 'log-title' }, 'Watch log ', h('code', {}, 'demo:*')), list)
  const watch = client.watch('demo:', { prefix: true })
  void (async () => {
    for await (const ev of watch) {
      list.prepend(h('li', { title: describe(ev) }, describe(ev)))
      while (list.children.length > KEEP) list.lastElementChild!.remove()
    }
  })().catch((err) => say(`Watch failed: ${err.message}`, true))
  return () => watch.close()
}

function describe(ev: WatchEvent): string {
  const who = ev.owner ? ` by ${ev.owner}` : ''
  const value = ev.type === 'put' && ev.value !== null ? ` = ${JSON.stringify(ev.value)}` : ''
  return `#${ev.revision} ${ev.type.padEnd(6)} ${ev.key}${value}${who}`
}
