/**
 * The conformance suite on the memory store, each namespace keeping 200
 * revisions of history (so the suite can check compaction). Restarts,
 * the end of the revisions and an unreachable store do not apply to a store
 * that lives and dies with its process (test/memory/revisions.test.ts checks
 * the end of the revisions on the store itself).
 */
import { memoryAdapter } from 'zaris/memory'
import { testAdapter } from '../conformance'

testAdapter('memory', (namespace) => memoryAdapter({ namespace, historySize: 200 }), { historyKept: 200 })
