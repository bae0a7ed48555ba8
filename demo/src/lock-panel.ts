/**
 * The lock panel: take one lock that every tab sees — exclusive (alone) or
 * shared (beside other readers) — with a plain try or waiting in line;
 * renew, release and "freeze" it (stop renewing, as a paused process would),
 * and see who holds it, in which mode, with which fencing token, how long
 * they have left, and who waits behind them, in order (./lock-view).
 */
import type { Client } from 'zaris'
import { every, h, quietly, type Say, type Unmount } from './dom'
import { holdControls } from './lock-hold'
import { lockFacts, modeField, ttlField } from './lock-view'
import type { TabState } from './tab-state'

export const LOCK_KEY = 'demo:lock'

export function lockPanel(root: HTMLElement, client: Client, tab: TabState, say: Say): Unmount {
  const closing = new AbortController()
  let waiting: { controller: AbortController; done: Promise<void> } | undefined

  const ttl = ttlField(() => render())
  const auto = h('input', { type: 'checkbox', id: 'lock-auto', checked: true })
  const mode = modeField()
  const button = (testid: string, label: string, onclick: () => void, secondary = true) =>
    h('button', { type: 'button', class: secondary ? 'secondary' : '', 'data-testid': testid, onclick }, label)
  const acquire = button('acquire', 'Acquire', () => void onAcquire(0), false)
  const acquireWait = button('acquire-wait', 'Acquire and wait', () => void onAcquire(Infinity), false)
  const cancel = button('cancel-wait', 'Stop waiting', () => waiting?.controller.abort(new Error('cancelled')))
  const renew = button('renew', 'Renew', () => {
    const t = ttl.read()
    if (t !== undefined) void hold.renew(t)
  })
  const freeze = button('freeze', 'Freeze (stop renewing)', () => hold.freeze(true))
  const unfreeze = button('unfreeze', 'Unfreeze', () => hold.freeze(false))
  const release = button('release', 'Release', () => void (hold.stop(), hold.lock?.release()))
  const facts = lockFacts(client, LOCK_KEY)
  const note = h('p', { class: 'note', 'data-testid': 'lock-note' })
  const hold = holdControls({ auto, note, tab, say, closing: closing.signal, render: () => render() })

  root.replaceChildren(
    h('h2', { id: 'lock-title' }, 'Lock ', h('code', {}, LOCK_KEY)),
    h('div', { class: 'row' }, h('label', { for: 'lock-ttl' }, 'TTL (ms)'), ttl.input, h('label', { class: 'check' }, auto, ' auto-renew')),
    ttl.error,
    mode.element,
    h('div', { class: 'row' }, acquire, acquireWait, cancel),
    h('div', { class: 'row' }, renew, freeze, unfreeze, release),
    facts.element,
    note,
    h('h3', { id: 'line-title' }, 'Waiting in line'),
    facts.line,
  )

  async function onAcquire(wait: number) {
    const t = ttl.read()
    if (t === undefined || hold.lock?.held || waiting) return
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
      const got = await client.locks.acquire(LOCK_KEY, { ttl: t, wait, mode: mode.value(), signal: controller.signal, autoRenew: false })
      if (got) hold.took(got)
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

  function render() {
    const held = Boolean(hold.lock?.held)
    facts.draw(hold.lock?.held ? hold.lock : null)
    acquire.disabled = acquireWait.disabled = held || Boolean(waiting) || !ttl.valid()
    mode.disable(held || Boolean(waiting))
    cancel.disabled = !waiting
    renew.disabled = release.disabled = !held
    freeze.disabled = !held || hold.frozen
    unfreeze.disabled = !hold.frozen
  }
  const stopTicking = every(200, render)

  return async () => {
    stopTicking()
    hold.stop()
    closing.abort()
    await waiting?.done
    if (hold.lock?.held) await quietly(hold.lock.release())
    await facts.stop()
  }
}
