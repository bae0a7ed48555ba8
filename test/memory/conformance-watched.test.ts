/**
 * The conformance suite on the memory store declaring no way to wait in the
 * store (no `commitOnChange`, `keepParked`, `handover` or `orElse`): the
 * core's waiters then wait on watch events and try again, as over etcd or
 * IndexedDB, here on the fastest store there is (and under the semaphore's
 * and the lock family's mutation runs, which would otherwise see that path
 * only through slower stores).
 */
import type { Adapter } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { testAdapter } from '../conformance'

const WAITS_NOWHERE = { commitOnChange: false, keepParked: false, handover: false, orElse: false }

/** The adapter as it is, but for the capabilities it declares. */
const watched = (adapter: Adapter): Adapter =>
  new Proxy(adapter, {
    get(target, p, receiver) {
      if (p === 'capabilities') return { ...target.capabilities, ...WAITS_NOWHERE }
      const v = Reflect.get(target, p, receiver)
      return typeof v === 'function' ? v.bind(target) : v
    },
  })

testAdapter('memory, waiting on watch events', (namespace) => watched(memoryAdapter({ namespace, historySize: 200 })), { historyKept: 200 })
