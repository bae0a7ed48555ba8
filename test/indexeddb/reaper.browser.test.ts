/**
 * The reaper in real Chromium, in one page: a client whose adapter closes
 * without releasing (what a closed tab leaves behind) has its lock, lease,
 * candidacy and wait-line place ended at once as `expire` events, for every
 * reader; the races around it (two reapers, an id used twice, a writer that
 * never registered, a new life on the key) leave what they must alone. The
 * same with real tabs closed and crashed: reaper.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type { Adapter } from 'zaris'
import { indexedDbAdapter } from 'zaris/indexeddb'
import { reapTx } from '../../src/adapters/indexeddb/reaper'
import { openStore } from '../../src/adapters/indexeddb/schema'
import { commitBatch } from '../../src/adapters/indexeddb/transactions'
import { adapterOn, cleanUpAfterEach, clientOn, namespace, otherTab, probed, probing, realQuery, record, registration, say, sleep, track, until, followed } from './by-hand'

cleanUpAfterEach()
afterEach(() => {
  delete (navigator.locks as { query?: unknown }).query // a spy's (looks()): the prototype's again
})

describe('the reaper (IndexedDB, one page)', () => {
  it('a client gone without releasing: its lock, lease, candidacy and wait-line place end as expiries, seen by every reader at once', async () => {
    const ns = namespace()
    const dead = clientOn(ns, 'dead')
    const alive = clientOn(ns, 'alive')
    const events = await record(adapterOn(ns, otherTab()))
    const ttl = 60_000
    expect(await dead.locks.acquire('lock:a', { ttl })).not.toBeNull()
    expect(await dead.leases.grant('presence:dead', { ttl, value: 'here' })).not.toBeNull()
    const election = dead.election('leader', { ttl })
    expect(await election.campaign()).toBeTruthy()
    const other = (await alive.locks.acquire('lock:w', { ttl }))!
    const waiting = dead.locks.acquire('lock:w', { ttl, wait: Infinity })
    waiting.catch(() => {}) // ends with the closed adapter
    await until(async () => (await alive.adapter.list('\u0001q')).entries.some((e) => e.owner === 'dead'))
    const place = (await alive.adapter.list('\u0001q')).entries.find((e) => e.owner === 'dead')!
    // The other tab's watch hears the place's put through its own feed, maybe after the list saw it: counted before.
    await until(() => events.some((e) => e.key === place.key && e.type === 'put'))

    const before = events.length
    const closedAt = performance.now()
    await dead.adapter.close() // the tab is gone; nothing was released
    const keys = ['lock:a', 'presence:dead', 'leader', place.key]
    await until(() => keys.every((k) => events.some((e) => e.key === k && e.type === 'expire')), 2_000)
    const took = performance.now() - closedAt
    console.log(`reaper, one page: 4 entries of a closed client ended ${took.toFixed(1)} ms after its adapter closed (TTL ${ttl} ms)`)

    const ends = events.slice(before).filter((e) => keys.includes(e.key))
    expect(ends.map((e) => e.type)).toEqual(['expire', 'expire', 'expire', 'expire'])
    expect(new Set(ends.map((e) => e.revision)).size).toBe(4) // a revision each
    expect(await alive.locks.holder('lock:a')).toBeUndefined()
    expect(await alive.list('presence:')).toEqual([])
    expect(await alive.get('leader')).toBeUndefined()
    const taken = await alive.locks.acquire('lock:a', { ttl }) // a plain try, no wait
    expect(taken).not.toBeNull()
    expect(taken!.token).toBeGreaterThan(ends[ends.length - 1]!.revision)
    await other.release()
  })

  it('a reaper opened after the entries were written finds them in its first read and ends them (an entry with no owner stays)', async () => {
    const ns = namespace()
    const dead = clientOn(ns, 'dead')
    expect(await dead.locks.acquire('lock:a', { ttl: 60_000 })).not.toBeNull()
    expect(await dead.leases.grant('presence:dead', { ttl: 60_000 })).not.toBeNull()
    expect((await dead.adapter.commit([], [{ type: 'set', key: 'plain', value: 1 }])).ok).toBe(true)
    // Read before the reaper opens: its first read finds them, no event tells it.
    const events = await record(adapterOn(ns, otherTab(), false))
    adapterOn(ns, otherTab())
    await sleep(200)
    await dead.adapter.close()
    await until(() => ['lock:a', 'presence:dead'].every((k) => events.some((e) => e.key === k && e.type === 'expire')), 2_000)
    await sleep(200)
    expect(events.filter((e) => e.type === 'expire').map((e) => e.key).sort()).toEqual(['lock:a', 'presence:dead'])
  })

  it('a lock manager that cannot say who is registered (query() failing, by hand) is asked again a second later; the owner is then followed and reaped, and a client registering meanwhile registers', async () => {
    const ns = namespace()
    const dead = clientOn(ns, 'dead')
    expect(await dead.locks.acquire('lock:a', { ttl: 60_000 })).not.toBeNull()
    const events = await record(adapterOn(ns, otherTab(), false))
    const locks = navigator.locks as LockManager & { query: LockManager['query'] }
    let asked = 0
    locks.query = () => (asked++, Promise.reject(new DOMException('failing by hand', 'InvalidStateError')))
    try {
      // A client that registers meanwhile is registered by its grant (its query's failure is no unhandled rejection).
      await clientOn(ns, 'meanwhile', otherTab()).get('k')
      const before = asked
      adapterOn(ns, otherTab()) // its reaper finds lock:a and asks about "dead": no answer
      await until(() => asked > before)
      await sleep(100)
    } finally {
      delete (locks as { query?: unknown }).query // the prototype's again
    }
    await sleep(2_000) // asked again a second after it failed
    await dead.adapter.close()
    await until(() => events.some((e) => e.key === 'lock:a' && e.type === 'expire'), 2_000)
  })

  it('two reapers at once end each entry once', async () => {
    const ns = namespace()
    const dead = clientOn(ns, 'dead')
    const watcher = adapterOn(ns)
    // Two more "tabs", each with a reaper of its own.
    adapterOn(ns, otherTab())
    adapterOn(ns, otherTab())
    const events = await record(watcher)
    for (let i = 0; i < 5; i++) expect(await dead.locks.acquire(`lock:${i}`, { ttl: 60_000 })).not.toBeNull()
    await sleep(100) // every reaper has seen them
    await dead.adapter.close()
    await until(() => events.filter((e) => e.type === 'expire').length >= 5, 2_000)
    await sleep(200) // time for a second ending, were there one
    const expiries = events.filter((e) => e.type === 'expire')
    expect(expiries.map((e) => e.key).sort()).toEqual(['lock:0', 'lock:1', 'lock:2', 'lock:3', 'lock:4'])
  })

  it('an id used by two clients: one closing ends what it held, not what the other holds (a lock, and an entry written with no gate)', async () => {
    const ns = namespace()
    const first = clientOn(ns, 'same')
    const events = await record(adapterOn(ns, otherTab()))
    expect(await first.locks.acquire('lock:old', { ttl: 60_000 })).not.toBeNull()
    await sleep(100) // the reaper listens for "same" since it saw lock:old
    const second = clientOn(ns, 'same')
    const kept = await second.locks.acquire('lock:new', { ttl: 60_000 })
    expect(kept).not.toBeNull()
    // A commit of its own adapter, owned by it, asks no gate: none of this page's gates keeps the reapers off it.
    expect((await second.adapter.commit([{ key: 'presence:new', revision: null }], [{ type: 'set', key: 'presence:new', value: null, ttl: 60_000, owner: 'same' }])).ok).toBe(true)
    await until(() => events.some((e) => e.key === 'presence:new'), 2_000)
    await first.adapter.close()
    await until(() => events.some((e) => e.key === 'lock:old' && e.type === 'expire'), 2_000)
    await sleep(300)
    expect(events.filter((e) => e.key === 'lock:new').map((e) => e.type)).toEqual(['put'])
    expect(events.filter((e) => e.key === 'presence:new').map((e) => e.type)).toEqual(['put'])
    expect((await second.locks.holder('lock:new'))?.token).toBe(kept!.token)
    expect(kept!.held).toBe(true)
  })

  it("two adapters of one page's store share its reaper: closing one leaves it reaping for the other", async () => {
    const ns = namespace()
    const dead = clientOn(ns, 'dead') // its own store: its reaper goes with it
    const tab = otherTab()
    const [one] = [adapterOn(ns, tab), adapterOn(ns, tab)]
    const events = await record(adapterOn(ns, otherTab(), false))
    expect(await dead.locks.acquire('lock:a', { ttl: 60_000 })).not.toBeNull()
    await sleep(100)
    await one!.close()
    await dead.adapter.close()
    await until(() => events.some((e) => e.key === 'lock:a' && e.type === 'expire'), 2_000)
  })

  it('a reaper whose adapters all closed ends nothing, even for an owner it was listening for', async () => {
    const ns = namespace()
    const dead = clientOn(ns, 'dead')
    const events = await record(adapterOn(ns, otherTab(), false))
    const reaping = adapterOn(ns, otherTab())
    expect(await dead.locks.acquire('lock:a', { ttl: 60_000 })).not.toBeNull()
    await sleep(100) // its reaper listens for "dead"
    await reaping.close()
    await dead.adapter.close()
    await sleep(500)
    expect(events.filter((e) => e.key === 'lock:a').map((e) => e.type)).toEqual(['put'])
  })

  it('an owner that never registered keeps its entries until their TTL', async () => {
    const ns = namespace()
    const raw = adapterOn(ns)
    const reader = clientOn(ns, 'reader')
    const r = await raw.commit([{ key: 'lock:ghost', revision: null }], [{ type: 'set', key: 'lock:ghost', value: null, ttl: 60_000, owner: 'ghost' }])
    expect(r.ok).toBe(true)
    await sleep(500)
    expect((await reader.locks.holder('lock:ghost'))?.owner).toBe('ghost')
  })

  it('a live client is never reaped', async () => {
    const ns = namespace()
    const holder = clientOn(ns, 'holder')
    const reader = clientOn(ns, 'reader', otherTab())
    const lock = (await holder.locks.acquire('lock:live', { ttl: 60_000 }))!
    await sleep(500)
    expect((await reader.locks.holder('lock:live'))?.token).toBe(lock.token)
    expect(lock.held).toBe(true)
  })

  it('the reaping transaction leaves a new life, another owner and an ended entry alone', async () => {
    const ns = namespace()
    const raw = adapterOn(ns)
    const events = await record(raw)
    const set = (key: string, owner: string) => raw.commit([], [{ type: 'set', key, value: null, ttl: 60_000, owner, fresh: true }])
    const old = await set('k:relived', 'x')
    const renewed = await set('k:relived', 'x') // a new life of the same owner
    await set('k:other', 'y')
    const mine = await set('k:mine', 'x')
    expect(old.ok && renewed.ok && mine.ok).toBe(true)
    if (!old.ok || !mine.ok) return
    const db = await openStore(ns, () => {})
    try {
      const before = events.length
      const outcome = await reapTx(db, [
        { key: 'k:relived', owner: 'x', created: old.revision },
        { key: 'k:other', owner: 'x', created: mine.revision - 1 },
        { key: 'k:gone', owner: 'x', created: 1 },
        { key: 'k:mine', owner: 'x', created: mine.revision },
      ], 10_000)
      expect(outcome.records.flatMap((r) => r.events).map((e) => [e.type, e.key])).toEqual([['expire', 'k:mine']])
      expect(outcome.records[0]!.revision).toBe(mine.revision + 1)
      expect((await raw.list('k:')).entries.map((e) => e.key)).toEqual(['k:other', 'k:relived'])
      expect(events.length).toBe(before) // told nobody: reapTx alone does not announce (the store's write() does)
      // The log holds the history as written and one expire after it: nothing before it rewritten.
      const replay: Array<[string, string, number]> = []
      // (Read by a store of its own: this one's feed was told of no write after revision 4.)
      const stop = await adapterOn(ns, otherTab(), false).watch('', { event: (e) => replay.push([e.type, e.key, e.revision]), error: () => {} }, 0)
      await until(() => replay.length >= 5, 2_000)
      stop()
      expect(replay).toEqual([['put', 'k:relived', 1], ['put', 'k:relived', 2], ['put', 'k:other', 3], ['put', 'k:mine', 4], ['expire', 'k:mine', 5]])
    } finally {
      db.close()
    }
  })
})

/** A spy over `navigator.locks.query` (an own property over the prototype's; afterEach deletes it) counting the reapers' looks; `failing` refuses them. */
function looks(): { calls: number; failing: boolean } {
  const spy = { calls: 0, failing: false }
  ;(navigator.locks as { query: LockManager['query'] }).query = () =>
    spy.failing ? (spy.calls++, Promise.reject(new DOMException('failing by hand', 'InvalidStateError'))) : (spy.calls++, realQuery())
  return spy
}

