/**
 * The contexts of a page, in real Chromium, where they mean something for
 * zaris/web-locks: a frame or a worker that goes away while it holds a lock
 * frees it at once — as `navigator.locks` frees the locks of a context that
 * ends — not at the lock's TTL (30 s here): the IndexedDB store learns that
 * the context's client is gone. Each case runs for both, so a difference
 * would show. The holder runs in the frame's or worker's own realm, with
 * its own modules and its own client.
 */
import { describe, expect, test } from 'vitest'
import { until, type AnyLockManager } from './helpers'
import { pageManagers, type Kind } from './page'

const ns = `web-locks-contexts-${Math.random().toString(36).slice(2)}`
const url = `zaris://idb/${ns}`
const manager = pageManagers(url)

/** A frame whose own realm takes `name` and never lets go; resolves once it holds. */
async function frameHolding(kind: Kind, name: string): Promise<HTMLIFrameElement> {
  const frame = document.createElement('iframe')
  const loaded = new Promise((r) => frame.addEventListener('load', r, { once: true }))
  frame.srcdoc = '<!doctype html><title>holder</title>'
  document.body.append(frame)
  await loaded
  const w = frame.contentWindow as unknown as { eval(code: string): Promise<void>; __vitest_browser_runner__?: unknown }
  // Vitest's browser mode rewrites dynamic imports (connect loads adapters with one) into a call of
  // its test frame's runner; the holder's frame has none, so it gets one that just imports.
  w.__vitest_browser_runner__ = { wrapDynamicImport: (load: () => Promise<unknown>) => load() }
  const open =
    kind === 'navigator'
      ? 'navigator.locks'
      : `(await import('/src/web-locks/index.ts')).webLocks(await (await import('/src/index.ts')).connect(${JSON.stringify(url)}))`
  await w.eval(`(async () => {
    const locks = ${open}
    await new Promise((held) => locks.request(${JSON.stringify(name)}, () => { held(); return new Promise(() => {}) }).catch(() => {}))
  })()`)
  return frame
}

/** A worker that takes `name` and never lets go; resolves once it holds. */
async function workerHolding(kind: Kind, name: string): Promise<Worker> {
  const worker = new Worker(new URL('./fixtures/holder-worker.ts', import.meta.url), { type: 'module' })
  const holding = new Promise<void>((resolve, reject) => {
    worker.onmessage = () => resolve()
    worker.onerror = (e) => reject(new Error(`the worker failed: ${e.message}`))
  })
  worker.postMessage({ kind, name, url })
  await holding
  return worker
}

/** Waits for `name` held by another context, ends that context, and resolves the ms until this one was granted. */
async function grantedAfterEnd(locks: AnyLockManager, name: string, end: () => void): Promise<number> {
  const granted = locks.request(name, () => performance.now())
  await until(async () => (await locks.query()).pending?.some((p) => p.name === name) === true)
  const endedAt = performance.now()
  end()
  return ((await granted) as number) - endedAt
}

/** The contexts that end: how one starts holding, and how it ends. */
const contexts = [
  { what: 'a removed frame', start: frameHolding, end: (frame: HTMLIFrameElement) => frame.remove() },
  { what: 'a terminated worker', start: workerHolding, end: (worker: Worker) => worker.terminate() },
] as Array<{ what: string; start: (kind: Kind, name: string) => Promise<unknown>; end: (context: never) => void }>

for (const kind of ['navigator', 'zaris'] as const) {
  describe(kind === 'navigator' ? "Chromium's navigator.locks" : 'zaris/web-locks over IndexedDB', () => {
    for (const { what, start, end } of contexts) {
      test(`${what} frees the lock it held, at once`, async () => {
        const locks = await manager(kind)
        const name = `${what.replaceAll(' ', '-')}-${kind}-${Math.random().toString(36).slice(2)}`
        const context = await start(kind, name)
        expect(await locks.request(name, { ifAvailable: true }, (lock) => lock)).toBeNull()
        const ms = await grantedAfterEnd(locks, name, () => end(context as never))
        console.log(`${kind}: granted ${ms.toFixed(0)} ms after ${what} that held it`)
        expect(ms).toBeLessThan(5_000)
      }, 20_000)
    }
  })
}
