/**
 * What node tests read and wait on: one metric of a node's `/metrics`, and
 * a condition polled until it holds.
 */

/** The value of `zaris_<name>` at `/metrics` of the node at `url` (NaN if it is not there). */
export async function nodeMetric(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text()
  return Number(new RegExp(`^zaris_${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN)
}

/** Resolves once `ok()` holds, looking every `every` ms; fails naming `what` after `ms`. */
export async function until(what: string, ok: () => boolean | Promise<boolean>, ms = 5_000, every = 10): Promise<void> {
  const end = Date.now() + ms
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`)
    await new Promise((r) => setTimeout(r, every))
  }
}
