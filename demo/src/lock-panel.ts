/**
 * The lock panel: take one shared lock (a plain try, or wait in line for it),
 * renew, release and "freeze" it (stop renewing, as a paused process would),
 * and see who holds it, with which fencing token, how long they have left,
 * and who waits behind them, in order (./lock-view).
 */
import { isZarisError, type Client, type Lock } from 'zaris'
import { every, h, quietly, type Say, type Unmount } from './dom'
import { holderFacts, lineView, ttlField } from './lock-view'
import type { TabState } from './tab-state'

export const LOCK_KEY = 'demo:lock'

export function lockPanel(root: HTMLElement, client: Client, tab: TabState, say: Say): Unmount {
  const closing = new AbortController()
  let lock: Lock | null = null
  let frozen = false
  let stopRenewing: (() => void) | undefined
  let waiting: { controller: AbortController; done: Promise<void> } | undefined

  const ttl = ttlField(() => render())
  const auto = h('input', { type: 'checkbox', id: 'lock-auto', checked: true })
  const button = (testid: string, label: string, onclick: () => void, secondary = true) =>
    h('button', { type: 'button', class: secondary ? 'secondary' : '', 'data-testid': testid, onclick }, label)
  const acquire = button('acquire', 'Acquire', () => void onAcquire(0), false)
  const acquireWait = button('acquire-wait', 'Acquire and wait', () => void onAcquire(Infinity), false)
  const cancel = button('cancel-wait', 'Stop waiting', () => waiting?.controller.abort(new Error('cancelled')))
  const renew = button('renew', 'Renew', () => void onRenew())
  const freeze = button('freeze', 'Freeze (stop renewing)', () => onFreeze(true))
  const unfreeze = button('unfreeze', 'Unfreeze', () => onFreeze(false))
  const release = button('release', 'Release', () => void (stopRenewing?.(), lock?.release()))
  const facts = holderFacts(client, LOCK_KEY, closing.signal, say)
  const line = lineView(client, LOCK_KEY)
  const note = h('p', { class: 'note', 'data-testid': 'lock-note' })

  root.replaceChildren(
    h('h2', { id: 'lock-title' }, 'Lock ', h('code', {}, LOCK_KEY)),
    h('div', { class: 'row' }, h('label', { for: 'lock-ttl' }, 'TTL (ms)'), ttl.input, h('label', { class: 'check' }, auto, ' auto-renew')),
    ttl.error,
    h('div', { class: 'row' }, acquire, acquireWait, cancel),
    h('div', { class: 'row' }, renew, freeze, unfreeze, release),
    facts.element,
    note,
    h('h3', { id: 'line-title' }, 'Waiting in line'),
    line.element,
  )

  async function onAcquire(wait: number) {
    const t = ttl.read()
    if (t === undefined || lock?.held || waiting) return
    const controller = new AbortController()
    const stop = () => controller.abort(new Error('closing'))
    closing.signal.addEventListener('abort', stop)
    let done = () => {}
    if (wait > 0) {
      waiting = { controller, done: new Promise<void>((r) => (done = r)) }
      tab.set({ waiting: true })
      say('Waiting in line for the lock…')
      render()
    }
    try {
      // The page renews by itself (instead of autoRenew) so that "freeze" can stop it.
      const got = await client.locks.acquire(LOCK_KEY, { ttl: t, wait, signal: controller.signal, autoRenew: false })
      if (got) took(got)
      else say(`The lock is held by ${facts.holder()?.owner ?? 'another tab'}: try "Acquire and wait".`)
    } catch (err) {
      if (!controller.signal.aborted) say(`Acquire failed: ${(err as Error).message}`, true)
      else if (!closing.signal.aborted) say('Stopped waiting for the lock.')
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
    note.textContent = ''
    say(`Acquired with token ${held.token}.`)
    held.signal.addEventListener('abort', () => {
      const code = isZarisError(held.signal.reason) ? held.signal.reason.code : 'ENDED'
      if (!closing.signal.aborted) say(code === 'RELEASED' ? 'Released.' : `Lost the lock (${code}).`, code !== 'RELEASED')
      stopRenewing?.()
      if (lock === held) tab.set({ holds: false })
      if (lock === held && frozen) note.textContent = `Frozen, this tab would still believe it holds token ${held.token}. Unfreeze, then write the shared document with it.`
      render()
    })
    if (auto.checked) startRenewing(held)
  }

  function startRenewing(held: Lock) {
    stopRenewing?.()
    stopRenewing = every(held.ttl / 3, () => void held.renew().catch((err) => say(`Renew failed: ${err.message}`, true)))
  }

  async function onRenew() {
    const t = ttl.read()
    if (!lock || t === undefined) return
    const ok = await lock.renew(t).catch(() => false)
    say(ok ? 'Renewed.' : 'Renewal failed: the lock was lost.', !ok)
  }

  /** Freeze: stop renewing, as a paused process would. Unfreeze: carry on — with a lock that may be gone. */
  function onFreeze(on: boolean) {
    frozen = on
    tab.set({ frozen: on })
    if (on) {
      stopRenewing?.()
      stopRenewing = undefined
      note.textContent = 'Frozen: this tab stopped renewing, as a paused process would. Another tab can take the lock when the TTL runs out.'
      say('Frozen: this tab no longer renews.')
    } else if (lock?.held) {
      note.textContent = ''
      if (auto.checked) startRenewing(lock)
      say('Unfrozen: renewing again.')
    } else if (lock) {
      note.textContent = `While frozen, the lock ran out: token ${lock.token} is stale. A write fenced with it is refused — try "Write" in the shared document.`
      say(`Unfrozen: the lock (token ${lock.token}) was lost meanwhile.`, true)
    }
    render()
  }

  auto.addEventListener('change', () => {
    if (auto.checked && lock?.held && !frozen) startRenewing(lock)
    else stopRenewing?.()
  })

  function render() {
    const held = Boolean(lock?.held)
    facts.draw(held)
    acquire.disabled = acquireWait.disabled = held || Boolean(waiting) || !ttl.valid()
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
    await Promise.all([facts.stop(), line.stop()])
  }
}