/** Writes `key` through `adapter` (no gate), owned by `owner` unless undefined; its revision. */
async function put(adapter: Adapter, key: string, owner: string | undefined, fresh = false): Promise<number> {
  const r = await adapter.commit([], [{ type: 'set', key, value: null, ttl: 60_000, ...(owner === undefined ? {} : { owner }), ...(fresh ? { fresh } : {}) }])
  if (!r.ok) throw new Error(`put ${key} failed`)
  return r.revision
}

async function drop(adapter: Adapter, key: string): Promise<void> {
  if (!(await adapter.commit([], [{ type: 'delete', key }])).ok) throw new Error(`delete ${key} failed`)
}

/** Writes `entries` (and `log`) records straight into the namespace's database, as no store would. */
async function writeByHand(ns: string, entries: object[], log: object[] = []): Promise<void> {
  const db = await openStore(ns, () => {})
  const tx = db.transaction(['entries', 'log'], 'readwrite')
  for (const e of entries) tx.objectStore('entries').put(e)
  for (const r of log) tx.objectStore('log').put(r)
  await new Promise((resolve, reject) => ((tx.oncomplete = resolve), (tx.onabort = () => reject(tx.error))))
  db.close()
}

describe('the words of closing tabs (announcements posted by hand; the registrations, made by hand, keep their Web Locks)', () => {
  const setUp = async (ns: string, owners: Parameters<typeof followed>[1]) => (await followed(ns, owners)).ended

  it('a word naming the registration ends its entries at once; garbage, or a word for another nonce, does not', async () => {
    const ns = namespace()
    const reg = registration(ns, 'x')
    const ended = await setUp(ns, { x: [reg] })
    const errors: string[] = []
    const onError = (e: ErrorEvent) => errors.push(e.message)
    addEventListener('error', onError)
    try {
      for (const junk of [null, 'x', 42, { owner: 'x' }, { nonce: reg.nonce }, { owner: 7, nonce: reg.nonce }, { owner: 'x', nonce: 'not-its-nonce' }]) say(ns, junk)
      await sleep(300)
      expect(ended('x')).toBe(false)
      expect(errors, 'garbage on the channel is dropped, not thrown on').toEqual([])
      say(ns, { owner: 'x', nonce: reg.nonce })
      await until(() => ended('x'), 2_000)
    } finally {
      removeEventListener('error', onError)
      reg.release()
    }
  })

  it('two registrations of one id: a word for one is not enough; words for both are', async () => {
    const ns = namespace()
    const [one, two] = [registration(ns, 'x'), registration(ns, 'x')]
    const ended = await setUp(ns, { x: [one, two] })
    try {
      say(ns, { owner: 'x', nonce: one.nonce })
      await sleep(300)
      expect(ended('x')).toBe(false)
      say(ns, { owner: 'x', nonce: two.nonce })
      await until(() => ended('x'), 2_000)
    } finally {
      one.release()
      two.release()
    }
  })

  it("an id that ends in ':<another id>' is not that id's registration: a word for the other id ends the other's entries only", async () => {
    const ns = namespace()
    const [a, ba] = [registration(ns, 'a'), registration(ns, 'b:a')]
    const ended = await setUp(ns, { a: [a], 'b:a': [ba] })
    try {
      say(ns, { owner: 'a', nonce: a.nonce })
      await until(() => ended('a'), 2_000)
      await sleep(200)
      expect(ended('b:a')).toBe(false)
    } finally {
      a.release()
      ba.release()
    }
  })

  it('an entry that lands after its owner said it is gone is ended by a reaper that never saw the owner registered (the word is remembered)', async () => {
    const ns = namespace()
    const raw = adapterOn(ns, otherTab(), false)
    const events = await record(raw)
    adapterOn(ns, otherTab()) // the reaper, listening to the channel
    const late = registration(ns, 'late')
    await late.held
    late.release()
    say(ns, { owner: 'late', nonce: late.nonce })
    await sleep(100)
    // A write of the gone client that was still on its way.
    expect((await raw.commit([], [{ type: 'set', key: 'lock:late', value: null, ttl: 60_000, owner: 'late' }])).ok).toBe(true)
    await until(() => events.some((e) => e.key === 'lock:late' && e.type === 'expire'), 2_000)
  })

  it("a page's own pagehide word (synthetic) goes to the other tabs only when the page is discarded, and ends nothing in this page", async () => {
    const ns = namespace()
    const alive = clientOn(ns, 'alive')
    const events = await record(adapterOn(ns, otherTab(), false))
    adapterOn(ns, otherTab()) // a reaper in this page
    expect(await alive.locks.acquire('lock:a', { ttl: 60_000 })).not.toBeNull()
    await probing(ns, 'alive')
    const heard: unknown[] = []
    const channel = new BroadcastChannel(`zaris:idb:${ns}:gone`) // what another tab hears
    channel.onmessage = (e) => heard.push(e.data)
    try {
      dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true })) // into the back/forward cache: it may come back
      await sleep(200)
      expect(heard).toEqual([])
      dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false }))
      await until(() => heard.length > 0, 2_000)
      expect(heard).toContainEqual(expect.objectContaining({ owner: 'alive' }))
      await sleep(300)
      expect(events.filter((e) => e.key === 'lock:a').map((e) => e.type)).toEqual(['put'])
    } finally {
      channel.close()
    }
  })

  it('a registration with no lock of its own (an older zaris) is covered by no word: its entries wait for its Web Lock', async () => {
    const ns = namespace()
    const old = registration(ns, 'x', false)
    const ended = await setUp(ns, { x: [old] })
    say(ns, { owner: 'x', nonce: old.nonce })
    await sleep(300)
    expect(ended('x')).toBe(false)
    old.release() // the browser frees it: the probe is granted
    await until(() => ended('x'), 2_000)
  })
})

