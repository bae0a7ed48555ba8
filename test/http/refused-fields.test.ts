/**
 * A client against nodes that refuse some of a waiting commit's fields, as
 * older nodes (and a node whose store takes no other ways) do: refused
 * once, the field is never sent again, the commit that carried it is sent
 * again without it (or, for other ways, tried once as a plain commit: its
 * caller plans again), and the adapter stops claiming the capability. No
 * older node can be started from this tree, so the refusing node is a fake
 * and the test names say so: a real node (in this process, over real HTTP)
 * behind a small proxy that refuses a commit carrying a field with the
 * words zod gives, and forwards everything else (./front-node).
 */
import { z } from 'zod'
import { describe, expect, test } from 'vitest'
import type { Adapter, CommitOptions } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { frontNode, nodeForFile } from './front-node'

type Body = Record<string, unknown>
const node = nodeForFile()

/** What a strict schema without `fields` said of a body that had them. */
function unrecognized(fields: string[]): string {
  const body = Object.fromEntries(fields.map((f) => [f, 1]))
  return `body: ${z.strictObject({}).safeParse(body).error!.issues[0]!.message}`
}

/** A fake node in front of the real one: a commit for which `refuse` gives a message is answered with it (400 INVALID_ARGUMENT unless it says). */
async function refusingNode(refuse: (body: Body) => string | { status: number; code: string; message: string } | undefined): Promise<{ url: string; commits: Body[] }> {
  const front = await frontNode(node.port, ({ path, body }) => {
    const refusal = path.endsWith('/commit') ? refuse(body!) : undefined
    if (refusal === undefined) return undefined
    const { status, code, message } = typeof refusal === 'string' ? { status: 400, code: 'INVALID_ARGUMENT', message: refusal } : refusal
    return { status, json: { error: { code, message } } }
  })
  node.later(() => front.close())
  return {
    url: front.url,
    get commits() {
      return front.seen.filter((s) => s.path.endsWith('/commit')).map((s) => s.body!)
    },
  }
}

const fieldsOf = (b: Body) => ['waitChange', 'keepParked', 'parkOrder', 'wakeOwner', 'orElse'].filter((f) => b[f] !== undefined)
const refusing =
  (...fields: string[]) =>
  (b: Body) => {
    const sent = fields.filter((f) => b[f] !== undefined)
    return sent.length > 0 ? unrecognized(sent) : undefined
  }

let n = 0
function adapterOn(url: string): Adapter {
  const a = httpAdapter({ endpoints: [url], namespace: `refused-${++n}` })
  node.later(() => a.close())
  return a
}

/** A take of `lock` that waits (its first try fails: `other` holds it), with `options`; `other` releases it after 100 ms. */
async function waitingTake(a: Adapter, other: Adapter, options: CommitOptions) {
  const held = await other.commit([{ key: 'lock', revision: null }], [{ type: 'set', key: 'lock', value: 'held', owner: 'other' }])
  if (!held.ok) throw new Error('not held')
  setTimeout(() => void other.commit([], [{ type: 'delete', key: 'lock' }]), 100)
  return a.commit([{ key: 'lock', revision: null }], [{ type: 'set', key: 'lock', value: 'mine', owner: 'me' }], { waitChange: 5_000, ...options })
}

