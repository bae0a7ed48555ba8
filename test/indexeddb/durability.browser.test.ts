/**
 * The durability of the readwrite transactions a real client makes on
 * `zaris://idb`, in Chromium (docs/browser.md, "Durability"): a take — the
 * revision that becomes the holder's fencing token — and a renewal are
 * `strict`, so no token goes back across an OS crash; a release and an
 * expiry are `relaxed`; a plain put and a counter keep the browser's
 * default. Every readwrite transaction of the page is recorded as the
 * browser sees it (`IDBTransaction.durability`).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Client } from 'zaris'
import { indexedDbAdapter } from 'zaris/indexeddb'
import { dropNamespace } from '../browser-harness/drop-namespace'

const seen: IDBTransactionDurability[] = []
const original = IDBDatabase.prototype.transaction
let client: Client | undefined
let ns = ''

beforeEach(() => {
  seen.length = 0
  ns = `dur-${Math.random().toString(36).slice(2, 10)}`
  IDBDatabase.prototype.transaction = function (this: IDBDatabase, ...args: Parameters<IDBDatabase['transaction']>) {
    const tx = original.apply(this, args)
    if (this.name === `zaris:${ns}` && tx.mode === 'readwrite') seen.push(tx.durability)
    return tx
  } as IDBDatabase['transaction']
})

afterEach(async () => {
  IDBDatabase.prototype.transaction = original
  await client?.close()
  client = undefined
  await dropNamespace(ns)
})

/** The durabilities of the readwrite transactions `step` makes. */
async function during(step: () => Promise<unknown>): Promise<IDBTransactionDurability[]> {
  seen.length = 0
  await step()
  return [...seen]
}

describe('indexeddb durability', () => {
  it('makes a take and a renewal strict, a release relaxed, data the default', async () => {
    client = new Client(indexedDbAdapter({ namespace: ns }))
    await client.get('warm')
    let lock = await client.locks.acquire('lock:a', { ttl: 30_000 })
    expect(lock).not.toBeNull()
    // The release's delete, then the take (one commit through the key's gate).
    const take = await during(async () => {
      await lock!.release()
      lock = await client!.locks.acquire('lock:a', { ttl: 30_000 })
    })
    expect(take).toEqual(['relaxed', 'strict'])
    expect(await during(() => lock!.renew(30_000))).toEqual(['strict'])
    expect(await during(() => lock!.release())).toEqual(['relaxed'])
    expect(await during(() => client!.put('data', { n: 1 }))).toEqual(['default'])
    expect(await during(() => client!.counters.increment('n', 1))).toEqual(['default'])
    expect(await during(() => client!.delete('data'))).toEqual(['relaxed'])
  })

  it('makes an expiry relaxed', async () => {
    client = new Client(indexedDbAdapter({ namespace: ns }))
    await client.put('short', 1, { ttl: 30 })
    seen.length = 0
    const deadline = Date.now() + 5_000
    while ((await client.get('short')) !== undefined || seen.length === 0) {
      if (Date.now() > deadline) throw new Error('the entry did not expire')
      await new Promise((r) => setTimeout(r, 10))
    }
    expect(seen).toEqual(['relaxed'])
  })
})
