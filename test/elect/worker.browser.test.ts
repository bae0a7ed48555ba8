/**
 * zaris/elect in dedicated workers, in real Chromium: a worker has no
 * `document`, so no `pagehide` and no freeze events, only its Web Locks,
 * IndexedDB and BroadcastChannel. Workers lead one at a time; a worker
 * ended with `terminate()` while it leads (its Web Locks freed by the
 * browser, as a crashed tab's) is followed by the next candidate at once,
 * not at the term's 30 s TTL, with a larger token, and the old term's
 * fenced write is refused. A page observes the leader across them.
 */
import { expect, test } from 'vitest'
import { election } from 'zaris/elect'

const namespace = `elect-worker-${Math.random().toString(36).slice(2)}`

interface Said {
  type: string
  token?: number
  at?: number
  code?: string
  was?: boolean
}

/** A worker campaigning as `candidate`, with what it said so far. */
function candidate(name: string, candidate: string) {
  const worker = new Worker(new URL('./fixtures/candidate-worker.ts', import.meta.url), { type: 'module' })
  const said: Said[] = []
  const waiters: Array<() => void> = []
  worker.onmessage = (m: MessageEvent<Said>) => {
    said.push(m.data)
    for (const w of waiters.splice(0)) w()
  }
  worker.onerror = (e) => said.push({ type: 'error', code: e.message })
  const mutant = (globalThis as { __stryker__?: { activeMutant?: string } }).__stryker__?.activeMutant
  worker.postMessage({ do: 'campaign', name, namespace, candidate, mutant })
  /** Resolves with the first message of `type`, waiting up to `ms`. */
  const told = async (type: string, ms = 5_000): Promise<Said> => {
    const deadline = performance.now() + ms
    for (;;) {
      const found = said.find((s) => s.type === type)
      if (found) return found
      const errored = said.find((s) => s.type === 'error')
      if (errored) throw new Error(`the worker failed: ${JSON.stringify(errored)}`)
      const left = deadline - performance.now()
      if (left <= 0) throw new Error(`no ${type} within ${ms} ms; said: ${JSON.stringify(said)}`)
      await new Promise<void>((r) => {
        waiters.push(r)
        setTimeout(r, left)
      })
    }
  }
  return { worker, said, told, post: (ask: object) => worker.postMessage(ask) }
}

test('workers lead one at a time; a terminated leader is followed at once with a larger token, and its fenced write is refused', async () => {
  const name = 'leader:worker'
  const page = election(name, { namespace })
  const seen: Array<string | undefined> = []
  page.addEventListener('leader', (ev) => seen.push((ev as CustomEvent).detail?.candidate))
  await page.observe().next() // the page watches from now on
  const a = candidate(name, 'a')
  const first = await a.told('term')
  const b = candidate(name, 'b')
  // b waits while a leads.
  await new Promise((r) => setTimeout(r, 300))
  expect(b.said.filter((s) => s.type === 'elected')).toEqual([])

  // a's fenced write goes through while it leads.
  a.post({ do: 'put', key: 'data', candidate: 'a' })
  await a.told('put')

  const endedAt = performance.timeOrigin + performance.now()
  a.worker.terminate()
  const elected = await b.told('elected', 5_000)
  const second = await b.told('term', 5_000)
  expect(elected.at! - endedAt, 'b led at once, not at the 30 s TTL').toBeLessThan(2_000)
  expect(second.token!).toBeGreaterThan(first.token!)
  await expect.poll(() => page.leader?.candidate, { timeout: 5_000 }).toBe('b')
  expect(seen).toContain('a')

  // A write fenced by a's term is refused now (the page writes it, with a's token).
  await expect(page.put('data', 'stale', { fence: { key: name, token: first.token! } })).rejects.toMatchObject({ code: 'FENCED' })

  // b resigns: a third worker leads after it, with a larger token still.
  const c = candidate(name, 'c')
  b.post({ do: 'resign' })
  expect((await b.told('resigned')).was).toBe(true)
  const third = await c.told('term', 5_000)
  expect(third.token!).toBeGreaterThan(second.token!)
  // A worker's election closes cleanly (its store listens to no document).
  c.post({ do: 'close' })
  await c.told('closed')
  b.worker.terminate()
  c.worker.terminate()
  await page.close()
})
