/**
 * What the Web Locks cases (wpt.ts, cases.ts) share: the `LockManager`
 * shape both `navigator.locks` and zaris/web-locks have, the fixture, and
 * the small helpers the web-platform-tests' `resources/helpers.js` gives
 * its tests (unique names, a lock held until the test ends).
 */

/** What the tests need of a lock: the specification's attributes. */
export interface AnyLock {
  readonly name: string
  readonly mode: string
}

/** A held or pending lock in a snapshot. */
export interface AnyInfo {
  name?: string
  mode?: string
  clientId?: string
}

/** The `LockManager` shape: `navigator.locks`, or zaris/web-locks. */
export interface AnyLockManager {
  request(name: string, callback: (lock: AnyLock | null) => unknown): Promise<unknown>
  request(name: string, options: object, callback: (lock: AnyLock | null) => unknown): Promise<unknown>
  query(): Promise<{ held?: AnyInfo[]; pending?: AnyInfo[] }>
}

export interface WebLocksFixture {
  /** The manager under test. */
  locks: AnyLockManager
  /** A manager of another context on the same locks (a frame; another client). */
  other(): Promise<AnyLockManager>
  /**
   * A manager of this context that sees no lock held or waited for, as a
   * new page's `navigator.locks` does (zaris: a prefix of its own). Default: `locks`.
   */
  empty?(): Promise<AnyLockManager>
}

/** A fixture and what a test holds until it ends (the WPT's `requestLockAndHold`). */
export interface TestContext extends WebLocksFixture {
  /** Requests `name` and holds it until the test ends; the request's promise. */
  hold(name: string, options?: object): Promise<unknown>
}

let count = 0
/** A lock name no other test uses (the WPT's `uniqueName`). */
export const unique = (label: string) => `wl-${label}-${++count}-${Math.random().toString(36).slice(2, 8)}`

export const snooze = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

/** A promise and the function that resolves it. */
export function gate<T = void>(): [Promise<T>, (value: T) => void] {
  let open!: (value: T) => void
  const p = new Promise<T>((r) => (open = r))
  return [p, open]
}

/** Keeps a promise nobody awaits from reporting an unhandled rejection. */
export function bg(p: Promise<unknown>): void {
  p.catch(() => {})
}

/** Resolves the name of the error `p` rejects with (`'fulfilled'` if it does not); by name, since errors may come from another realm. */
export async function rejection(p: Promise<unknown>): Promise<string> {
  return p.then(() => 'fulfilled', (err: { name?: string }) => err?.name ?? String(err))
}

/** Holds `name` until the returned `release` is called; resolves once granted. */
export async function holdUntilReleased(locks: AnyLockManager, name: string, options: object = {}): Promise<{ release: () => void; done: Promise<unknown> }> {
  const [released, release] = gate()
  const [granted, grant] = gate()
  const done = locks.request(name, options, () => {
    grant()
    return released
  })
  bg(done)
  await granted
  return { release, done }
}

/** The modes of the locks named `name` in `list`. */
export const modes = (list: AnyInfo[] | undefined, name: string) => (list ?? []).filter((i) => i.name === name).map((i) => i.mode)
/** The clientIds of the locks named `name` in `list`. */
export const clientsOf = (list: AnyInfo[] | undefined, name: string) => (list ?? []).filter((i) => i.name === name).map((i) => i.clientId)
/** The names in `list` that are among `among`, in the list's order. */
export const names = (list: AnyInfo[] | undefined, among: string[]) => (list ?? []).map((i) => i.name!).filter((n) => among.includes(n))

/** Runs a test with the fixture `open` gives and a `hold` whose locks are let go (and awaited) when the test ends. */
export function withContext(open: () => Promise<WebLocksFixture>, fn: (t: TestContext) => Promise<void>): () => Promise<void> {
  return async () => {
    const f = await open()
    const cleanups: Array<() => Promise<unknown>> = []
    const hold = (name: string, options: object = {}) => {
      const [released, release] = gate()
      const p = f.locks.request(name, options, () => released)
      cleanups.push(() => {
        release()
        return p.catch(() => {})
      })
      return p
    }
    try {
      await fn({ ...f, hold })
    } finally {
      await Promise.all(cleanups.map((c) => c()))
    }
  }
}

/** Resolves once `check` is true (asked every 10 ms, for 5 s at most). */
export async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return
    await snooze(10)
  }
  throw new Error('the condition never held')
}
