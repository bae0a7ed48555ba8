/**
 * Every inspect verb of `zaris`, run as a process against real stores: a
 * node in memory, a node with `--data` (SQLite), and Redis directly
 * (`redis://`, a real redis-server). The test's own client, in this process,
 * checks what the command wrote and holds and waits for `zaris locks`.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import { connect, isZarisError, type Client, type Entry, type WatchEvent } from 'zaris'
import { readLocks, type LockRow } from '../../src/cli/lock-table'
import { RedisServer } from '../redis/server'
import { startNode, type NodeProcess } from '../server/node-process'
import { storeDir } from '../setup/store-dir'
import { json, start, zaris } from './run'

interface Store {
  name: string
  /** The connection string of namespace `ns`. */
  url(ns: string): string
  stop(): Promise<void>
}

const dir = storeDir('zaris-cli-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function nodeStore(name: string, args: string[]): Promise<Store> {
  const node: NodeProcess = await startNode(args)
  return { name, url: (ns) => `zaris://127.0.0.1:${node.port}/${ns}`, stop: async () => void (await node.stop()) }
}

const stores: Array<[string, () => Promise<Store>]> = [
  ['a node in memory', () => nodeStore('memory', [])],
  ['a node with --data', () => nodeStore('sqlite', ['--data', join(dir, 'cli.db')])],
  [
    'redis://',
    async () => {
      const redis = await new RedisServer().start()
      return { name: 'redis', url: (ns) => redis.url(ns), stop: () => redis.dispose() }
    },
  ],
]

let namespaces = 0

