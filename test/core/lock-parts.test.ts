/**
 * The parts of the lock family one by one (src/core/acquire/exclusive-part.ts,
 * shared-part.ts, permit-part.ts, hold/life.ts), on the real memory store
 * with a ManualClock: what each try writes, what blocks it, what an event
 * changes, and how shared holds live and end — including every race the
 * group layout must survive (a join between the list and the takeover, the
 * last one out racing a new joiner, a steal over the group).
 */
import { afterEach, describe, expect, test } from 'vitest'
import { Client, Lock, type Entry } from 'zaris'
import { claimOf, type Part } from '../../src/core/acquire/claim'
import { ExclusivePart } from '../../src/core/acquire/exclusive-part'
import type { HoldInit } from '../../src/core/hold/hold'
import { PermitPart } from '../../src/core/acquire/permit-part'
import { SharedPart } from '../../src/core/acquire/shared-part'
import { contextOf, freshStore, staged } from './machine-kit'

const GROUP = '\u0001shared'
const closing: Array<() => Promise<unknown>> = []
afterEach(async () => {
  for (const c of closing.splice(0)) await c()
})

function setup() {
  const { clock, raw } = freshStore()
  const store = staged(raw())
  const client = (id: string) => {
    const c = new Client(raw(), { id, clock })
    closing.push(() => c.close())
    return c
  }
  const ctx = contextOf(store.adapter, clock, 'me')
  const made: Lock[] = []
  closing.push(() => Promise.all(made.map((l) => l.release().catch(() => {}))))
  const spec = { value: null, ttl: 10_000, autoRenew: false, make: (init: HoldInit<null>) => (made.push(new Lock(ctx, init)), made.at(-1)!) }
  const tryOnce = <P>(part: Part<P>, how = {}) => claimOf(ctx, [part], undefined, ([h]) => h!).attempt(undefined, how)
  return { clock, store, client, ctx, spec, tryOnce, raw: store.adapter }
}

describe('shared part', () => {
  test('the first shared hold starts a group at the lock key (count 1); the next joins it by its life (count 2)', async () => {
    const { ctx, spec, tryOnce, raw, client } = setup()
    const first = await tryOnce(new SharedPart(ctx, 'k', spec))
    expect('hold' in first).toBe(true)
    const group = (await raw.get('k'))!
    expect(group).toMatchObject({ owner: GROUP, value: 1 })
    const other = await client('o').locks.acquire('k', { mode: 'shared' })
    expect(await raw.get('k')).toMatchObject({ owner: GROUP, value: 2, created: group.created })
    expect(other!.token).toBeGreaterThan((first as { hold: Lock }).hold.token)
  })

  test('an exclusive holder blocks it; so does an exclusive waiter\'s intent', async () => {
    const { ctx, spec, tryOnce, client, raw } = setup()
    const lock = (await client('o').locks.acquire('k'))!
    expect(await tryOnce(new SharedPart(ctx, 'k', spec))).toMatchObject({ sight: { blockers: [{ key: 'k', owner: 'o' }] } })
    await lock.release()
    await raw.commit([], [{ type: 'set', key: '\u0001xk', value: 'exclusive', ttl: 10_000, owner: 'w' }])
    expect(await tryOnce(new SharedPart(ctx, 'k', spec))).toMatchObject({ sight: { blockers: [{ key: '\u0001xk', owner: 'w' }] } })
  })

  test('over a dead exclusive holder: a new group in the same commit, the holder\'s token dies', async () => {
    const { ctx, spec, tryOnce, client, raw } = setup()
    const dead = (await client('dead').locks.acquire('k'))!
    const sight = { blockers: [(await raw.get('k'))!], watches: [] }
    const r = await tryOnce(new SharedPart(ctx, 'k', spec), { over: { sight, owner: 'dead' } })
    expect('hold' in r).toBe(true)
    expect(await raw.get('k')).toMatchObject({ owner: GROUP, value: 1 })
    expect(await dead.renew()).toBe(false)
  })

  test('the last one out deletes the group; one that leaves another behind keeps it', async () => {
    const { client, raw } = setup()
    const [a, b] = [client('a'), client('b')]
    const sa = (await a.locks.acquire('k', { mode: 'shared' }))!
    const sb = (await b.locks.acquire('k', { mode: 'shared' }))!
    expect(await sa.release()).toBe(true)
    expect(await raw.get('k')).toMatchObject({ owner: GROUP, value: 1 })
    expect(await sb.release()).toBe(true)
    expect(await raw.get('k')).toBeUndefined() // release resolves once the group is gone
  })

  test('the last one out racing a new joiner: the group stays, since its delete is checked on the revision it saw', async () => {
    const { client, raw, store } = setup()
    const a = new Client(store.adapter, { id: 'a' })
    closing.push(() => a.close())
    const sa = (await a.locks.acquire('k', { mode: 'shared' }))!
    const groupDelete = store.gate((checks, ops) => ops.length === 1 && ops[0]!.type === 'delete' && ops[0]!.key === 'k')
    const releasing = sa.release() // resolves once the group's delete is answered
    await groupDelete.arrived
    const late = (await client('late').locks.acquire('k', { mode: 'shared' }))!
    groupDelete.open()
    expect(await releasing).toBe(true)
    expect(await raw.get('k')).toMatchObject({ owner: GROUP, value: 1 })
    expect(await late.renew()).toBe(true)
  })

  test('a shared hold lives in its share and its group: a plain write over the lock key ends it (LOST), renew says false', async () => {
    const { client } = setup()
    const a = client('a')
    const share = (await a.locks.acquire('k', { mode: 'shared' }))!
    const signal = share.signal
    await client('plain').put('k', 'overwritten')
    await until(() => signal.aborted)
    expect((signal.reason as { code: string }).code).toBe('LOST')
    expect(await share.renew()).toBe(false)
    await expect(a.put('data', 1, { fence: share })).rejects.toMatchObject({ code: 'FENCED' })
  })
})

