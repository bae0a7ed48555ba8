/** A tiny element builder, so the panels read as markup, and the few helpers every panel uses. */
import type { Watch, WatchEvent } from 'zaris'

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Record<string, string | number | boolean | ((e: Event) => void)> = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === 'function') el.addEventListener(name.replace(/^on/, ''), value)
    else if (typeof value === 'boolean') el.toggleAttribute(name, value)
    else el.setAttribute(name, String(value))
  }
  el.append(...children)
  return el
}

/** Seconds with one decimal, for TTLs and time left. */
export function seconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(1)} s`
}

/** Runs `fn` every `ms` until the returned function is called. */
export function every(ms: number, fn: () => void): () => void {
  const id = setInterval(fn, ms)
  return () => clearInterval(id)
}

/** Shows a message in the page's status line; `error` marks it as a failure. */
export type Say = (msg: string, error?: boolean) => void

/** How a panel goes away: it resolves once every watch, wait, campaign, lease and lock of it has ended. */
export type Unmount = () => Promise<void>

/**
 * Feeds a watch's events to `fn` until the watch closes; resolves then.
 * A failure is reported unless the panel is already going away (`closing`).
 */
export async function follow(watch: Watch, fn: (ev: WatchEvent) => void, closing: AbortSignal, say: Say, what: string): Promise<void> {
  try {
    await watch.ready
    for await (const ev of watch) fn(ev)
  } catch (err) {
    if (!closing.aborted) say(`${what} failed: ${(err as Error).message}`, true)
  }
}

/** Swallows the failure of work that ends because the panel is going away. */
export function quietly<T>(p: Promise<T>): Promise<T | undefined> {
  return p.catch(() => undefined)
}

/** How an owner reads on the page: a lock held in shared mode is owned by zaris's group (an id starting with U+0001). */
export function ownerName(owner: string, self: string): string {
  if (owner.startsWith('\u0001')) return 'shared holders'
  return owner === self ? `${owner} (this tab)` : owner
}
