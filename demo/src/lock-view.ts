/**
 * The read-only parts of the lock panel: the TTL field and its check, who
 * holds the lock (exclusive or shared, with token and time left, as a number
 * and as a bar), and the line of waiting tabs with what each waits for.
 */
import type { Client, HeldLock, LockMode, PendingLock } from 'zaris'
import { h, seconds } from './dom'
import { followLock } from './lock-query'

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

/** The mode choice: exclusive (alone) or shared (beside other readers). */
export function modeField() {
  const radio = (mode: LockMode, checked: boolean) => h('input', { type: 'radio', name: 'lock-mode', value: mode, 'data-testid': `mode-${mode}`, checked })
  const exclusive = radio('exclusive', true)
  const shared = radio('shared', false)
  const element = h('fieldset', { class: 'row mode' }, h('legend', {}, 'Mode'), h('label', { class: 'check' }, exclusive, ' exclusive (alone)'), h('label', { class: 'check' }, shared, ' shared (beside other readers)'))
  return {
    element,
    value: (): LockMode => (shared.checked ? 'shared' : 'exclusive'),
    disable: (on: boolean) => void (exclusive.disabled = shared.disabled = on),
  }
}

/** What the tab knows of its own hold. */
export interface Own {
  token: number
  mode: LockMode
}

/**
 * Who holds `key` (one exclusive holder, or every shared holder) with token
 * and time left, and the tabs waiting for it in line order, from
 * `client.locks.query()` (./lock-query); `draw(own)` redraws (`own`: this tab's hold, null if none).
 */
export function lockFacts(client: Client, key: string) {
  let held: HeldLock[] = []
  let seenAt = performance.now()
  const holderText = h('dd', { 'data-testid': 'lock-holder' }, 'free')
  const modeText = h('dd', { 'data-testid': 'lock-mode' }, '—')
  const tokenText = h('dd', { 'data-testid': 'lock-token' }, '—')
  const mineText = h('dd', { 'data-testid': 'lock-mine' }, 'no')
  const left = h('span', { class: 'left', 'data-testid': 'lock-left' }, '—')
  const bar = h('div', { class: 'bar', role: 'progressbar', 'aria-label': 'Time left on the lock', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': 0, 'aria-valuetext': 'free' }, h('div'))
  const element = h('dl', { class: 'facts' },
    h('dt', {}, 'Held by'), holderText,
    h('dt', {}, 'Mode'), modeText,
    h('dt', {}, 'Fencing token'), tokenText,
    h('dt', {}, 'This tab holds it'), mineText,
    h('dt', {}, 'Time left'), h('dd', { class: 'time' }, left, bar),
  )
  const line = h('ol', { class: 'line', 'data-testid': 'wait-line', 'aria-label': 'Tabs waiting for the lock, first in line first' })
  const name = (owner: string) => `${owner}${owner === client.id ? ' (this tab)' : ''}`
  let mine: Own | null = null
  /** `own`: this tab's hold, or null when it holds none; without it, as last drawn. */
  const draw = (own: Own | null = mine) => {
    mine = own
    const holds = own !== null
    // This tab's own hold first: its token is the one its writes carry. The
    // tab knows it before the next query does, so a fresh hold shows at once.
    const listed = held.find((x) => x.owner === client.id && (!own || x.token === own.token))
    const first = listed ?? (own ? { owner: client.id, mode: own.mode, token: own.token, ttl: undefined } : held[0])
    const ttl = first?.ttl ?? 0
    const ms = first ? ttl - (performance.now() - seenAt) : 0
    const shown = first && !listed && holds ? [first] : held
    holderText.textContent = shown.length === 0 ? 'free' : shown.map((x) => name(x.owner)).join(', ')
    modeText.textContent = first ? (first.mode === 'shared' ? `shared by ${shown.length}` : 'exclusive') : '—'
    tokenText.textContent = first ? String(first.token) : '—'
    mineText.textContent = holds ? 'yes' : 'no'
    const pct = first && ttl > 0 ? Math.max(0, Math.min(100, (ms / ttl) * 100)) : 0
    ;(bar.firstElementChild as HTMLElement).style.width = `${pct}%`
    bar.classList.toggle('low', pct < 30)
    bar.setAttribute('aria-valuenow', String(Math.round(pct)))
    left.textContent = first ? seconds(ms) : '—'
    bar.setAttribute('aria-valuetext', first ? `${(Math.max(0, ms) / 1000).toFixed(1)} seconds left` : 'free')
  }
  const showLine = (pending: PendingLock[]) => {
    if (pending.length === 0) return line.replaceChildren(h('li', { class: 'empty' }, 'Nobody waits.'))
    line.replaceChildren(...pending.map((w) => h('li', { 'data-owner': w.owner, 'data-mode': w.mode }, `${name(w.owner)}${w.mode === 'shared' ? ' — shared' : ''}`)))
  }
  showLine([])
  const stop = followLock(client, key, (q) => {
    held = q.held
    seenAt = performance.now()
    draw()
    showLine(q.pending)
  })
  return { element, line, draw, holder: () => held[0], stop }
}
