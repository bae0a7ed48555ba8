/**
 * A client that goes away without releasing (a closed tab, a killed
 * process): a store that can tell its owner is gone (`capabilities.ownerGone`,
 * IndexedDB) ends its lock, lease, candidacy and wait-line place at once, as
 * `expire` events with a revision each, for every reader — the DESIGN allows
 * 100 ms, the test one second on a loaded machine; a store that cannot tell
 * keeps them until their TTL.
 */
import { expect } from 'vitest'
import type { Adapter, Client, WatchEvent } from 'zaris'
import type { FixtureFactory } from './fixture'
import { notChecked, sleep, until, type Named } from './util'

export function ownerGoneCases(factory: FixtureFactory, t: Named): void {
  /**
   * A client "dead" holds a lock, a lease, a term and a place in line, then
   * its adapter goes away with nothing released; `then` judges the store
   * from the raw watch of every event and the client "alive".
   */
  const goneClient = (capability: boolean, then: (s: { raw: Adapter; alive: Client; keys: string[]; events: WatchEvent[]; closedAt: number }) => Promise<void>) => async () => {
    const f = await factory()
    try {
      const [dead, alive] = [await f.connect({ id: 'dead' }), await f.connect({ id: 'alive' })]
      const raw = await f.adapter()
      if (capability !== (raw.capabilities?.ownerGone === true)) {
        notChecked(capability ? 'the adapter does not declare capability ownerGone' : 'the adapter declares capability ownerGone (its holds end at once instead)')
      }
      const events: WatchEvent[] = []
      await raw.watch('', { event: (ev) => events.push(ev), error: () => {} })
      const ttl = 60_000
      expect(await dead.locks.acquire('lock:a', { ttl })).not.toBeNull()
      expect(await dead.leases.grant('presence:dead', { ttl, value: 'here' })).not.toBeNull()
      expect(await dead.election('leader', { ttl }).campaign()).toBeTruthy()
      const other = (await alive.locks.acquire('lock:w', { ttl }))!
      dead.locks.acquire('lock:w', { ttl, wait: Infinity }).catch(() => {}) // ends with its adapter
      await until(async () => (await raw.list('\u0001q')).entries.some((e) => e.owner === 'dead'))
      const place = (await raw.list('\u0001q')).entries.find((e) => e.owner === 'dead')!
      const keys = ['lock:a', 'presence:dead', 'leader', place.key]
      const closedAt = Date.now()
      await dead.adapter.close() // gone, and nothing released
      await then({ raw, alive, keys, events, closedAt })
      await other.release()
    } finally {
      await f.close()
    }
  }

  t.group('a client gone without releasing', () => {
    t('capability ownerGone: its lock, lease, term and place in line end at once, as expiries with a revision each', goneClient(true, async ({ raw, alive, keys, events, closedAt }) => {
      await until(() => keys.every((k) => events.some((e) => e.key === k && e.type === 'expire')), 1_000)
      console.log(`${raw.name}: a gone client's 4 entries ended ${Date.now() - closedAt} ms after it went`)
      const ends = events.filter((e) => keys.includes(e.key) && e.type !== 'put')
      expect(ends.map((e) => e.type)).toEqual(['expire', 'expire', 'expire', 'expire'])
      expect(new Set(ends.map((e) => e.revision)).size).toBe(4)
      expect(await alive.locks.holder('lock:a')).toBeUndefined()
      expect(await alive.list('presence:')).toEqual([])
      expect(await alive.get('leader')).toBeUndefined()
      expect(await alive.locks.acquire('lock:a', { ttl: 60_000, wait: 0 })).not.toBeNull()
    }), 2)

    t('without capability ownerGone: its lock, lease, term and place in line last their TTL', goneClient(false, async ({ alive, keys, events }) => {
      await sleep(300)
      expect((await alive.locks.holder('lock:a'))?.owner).toBe('dead')
      expect((await alive.list('presence:')).map((e) => e.owner)).toEqual(['dead'])
      expect(events.filter((e) => keys.includes(e.key) && e.type !== 'put')).toEqual([])
      expect(await alive.locks.acquire('lock:a', { ttl: 60_000, wait: 0 })).toBeNull()
    }), 2)
  })
}
