/**
 * A fake slow transport, named as such in the adapter's name: the real memory
 * adapter, answering each commit `latency` ms (ManualClock time) after it
 * applied it. `onCommit` sees each commit as it is sent.
 */
import type { Adapter, Check, Op } from 'zaris'
import type { ManualClock } from 'zaris/testing'

export function lateAnswers(inner: Adapter, clock: ManualClock, latency: number, onCommit?: (checks: Check[], ops: Op[]) => void): Adapter {
  return {
    ...inner,
    name: `memory (answers ${latency} ms late: fake)`,
    async commit(checks, ops, options) {
      onCommit?.(checks, ops)
      const result = await inner.commit(checks, ops, options)
      await new Promise<void>((resolve) => clock.setTimeout(resolve, latency))
      return result
    },
    get: (k) => inner.get(k),
    list: (p, o) => inner.list(p, o),
    watch: (p, s, f) => inner.watch(p, s, f),
    close: () => inner.close(),
  }
}