describe.each(stores)('zaris against %s', (_, open) => {
  let store: Store
  const clients: Client[] = []
  beforeAll(async () => {
    store = await open()
  }, 30_000)
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()))
    await store?.stop()
  })

  /** A fresh namespace: the URL the command gets, and a client of ours on it. */
  async function fresh(id?: string): Promise<{ env: Record<string, string>; url: string; client: Client }> {
    const url = store.url(`cli-${++namespaces}`)
    const client = await connect(url, id === undefined ? {} : { id })
    clients.push(client)
    return { env: { ZARIS_URL: url }, url, client }
  }

  test('put, get, ls, del: tables, --json, exit codes, and the store holds what they wrote', async () => {
    const { env, client } = await fresh()
    const put = await zaris(['put', 'a', '5'], env)
    expect(put).toMatchObject({ code: 0, stderr: '' })
    expect(put.stdout).toMatch(/^put a at revision \d+\n$/)
    expect((await zaris(['put', 'b', 'hello world', '--ttl', '60000'], env)).stdout).toMatch(/^put b at revision \d+, expires in 60s\n$/)
    const quoted = await zaris(['put', 'c', '"5"', '--json'], env)
    expect(json(quoted)).toMatchObject({ key: 'c', value: '5' })
    expect(json(await zaris(['put', 'd', '{"n":[1,2]}', '--json'], env))).toMatchObject({ key: 'd', value: { n: [1, 2] } })
    expect(json(await zaris(['put', 'e', '5', '--string', '--json'], env))).toMatchObject({ value: '5' })

    expect(await client.get('a')).toMatchObject({ value: 5 })
    expect((await client.get('b'))?.value).toBe('hello world')
    expect((await client.get('b'))?.ttl).toBeGreaterThan(50_000)

    const got = await zaris(['get', 'a', '--json'], env)
    expect(got.code).toBe(0)
    expect(json(got)).toEqual(await client.get('a'))
    const table = (await zaris(['get', 'b'], env)).stdout.split('\n')
    expect(table[0]).toMatch(/^KEY\s+VALUE\s+REVISION\s+CREATED\s+OWNER\s+TTL$/)
    expect(table[1]).toMatch(/^b\s+"hello world"\s+\d+\s+\d+\s+-\s+\d+s$/)

    expect(await zaris(['get', 'missing'], env)).toMatchObject({ code: 1, stdout: '', stderr: 'zaris: no entry at missing\n' })
    expect(await zaris(['get', 'missing', '--json'], env)).toMatchObject({ code: 1, stdout: 'null\n' })

    const listed = json(await zaris(['ls', '--json'], env)) as Entry[]
    expect(listed.map((e) => e.key)).toEqual(['a', 'b', 'c', 'd', 'e'])
    const timeless = (entries: Entry[]) => entries.map(({ ttl, ...e }) => ({ ...e, ttl: ttl === undefined ? undefined : 'some' }))
    expect(timeless(listed)).toEqual(timeless(await client.list('')))
    const underC = await zaris(['ls', 'c'], env)
    expect(underC.stdout.trim().split('\n').slice(1)).toEqual([expect.stringMatching(/^c\s+"5"\s/)])
    expect(await zaris(['ls', 'zzz'], env)).toMatchObject({ code: 0, stdout: '', stderr: 'no entries under zzz\n' })

    expect(await zaris(['del', 'a'], env)).toMatchObject({ code: 0, stdout: 'deleted a\n' })
    expect(await client.get('a')).toBeUndefined()
    expect(await zaris(['del', 'a'], env)).toMatchObject({ code: 1, stderr: 'zaris: no entry at a\n' })
    expect(await zaris(['del', 'a', '--json'], env)).toMatchObject({ code: 1, stdout: '{"deleted":false}\n' })
  }, 60_000)

  test('counter: read, add, subtract; a key that holds no number is refused', async () => {
    const { env, client } = await fresh()
    expect(await zaris(['counter', 'jobs'], env)).toMatchObject({ code: 0, stdout: '0\n' })
    expect(await zaris(['counter', 'jobs', '+5'], env)).toMatchObject({ code: 0, stdout: '5\n' })
    expect(await zaris(['counter', 'jobs', '-3'], env)).toMatchObject({ code: 0, stdout: '2\n' })
    await client.counters.increment('jobs', 10)
    expect(await zaris(['counter', 'jobs', '--json'], env)).toMatchObject({ code: 0, stdout: '12\n' })
    await client.put('name', 'not a number')
    const refused = await zaris(['counter', 'name', '1'], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^zaris: .*"name".*\(INVALID_ARGUMENT\)$/m)
    expect(await client.get('name')).toMatchObject({ value: 'not a number' })
  }, 30_000)

  test('watch streams changes under its prefix, JSON lines or a line each, until Ctrl-C (exit 0)', async () => {
    const { env, client } = await fresh()
    const lines = start(['watch', 'w:', '--json'], env)
    const human = start(['watch', 'w:'], env)
    await Promise.all([lines.waitFor(/^watching w: \(Ctrl-C to stop\)$/m, 'stderr'), human.waitFor(/watching/, 'stderr')])
    await client.put('other', 1) // outside the prefix
    const put = await client.put('w:1', { x: 1 })
    await client.delete('w:1')
    await lines.waitFor(/"delete"/)
    await human.waitFor(/delete/)
    expect(await lines.stop('SIGINT')).toBe(0)
    expect(await human.stop('SIGINT')).toBe(0)
    const events = lines.stdout().trim().split('\n').map((l) => JSON.parse(l) as WatchEvent)
    expect(events).toEqual([
      expect.objectContaining({ type: 'put', key: 'w:1', value: { x: 1 }, revision: put.revision }),
      expect.objectContaining({ type: 'delete', key: 'w:1', revision: put.revision + 1 }),
    ])
    expect(human.stdout().trim().split('\n')).toEqual([`${put.revision}  put     w:1  {"x":1}`, `${put.revision + 1}  delete  w:1`])
  }, 30_000)

  test('locks shows the holder and two waiters in line order; release --force frees the key for the first', async () => {
    const { env, client: holder } = await fresh('holder-1')
    const url = env.ZARIS_URL!
    const lock = (await holder.locks.acquire('lock:a', { ttl: 20_000 }))!
    expect(lock).not.toBeNull()
    const a = await connect(url, { id: 'waiter-a' })
    const b = await connect(url, { id: 'waiter-b' })
    clients.push(a, b)
    const waitersIn = async (n: number) => {
      for (let i = 0; i < 200 && ((await readLocks(holder, 'lock:'))[0]?.waiters.length ?? 0) < n; i++) await new Promise((r) => setTimeout(r, 25))
    }
    const first = a.locks.acquire('lock:a', { wait: 30_000 })
    await waitersIn(1)
    const second = b.locks.acquire('lock:a', { wait: 30_000 })
    second.catch(() => {}) // ends when b closes
    await waitersIn(2)

    const rows = json(await zaris(['locks', 'lock:', '--json'], env)) as LockRow[]
    expect(rows).toEqual([
      {
        key: 'lock:a',
        holder: { owner: 'holder-1', token: lock.token, ttl: expect.any(Number), mode: 'exclusive' },
        holders: [{ owner: 'holder-1', token: lock.token, ttl: expect.any(Number), mode: 'exclusive' }],
        waiters: [{ owner: 'waiter-a', since: expect.any(Number), mode: 'exclusive' }, { owner: 'waiter-b', since: expect.any(Number), mode: 'exclusive' }],
      },
    ])
    expect(rows[0]!.holder!.ttl).toBeGreaterThan(0)
    expect(rows[0]!.holder!.ttl).toBeLessThanOrEqual(20_000)
    expect(rows[0]!.waiters[0]!.since).toBeLessThan(rows[0]!.waiters[1]!.since)

    const shown = await zaris(['locks'], env)
    expect(shown.code).toBe(0)
    expect(shown.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^KEY\s+ROLE\s+OWNER\s+TOKEN\s+TIME LEFT$/),
      expect.stringMatching(new RegExp(`^lock:a\\s+holder\\s+holder-1\\s+${lock.token}\\s+\\d+s$`)),
      expect.stringMatching(/^lock:a\s+waiter 1\s+waiter-a\s+-\s+since revision \d+$/),
      expect.stringMatching(/^lock:a\s+waiter 2\s+waiter-b\s+-\s+since revision \d+$/),
    ])

    expect((await zaris(['release', 'lock:a'], env)).code).toBe(2)
    expect(lock.held).toBe(true)
    const released = await zaris(['release', '--force', 'lock:a'], env)
    expect(released, released.stderr).toMatchObject({ code: 0, stdout: `released lock:a (held by holder-1 with token ${lock.token})\n` })
    const taken = await first
    expect(taken?.token).toBeGreaterThan(lock.token)
    // The old holder's token is dead: its fenced writes fail, and its signal says why.
    await expect(holder.put('report', 'late', { fence: lock })).rejects.toSatisfy((e) => isZarisError(e, 'FENCED'))
    await vi.waitFor(() => expect(lock.signal.aborted).toBe(true))
    // LOST (its key was deleted), or STOLEN when its client looked after the first waiter took the key.
    expect((lock.signal.reason as { code?: string }).code).toMatch(/^(LOST|STOLEN)$/)
    expect((json(await zaris(['locks', '--json'], env)) as LockRow[])[0]).toMatchObject({ holder: { owner: 'waiter-a', token: taken!.token }, waiters: [{ owner: 'waiter-b' }] })

    expect(await zaris(['release', '--force', 'lock:none'], env)).toMatchObject({ code: 1, stderr: 'zaris: lock:none is not held\n' })
    await holder.put('plain', 1)
    expect((await zaris(['release', '--force', 'plain', '--json'], env))).toMatchObject({ code: 1, stdout: '{"released":false,"key":"plain"}\n' })
    expect(await holder.get('plain')).toMatchObject({ value: 1 })
    await taken!.release()
    await b.close()
  }, 60_000)

  test('locks shows every shared holder of a lock and the mode of each waiter (from locks.query)', async () => {
    const { env, client: r1 } = await fresh('reader-1')
    const url = env.ZARIS_URL!
    const r2 = await connect(url, { id: 'reader-2' })
    const w = await connect(url, { id: 'writer' })
    const r3 = await connect(url, { id: 'reader-3' })
    clients.push(r2, w, r3)
    const s1 = (await r1.locks.acquire('lock:rw', { mode: 'shared', ttl: 20_000 }))!
    const s2 = (await r2.locks.acquire('lock:rw', { mode: 'shared', ttl: 20_000 }))!
    const writing = w.locks.acquire('lock:rw', { wait: 30_000 })
    writing.catch(() => {})
    await vi.waitFor(async () => expect((await r1.locks.query('lock:rw')).pending).toHaveLength(1), { timeout: 5_000 })
    const reading = r3.locks.acquire('lock:rw', { mode: 'shared', wait: 30_000 }) // behind the writer's intent
    reading.catch(() => {})
    await vi.waitFor(async () => expect((await r1.locks.query('lock:rw')).pending).toHaveLength(2), { timeout: 5_000 })
    const shown = await zaris(['locks', 'lock:'], env)
    expect(shown.stdout.trim().split('\n')).toEqual([
      expect.stringMatching(/^KEY\s+ROLE\s+OWNER\s+TOKEN\s+TIME LEFT$/),
      expect.stringMatching(new RegExp(`^lock:rw\\s+shared\\s+reader-1\\s+${s1.token}\\s+\\d+s$`)),
      expect.stringMatching(new RegExp(`^lock:rw\\s+shared\\s+reader-2\\s+${s2.token}\\s+\\d+s$`)),
      expect.stringMatching(/^lock:rw\s+waiter 1\s+writer\s+-\s+since revision \d+$/),
      expect.stringMatching(/^lock:rw\s+waiter 2 \(shared\)\s+reader-3\s+-\s+since revision \d+$/),
    ])
    const [row] = json(await zaris(['locks', 'lock:', '--json'], env)) as LockRow[]
    expect(row!.holders.map((h) => [h.owner, h.mode])).toEqual([['reader-1', 'shared'], ['reader-2', 'shared']])
    expect(row!.waiters.map((x) => [x.owner, x.mode])).toEqual([['writer', 'exclusive'], ['reader-3', 'shared']])
    await s1.release()
    await s2.release()
    await (await writing)!.release()
    await (await reading)!.release()
  }, 60_000)
})
