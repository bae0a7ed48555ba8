/**
 * The read-only parts of the lock panel: the TTL field and its check, who
 * holds the lock (with token and time left, as a number and as a bar), and
 * the line of waiting tabs.
 */
import type { Client } from 'zaris'
import { follow, h, quietly, seconds, type Say } from './dom'
import { followLine } from './wait-line'

const TTL_MIN = 500
const TTL_MAX = 600_000

/** The TTL input and the message under it; `read()` shows why a bad value is bad and returns undefined. */
export function ttlField(onChange: () => void) {
  const input = h('input', { type: 'number', id: 'lock-ttl', 'data-testid': 'ttl', min: TTL_MIN, max: TTL_MAX, step: 500, value: 8000, inputmode: 'numeric', 'aria-describedby': 'ttl-error' })
  const error = h('p', { id: 'ttl-error', class: 'field-error', 'data-testid': 'ttl-error', 'aria-live': 'polite' })
  const read = (): number | undefined => {
    const ttl = Number(input.value)
    const bad = input.value.trim() === '' || !Number.isInteger(ttl) || ttl < TTL_MIN || ttl > TTL_MAX
    error.textContent = bad ? `The TTL must be a whole number of milliseconds from ${TTL_MIN} to ${TTL_MAX.toLocaleString('en')}.` : ''
    input.setAttribute('aria-invalid', String(bad))
    onChange()
    return bad ? undefined : ttl
  }
  input.addEventListener('input', () => void read())
  return { input, error, read, valid: () => input.getAttribute('aria-invalid') !== 'true' }
}

/** Who holds `key`, from the store (a read, then every change), drawn by `draw(mine)`; `done` settles when the watch ends. */
export function holderFacts(client: Client, key: string, closing: AbortSignal, say: Say) {
  let holder: { owner: string; token: number; ttl: number; seenAt: number } | undefined
  const holderText = h('dd', { 'data-testid': 'lock-holder' }, 'free')
  const tokenText = h('dd', { 'data-testid': 'lock-token' }, '—')
  const mineText = h('dd', { 'data-testid': 'lock-mine' }, 'no')
  const left = h('span', { class: 'left', 'data-testid': 'lock-left' }, '—')
  const bar = h('div', { class: 'bar', role: 'progressbar', 'aria-label': 'Time left on the lock', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': 0, 'aria-valuetext': 'free' }, h('div'))
  const element = h('dl', { class: 'facts' },
    h('dt', {}, 'Held by'), holderText,
    h('dt', {}, 'Fencing token'), tokenText,
    h('dt', {}, 'This tab holds it'), mineText,
    h('dt', {}, 'Time left'), h('dd', { class: 'time' }, left, bar),
  )
  let mine = false
  const draw = (held = mine) => {
    mine = held
    const ms = holder ? holder.ttl - (performance.now() - holder.seenAt) : 0
    holderText.textContent = holder ? `${holder.owner}${holder.owner === client.id ? ' (this tab)' : ''}` : 'free'
    tokenText.textContent = holder ? String(holder.token) : '—'
    mineText.textContent = held ? 'yes' : 'no'
    const pct = holder && holder.ttl > 0 ? Math.max(0, Math.min(100, (ms / holder.ttl) * 100)) : 0
    ;(bar.firstElementChild as HTMLElement).style.width = `${pct}%`
    bar.classList.toggle('low', pct < 30)
    bar.setAttribute('aria-valuenow', String(Math.round(pct)))
    left.textContent = holder ? seconds(ms) : '—'
    bar.setAttribute('aria-valuetext', holder ? `${(Math.max(0, ms) / 1000).toFixed(1)} seconds left` : 'free')
  }
  const watch = client.watch(key, { signal: closing })
  const done = (async () => {
    const now = await quietly(client.locks.holder(key))
    if (now && !holder) holder = { owner: now.owner, token: now.token, ttl: now.ttl ?? 0, seenAt: performance.now() }
    draw()
    await follow(watch, (ev) => {
      holder = ev.type === 'put' && ev.owner ? { owner: ev.owner, token: ev.created!, ttl: ev.ttl ?? 0, seenAt: performance.now() } : undefined
      draw()
    }, closing, say, 'Lock watch')
  })()
  return { element, draw, holder: () => holder, stop: () => (watch.close(), done) }
}

/** The tabs waiting for `key`, first in line first; `stop` resolves once it stopped following. */
export function lineView(client: Client, key: string) {
  const element = h('ol', { class: 'line', 'data-testid': 'wait-line', 'aria-label': 'Tabs waiting for the lock, first in line first' })
  const empty = () => element.replaceChildren(h('li', { class: 'empty' }, 'Nobody waits.'))
  empty()
  const stop = followLine(client, key, (line) => {
    if (line.length === 0) return empty()
    element.replaceChildren(...line.map((w) => h('li', { 'data-owner': w.owner }, `${w.owner}${w.owner === client.id ? ' (this tab)' : ''}`)))
  })
  return { element, stop }
}