describe("the reaper's probe: an owner gone with no word (its Web Locks released by hand, as for a crashed tab)", () => {
  /** A store with a recorder and a reaper of its own, and an entry of `owner`'s written by a raw adapter. */
  async function setUp(owner: string) {
    const ns = namespace()
    const raw = adapterOn(ns, otherTab(), false)
    const events = await record(raw)
    const first = registration(ns, owner)
    await first.held
    expect((await raw.commit([{ key: 'lock:a', revision: null }], [{ type: 'set', key: 'lock:a', value: null, ttl: 60_000, owner }])).ok).toBe(true)
    adapterOn(ns, otherTab()) // the reaper: it sees the entry, finds the owner registered and queues its probe
    await probing(ns, owner)
    const ended = () => events.some((e) => e.key === 'lock:a' && e.type === 'expire')
    return { ns, raw, first, ended }
  }

  it("is reaped once its locks are gone: the probe is granted (another lock's shared request waiting meanwhile does not hold it up)", async () => {
    const { ns, first, ended } = await setUp('crashed')
    expect(ended()).toBe(false)
    // Some other lock, held, with a shared request waiting for it.
    let free!: () => void
    const other = `zaris:${ns}:other`
    await new Promise<void>((granted) => void navigator.locks.request(other, () => (granted(), new Promise<void>((r) => (free = r)))))
    const waiting = navigator.locks.request(other, { mode: 'shared' }, () => {})
    try {
      first.release()
      await until(ended, 2_000)
    } finally {
      free()
      await waiting
    }
  })

  it('an entry it wrote after the probe began is ended too, by a second look (the owner was seen registered; no word came)', async () => {
    const { raw, first, ended } = await setUp('crashed')
    expect((await raw.commit([], [{ type: 'set', key: 'lock:b', value: null, ttl: 60_000, owner: 'crashed' }])).ok).toBe(true)
    await sleep(100) // the reaper saw it, after its probe began
    first.release()
    await until(ended, 2_000)
    await until(() => raw.get('lock:b').then((e) => e === undefined), 2_000)
  })

  it('an owner that holds nothing any more is let go: its probe leaves the lock manager (after 5 s idle and a 2 s linger), not before 4 s (one never seen registered, with no probe, is let go without an error)', async () => {
    const ns = namespace()
    const x = clientOn(ns, 'x')
    const raw = adapterOn(ns, otherTab(), false)
    adapterOn(ns, otherTab())
    const lock = (await x.locks.acquire('lock:a', { ttl: 60_000 }))!
    await put(raw, 'lock:ghost', 'ghost')
    await probing(ns, 'x')
    const errors: string[] = []
    const onError = (e: ErrorEvent) => errors.push(e.message)
    addEventListener('error', onError)
    try {
      await lock.release()
      await drop(raw, 'lock:ghost')
      await sleep(4_000)
      expect(await probed(ns, 'x'), 'still followed a while: its next hold costs no query').toBe(true)
      await until(async () => !(await probed(ns, 'x')), 6_000)
      expect(errors).toEqual([])
    } finally {
      removeEventListener('error', onError)
    }
  })

  it('a registration of the same id queued behind the probe keeps it alive; once that one goes too, it is reaped', async () => {
    const { ns, first, ended } = await setUp('twin')
    const second = registration(ns, 'twin') // queued behind the probe's exclusive request
    first.release() // the probe is granted, and sees the second waiting: not gone
    await second.held
    await sleep(300)
    expect(ended()).toBe(false)
    second.release()
    await until(ended, 2_000)
  })
})

