/**
 * A small checker for the lock family, from a recorded history: each hold
 * is a *window* from the moment its acquire resolved to the moment its
 * release was called. A correct lock holds throughout each window (the tests
 * use TTLs far longer than a window), so at no instant may the windows of a
 * key conflict: an exclusive window beside any other, or more permit windows
 * than the semaphore's limit. Touching windows (one ends when the next
 * begins) do not overlap. Nothing here is Node-only: it runs in the browser.
 *
 * Where holds have tokens (`locks`, `semaphores`), the lock-family cases
 * record what clients were told and check it with the lock-family models
 * of the linearizability checker instead (test/lincheck/family.ts), which
 * also judges tokens, releases, renewals, fenced writes and expiry. Windows
 * remain where a history has no tokens to check: the Web Locks facade's
 * callbacks (web-locks.case.ts, test/web-locks).
 */

export type WindowMode = 'exclusive' | 'shared' | 'permit'

export interface Window {
  key: string
  mode: WindowMode
  owner: string
  token: number
  start: number
  end: number
}

export interface WindowReport {
  /** Every instant at which windows conflicted, described. */
  violations: string[]
  /** The most shared windows of one key open at once. */
  maxShared: number
  /** The most permit windows of one key open at once. */
  maxPermits: number
  windows: number
}

/** Records windows; `open` returns the function that closes one. */
export class WindowLog {
  readonly windows: Window[] = []

  open(key: string, mode: WindowMode, owner: string, token: number): () => void {
    const w: Window = { key, mode, owner, token, start: performance.now(), end: Infinity }
    this.windows.push(w)
    return () => {
      w.end = performance.now()
    }
  }

  check(limit = Infinity): WindowReport {
    return checkWindows(this.windows, limit)
  }
}

/** Sweeps each key's windows in time order and reports every conflict (see the module doc). */
export function checkWindows(windows: readonly Window[], limit = Infinity): WindowReport {
  const report: WindowReport = { violations: [], maxShared: 0, maxPermits: 0, windows: windows.length }
  const byKey = new Map<string, Window[]>()
  for (const w of windows) byKey.set(w.key, [...(byKey.get(w.key) ?? []), w])
  for (const [key, ws] of byKey) {
    // Ends before starts at the same instant: touching windows do not overlap.
    const points = ws.flatMap((w) => [{ at: w.start, w, open: true }, { at: w.end, w, open: false }])
    points.sort((a, b) => a.at - b.at || Number(a.open) - Number(b.open))
    const open = new Set<Window>()
    for (const p of points) {
      if (!p.open) {
        open.delete(p.w)
        continue
      }
      open.add(p.w)
      const all = [...open]
      const exclusive = all.filter((w) => w.mode === 'exclusive').length
      const shared = all.filter((w) => w.mode === 'shared').length
      const permits = all.filter((w) => w.mode === 'permit').length
      report.maxShared = Math.max(report.maxShared, shared)
      report.maxPermits = Math.max(report.maxPermits, permits)
      if ((exclusive > 0 && exclusive + shared > 1) || permits > limit) {
        report.violations.push(`${key} at ${p.at.toFixed(1)} ms: ${all.map((w) => `${w.owner} ${w.mode} #${w.token}`).join(', ')}`)
      }
    }
  }
  return report
}
