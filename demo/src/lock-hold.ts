/**
 * What a tab does with the lock it holds: renew it by itself (so that
 * "freeze" can stop renewing, as a paused process would), freeze and
 * unfreeze it, and say when the hold ends and why.
 */
import { isZarisError, type Lock } from 'zaris'
import { every, type Say } from './dom'
import type { TabState } from './tab-state'

export interface HoldParts {
  auto: HTMLInputElement
  note: HTMLElement
  tab: TabState
  say: Say
  closing: AbortSignal
  render: () => void
}

export function holdControls({ auto, note, tab, say, closing, render }: HoldParts) {
  let lock: Lock | null = null
  let frozen = false
  let stopRenewing: (() => void) | undefined

  const startRenewing = (held: Lock) => {
    stopRenewing?.()
    stopRenewing = every(held.ttl / 3, () => void held.renew().catch((err) => say(`Renew failed: ${err.message}`, true)))
  }
  const stop = () => {
    stopRenewing?.()
    stopRenewing = undefined
  }
  auto.addEventListener('change', () => {
    if (auto.checked && lock?.held && !frozen) startRenewing(lock)
    else stop()
  })

  return {
    get lock() {
      return lock
    },
    get frozen() {
      return frozen
    },
    stop,
    /** This tab took `held`. */
    took(held: Lock) {
      lock = held
      frozen = false
      tab.lastLock = held
      tab.set({ holds: true, frozen: false })
      note.textContent = ''
      say(`Acquired (${held.mode}) with token ${held.token}.`)
      held.signal.addEventListener('abort', () => {
        const code = isZarisError(held.signal.reason) ? held.signal.reason.code : 'ENDED'
        if (!closing.aborted) say(code === 'RELEASED' ? 'Released.' : `Lost the lock (${code}).`, code !== 'RELEASED')
        stop()
        if (lock === held) tab.set({ holds: false })
        if (lock === held && frozen) note.textContent = `Frozen, this tab would still believe it holds token ${held.token}. Unfreeze, then write the shared document with it.`
        render()
      })
      if (auto.checked) startRenewing(held)
    },
    async renew(ttl: number) {
      if (!lock) return
      const ok = await lock.renew(ttl).catch(() => false)
      say(ok ? 'Renewed.' : 'Renewal failed: the lock was lost.', !ok)
    },
    /** Freeze: stop renewing, as a paused process would. Unfreeze: carry on — with a lock that may be gone. */
    freeze(on: boolean) {
      frozen = on
      tab.set({ frozen: on })
      if (on) {
        stop()
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
    },
  }
}
