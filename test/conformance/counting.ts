/**
 * An adapter that counts tries at locks: commits whose first op sets a key
 * only if it is absent (the commit may also take the waiter out of line).
 * Joining or leaving a wait line is not a try. Shared by the conformance
 * suite and the bench (bench/lib/locks.ts); nothing here is Node-only.
 */
import type { Adapter } from 'zaris'

export function countingAdapter(inner: Adapter, counts: (key: string) => boolean = (key) => !key.startsWith('\u0001')): { adapter: Adapter; count(): number } {
  let count = 0
  const adapter = wrap(inner, (checks, ops, options) => {
    const first = ops[0]
    if (first?.type === 'set' && counts(first.key) && checks.some((c) => c.key === first.key && 'revision' in c && c.revision === null)) count++
    return inner.commit(checks, ops, options)
  })
  return { adapter, count: () => count }
}

/**
 * An adapter that counts commits: how many were sent, how many the store
 * refused (`ok: false`) and how many threw. Shared by the conformance suite
 * (counters are one commit each) and anything that measures round trips.
 */
export function commitCounter(inner: Adapter): { adapter: Adapter; commits(): number; refused(): number; threw(): number } {
  let commits = 0
  let refused = 0
  let threw = 0
  const adapter = wrap(inner, async (checks, ops, options) => {
    commits++
    try {
      const r = await inner.commit(checks, ops, options)
      if (!r.ok) refused++
      return r
    } catch (err) {
      threw++
      throw err
    }
  })
  return { adapter, commits: () => commits, refused: () => refused, threw: () => threw }
}

/** `inner` with its own `commit`, every other member passed through. */
function wrap(inner: Adapter, commit: Adapter['commit']): Adapter {
  const adapter: Adapter = {
    name: inner.name,
    capabilities: inner.capabilities,
    get: (key) => inner.get(key),
    list: (prefix, options) => inner.list(prefix, options),
    commit,
    watch: (prefix, sink, from) => inner.watch(prefix, sink, from),
    close: () => inner.close(),
  }
  if (inner.ownerGone) adapter.ownerGone = (owner, signal) => inner.ownerGone!(owner, signal)
  if (inner.registerOwner) adapter.registerOwner = (owner) => inner.registerOwner!(owner)
  return adapter
}
