/** A tiny element builder, so the panels read as markup. */
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
