/** The tutorial program, run as users run it: `npx tsx examples/nightly-report.ts`. */
import { execFile } from 'node:child_process'
import { resolve } from 'node:path'
import { promisify } from 'node:util'
import { expect, test } from 'vitest'

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '../..')

test('nightly-report prints its three lines in order and exits by itself', async () => {
  const { stdout } = await run('npx', ['tsx', 'examples/nightly-report.ts'], { cwd: root, timeout: 30_000 })
  expect(stdout.trim().split('\n')).toEqual([
    'Lock acquired. Running the job...',
    'Job complete. Lock will be released.',
  ])
}, 40_000)
