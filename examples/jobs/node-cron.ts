/**
 * A job that runs once per tick however many instances schedule it:
 * node-cron fires it on every instance, `client.jobs.once` lets one run it.
 * node-cron hands the callback the tick's scheduled time (`date`), which is
 * the slot: an instance whose clock is late fires the same slot later and
 * skips it.
 *
 *   npx tsx examples/jobs/node-cron.ts                                           # in-process store
 *   npx tsx examples/jobs/node-cron.ts zaris://localhost:7861/demo --id a --ticks 5
 *
 * Start two or three against one node: each tick is run by one of them.
 */
import { parseArgs } from 'node:util'
import cron from 'node-cron'
import { connect } from 'zaris'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { id: { type: 'string' }, ticks: { type: 'string' } } })
const client = await connect(positionals[0] ?? 'zaris://inproc/jobs', { id: values.id })
const ticks = Number(values.ticks ?? Infinity)

let fired = 0
const calls: Array<Promise<void>> = []
const task = cron.schedule('* * * * * *', ({ date }) => {
  if (++fired === ticks) void task.stop()
  const call = client.jobs
    .once('report', date, async (lock) => {
      await client.put(`report:${date.toISOString()}`, `written by ${client.id}`, { fence: lock })
      return 'written'
    })
    .then((result) => {
      if (result.status === 'skipped') console.log(`${date.toISOString()} skipped: ${result.state} by ${result.by}`)
      else console.log(`${date.toISOString()} ${result.status} with token ${result.token}`)
    })
  calls.push(call)
  return call
})

// Stop after the ticks asked for, or on Ctrl-C; let the calls under way end first.
const stopped = new Promise<void>((resolve) => {
  task.on('task:stopped', () => resolve())
  process.once('SIGINT', () => void Promise.resolve(task.stop()).then(resolve))
})
await stopped
await Promise.all(calls)
await client.close()
