/**
 * A process awaiting a call to a node that cannot be reached stays alive
 * until the call settles (it rejects with UnavailableError), instead of
 * exiting mid-call with Node's "unsettled top-level await" (code 13).
 */
import { expect, test } from 'vitest'
import { runSnippet } from '../readme/snippets'

test('an awaited call to an unreachable node settles with UNAVAILABLE before the process exits', async () => {
  const { stdout } = await runSnippet(`
    import { connect } from 'zaris'
    const client = await connect('zaris://127.0.0.1:1/x', { timeout: 2_000 })
    try {
      await client.put('k', 1)
      console.log('put succeeded?')
    } catch (err) {
      console.log('caught', (err as { code?: string }).code)
    }
    await client.close()
  `)
  expect(stdout.trim()).toBe('caught UNAVAILABLE')
}, 40_000)

test('the node refuses a body that is not valid UTF-8, in the fetch handler too', async () => {
  const { createHandler, memoryBackend } = await import('../../src/server')
  const backend = memoryBackend()
  const handler = createHandler({ adapterFor: backend.adapterFor })
  const body = new Uint8Array([...new TextEncoder().encode('{"key":"utf8-'), 0xc0, 0xaf, ...new TextEncoder().encode('"}')])
  const res = await handler.fetch(new Request('http://127.0.0.1:7861/v1/ns/get', { method: 'POST', headers: { 'content-type': 'application/json', host: '127.0.0.1:7861' }, body }))
  expect(res.status).toBe(400)
  expect(await res.json()).toMatchObject({ error: { code: 'INVALID_ARGUMENT', message: 'body: not valid UTF-8' } })
  await backend.close()
})
