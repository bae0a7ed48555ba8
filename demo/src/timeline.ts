/**
 * The timeline: who held the lock when, one lane per tab, each spell labelled
 * with its fencing token — drawn as SVG from the lock key's watch events.
 */
import type { Client } from 'zaris'
import { every, follow, h, ownerName, quietly, type Say, type Unmount } from './dom'
import { LOCK_KEY } from './lock-panel'

interface Spell {
  owner: string
  token: number
  start: number
  end?: number
  how?: string
}

/** The window shown: since the first spell (at least 10 s), at most the last minute. */
const MIN_WINDOW = 10_000
const MAX_WINDOW = 60_000
const SVG = 'http://www.w3.org/2000/svg'
const COLORS = ['#2f6fed', '#16803c', '#b25e00', '#8e44ad', '#c0392b', '#137a8a']

export function timeline(root: HTMLElement, client: Client, say: Say): Unmount {
  const closing = new AbortController()
  const spells: Spell[] = []
  const figure = h('div', { class: 'timeline', 'data-testid': 'timeline' })
  root.replaceChildren(
    h('h2', { id: 'timeline-title' }, 'Who held the lock, and with which token'),
    figure,
  )

  const open = () => spells.find((s) => s.end === undefined)
  const watch = client.watch(LOCK_KEY, { signal: closing.signal })
  const watching = (async () => {
    const now = await quietly(client.locks.holder(LOCK_KEY))
    if (now && !open()) spells.push({ owner: now.owner, token: now.token, start: performance.now() })
    await follow(watch, (ev) => {
      const current = open()
      if (ev.type === 'put' && ev.owner && ev.created !== current?.token) {
        if (current) Object.assign(current, { end: performance.now(), how: 'taken over' })
        spells.push({ owner: ev.owner, token: ev.created!, start: performance.now() })
      } else if (ev.type !== 'put' && current) {
        Object.assign(current, { end: performance.now(), how: ev.type === 'expire' ? 'expired' : 'released' })
      }
      draw()
    }, closing.signal, say, 'Timeline watch')
  })()

  function draw() {
    const now = performance.now()
    const owners = [...new Set(spells.map((s) => s.owner))]
    // Drawn at the figure's own width, so that text stays readable on a phone.
    const width = Math.max(320, figure.clientWidth || 900)
    const lane = 30
    const left = Math.min(130, width / 4)
    const first = spells.find((s) => (s.end ?? now) >= now - MAX_WINDOW)?.start ?? now
    const WINDOW = Math.min(MAX_WINDOW, Math.max(MIN_WINDOW, now - first + 2_000))
    const height = Math.max(1, owners.length) * lane + 24
    const x = (t: number) => left + ((t - (now - WINDOW)) / WINDOW) * (width - left - 10)
    const svg = document.createElementNS(SVG, 'svg')
    svg.setAttribute('viewBox', `0 0 ${width} ${height}`)
    svg.setAttribute('role', 'img')
    svg.setAttribute('aria-label', `Lock holders over the last minute: ${spells.map((s) => `${ownerName(s.owner, client.id)} token ${s.token}`).join(', ') || 'none'}`)
    const el = (name: string, attrs: Record<string, string | number>, text?: string) => {
      const node = document.createElementNS(SVG, name)
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v))
      if (text !== undefined) node.textContent = text
      return node
    }
    owners.forEach((owner, i) => {
      svg.append(el('text', { x: 4, y: i * lane + 19, 'font-size': 12, fill: '#1b1f24' }, ownerName(owner, client.id)))
      svg.append(el('line', { x1: left, x2: width - 10, y1: i * lane + lane - 1, y2: i * lane + lane - 1, stroke: '#eceff3' }))
    })
    for (const s of spells) {
      if ((s.end ?? now) < now - WINDOW) continue
      const i = owners.indexOf(s.owner)
      const x0 = Math.max(left, x(s.start))
      const x1 = x(s.end ?? now)
      const g = el('g', { 'data-testid': 'spell', 'data-owner': s.owner, 'data-token': s.token, 'data-open': s.end === undefined ? 'yes' : 'no' })
      g.append(el('rect', { x: x0, y: i * lane + 5, width: Math.max(2, x1 - x0), height: lane - 10, rx: 4, fill: COLORS[i % COLORS.length]!, opacity: s.end === undefined ? 0.9 : 0.55 }))
      g.append(el('text', { x: x0 + 4, y: i * lane + 19, 'font-size': 11, fill: '#fff' }, `#${s.token}`))
      g.append(el('title', {}, `${s.owner}: token ${s.token}${s.how ? `, ${s.how}` : ', holding'}`))
      svg.append(g)
    }
    svg.append(el('text', { x: left, y: height - 4, 'font-size': 11, fill: '#5b6572' }, `−${Math.round(WINDOW / 1000)} s`))
    svg.append(el('text', { x: width - 40, y: height - 4, 'font-size': 11, fill: '#5b6572' }, 'now'))
    figure.replaceChildren(spells.length ? svg : h('p', { class: 'empty' }, 'Nobody has held the lock since this tab opened.'))
  }
  draw()
  const stopTicking = every(500, draw)
  return async () => {
    stopTicking()
    closing.abort()
    watch.close()
    await watching
  }
}
