/**
 * `zaris once NAME SLOT -- cmd`, run as a process (the bundled bin) against
 * a node process: the command runs once per slot with the lock's key and
 * token in its environment, a second call skips it (exit 0, a line on
 * stderr), a non-zero exit is recorded as failed and retried by the next
 * call, a lost lock stops the command (exit 70), a `zaris once` killed with
 * kill -9 mid-run is retried by a waiting one once its TTL ran out, and
 * usage mistakes exit 2.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { connect, type Client } from 'zaris'
import { startNode, type NodeProcess } from '../server/node-process'
import { start, zaris } from './run'

let node: NodeProcess
let client: Client
let ns = 0
const url = () => `zaris://127.0.0.1:${node.port}/once-${ns}`
beforeAll(async () => {
  node = await startNode()
})
afterAll(async () => {
  await client?.close()
  await node?.stop()
})
const fresh = async () => {
  await client?.close()
  ns++
  client = await connect(url(), { id: 'test' })
}

/** `zaris once ...` against this test's namespace. */
const once = (args: string[]) => zaris(['once', '--url', url(), ...args])
const sh = (script: string) => ['--', 'sh', '-c', script]

describe('zaris once', () => {
  test('runs the command with the lock key and token; a second call skips it, exit 0, and says who ran it', async () => {
    await fresh()
    const first = await once(['report', '2024-06-01', '--id', 'host-a', ...sh('echo "$ZARIS_LOCK_KEY $ZARIS_LOCK_TOKEN $ZARIS_URL"')])
    expect(first.code, first.stderr).toBe(0)
    const record = await client.jobs.record('report', '2024-06-01')
    expect(record).toMatchObject({ state: 'done', by: 'host-a', attempt: 1 })
    expect(first.stdout.trim()).toBe(`report@2024-06-01 ${record!.token} ${url()}`)
    const second = await once(['report', '2024-06-01', '--id', 'host-b', ...sh('echo ran again')])
    expect(second.code).toBe(0)
    expect(second.stdout).toBe('')
    expect(second.stderr.trim()).toBe(`zaris: slot 2024-06-01 of report is done (by host-a, token ${record!.token}); not running the command`)
    const json = await once(['report', '2024-06-01', '--json', ...sh('echo ran again')])
    expect(JSON.parse(json.stdout)).toEqual({ status: 'skipped', state: 'done', by: 'host-a', token: record!.token })
  })

  test("a command that exits non-zero: zaris exits with its code, the slot is recorded failed, and the next call retries it", async () => {
    await fresh()
    const failed = await once(['job', 's1', '--id', 'a', ...sh('exit 3')])
    expect(failed.code).toBe(3)
    expect(await client.jobs.record('job', 's1')).toMatchObject({ state: 'failed', by: 'a', attempt: 1, error: 'Error: the command exited with 3' })
    const retry = await once(['job', 's1', '--id', 'b', '--json', ...sh('exit 0')])
    expect(retry.code).toBe(0)
    expect(JSON.parse(retry.stdout)).toMatchObject({ status: 'ran', value: 0, attempt: 2 })
    expect(await client.jobs.record('job', 's1')).toMatchObject({ state: 'done', by: 'b', attempt: 2 })
  })

  test('a command running elsewhere: skipped at once as running (exit 0), or waited for with --wait', async () => {
    await fresh()
    const running = start(['once', 'job', 's', '--id', 'a', '--url', url(), ...sh('echo started; sleep 1.5')])
    await running.waitFor(/started/)
    const skipped = await once(['job', 's', '--id', 'b', ...sh('echo b')])
    expect(skipped.code).toBe(0)
    expect(skipped.stderr).toMatch(/^zaris: slot s of job is running \(by a, token \d+\); not running the command/)
    const waited = await once(['job', 's', '--id', 'c', '--wait', '10000', ...sh('echo c')])
    expect(await running.stop('SIGCONT')).toBe(0) // (a harmless signal: it has ended by now)
    expect(waited.code).toBe(0)
    expect(waited.stdout).toBe('')
    expect(waited.stderr).toMatch(/is done \(by a, token \d+\)/)
  })

  test('the lock stolen while the command runs: the command is stopped (SIGTERM), zaris exits 70, and the slot stays open for a retry', async () => {
    await fresh()
    const running = start(['once', 'job', 's', '--id', 'a', '--url', url(), '--grace', '2000', ...sh('trap "echo terminated; exit 9" TERM; echo started; while true; do sleep 0.05; done')])
    await running.waitFor(/started/)
    const thief = await client.locks.acquire('job@s', { steal: true })
    expect(thief).not.toBeNull()
    await running.waitFor(/terminated/)
    expect(await running.stop('SIGCONT')).toBe(70)
    expect(running.stderr()).toMatch(/zaris: lost the lock job@s \(STOLEN\)/)
    await thief!.release()
    expect(await client.jobs.record('job', 's')).toMatchObject({ state: 'started', by: 'a', attempt: 1 })
    const retry = await once(['job', 's', '--id', 'b', ...sh('exit 0')])
    expect(retry.code).toBe(0)
    expect(await client.jobs.record('job', 's')).toMatchObject({ state: 'done', by: 'b', attempt: 2 })
  })

  test('zaris once killed with kill -9 mid-run (its command too): a waiting call retries the slot once the lock expires', async () => {
    await fresh()
    const running = start(['once', 'job', 's', '--id', 'dead', '--ttl', '1000', '--url', url(), ...sh('echo "started $$"; exec sleep 30')])
    await running.waitFor(/started \d+/)
    const child = Number(/started (\d+)/.exec(running.stdout())![1])
    const token = (await client.locks.holder('job@s'))!.token
    await running.stop('SIGKILL')
    // Its command outlives it, as the doc says (ended here by its pid); the slot's lock frees at its TTL.
    process.kill(child, 'SIGKILL')
    const retry = await once(['job', 's', '--id', 'b', '--wait', '10000', '--ttl', '1000', '--json', ...sh('echo "retry $ZARIS_LOCK_TOKEN"')])
    expect(retry.code, retry.stderr).toBe(0)
    const result = JSON.parse(retry.stdout.trim().split('\n').at(-1)!) as { status: string; attempt: number; token: number }
    expect(result).toMatchObject({ status: 'ran', attempt: 2 })
    expect(result.token).toBeGreaterThan(token)
    expect(retry.stdout).toContain(`retry ${result.token}`)
  })

  test.each([
    [['once', 'job'], /once needs NAME and SLOT/],
    [['once', 'job', 's'], /once runs a command: put it after --/],
    [['once', 'job', 's', '--'], /once runs a command/],
    [['once', 'a@b', 's', '--', 'true'], /NAME must not contain "@"/],
    [['once', 'job', 's', 'extra', '--', 'true'], /once takes NAME and SLOT, then -- and the command/],
    [['once', 'job', 's', '--ttl', '0', '--', 'true'], /--ttl must be a whole number from 1/],
    [['once', 'job', 's', '--retries', '101', '--', 'true'], /--retries must be a whole number from 0 to 100/],
    [['once', 'job', 's', '--retention', '10', '--ttl', '1000', '--', 'true'], /retention \(10 ms\) must be at least the lock's ttl/],
    [['once', 'job', 's', '--bogus', '--', 'true'], /Unknown option '--bogus'/],
  ])('%j exits 2 with the reason', async (args, message) => {
    const ran = await zaris(['--url', 'zaris://127.0.0.1:1/unused', ...args])
    expect(ran.code, ran.stderr).toBe(2)
    expect(ran.stderr).toMatch(message)
  })

  test('a command that cannot be started exits 127; the slot is recorded failed', async () => {
    await fresh()
    const ran = await once(['job', 's', '--', 'zaris-no-such-command'])
    expect(ran.code).toBe(127)
    expect(ran.stderr).toMatch(/cannot run "zaris-no-such-command": command not found/)
    expect(await client.jobs.record('job', 's')).toMatchObject({ state: 'failed', error: 'Error: the command exited with 127' })
  })

  test('zaris --help lists once; zaris once --help explains it', async () => {
    expect((await zaris(['--help'])).stdout).toMatch(/^ {2}zaris once NAME SLOT \[\.\.\.\] -- cmd +run cmd once for slot SLOT of job NAME/m)
    const page = await zaris(['once', '--help'])
    expect(page.code).toBe(0)
    expect(page.stdout).toMatch(/^usage: zaris once NAME SLOT .* -- cmd args\.\.\./)
    expect(page.stdout).toMatch(/ZARIS_LOCK_KEY \(NAME@SLOT\), ZARIS_LOCK_TOKEN and ZARIS_URL/)
  })
})