describe('exclusive part over a group', () => {
  test('a group with live shares blocks it; first in line, it writes its intent; leave deletes the intent', async () => {
    const { ctx, spec, tryOnce, client, raw } = setup()
    await client('r').locks.acquire('k', { mode: 'shared' })
    const part = new ExclusivePart(ctx, 'k', spec, { lock: true })
    const r = await tryOnce(part, { first: true })
    expect(r).toMatchObject({ sight: { blockers: [{ owner: 'r' }] } })
    expect(await raw.get('\u0001xk')).toMatchObject({ owner: 'me', value: 'exclusive' })
    part.leave()
    await until(async () => (await raw.get('\u0001xk')) === undefined)
  })

  test('a drained group (its holder crashed: the count stays 1) is taken over, checked on the group\'s revision', async () => {
    const { ctx, spec, tryOnce, client, raw, clock } = setup()
    await client('crashed').locks.acquire('k', { mode: 'shared', ttl: 1_000, autoRenew: false })
    await clock.advance(1_100) // its share expires; the group (no TTL) stays
    expect(await raw.get('k')).toMatchObject({ owner: GROUP, value: 1 })
    const r = await tryOnce(new ExclusivePart(ctx, 'k', spec, { lock: true }))
    expect('hold' in r).toBe(true)
    expect(await raw.get('k')).toMatchObject({ owner: 'me', value: null })
  })

  test('a shared hold that joins between the list and the takeover moves the group: the takeover fails and sees the new share', async () => {
    const { ctx, spec, tryOnce, client, raw, clock, store } = setup()
    await client('crashed').locks.acquire('k', { mode: 'shared', ttl: 1_000, autoRenew: false })
    await clock.advance(1_100)
    // The takeover: a commit that checks the lock key against something other than "free".
    const takeover = store.gate((checks) => checks.some((c) => c.key === 'k' && !('revision' in c && c.revision === null)))
    const trying = tryOnce(new ExclusivePart(ctx, 'k', spec, { lock: true }))
    await takeover.arrived
    const joined = (await client('late').locks.acquire('k', { mode: 'shared' }))!
    takeover.open()
    expect(await trying).toMatchObject({ sight: { blockers: [{ owner: 'late', created: joined.token }] } })
    expect((await raw.get('k'))!.owner).toBe(GROUP)
  })

  test('events: a share that goes leaves the others blocking; the last one gone frees it; a count move keeps it waiting', async () => {
    const { ctx, spec, tryOnce, client } = setup()
    const s1 = (await client('r1').locks.acquire('k', { mode: 'shared' }))!
    const s2 = (await client('r2').locks.acquire('k', { mode: 'shared' }))!
    const part = new ExclusivePart(ctx, 'k', spec, { lock: true })
    await tryOnce(part)
    const share = (token: number) => part.blocked()!.blockers.find((b: Entry) => b.created === token)
    expect(share(s1.token) && share(s2.token)).toBeTruthy()
    const ev = (type: 'delete' | 'put', key: string, revision: number, extra = {}) => ({ type, key, revision, ...extra })
    const s1Key = part.blocked()!.blockers.find((b) => b.created === s1.token)!.key
    const afterDelete = part.afterEvent(ev('delete', s1Key, 100))
    expect(afterDelete?.blockers.map((b) => b.created)).toEqual([s2.token])
    expect(part.afterEvent(ev('put', 'k', 101, { owner: GROUP, created: (await client('x').get('k'))!.created, value: 1 }))).toBeDefined()
    const s2Key = part.blocked()!.blockers[0]!.key
    expect(part.afterEvent(ev('delete', s2Key, 102))).toBeUndefined()
  })

  test('a steal over a group ends every shared hold at once', async () => {
    const { client } = setup()
    const shares = [(await client('a').locks.acquire('k', { mode: 'shared' }))!, (await client('b').locks.acquire('k', { mode: 'shared' }))!]
    const signals = shares.map((s) => s.signal)
    await client('thief').locks.acquire('k', { steal: true })
    await until(() => signals.every((s) => s.aborted))
    expect(signals.map((s) => (s.reason as { code: string }).code)).toEqual(['STOLEN', 'STOLEN'])
  })
})

