/**
 * A process that parks one take of `lock` in a `file://` store and prints
 * `parked`, then its answer with the machine clock's reading when it came
 * (test/file/handover.test.ts). Arguments: the file, the namespace, how
 * often its tail polls (ms).
 */
import { fileAdapter } from '../../src/adapters/file/index'
import { machineClock } from '../../src/adapters/file/machine'

const [path, namespace, pollMs] = process.argv.slice(2) as [string, string, string]
const adapter = await fileAdapter({ path, namespace, pollMs: Number(pollMs) })
await adapter.registerOwner!('child')
const answer = await adapter.commit([{ key: 'lock', revision: null }], [{ type: 'set', key: 'lock', value: null, owner: 'child', ttl: 60_000 }], {
  waitChange: 20_000,
  keepParked: true,
  onParked: () => console.log('parked'),
})
console.log(JSON.stringify({ at: machineClock.now(), answer }))
// Kept open until killed: a close would end its client's hold.
setInterval(() => {}, 60_000)
