/**
 * The Web Locks API cases (cases.ts) in real Chromium, twice: against
 * Chromium's own `navigator.locks` — another context being a same-origin
 * frame's `navigator.locks` (another clientId, the same lock manager) —
 * and against zaris/web-locks over IndexedDB, each context a client of its
 * own, as a tab would be. Whatever differs between the two shows here.
 */
import { afterAll } from 'vitest'
import { webLocksCases, type AnyLockManager } from './cases'
import { zarisContexts } from './fixture'
import { historyCases } from './history'

const frames: HTMLIFrameElement[] = []
afterAll(() => {
  for (const f of frames.splice(0)) f.remove()
})

/** The `navigator.locks` of a new same-origin frame: a context of its own. */
async function frameLocks(): Promise<AnyLockManager> {
  const frame = document.createElement('iframe')
  frames.push(frame)
  const loaded = new Promise((resolve) => frame.addEventListener('load', resolve, { once: true }))
  frame.src = 'about:blank'
  document.body.append(frame)
  await loaded
  const locks = (frame.contentWindow!.navigator as Navigator).locks
  if (!locks) throw new Error('the frame has no navigator.locks')
  return locks as unknown as AnyLockManager
}

webLocksCases("Chromium's navigator.locks", async () => ({ locks: navigator.locks as unknown as AnyLockManager, other: frameLocks }))

const ns = `web-locks-${Math.random().toString(36).slice(2)}`
webLocksCases('zaris/web-locks over IndexedDB', zarisContexts(() => `zaris://idb/${ns}`))
historyCases('IndexedDB', () => `zaris://idb/${ns}-history`)
