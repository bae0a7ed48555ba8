/**
 * A store with gates (capability `gates`) for the core's tests in Node,
 * where no browser lock manager can be had: the memory store, with a fake
 * lock manager of this process (named so) in place of Web Locks — FIFO,
 * shared and exclusive, `ifAvailable`, `steal` — and the store's side of the
 * contract emulated around it: what a commit writes through a gate at the
 * gate's key is marked, and a held gate's take may go over a marked entry its
 * writer cannot hold beside it (a new life). Commits are applied one at a
 * time, so the emulation's read-then-commit is atomic here. The real ones
 * are the IndexedDB store's (src/adapters/indexeddb/gate.ts), tested in
 * Chromium (test/indexeddb).
 */
import type { Adapter, Check, CommitOptions, CommitResult, Gate, GateOptions, Op } from 'zaris'

type Mode = 'exclusive' | 'shared'

interface Request {
  mode: Mode
  held: boolean
  grant(ok: boolean): void
  lost?: () => void
}

/** A fake lock manager of one process: one line per name, granted in order, shared holders together. */
export class FakeLockManager {
  readonly #lines = new Map<string, Request[]>()

  /** Asks for `name`; the request's `grant` is called once, with whether it is held. */
  ask(name: string, request: Request, options: { ifAvailable?: boolean; steal?: boolean }): void {
    if (options.steal) {
      for (const r of this.#line(name).filter((r) => r.held)) this.#drop(name, r, true)
      this.#line(name).unshift(request)
      request.held = true
      request.grant(true)
      return
    }
    const line = this.#line(name)
    line.push(request)
    if (options.ifAvailable && !this.#grantable(line, line.length - 1)) {
      line.pop()
      request.grant(false)
      return
    }
    this.#pump(name)
  }

  /** Lets go of (or withdraws) `request`. */
  release(name: string, request: Request): void {
    this.#drop(name, request, false)
    this.#pump(name)
  }

  /** Whether anyone holds or waits for `name`. */
  taken(name: string): boolean {
    return (this.#lines.get(name)?.length ?? 0) > 0
  }

  #line(name: string): Request[] {
    let line = this.#lines.get(name)
    if (!line) this.#lines.set(name, (line = []))
    return line
  }

  #drop(name: string, request: Request, stolen: boolean): void {
    const line = this.#line(name)
    const i = line.indexOf(request)
    if (i >= 0) line.splice(i, 1)
    const wasHeld = request.held
    request.held = false
    if (stolen && wasHeld) request.lost?.()
    if (line.length === 0) this.#lines.delete(name)
  }

  /** Whether the request at `i` can hold now: all before it hold, and modes agree. */
  #grantable(line: Request[], i: number): boolean {
    const r = line[i]!
    for (let j = 0; j < i; j++) {
      if (!line[j]!.held) return false
      if (r.mode === 'exclusive' || line[j]!.mode === 'exclusive') return false
    }
    return true
  }

  #pump(name: string): void {
    const line = this.#lines.get(name)
    if (!line) return
    for (let i = 0; i < line.length; i++) {
      const r = line[i]!
      if (r.held) continue
      if (!this.#grantable(line, i)) return
      r.held = true
      r.grant(true)
    }
  }
}

/** One gate of the fake manager (the contract's `Gate`). */
class FakeGate implements Gate {
  readonly key: string
  readonly mode: Mode
  readonly granted: Promise<boolean>
  readonly #manager: FakeLockManager
  #request: Request
  #done = false
  #lost = false
  #onLost: (() => void) | undefined

  constructor(manager: FakeLockManager, key: string, options: GateOptions) {
    this.key = key
    this.mode = options.mode ?? 'exclusive'
    this.#manager = manager
    let grant!: (ok: boolean) => void
    this.granted = new Promise((r) => (grant = r))
    this.#request = { mode: this.mode, held: false, grant, lost: () => this.#lose() }
    manager.ask(key, this.#request, options)
  }

  get held(): boolean {
    return this.#request.held
  }

  async steal(): Promise<void> {
    if (this.held) return
    this.#manager.release(this.key, this.#request)
    let grant!: (ok: boolean) => void
    const granted = new Promise<boolean>((r) => (grant = r))
    this.#request = { mode: 'exclusive', held: false, grant, lost: () => this.#lose() }
    this.#manager.ask(this.key, this.#request, { steal: true })
    await granted
  }

  onLost(fn: () => void): void {
    if (this.#lost) fn()
    else this.#onLost = fn
  }

  async taken(): Promise<boolean> {
    return this.#manager.taken(this.key)
  }

  release(): void {
    if (this.#done) return
    this.#done = true
    this.#manager.release(this.key, this.#request)
  }

  #lose(): void {
    this.#lost = true
    const fn = this.#onLost
    this.#onLost = undefined
    fn?.()
  }
}

/** What the fake store keeps of an entry written through a gate: its life and the gate's mode. */
interface Mark {
  created: number
  mode: Mode
}

/**
 * The memory store with gates from `manager` (fakes, see the module doc):
 * `adapter()` makes one client's adapter over `raw()`; all of them share the
 * marks and apply their commits one at a time, as one store would.
 */
export function gatedStore(raw: () => Adapter, manager: FakeLockManager) {
  const marks = new Map<string, Mark>()
  let serial: Promise<unknown> = Promise.resolve()
  const make = (): Adapter => {
    const inner = raw()
    const apply = async (checks: Check[], ops: Op[], options: CommitOptions | undefined): Promise<CommitResult> => {
      const gate = options?.gate instanceof FakeGate ? options.gate : undefined
      const rest: CommitOptions | undefined = options && { ...options, gate: undefined }
      let sent = checks
      let writes = ops
      if (gate?.held) {
        const e = await inner.get(gate.key)
        const mark = marks.get(gate.key)
        const over = e !== undefined && mark?.created === e.created && (gate.mode === 'exclusive' || mark.mode === 'exclusive')
        const absent = (c: Check) => c.key === gate.key && ('revision' in c ? c.revision === null : c.created === null)
        if (over && checks.some(absent)) {
          sent = checks.map((c) => (absent(c) ? { key: c.key, revision: e.revision } : c))
          writes = ops.map((o) => (o.key === gate.key && o.type === 'set' ? { ...o, fresh: true } : o))
        }
      }
      const r = await inner.commit(sent, writes, rest)
      if (!r.ok) return r
      for (const e of r.entries) {
        const mark = marks.get(e.key)
        if (gate && e.key === gate.key && writes.some((o) => o.key === e.key && o.type === 'set')) marks.set(e.key, { created: e.created, mode: gate.mode })
        else if (mark && mark.created !== e.created) marks.delete(e.key)
      }
      for (const k of r.deleted) marks.delete(k)
      return r
    }
    return {
      name: 'memory with gates (a fake lock manager of this process)',
      // As IndexedDB's: gates, and no handover (the memory store under it hands over; IndexedDB does not).
      capabilities: { ...inner.capabilities, gates: true, commitOnChange: false, keepParked: false, handover: false },
      get: (key) => inner.get(key),
      list: (prefix, o) => inner.list(prefix, o),
      watch: (prefix, sink, from) => inner.watch(prefix, sink, from),
      close: () => inner.close(),
      commit(checks, ops, options) {
        const next = serial.then(() => apply(checks, ops, options))
        serial = next.catch(() => {})
        return next
      },
      gate: (key, options = {}) => new FakeGate(manager, key, options),
    }
  }
  return { adapter: make, marked: (key: string) => marks.has(key) }
}
