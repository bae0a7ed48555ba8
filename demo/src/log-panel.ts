/**
 * The watch log: every change under `demo:` as the store reports it, newest
 * first. Renewals (a put that keeps the key's owner and token) are folded into
 * the line they renew ("renewed ×3"); tick "list renewals" to see each.
 */
import type { Client, WatchEvent } from 'zaris'
import { follow, h, ownerName, type Say, type Unmount } from './dom'

const KEEP = 80

export function logPanel(root: HTMLElement, client: Client, say: Say): Unmount {
  const closing = new AbortController()
  const list = h('ol', { class: 'log hide-renewals', 'data-testid': 'log', reversed: true, tabindex: 0, 'aria-label': 'Changes under demo:, newest first' })
  const show = h('input', { type: 'checkbox', id: 'log-renewals', 'data-testid': 'log-renewals' })
  const folded = h('span', { class: 'muted', 'data-testid': 'log-folded' }, '')
  show.addEventListener('change', () => list.classList.toggle('hide-renewals', !show.checked))
  root.replaceChildren(
    h('h2', { id: 'log-title' }, 'Watch log ', h('code', {}, 'demo:*')),
    h('div', { class: 'row' }, h('label', { class: 'check' }, show, ' list renewals'), folded),
    list,
  )

  /** The line of each key's current life, and how often it was renewed. */
  const lives = new Map<string, { created: number; owner?: string; line: HTMLLIElement; renewals: number }>()
  let hidden = 0
  const add = (li: HTMLLIElement) => {
    list.prepend(li)
    while (list.children.length > KEEP) list.lastElementChild!.remove()
  }
  const watch = client.watch('demo:', { prefix: true, signal: closing.signal })
  const watching = follow(watch, (ev) => {
    const life = lives.get(ev.key)
    const renewal = ev.type === 'put' && life !== undefined && life.created === ev.created && life.owner === ev.owner && life.owner !== undefined
    if (renewal) {
      life.renewals++
      life.line.dataset.renewals = String(life.renewals)
      life.line.querySelector('.renewed')!.textContent = ` (renewed ×${life.renewals})`
      hidden++
      folded.textContent = `${hidden} renewal${hidden === 1 ? '' : 's'} folded`
      add(h('li', { class: 'renewal' }, describe(ev)))
      return
    }
    const line = h('li', { class: ev.type }, describe(ev), h('span', { class: 'renewed' }))
    if (ev.type === 'put') lives.set(ev.key, { created: ev.created ?? ev.revision, owner: ev.owner, line, renewals: 0 })
    else lives.delete(ev.key)
    add(line)
  }, closing.signal, say, 'Watch log')
  return async () => {
    closing.abort()
    watch.close()
    await watching
  }
}

function describe(ev: WatchEvent): string {
  const who = ev.owner ? ` by ${ownerName(ev.owner, '')}` : ''
  const value = ev.type === 'put' && ev.value !== null ? ` = ${JSON.stringify(ev.value)}` : ''
  return `#${ev.revision} ${ev.type} ${ev.key}${value}${who}`
}
