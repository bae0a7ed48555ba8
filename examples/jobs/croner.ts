/**
 * A job that runs once per tick however many instances schedule it:
 * croner fires it on every instance, `client.jobs.once` lets one run it.
 * The slot is the tick's scheduled time: croner fires at it or a little
 * after (`currentRun()`), and the last run of the pattern up to then is the
 * scheduled time itself (`previousRuns` leaves out a run exactly at its
 * reference, hence the millisecond) — so an instance whose clock is late
 * fires the same slot later and skips it.
 *
 *   npx tsx examples/jobs/croner.ts                                           # in-process store
 *   npx tsx examples/jobs/croner.ts zaris://localhost:7861/demo --id a --ticks 5
 *
 * Start two or three against one node: each tick is run by one of them.
 */
import { parseArgs } from 'node:util'
import { Cron } from 'croner'
import { connect } from 'zaris'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { id: { type: 'string' }, ticks: { type: 'string' } } })
const client = await connect(positionals[0] ?? 'zaris://inproc/jobs', { id: values.id })

const job = new Cron('* * * * * *', { maxRuns: Number(values.ticks ?? Infinity) }, async (self) => {
  const slot = self.previousRuns(1, new Date(self.currentRun()!.getTime() + 1))[0]!
  const result = await client.jobs.once('report', slot, async (lock) => {
    await client.put(`report:${slot.toISOString()}`, `written by ${client.id}`, { fence: lock })
    return 'written'
  })
  if (result.status === 'skipped') console.log(`${slot.toISOString()} skipped: ${result.state} by ${result.by}`)
  else console.log(`${slot.toISOString()} ${result.status} with token ${result.token}`)
})

// Stop after the ticks asked for, or on Ctrl-C; let the call under way end first.
process.once('SIGINT', () => job.stop())
while (job.isRunning() || job.isBusy()) await new Promise((resolve) => setTimeout(resolve, 100))
await client.close()
