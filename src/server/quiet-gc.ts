/**
 * Collects the garbage a burst left, once the node is quiet. V8 collects its
 * old generation when allocation pushes it to, so a node that served a
 * crowd and then went quiet can keep hundreds of MiB of dead pages and
 * buffers in its heap for as long as it stays quiet. Every few seconds this
 * looks at the heap: when it holds far more than after the last collection
 * and nothing is in flight (no request being read or answered, no unread
 * output), it asks V8 for a full collection, at most once per interval.
 *
 * The collector is V8's own `gc`, reached as Node's `--expose-gc` flag would
 * (set at run time; `global.gc` is used when the process has it already).
 *
 * @module
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/** What counts as busy: bytes of requests in progress and of unread output. */
export interface Load {
  inFlight(): number
}

const EVERY_MS = 2_500
/** Heap growth since the last collection, over which a quiet node collects: twice as much, and at least this. */
const SLACK_BYTES = 32 * 1024 * 1024

/** Starts watching; `stop()` ends it. Returns undefined where V8's collector cannot be reached. */
export function collectWhenQuiet(load: Load): { stop(): void; readonly collections: number } | undefined {
  const gc = collector()
  if (!gc) return undefined
  let live = process.memoryUsage().heapUsed
  let collections = 0
  const timer = setInterval(() => {
    const used = process.memoryUsage().heapUsed
    if (used < Math.max(2 * live, live + SLACK_BYTES) || load.inFlight() > 0) return
    gc()
    collections++
    live = process.memoryUsage().heapUsed
  }, EVERY_MS)
  timer.unref()
  return {
    stop: () => clearInterval(timer),
    get collections() {
      return collections
    },
  }
}

let cached: (() => void) | null | undefined

function collector(): (() => void) | undefined {
  if (cached !== undefined) return cached ?? undefined
  const existing = (globalThis as { gc?: () => void }).gc
  if (typeof existing === 'function') return (cached = existing)
  try {
    setFlagsFromString('--expose-gc')
    cached = runInNewContext('gc') as () => void
  } catch {
    cached = null
  }
  return cached ?? undefined
}
