/**
 * Releasing on page exit: a page that talks to a zaris node frees what it
 * holds when it goes away (closed, navigated off, discarded), instead of
 * leaving its locks, leases, candidacies and wait-line places to their TTL.
 *
 * In a browser, each HTTP adapter remembers the entries it holds (written
 * with an owner by its own successful commits; forgotten when it deletes
 * them, overwrites them without an owner, or a failed check shows them gone
 * or in another life). On `pagehide` — unless the page goes into the
 * back/forward cache and may come back — it sends, for each, the very commit
 * a release makes: "delete `key` if it is still in life `created`", over
 * `fetch` with `keepalive`, which the browser sends even though the page is
 * gone.
 *
 * Why this is safe: it is an ordinary commit with the release's check, so it
 * can only end the life this page started; a lock taken over since (a new
 * life) is untouched. It carries the adapter's headers (its bearer token) and
 * goes to the commit route like any other commit, so a node that refuses a
 * page's origin refuses this too, before anything is sent: the body is JSON,
 * and a cross-origin JSON POST needs a CORS preflight that only origins given
 * with `--cors` pass.
 *
 * Measured in Chromium 156 (test/http/page-exit.test.ts): a keepalive JSON
 * POST to a node on another origin goes out on tab close and on navigation,
 * with its preflight when none is cached; when the whole browser context
 * closes it goes out only if the preflight is cached (the node allows 600 s,
 * and this page's commits keep it fresh). What no page can cover: a browser
 * that crashes or is killed sends nothing; the TTL frees those entries.
 *
 * @module
 */
import type { CommitResult, Op } from '../../core/contract/adapter'
import { randomHex } from '../../core/contract/ids'

/** Where an adapter's commits go now: the commit URL of its preferred node, and its headers (the bearer token). */
export type CommitTarget = () => { url: string; headers: Record<string, string> }

/** Posts one commit body with `keepalive`, so that it outlives the page. */
function keepalive(target: CommitTarget, body: string): void {
  const { url, headers } = target()
  void globalThis
    .fetch(url, {
      method: 'POST',
      keepalive: true,
      headers: { ...headers, 'content-type': 'application/json' },
      body,
      cache: 'no-store',
      credentials: 'omit',
      redirect: 'error',
    })
    .catch(() => {})
}

/** One entry this page holds: the life it started, and until when (performance.now) it lives unrenewed. */
interface Held {
  created: number
  owner: string
  until: number
}

/** Browsers count every keepalive body in flight against 64 KiB per page; stay under it. */
const BUDGET = 60 * 1024

const encoder = new TextEncoder()

/** Past this many remembered entries, forget the ones whose TTL ran out. */
const PRUNE_AT = 256

/** Every open tracker of this page: what `pagehide` releases. */
const open = new Set<PageExit>()
let listening = false

function onPageHide(ev: Event): void {
  // Kept in the back/forward cache: the page may come back, alive, with its holds.
  if ((ev as PageTransitionEvent).persisted) return
  let budget = BUDGET
  for (const tracker of open) budget = tracker.release(budget)
}

/** True in a page (a document and its events); Node and workers have no `pagehide`. */
function inPage(): boolean {
  const g = globalThis as { document?: unknown; addEventListener?: unknown }
  return typeof g.document === 'object' && g.document !== null && typeof g.addEventListener === 'function'
}

/**
 * The page-exit release of one adapter, or undefined outside a page.
 *
 * @example
 * const exit = pageExit(() => ({ url: 'http://127.0.0.1:7861/v1/demo/commit', headers: {} }))
 */
export function pageExit(target: CommitTarget, send: (body: string) => void = (body) => keepalive(target, body)): PageExit | undefined {
  if (!inPage()) return undefined
  if (!listening) {
    listening = true
    globalThis.addEventListener('pagehide', onPageHide)
  }
  const tracker = new PageExit(send)
  open.add(tracker)
  return tracker
}

export class PageExit {
  readonly #send: (body: string) => void
  readonly #held = new Map<string, Held>()
  #requests = 0
  readonly #prefix = randomHex(5)

  /** @internal Made by {@link pageExit}. */
  constructor(send: (body: string) => void) {
    this.#send = send
  }

  /** Learns from a commit this adapter made what it now holds. */
  saw(ops: Op[], result: CommitResult): void {
    if (!result.ok) {
      // A failed check shows the entry as it is: gone, or no longer the life we know.
      for (const f of result.failed) {
        const h = this.#held.get(f.key)
        if (h && (f.entry?.created !== h.created || f.entry.owner !== h.owner)) this.#held.delete(f.key)
      }
      return
    }
    const now = performance.now()
    for (const op of ops) {
      if (op.type === 'delete') this.#held.delete(op.key)
      else if (op.type === 'set') {
        const e = op.owner === undefined ? undefined : result.entries.find((x) => x.key === op.key)
        if (!e) this.#held.delete(op.key)
        else this.#held.set(op.key, { created: e.created, owner: op.owner!, until: op.ttl === undefined ? Infinity : now + op.ttl })
      }
    }
    if (this.#held.size > PRUNE_AT) for (const [key, h] of this.#held) if (h.until <= now) this.#held.delete(key)
  }

  /**
   * Sends one release per entry still held (locks and leases before wait-line
   * places), within `budget` bytes of bodies; returns the budget left.
   */
  release(budget: number): number {
    const now = performance.now()
    const held = [...this.#held].filter(([, h]) => h.until > now)
    this.#held.clear()
    held.sort(([a], [b]) => Number(a.startsWith('\u0001')) - Number(b.startsWith('\u0001')))
    for (const [key, h] of held) {
      const body = JSON.stringify({
        checks: [{ key, created: h.created }],
        ops: [{ type: 'delete', key }],
        requestId: `exit-${this.#prefix}-${(this.#requests++).toString(36)}`,
      })
      const bytes = encoder.encode(body).length
      if (bytes > budget) break
      budget -= bytes
      try {
        this.#send(body)
      } catch {
        // The browser refused it (over its own limit): the TTL frees the rest.
      }
    }
    return budget
  }

  /** Forgets this adapter (closed: what it held was released the ordinary way). */
  close(): void {
    this.#held.clear()
    open.delete(this)
  }
}
