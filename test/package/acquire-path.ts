/**
 * Which source files one `locks.acquire` runs, from the call to the handle:
 * run as a process of its own (`tsx test/package/acquire-path.ts`), it takes
 * a lock once to load everything, then takes V8's precise coverage around a
 * second acquire on a warm client and prints, as JSON, every src/ file with
 * a function that ran. test/package/acquire-path.test.ts reads it.
 *
 * Coverage, not a static import graph: a file that is imported but never
 * called on the path does not count, and neither does one reached only by a
 * timer after the acquire resolved.
 */
import { Session } from 'node:inspector/promises'
import { relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { connect } from '../../src/index'

const src = resolve(fileURLToPath(new URL('../../src/', import.meta.url)))

const session = new Session()
session.connect()
await session.post('Profiler.enable')
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })

const client = await connect('zaris://inproc/acquire-path')
const warm = await client.locks.acquire('k-warm', { ttl: 30_000, autoRenew: false })
await warm!.release()
// Taking the coverage resets its counters: what the next take reports ran after this line.
await session.post('Profiler.takePreciseCoverage')
const lock = await client.locks.acquire('k', { ttl: 30_000, autoRenew: false })
const { result } = await session.post('Profiler.takePreciseCoverage')
await lock!.release()
await client.close()

const files = new Set<string>()
for (const script of result) {
  if (!script.url.startsWith('file://')) continue
  const path = fileURLToPath(script.url)
  if (!path.startsWith(src)) continue
  if (script.functions.some((f) => f.ranges.some((r) => r.count > 0))) files.add(relative(src, path))
}
process.stdout.write(JSON.stringify([...files].sort()) + '\n')
