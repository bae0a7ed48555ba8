import { expect, test } from 'vitest'
import { connect } from 'zaris'

test('closing a client ends its waits with ClosedError, its watches quietly, its campaigns with ClosedError', async () => {
  const ns = `close-${Math.random().toString(36).slice(2)}`
  const holder = await connect(`zaris://inproc/${ns}`)
  const waiter = await connect(`zaris://inproc/${ns}`)
  await holder.locks.acquire('lock:x')
  await holder.election('leader').campaign()
  const waiting = waiter.locks.acquire('lock:x', { wait: Infinity })
  const campaign = waiter.election('leader').campaign()
  const watch = waiter.watch('k')
  const reading = (async () => {
    const seen = []
    for await (const ev of watch) seen.push(ev)
    return seen
  })()
  await new Promise((resolve) => setTimeout(resolve, 20))
  await waiter.close()
  await expect(waiting).rejects.toMatchObject({ code: 'CLOSED' })
  await expect(campaign).rejects.toMatchObject({ code: 'CLOSED' })
  expect(await reading).toEqual([])
  await expect(waiter.locks.acquire('lock:y')).rejects.toMatchObject({ code: 'CLOSED' })
  expect(() => waiter.watch('k')).toThrow(/closed/)
  await holder.close()
})
