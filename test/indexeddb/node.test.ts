import { describe, expect, it } from 'vitest'
import { connect, isZarisError } from 'zaris'
import { indexedDbAdapter } from 'zaris/indexeddb'

describe('zaris://idb in Node', () => {
  it('connect fails with UnsupportedError naming what to use instead', async () => {
    const err = await connect('zaris://idb/app').then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(isZarisError(err, 'UNSUPPORTED')).toBe(true)
    expect((err as Error).message).toMatch(/zaris:\/\/inproc\//)
    expect((err as Error).message).toMatch(/zaris node/)
    expect((err as Error).message).toMatch(/Node/)
  })

  it('indexedDbAdapter fails the same way', () => {
    expect(() => indexedDbAdapter({ namespace: 'app' })).toThrow(/IndexedDB/)
  })
})
