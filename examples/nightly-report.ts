/**
 * The tutorial: a nightly job that must run on exactly one instance.
 *
 *   npx tsx examples/nightly-report.ts                                  # in-process store
 *   npx tsx examples/nightly-report.ts zaris://localhost:7861/demo      # through a zaris node
 *
 * Start two at once against a node: one runs the job, the other skips.
 */
import { connect } from 'zaris'

const url = process.argv[2] ?? 'zaris://inproc/demo'
const client = await connect(url)

const lock = await client.locks.acquire('lock:nightly-report', { ttl: 30_000 })
if (!lock) {
  console.log('Another instance holds the lock. Skipping.')
} else {
  await using held = lock
  console.log('Lock acquired. Running the job...')
  await client.put('report:status', 'running', { fence: held })
  await new Promise((resolve) => setTimeout(resolve, 3_000)) // the job itself
  if (!(await held.renew(30_000))) throw new Error('lost the lock while working; not marking the report done')
  await client.put('report:status', 'done', { fence: held })
  console.log('Job complete. Lock will be released.')
}
await client.close()