describe('permit part', () => {
  test('takes the lowest free slot; full, it reports what blocks it without a commit', async () => {
    const { ctx, spec, tryOnce, client, raw } = setup()
    await client('a').semaphores.acquire('s', { limit: 2 })
    const first = await tryOnce(new PermitPart(ctx, 's', 2, spec))
    expect('hold' in first).toBe(true)
    expect((await raw.list('\u0001ps\u0001')).entries.map((e) => [e.key.at(-1), e.owner])).toEqual([['0', 'a'], ['1', 'me']])
    let commits = 0
    const counting = { ...ctx, adapter: { ...ctx.adapter, commit: (...a: Parameters<typeof ctx.adapter.commit>) => (commits++, ctx.adapter.commit(...a)) } }
    const full = await claimOf(counting, [new PermitPart(counting, 's', 2, spec)], undefined, ([h]) => h!).attempt(undefined, {})
    expect(full).toMatchObject({ sight: { blockers: [{ owner: 'a' }, { owner: 'me' }] } })
    expect(commits).toBe(0)
  })

  test('a slot it thought free but was taken: it learns and takes the next', async () => {
    const { ctx, spec, client, store, raw } = setup()
    const part = new PermitPart(ctx, 's', 3, spec)
    await part.look() // sees every slot free
    await client('a').semaphores.acquire('s', { limit: 3 })
    const r = await claimOf(ctx, [part], undefined, ([h]) => h!).attempt(undefined, {})
    expect('hold' in r).toBe(true)
    expect((await raw.get('\u0001ps\u00011'))?.owner).toBe('me')
    void store
  })

  test('over a dead holder\'s slot: taken with a new life, its token dies', async () => {
    const { ctx, spec, tryOnce, client, raw } = setup()
    const dead = (await client('dead').semaphores.acquire('s', { limit: 1 }))!
    const sight = { blockers: [(await raw.get('\u0001ps\u00010'))!], watches: [] }
    const r = await tryOnce(new PermitPart(ctx, 's', 1, spec), { over: { sight, owner: 'dead' } })
    expect('hold' in r).toBe(true)
    expect(await dead.renew()).toBe(false)
  })

  test('a permit that stops renewing expires at its TTL and the waiter gets the slot', async () => {
    const { client, clock } = setup()
    const a = client('a')
    const b = client('b')
    await a.semaphores.acquire('s', { limit: 1, ttl: 1_000, autoRenew: false })
    const waiting = b.semaphores.acquire('s', { limit: 1, wait: 5_000 })
    await clock.advance(500)
    let got = false
    void waiting.then(() => (got = true))
    await clock.advance(100)
    expect(got).toBe(false)
    await clock.advance(1_000)
    expect(await waiting).not.toBeNull()
  })
})

async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await cond()) return
    await new Promise((r) => setTimeout(r, 5))
  }
  throw new Error('condition not met')
}