describe('a node that refuses a waiting commit\'s fields (a fake: a real node behind a proxy that refuses them)', () => {
  test('keepParked refused (a node that knew only waitChange): sent again with waitChange alone, which still waits; never sent again', async () => {
    const fake = await refusingNode(refusing('keepParked', 'parkOrder', 'wakeOwner'))
    const a = adapterOn(fake.url)
    const other = httpAdapter({ endpoints: [node.url], namespace: `refused-${n}` })
    node.later(() => other.close())
    expect(a.capabilities).toMatchObject({ commitOnChange: true, keepParked: true })
    const r = await waitingTake(a, other, { keepParked: true, parkOrder: 7, wakeOwner: 'me' })
    // The wait was kept: answered by the release's change, with the take through.
    expect(r).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'me' }] })
    expect(fake.commits.slice(-2).map(fieldsOf)).toEqual([['waitChange', 'keepParked', 'parkOrder', 'wakeOwner'], ['waitChange']])
    expect(a.capabilities).toMatchObject({ commitOnChange: true })
    expect(a.capabilities?.keepParked ?? false).toBe(false)
    await a.commit([], [{ type: 'delete', key: 'lock' }])
    await waitingTake(a, other, { keepParked: true, parkOrder: 8 })
    expect(fake.commits.slice(-1).map(fieldsOf)).toEqual([['waitChange']])
  })

  test('waitChange refused (a node older still): sent again as a plain commit, answered at once; waitChange never sent again', async () => {
    const fake = await refusingNode(refusing('waitChange', 'keepParked', 'parkOrder', 'wakeOwner'))
    const a = adapterOn(fake.url)
    const other = httpAdapter({ endpoints: [node.url], namespace: `refused-${n}` })
    node.later(() => other.close())
    const r = await waitingTake(a, other, {})
    // No wait: the plain try fails at once at the held lock.
    expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock', entry: { owner: 'other' } }] })
    expect(fake.commits.slice(-2).map(fieldsOf)).toEqual([['waitChange'], []])
    expect(a.capabilities?.commitOnChange ?? false).toBe(false)
    await new Promise((r) => setTimeout(r, 150))
    await a.commit([], [{ type: 'set', key: 'x', value: 1 }], { waitChange: 1_000, keepParked: true })
    expect(fake.commits.slice(-1).map(fieldsOf)).toEqual([[]])
  })

  test('other ways refused (a node whose store takes none): the commit is tried once as it is, plain, and orElse never sent again; keepParked still is', async () => {
    const fake = await refusingNode((b) => (b.orElse !== undefined ? `orElse: this node's store (etcd) takes no other ways; send the commit without them` : undefined))
    const a = adapterOn(fake.url)
    const other = httpAdapter({ endpoints: [node.url], namespace: `refused-${n}` })
    node.later(() => other.close())
    expect(a.capabilities?.orElse).toBe(true)
    const orElse = [{ checks: [{ key: 'spare', revision: null }], ops: [{ type: 'set' as const, key: 'spare', value: 'mine', owner: 'me' }] }]
    const r = await waitingTake(a, other, { keepParked: true, orElse })
    // Tried once, plain: its caller plans again (no wait, no other way taken).
    expect(r).toMatchObject({ ok: false, failed: [{ key: 'lock' }] })
    expect(await a.get('spare')).toBeUndefined()
    expect(fake.commits.slice(-2).map(fieldsOf)).toEqual([['waitChange', 'keepParked', 'orElse'], []])
    expect(a.capabilities).toMatchObject({ commitOnChange: true, keepParked: true })
    expect(a.capabilities?.orElse ?? false).toBe(false)
    await new Promise((r) => setTimeout(r, 150))
    const again = await waitingTake(a, other, { keepParked: true, orElse })
    expect(again).toMatchObject({ ok: true, entries: [{ key: 'lock', owner: 'me' }] })
    expect(fake.commits.slice(-1).map(fieldsOf)).toEqual([['waitChange', 'keepParked']])
    // A waiting commit without keepParked carries none of its fields.
    await a.commit([], [{ type: 'set', key: 'x', value: 1 }], { waitChange: 1_000, parkOrder: 3, orElse })
    expect(fake.commits.slice(-1).map(fieldsOf)).toEqual([['waitChange']])
  })

  test.each([
    ['a refusal of something else', { status: 400, code: 'INVALID_ARGUMENT', message: 'checks[0].key: a key of the wrong kind' }],
    ['another code whose words name the fields', { status: 409, code: 'CONFLICT', message: 'keepParked parkOrder wakeOwner waitChange orElse: busy' }],
  ])('%s is the caller\'s: thrown as it came, not sent again, and no capability dropped', async (_, refusal) => {
    const fake = await refusingNode((b) => (b.waitChange !== undefined ? refusal : undefined))
    const a = adapterOn(fake.url)
    const orElse = [{ checks: [{ key: 'spare', revision: null }], ops: [] }]
    const err = await a.commit([{ key: 'k', revision: null }], [], { waitChange: 1_000, keepParked: true, orElse }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: refusal.code, message: expect.stringContaining(refusal.message) })
    expect(fake.commits.length).toBe(1)
    expect(a.capabilities).toMatchObject({ commitOnChange: true, keepParked: true, orElse: true })
  })
})
