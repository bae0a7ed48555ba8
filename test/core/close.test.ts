import { expect, test } from 'vitest'
import { connect } from 'zaris'

test('closing a client ends its waits with ClosedError, its watches quietly, its campaigns with null', async () => {
  const ns = `close-${Math.random().toString(36).slice(2)}`
  const holder = await connect(`zaris://inproc/${ns}`)
  const waiter = await connect(`zaris://inproc/${ns}`)
  await holder.locks.acquire('lock:x')
  await holder.election('leader').campaign()
  const waiting = waiter.locks.acquire('lock:x', { wait: Infinity })
  const campaign = waiter.election('leader').campaign()
  const late = waiter.election('leader')
  const watch = waiter.watch('k')
  const reading = (async () => {
    const seen = []
    for await (const ev of watch) seen.push(ev)
    return seen
  })()
  await new Promise((resolve) => setTimeout(resolve, 20))
  await waiter.close()
  await expect(waiting).rejects.toMatchObject({ code: 'CLOSED' })
  expect(await campaign).toBeNull()
  expect(await late.campaign()).toBeNull() // a closed client campaigns no more
  expect(await reading).toEqual([])
  await expect(waiter.locks.acquire('lock:y')).rejects.toMatchObject({ code: 'CLOSED' })
  expect(() => waiter.watch('k')).toThrow(/closed/)
  await holder.close()
})

test('a campaign nobody awaits ends quietly on client.close(): the script exits 0 with no unhandled rejection', async () => {
  const { execFile } = await import('node:child_process')
  const { resolve } = await import('node:path')
  const root = resolve(import.meta.dirname, '../..')
  const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    execFile(process.execPath, ['--import', 'tsx', 'test/core/fixtures/unawaited-campaign.ts'], { cwd: root, timeout: 20_000 }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    )
  })
  expect(result.stderr).toBe('')
  expect(result.stdout.trim()).toBe('closed')
  expect(result.code).toBe(0)
}, 30_000)
