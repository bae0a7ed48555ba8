/**
 * A process whose only work left is a wait for a lock stays alive until it
 * holds it. On the memory store the waiter's take is parked in the process's
 * own store, with no socket to keep Node running: the holder's own keep-alive
 * ends at its deadline, the store's expiry timer is unref'd, and Node exited
 * mid-wait with "unsettled top-level await" (code 13). docs/web-locks.md's
 * TTL example failed so, now and then, in a clean-clone run.
 */
import { expect, test } from 'vitest'
import { runSnippet } from '../readme/snippets'

test('a wait parked at the memory store for a holder past its TTL keeps the process alive until it holds', async () => {
  const { stdout } = await runSnippet(`
    import { connect } from 'zaris'
    const a = await connect('zaris://inproc/keep-alive')
    const b = await connect('zaris://inproc/keep-alive')
    const held = await a.locks.acquire('k', { ttl: 200, autoRenew: false })
    // Nothing else keeps this process alive once a's hold reaches its deadline: only b's wait.
    const lock = await b.locks.acquire('k', { ttl: 30_000, wait: 5_000 })
    console.log(held!.token < lock!.token ? 'granted after the TTL' : 'granted with an older token')
    await Promise.all([a.close(), b.close()])
  `)
  expect(stdout.trim()).toBe('granted after the TTL')
}, 40_000)
