/**
 * `zaris://idb` in a dedicated worker, in real Chromium: a worker has no
 * `document` (no visibility, freeze or pagehide events to listen to), and
 * its store must work without them — commits, its own expiry timer, watch
 * events from the page's tab, a lock the page holds handed to it on
 * release — and close cleanly.
 */
import { afterAll, expect, test } from 'vitest'
import { Client, type WatchEvent } from 'zaris'
import { indexedDbAdapter } from 'zaris/indexeddb'

const namespace = `worker-${Math.random().toString(36).slice(2, 10)}`
const page = new Client(indexedDbAdapter({ namespace }))
afterAll(() => page.close())

interface Said {
  did: string
  ok?: boolean
  token?: number
  seen?: string[]
  error?: string
}

function storeWorker() {
  const worker = new Worker(new URL('./fixtures/store-worker.ts', import.meta.url), { type: 'module' })
  const answers: Array<(s: Said) => void> = []
  worker.onmessage = (m: MessageEvent<Said>) => answers.shift()?.(m.data)
  worker.onerror = (e) => answers.shift()?.({ did: 'error', error: e.message })
  /** Sends one step and resolves with its answer (steps are answered in order). */
  const ask = (step: object) =>
    new Promise<Said>((resolve, reject) => {
      answers.push((s) => (s.error === undefined ? resolve(s) : reject(new Error(`the worker's ${s.did} failed: ${s.error}`))))
      worker.postMessage(step)
    })
  return { worker, ask }
}

const until = async (what: () => Promise<boolean>, ms = 5_000) => {
  const end = performance.now() + ms
  while (!(await what())) {
    if (performance.now() > end) throw new Error('not within the time')
    await new Promise((r) => setTimeout(r, 10))
  }
}

test("a worker's store commits, expires by its own timer, hears the page's commits, is handed a lock the page releases, and closes", async () => {
  const { worker, ask } = storeWorker()
  const mutant = (globalThis as { __stryker__?: { activeMutant?: string } }).__stryker__?.activeMutant
  await ask({ do: 'open', namespace, mutant })

  const pageSaw: string[] = []
  const pageAdapter = indexedDbAdapter({ namespace })
  await pageAdapter.watch('', { event: (e: WatchEvent) => pageSaw.push(`${e.type} ${e.key}`), error: () => {} })

  expect((await ask({ do: 'put', key: 'w' })).ok).toBe(true)
  await until(async () => pageSaw.includes('put w'))

  await page.put('p', 'from the page')
  expect((await ask({ do: 'expiring', key: 'short' })).ok).toBe(true)
  await until(async () => {
    const { seen } = await ask({ do: 'seen' })
    return seen!.includes('put p') && seen!.includes('expire short')
  })

  const held = (await page.locks.acquire('lock:w', { ttl: 30_000 }))!
  const handed = ask({ do: 'lock', key: 'lock:w' })
  await new Promise((r) => setTimeout(r, 50))
  await held.release()
  expect((await handed).token).toBeGreaterThan(held.token)

  await ask({ do: 'close' })
  await pageAdapter.close()
  worker.terminate()
})
