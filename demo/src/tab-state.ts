/**
 * What this tab is, in one place: leader or not, holding the lock, waiting
 * for it, frozen. The tab's title and favicon say it, so that the tab strip
 * tells the tabs apart; panels read the last lock this tab held (for fenced
 * writes) from here.
 */
import type { Lock } from 'zaris'

export interface TabFacts {
  leader: boolean
  holds: boolean
  waiting: boolean
  frozen: boolean
}

export class TabState {
  readonly id: string
  facts: TabFacts = { leader: false, holds: false, waiting: false, frozen: false }
  /** The lock this tab took last, held or not: the fence of its writes, stale or fresh. */
  lastLock: Lock | null = null
  readonly #listeners = new Set<() => void>()

  constructor(id: string) {
    this.id = id
    this.#show()
  }

  set(patch: Partial<TabFacts>): void {
    const next = { ...this.facts, ...patch }
    if (Object.keys(next).every((k) => next[k as keyof TabFacts] === this.facts[k as keyof TabFacts])) return
    this.facts = next
    this.#show()
    for (const fn of this.#listeners) fn()
  }

  /** Calls `fn` on every change; returns the way to stop. */
  onChange(fn: () => void): () => void {
    this.#listeners.add(fn)
    return () => this.#listeners.delete(fn)
  }

  /** What the tab strip shows: its role first, then its id. */
  title(): string {
    const f = this.facts
    const parts = [f.leader ? 'Leader' : 'Follower']
    if (f.holds) parts.push(f.frozen ? 'holds the lock (frozen)' : 'holds the lock')
    else if (f.waiting) parts.push('waiting for the lock')
    return `${parts.join(' · ')} — ${this.id} · zaris demo`
  }

  #show(): void {
    document.title = this.title()
    const f = this.facts
    const fill = f.holds ? '#2f6fed' : f.waiting ? '#b25e00' : '#5b6572'
    const letter = f.holds ? 'H' : f.waiting ? 'W' : f.leader ? 'L' : 'z'
    const ring = f.leader ? `<rect x='2' y='2' width='28' height='28' rx='8' fill='none' stroke='#16803c' stroke-width='4'/>` : ''
    const svg =
      `<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'><rect x='2' y='2' width='28' height='28' rx='8' fill='${fill}'/>${ring}` +
      `<text x='16' y='22' font-size='16' font-family='sans-serif' font-weight='700' text-anchor='middle' fill='#fff'>${letter}</text></svg>`
    let icon = document.querySelector<HTMLLinkElement>('link[rel=icon]')
    if (!icon) document.head.append((icon = Object.assign(document.createElement('link'), { rel: 'icon' })))
    icon.href = `data:image/svg+xml,${encodeURIComponent(svg)}`
    icon.dataset.state = letter
  }
}
