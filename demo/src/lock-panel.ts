/**
 * The lock panel: acquire, renew, auto-renew, release and "freeze" (stop
 * renewing, as a crashed tab would) one shared lock, and show who holds it,
 * their fencing token and the time they have left.
 */
import { isZarisError, type Client, type Lock } from 'zaris'
import { every, h, seconds } from './dom'

export const LOCK_KEY = 'demo:lock'

export function lockPanel(root: HTMLElement, client: Client, say: (msg: string, error?: boolean) => void): () => void {
  let lock: Lock | null = null
  let stopRenewing: (() => void) | undefined
  let holder: { owner: string; token: number; ttl: number; seenAt: number } | undefined

  const ttl = h('input', { type: 'number', id: 'lock-ttl', min: 1000, step: 1000, value: 8000 })
  const auto = h('input', { type: 'checkbox', id: 'lock-auto', checked: true })
  const acquire = h('button', { type: 'button', 'data-testid': 'acquire', onclick: () => void onAcquire() }, 'Acquire')
  const renew = h('button', { type: 'button', class: 'secondary', 'data-testid': 'renew', onclick: () => void onRenew() }, 'Renew')
  const freeze = h('button', { type: 'button', class: 'secondary', 'data-testid': 'freeze', onclick: onFreeze }, 'Freeze (stop renewing)')
  const release = h('button', { type: 'button', class: 'secondary', 'data-testid': 'release', onclick: () => void onRelease() }, 'Release')
  const holderText = h('dd', { 'data-testid': 'lock-holder' }, 'free')
  const tokenText = h('dd', { 'data-testid': 'lock-token' }, '—')
  const mine = h('dd', { 'data-testid': 'lock-mine' }, 'no')
  const bar = h('div', { class: 'bar', role: 'progressbar', 'aria-label': 'Time left on the lock', 'aria-valuemin': 0, 'aria-valuemax': 100 }, h('div'))

  root.replaceChildren(
    h('h2', { id: 'lock-title' }, 'Lock ', h('code', {}, LOCK_KEY)),
    h('div', { class: 'row' },
      h('label', { for: 'lock-ttl' }, 'TTL (ms)'), ttl,
      h('label', {}, auto, ' auto-renew'),
    ),
    h('div', { class: 'row' }, acquire, renew, freeze, release),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Held by'), holderText,
      h('dt', {}, 'Fencing token'), tokenText,
      h('dt', {}, 'This tab holds it'), mine,
      h('dt', {}, 'Time left'), h('dd', {}, bar),
    ),
  )

  async function onAcquire() {
    try {
      // The page renews by itself (instead of autoRenew) so that "freeze" can stop it.
      lock = await client.locks.acquire(LOCK_KEY, { ttl: Number(ttl.value), autoRenew: false })
      if (!lock) return say(`The lock is held by ${holder?.owner ?? 'another tab'}.`)
      const held = lock
      say(`Acquired with token ${held.token}.`)
      held.signal.addEventListener('abort', () => {
        const code = isZarisError(held.signal.reason) ? held.signal.reason.code : 'ENDED'
        say(code === 'RELEASED' ? 'Released.' : `Lost the lock (${code}).`, code !== 'RELEASED')
        stopRenewing?.()
        if (lock === held) lock = null
        render()
      })
      if (auto.checked) startRenewing(held)
    } catch (err) {
      say(`Acquire failed: ${(err as Error).message}`, true)
    }
    render()
  }

  function startRenewing(held: Lock) {
    stopRenewing?.()
    stopRenewing = every(held.ttl / 3, () => void held.renew().catch((err) => say(`Renew failed: ${err.message}`, true)))
  }

  async function onRenew() {
    if (!lock) return
    const ok = await lock.renew(Number(ttl.value)).catch(() => false)
    say(ok ? 'Renewed.' : 'Renewal failed: the lock was lost.', !ok)
  }

  function onFreeze() {
    stopRenewing?.()
    stopRenewing = undefined
    auto.checked = false
    say('Frozen: this tab no longer renews. Another tab can take the lock when the TTL runs out.')
  }

  async function onRelease() {
    stopRenewing?.()
    await lock?.release()
  }

  auto.addEventListener('change', () => {
    if (auto.checked && lock) startRenewing(lock)
    else stopRenewing?.()
  })

  // Who holds the lock, from the store: first a read, then every change.
  const watch = client.watch(LOCK_KEY)
  void (async () => {
    const now = await client.locks.holder(LOCK_KEY)
    if (now && !holder) holder = { owner: now.owner, token: now.token, ttl: now.ttl ?? 0, seenAt: performance.now() }
    render()
    for await (const ev of watch) {
      holder = ev.type === 'put' && ev.owner
        ? { owner: ev.owner, token: ev.created!, ttl: ev.ttl ?? 0, seenAt: performance.now() }
        : undefined
      render()
    }
  })().catch((err) => say(`Watch failed: ${err.message}`, true))

  function render() {
    const left = holder ? holder.ttl - (performance.now() - holder.seenAt) : 0
    holderText.textContent = holder ? `${holder.owner}${holder.owner === client.id ? ' (this tab)' : ''}` : 'free'
    tokenText.textContent = holder ? String(holder.token) : '—'
    mine.textContent = lock?.held ? 'yes' : 'no'
    const pct = holder && holder.ttl > 0 ? Math.max(0, Math.min(100, (left / holder.ttl) * 100)) : 0
    ;(bar.firstElementChild as HTMLElement).style.width = `${pct}%`
    bar.classList.toggle('low', pct < 30)
    bar.setAttribute('aria-valuenow', String(Math.round(pct)))
    bar.title = holder ? seconds(left) : 'free'
    acquire.disabled = Boolean(lock?.held)
    renew.disabled = release.disabled = freeze.disabled = !lock?.held
  }
  const stopTicking = every(200, render)

  return () => {
    stopTicking()
    stopRenewing?.()
    watch.close()
  }
}
