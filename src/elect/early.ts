/**
 * Leading on the grant: the stretch between the gate's grant and the
 * landing of the take's commit, in which this tab leads before its term's
 * token is known.
 *
 * Why it is bounded: with the gate held, only a taker without the gate can
 * lead beside this tab, and such a taker first waits to see the key free or
 * expired for `EXPIRED_GRACE` (a holder frozen past its TTL aside). The
 * grant comes after the previous holder let the gate go, so before
 * grant + `EXPIRED_GRACE` nobody takes the key without the gate; the early
 * lead ends `EARLY_MARGIN` before that unless the token came first. A page
 * frozen in that stretch finds it over when it thaws.
 *
 * @module
 */
import type { EndCode } from './term'

/** How much earlier than the ungated takeover's grace the early lead ends: the grant's delivery to the page, timers' lateness. */
const EARLY_MARGIN = 20

export class EarlyLead {
  readonly #deadline: number
  readonly #timer: ReturnType<typeof setTimeout>
  readonly #onEnd: (code: EndCode) => void
  #over = false

  /** Leads from now for `grace - EARLY_MARGIN` ms at most; `onEnd` is told once, when it ends before the term began. */
  constructor(grace: number, onEnd: (code: EndCode) => void) {
    this.#onEnd = onEnd
    const ms = grace - EARLY_MARGIN
    this.#deadline = performance.now() + ms
    this.#timer = setTimeout(() => this.end('EXPIRED'), ms)
  }

  get held(): boolean {
    return !this.#over && performance.now() < this.#deadline
  }

  /**
   * Ends it with `code`; without one, the term began: true if the lead went
   * on into it, else (its bound passed first, the page frozen) it is told
   * as `EXPIRED`.
   */
  end(code?: EndCode): boolean {
    if (this.#over) return false
    const held = this.held
    this.#over = true
    clearTimeout(this.#timer)
    if (code || !held) this.#onEnd(code ?? 'EXPIRED')
    return held && !code
  }
}
