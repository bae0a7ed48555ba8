/**
 * The lock panel: take one shared lock (a plain try, or wait in line for it),
 * renew, release and "freeze" it (stop renewing, as a paused process would),
 * and see who holds it, with which fencing token, how long they have left,
 * and who waits behind them, in order.
 */
import { isZarisError, type Client, type Lock } from 'zaris'
import { every, follow, h, quietly, seconds, type Say, type Unmount } from './dom'
import type { TabState } from './tab-state'
import { followLine, type Waiter } from './wait-line'

export const LOCK_KEY = 'demo:lock'

const TTL_MIN = 500
const TTL_MAX = 600_000

/** The TTL typed in, or why it is not one. */
function readTtl(text: string): { ttl: number } | { error: string } {
  const ttl = Number(text)
  if (text.trim() === '' || !Number.isInteger(ttl) || ttl < TTL_MIN || ttl > TTL_MAX) {
    return { error: `The TTL must be a whole number of milliseconds from ${TTL_MIN} to ${TTL_MAX.toLocaleString('en')}.` }
  }
  return { ttl }
}

export function lockPanel(root: HTMLElement, client: Client, tab: TabState, say: Say): Unmount {
  const closing = new AbortController()
  let lock: Lock | null = null
  let frozen = false
  let stopRenewing: (() => void) | undefined
  let waiting: { controller: AbortController; done: Promise<void> } | undefined
  let holder: { owner: string; token: number; ttl: number; seenAt: number } | undefined
  let line: Waiter[] = []

  const ttl = h('input', { type: 'number', id: 'lock-ttl', 'data-testid': 'ttl', min: TTL_MIN, max: TTL_MAX, step: 500, value: 8000, inputmode: 'numeric', 'aria-describedby': 'ttl-error' })
  const ttlError = h('p', { id: 'ttl-error', class: 'field-error', 'data-testid': 'ttl-error', 'aria-live': 'polite' })
  const auto = h('input', { type: 'checkbox', id: 'lock-auto', checked: true })
  const acquire = h('button', { type: 'button', 'data-testid': 'acquire', onclick: () => void onAcquire(0) }, 'Acquire')
  const acquireWait = h('button', { type: 'button', 'data-testid': 'acquire-wait', onclick: () => void onAcquire(Infinity) }, 'Acquire and wait')
  const cancel = h('button', { type: 'button', class: 'secondary', 'data-testid': 'cancel-wait', onclick: () => waiting?.controller.abort(new Error('cancelled')) }, 'Stop waiting')
  const renew = h('button', { type: 'button', class: 'secondary', 'data-testid': 'renew', onclick: () => void onRenew() }, 'Renew')
  const freeze = h('button', { type: 'button', class: 'secondary', 'data-testid': 'freeze', onclick: onFreeze }, 'Freeze (stop renewing)')
  const unfreeze = h('button', { type: 'button', class: 'secondary', 'data-testid': 'unfreeze', onclick: onUnfreeze }, 'Unfreeze')
  const release = h('button', { type: 'button', class: 'secondary', 'data-testid': 'release', onclick: () => void onRelease() }, 'Release')
  const holderText = h('dd', { 'data-testid': 'lock-holder' }, 'free')
  const tokenText = h('dd', { 'data-testid': 'lock-token' }, '—')
  const mine = h('dd', { 'data-testid': 'lock-mine' }, 'no')
  const left = h('span', { class: 'left', 'data-testid': 'lock-left' }, '—')
  const bar = h('div', { class: 'bar', role: 'progressbar', 'aria-label': 'Time left on the lock', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': 0, 'aria-valuetext': 'free' }, h('div'))
  const lineList = h('ol', { class: 'line', 'data-testid': 'wait-line', 'aria-label': 'Tabs waiting for the lock, first in line first' })
  const note = h('p', { class: 'note', 'data-testid': 'lock-note' })

  root.replaceChildren(
    h('h2', { id: 'lock-title' }, 'Lock ', h('code', {}, LOCK_KEY)),
    h('div', { class: 'row' },
      h('label', { for: 'lock-ttl' }, 'TTL (ms)'), ttl,
      h('label', { class: 'check' }, auto, ' auto-renew'),
    ),
    ttlError,
    h('div', { class: 'row' }, acquire, acquireWait, cancel),
    h('div', { class: 'row' }, renew, freeze, unfreeze, release),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Held by'), holderText,
      h('dt', {}, 'Fencing token'), tokenText,
      h('dt', {}, 'This tab holds it'), mine,
      h('dt', {}, 'Time left'), h('dd', { class: 'time' }, left, bar),
    ),
    note,
    h('h3', { id: 'line-title' }, 'Waiting in line'),
    lineList,
  )

  /** The TTL, or undefined after showing why the input is not one. */
  function validTtl(): number | undefined {
    const r = readTtl(ttl.value)
    ttlError.textContent = 'error' in r ? r.error : ''
    ttl.setAttribute('aria-invalid', String('error' in r))
    render()
    return 'ttl' in r ? r.ttl : undefined
  }
  ttl.addEventListener('input', () => void validTtl())

  async function onAcquire(wait: number) {
    const t = validTtl()
    if (t === undefined || lock?.held || waiting) return
    const controller = new AbortController()
    const stop = () => controller.abort(new Error('closing'))
    closing.signal.addEventListener('abort', stop)
    let done!: () => void
    if (wait > 0) {
      waiting = { controller, done: new Promise<void>((r) => (done = r)) }
      tab.set({ waiting: true })
      say('Waiting in line for the lock…')
      render()
    }
    try {
      // The page renews by itself (instead of autoRenew) so that "freeze" can stop it.
      const got = await client.locks.acquire(LOCK_KEY, { ttl: t, wait, signal: controller.signal, autoRenew: false })
      if (!got) return say(`The lock is held by ${holder?.owner ?? 'another tab'}: try "Acquire and wait".`)
      took(got)
    } catch (err) {
      if (controller.signal.aborted) {
        if (!closing.signal.aborted) say('Stopped waiting for the lock.')
      } else say(`Acquire failed: ${(err as Error).message}`, true)
    } finally {
      closing.signal.removeEventListener('abort', stop)
      if (wait > 0) {
        waiting = undefined
        tab.set({ waiting: false })
        done()
      }
      render()
    }
  }

  function took(held: Lock) {
    lock = held
    frozen = false
    tab.lastLock = held
    tab.set({ holds: true, frozen: false })
    say(`Acquired with token ${held.token}.`)
    held.signal.addEventListener('abort', () => {
      const code = isZarisError(held.signal.reason) ? held.signal.reason.code : 'ENDED'
      if (!closing.signal.aborted) say(code === 'RELEASED' ? 'Released.' : `Lost the lock (${code}).`, code !== 'RELEASED')
      stopRenewing?.()
      if (lock === held) {
        tab.set({ holds: false })
        if (frozen) note.textContent = `Frozen, this tab would still believe it holds token ${held.token}. Unfreeze, then write the shared document with it.`
      }
      render()
    })
    if (auto.checked) startRenewing(held)
  }

  function startRenewing(held: Lock) {
    stopRenewing?.()
    stopRenewing = every(held.ttl / 3, () => void held.renew().catch((err) => say(`Renew failed: ${err.message}`, true)))
  }

  async function onRenew() {
    const t = validTtl()
    if (!lock || t === undefined) return
    const ok = await lock.renew(t).catch(() => false)
    say(ok ? 'Renewed.' : 'Renewal failed: the lock was lost.', !ok)
  }

  function onFreeze() {
    stopRenewing?.()
    stopRenewing = undefined
    frozen = true
    tab.set({ frozen: true })
    note.textContent = 'Frozen: this tab stopped renewing, as a paused process would. Another tab can take the lock when the TTL runs out.'
    say('Frozen: this tab no longer renews.')
    render()
  }

  function onUnfreeze() {
    frozen = false
    tab.set({ frozen: false })
    if (lock?.held) {
      note.textContent = ''
      if (auto.checked) startRenewing(lock)
      say('Unfrozen: renewing again.')
    } else if (lock) {
      note.textContent = `While frozen, the lock ran out: token ${lock.token} is stale. A write fenced with it is refused — try "Write" in the shared document.`
      say(`Unfrozen: the lock (token ${lock.token}) was lost meanwhile.`, true)
    }
    render()
  }

  async function onRelease() {
    stopRenewing?.()
    await lock?.release()
  }

  auto.addEventListener('change', () => {
    if (auto.checked && lock?.held && !frozen) startRenewing(lock)
    else stopRenewing?.()
  })

  // Who holds the lock, from the store: first a read, then every change.
  const watch = client.watch(LOCK_KEY, { signal: closing.signal })
  const watching = (async () => {
    const now = await quietly(client.locks.holder(LOCK_KEY))
    if (now && !holder) holder = { owner: now.owner, token: now.token, ttl: now.ttl ?? 0, seenAt: performance.now() }
    render()
    await follow(watch, (ev) => {
      holder = ev.type === 'put' && ev.owner ? { owner: ev.owner, token: ev.created!, ttl: ev.ttl ?? 0, seenAt: performance.now() } : undefined
      render()
    }, closing.signal, say, 'Lock watch')
  })()
  const stopLine = followLine(client, LOCK_KEY, (waiters) => {
    line = waiters
    drawLine()
  })

  function drawLine() {
    if (line.length === 0) return lineList.replaceChildren(h('li', { class: 'empty' }, 'Nobody waits.'))
    lineList.replaceChildren(...line.map((w) => h('li', { 'data-owner': w.owner }, `${w.owner}${w.owner === client.id ? ' (this tab)' : ''}`)))
  }
  drawLine()

  function render() {
    const ms = holder ? holder.ttl - (performance.now() - holder.seenAt) : 0
    holderText.textContent = holder ? `${holder.owner}${holder.owner === client.id ? ' (this tab)' : ''}` : 'free'
    tokenText.textContent = holder ? String(holder.token) : '—'
    const held = Boolean(lock?.held)
    mine.textContent = held ? 'yes' : 'no'
    const pct = holder && holder.ttl > 0 ? Math.max(0, Math.min(100, (ms / holder.ttl) * 100)) : 0
    ;(bar.firstElementChild as HTMLElement).style.width = `${pct}%`
    bar.classList.toggle('low', pct < 30)
    bar.setAttribute('aria-valuenow', String(Math.round(pct)))
    left.textContent = holder ? seconds(ms) : '—'
    bar.setAttribute('aria-valuetext', holder ? `${(Math.max(0, ms) / 1000).toFixed(1)} seconds left` : 'free')
    const badTtl = ttl.getAttribute('aria-invalid') === 'true'
    acquire.disabled = acquireWait.disabled = held || Boolean(waiting) || badTtl
    cancel.disabled = !waiting
    renew.disabled = release.disabled = !held
    freeze.disabled = !held || frozen
    unfreeze.disabled = !frozen
  }
  const stopTicking = every(200, render)

  return async () => {
    stopTicking()
    stopRenewing?.()
    closing.abort()
    await waiting?.done
    if (lock?.held) await quietly(lock.release())
    watch.close()
    await Promise.all([watching, stopLine()])
  }
}
