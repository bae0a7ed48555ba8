/**
 * One call of the fleet's job (job-worker.ts, and the late instance of
 * jobs.test.ts): `jobs.once(job, slot, fn)` whose run writes to its slot's
 * resource `writes` times, fenced by its lock, with random work between;
 * the call, the run and its result go to the history as notes (job-check.ts
 * reads them), the writes as write records.
 */
import type { Client, JobResult } from 'zaris'
import type { RecordedOps } from './ops'

/** What a call of the job takes. */
export interface JobCallConfig {
  job: string
  ttl: number
  wait: number
  retention: number
  writes: number
  /** Random work before each write, [min, max] ms. */
  workMs: [number, number]
}

/** A job step in the history: a note whose `text` says which. */
export type JobNote =
  | { text: 'job-fire'; slot: string }
  | { text: 'job-run'; slot: string; token: number }
  | { text: 'job-result'; slot: string; status: string; token?: number; attempt?: number; by?: string; state?: string; error?: string }

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Fires the job for `slot` once; `onRun` is told when this call's run starts. */
export async function fireJob(client: Client, ops: RecordedOps, config: JobCallConfig, slot: string, random: () => number, onRun: (token: number) => void = () => {}): Promise<void> {
  const note = (n: JobNote) => ops.note(n.text, n)
  note({ text: 'job-fire', slot })
  let result: JobResult<number>
  try {
    result = await client.jobs.once(
      config.job,
      slot,
      async (lock) => {
        note({ text: 'job-run', slot, token: lock.token })
        onRun(lock.token)
        let accepted = 0
        for (let seq = 0; seq < config.writes; seq++) {
          const [min, max] = config.workMs
          await sleep(min + random() * (max - min))
          if ((await ops.write(lock, seq)) === 'accepted') accepted++
        }
        return accepted
      },
      { ttl: config.ttl, wait: config.wait, retention: config.retention },
    )
  } catch (err) {
    note({ text: 'job-result', slot, status: 'rejected', error: (err as Error).message })
    return
  }
  const error = result.status === 'failed' ? ((result.error as { code?: string })?.code ?? String(result.error)) : undefined
  note({ text: 'job-result', slot, ...result, ...(error === undefined ? {} : { error }) } as JobNote)
}