describe("the reaper's own costs and lifetime (lock-manager looks counted by a spy over navigator.locks.query)", () => {
  it('closing the last adapter of a reaper withdraws its probes (after their 2 s linger) and closes cleanly, an owner it never saw registered included', async () => {
    const ns = namespace()
    const raw = adapterOn(ns, otherTab(), false)
    const x = registration(ns, 'x')
    await x.held
    try {
      await put(raw, 'lock:x', 'x')
      await put(raw, 'lock:ghost', 'ghost') // looked at once: no probe of its own
      const reaping = adapterOn(ns, otherTab())
      await probing(ns, 'x')
      await sleep(100)
      await reaping.close()
      await until(async () => !(await probed(ns, 'x')), 4_000)
    } finally {
      x.release()
    }
  })

  it('a store kept open by an adapter without liveness gets a reaper anew with its next adapter, each time the last one closed (once at once, before its first read)', async () => {
    const ns = namespace()
    const tab = otherTab()
    const events = await record(adapterOn(ns, tab, false)) // keeps this "tab's" store open
    await adapterOn(ns, tab).close()
    const second = adapterOn(ns, tab)
    await sleep(200) // its reaper follows the store's changes
    await second.close()
    adapterOn(ns, tab)
    const dead = clientOn(ns, 'dead') // its own store: its reaper goes with it
    expect(await dead.locks.acquire('lock:a', { ttl: 60_000 })).not.toBeNull()
    await probing(ns, 'dead')
    await dead.adapter.close()
    await until(() => events.some((e) => e.key === 'lock:a' && e.type === 'expire'), 2_000)
  })

  it("a followed owner costs two looks, once per store; its renewal, new life and further entry, and entries with no owner, cost none; its end costs one (its probe's), and ends each life", async () => {
    const ns = namespace()
    const raw = adapterOn(ns, otherTab(), false)
    const events = await record(raw)
    const ended = (key: string) => events.some((e) => e.key === key && e.type === 'expire')
    const [x, w] = [registration(ns, 'x'), registration(ns, 'w')]
    await Promise.all([x.held, w.held])
    const spy = looks()
    try {
      const life = await put(raw, 'lock:x', 'x')
      await put(raw, 'lock:w', 'w')
      const tab = otherTab()
      for (let i = 0; i < 2; i++) adapterOn(ns, tab)
      await probing(ns, 'x')
      await probing(ns, 'w')
      await sleep(100)
      expect(spy.calls, 'two looks per owner (is it registered; which registrations), for two adapters of one store').toBe(4)
      spy.calls = 0
      await put(raw, 'lock:x', 'x') // a renewal: the same life
      expect((await raw.get('lock:x'))?.created).toBe(life)
      await put(raw, 'lock:w', 'w', true) // a new life of the same owner
      await put(raw, 'lock:w2', 'w')
      await put(raw, 'plain', undefined)
      await drop(raw, 'plain')
      await until(() => events.some((e) => e.key === 'plain' && e.type === 'delete'))
      await sleep(300)
      expect(spy.calls, 'no look for what a followed owner or nobody writes').toBe(0)
      x.release()
      await until(() => ended('lock:x'), 2_000)
      await sleep(300)
      expect(spy.calls, "the probe's one look, then nothing: the renewal was no new life to look at again").toBe(1)
      w.release()
      await until(() => ended('lock:w') && ended('lock:w2'), 2_000)
    } finally {
      x.release()
      w.release()
    }
  })

  it('an owner never seen registered is looked at once per new entry (a second apart at most once), and not again once it holds nothing', async () => {
    const ns = namespace()
    const raw = adapterOn(ns, otherTab(), false)
    const events = await record(raw)
    adapterOn(ns, otherTab())
    await sleep(100) // its first read: nothing to look at
    const spy = looks()
    await put(raw, 'a:1', 'a')
    await put(raw, 'b:1', 'b')
    await until(() => spy.calls === 2)
    await put(raw, 'a:2', 'a') // looked at a second after the first look, unless it holds nothing by then
    await put(raw, 'b:2', 'b')
    for (const key of ['a:1', 'a:2']) await drop(raw, key)
    await until(() => events.filter((e) => e.type === 'delete').length === 2)
    await until(() => spy.calls === 3, 3_000) // b's second look
    await sleep(1_500)
    expect(spy.calls, 'no more looks: nothing new was written').toBe(3)
  })

  it("a reaper's first read follows live owned entries only: an entry ended before, one with no owner and an expired one cost no look", async () => {
    const ns = namespace()
    const raw = adapterOn(ns, otherTab(), false)
    const events = await record(raw)
    await put(raw, 'old', 'g')
    await drop(raw, 'old')
    await put(raw, 'plain', undefined)
    const revision = await put(raw, 'lock:k', 'k')
    // Expired, and not yet swept (put by hand, with no timer armed for it): the reaper's store sweeps it after its first read.
    await writeByHand(ns, [{ key: 'lock:h', value: null, revision, created: revision, owner: 'h', ttl: 1, expiresAt: 1 }])
    const spy = looks()
    adapterOn(ns, otherTab())
    await until(() => events.some((e) => e.key === 'lock:h' && e.type === 'expire'), 2_000)
    await until(() => spy.calls >= 1) // k, never registered: looked at once
    await sleep(300)
    expect(spy.calls).toBe(1)
  })

  it('a lock manager that cannot answer the second look at an owner seen registered ends nothing until it answers (query() failing, by hand)', async () => {
    const ns = namespace()
    const raw = adapterOn(ns, otherTab(), false)
    const events = await record(raw)
    const ended = (key: string) => events.some((e) => e.key === key && e.type === 'expire')
    const x = registration(ns, 'x')
    await x.held
    await put(raw, 'lock:a', 'x')
    adapterOn(ns, otherTab())
    await probing(ns, 'x')
    await put(raw, 'lock:b', 'x') // seen after the probe began: a second look follows the first
    await sleep(100)
    const spy = looks()
    try {
      spy.failing = true
      x.release() // the probe is granted, and its own look fails: the owner is looked at again, and that fails too
      await until(() => spy.calls >= 2, 2_000)
      await sleep(500)
      expect(ended('lock:a') || ended('lock:b'), 'no end on no answer').toBe(false)
      spy.failing = false
      await until(() => ended('lock:a') && ended('lock:b'), 3_000)
    } finally {
      x.release()
    }
  })

  it('a reaper whose first read a freeze aborted (a synthetic freeze and resume) reads again, and reaps', async () => {
    const ns = namespace()
    const raw = adapterOn(ns, otherTab(), false)
    const events = await record(raw)
    const x = registration(ns, 'x')
    await x.held
    await put(raw, 'lock:a', 'x')
    // A writer on another connection holds the first read back, so that the freeze finds it open.
    const db = await openStore(ns, () => {})
    let blocking = true
    const blocker = db.transaction('entries', 'readwrite')
    const spin = () => void (blocking && (blocker.objectStore('entries').get('-').onsuccess = spin))
    spin()
    try {
      adapterOn(ns, otherTab())
      await sleep(200)
      document.dispatchEvent(new Event('freeze'))
      blocking = false
      await new Promise((r) => (blocker.oncomplete = r))
      document.dispatchEvent(new Event('resume'))
      await probing(ns, 'x')
      x.release()
      await until(() => events.some((e) => e.key === 'lock:a' && e.type === 'expire'), 2_000)
    } finally {
      blocking = false
      db.close()
      x.release()
    }
  })

  it('a reaper that fell behind the change log reads the entries again: an owner whose entries ended or changed hands meanwhile is let go; one that still holds an entry is followed on, and ended by a word with no look', async () => {
    const ns = namespace()
    const raw = adapterOn(ns, otherTab(), false)
    const events = await record(raw)
    const [x, v] = [registration(ns, 'x'), registration(ns, 'v')]
    await Promise.all([x.held, v.held])
    const spy = looks()
    try {
      for (const [key, owner] of [['lock:x1', 'x'], ['lock:x2', 'x'], ['lock:v', 'v'], ['lock:v2', 'v']] as const) await put(raw, key, owner)
      // The reaper's store keeps one revision of history: a revision its page misses is a gap the log cannot fill.
      track(indexedDbAdapter({ namespace: ns, clock: otherTab(), historySize: 1 }))
      await probing(ns, 'x')
      await probing(ns, 'v')
      await drop(raw, 'lock:v2') // v still holds lock:v: followed on
      await sleep(100)
      // Written straight to the database, announced to no page; the next write announced shows the gap.
      const db = await openStore(ns, () => {})
      try {
        const ops = [{ type: 'delete', key: 'lock:x2' }, { type: 'set', key: 'lock:x1', value: null, ttl: 60_000, owner: 'y' }] as const
        await commitBatch(db, [{ checks: [], ops: [...ops] }], () => Date.now(), 10_000)
      } finally {
        db.close()
      }
      spy.calls = 0
      await put(raw, 'nudge', undefined)
      await until(() => spy.calls === 1, 2_000) // y, first seen in the second read (and never registered)
      const reloaded = performance.now()
      await until(async () => !(await probed(ns, 'x')), 10_000) // x holds nothing: let go after 5 s idle and a 2 s linger
      expect(performance.now() - reloaded).toBeGreaterThan(4_000)
      spy.calls = 0
      say(ns, { owner: 'v', nonce: v.nonce })
      await until(() => events.some((e) => e.key === 'lock:v' && e.type === 'expire'), 2_000)
      expect(spy.calls, 'lock:v is the life the probe began with: ended by the word alone').toBe(0)
    } finally {
      x.release()
      v.release()
    }
  })

  it('a store with no revision left ends nothing (as its sweep does not)', async () => {
    const ns = namespace()
    await writeByHand(ns, [{ key: 'lock:a', value: null, revision: 5, created: 5, owner: 'x' }], [{ revision: Number.MAX_SAFE_INTEGER, events: [] }])
    const db = await openStore(ns, () => {})
    try {
      const outcome = await reapTx(db, [{ key: 'lock:a', owner: 'x', created: 5 }], 10_000)
      expect(outcome.records).toEqual([])
      const kept = db.transaction('entries').objectStore('entries').get('lock:a')
      await new Promise((r) => (kept.onsuccess = r))
      expect(kept.result).toMatchObject({ key: 'lock:a', owner: 'x' })
    } finally {
      db.close()
    }
  })
})
