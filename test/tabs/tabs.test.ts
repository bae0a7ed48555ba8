/**
 * zaris/tabs across real tabs (Chromium, the harness page): its locks and a
 * full client's locks (`client.locks.acquire` over `zaris://idb`) take turns
 * on one key, its watch sees every tab's changes in revision order, and its
 * plain calls keep the contract's answers and errors. Every commit of both
 * kinds is recorded (test/elect/record.ts records this entry's store too:
 * it is zaris/elect's) and the history judged by the checker.
 */
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'
import { assertTurns } from '../browser-harness/turns'
import type { HistoryRecord } from '../faults/checker'

const { withContext } = useRecordedTabs()

const ns = () => `tabs-${Math.random().toString(36).slice(2, 10)}`

type Kind = 'tabs' | 'full'

/**
 * In `tab`, client `id` of kind `kind`: `rounds` times, acquire `lock:turns`
 * (waiting), write fenced by it, release, then write fenced by the released
 * lock (it must be refused); records each step.
 */
function rounds(tab: Page, args: { store: string; id: string; kind: Kind; rounds: number }): Promise<{ tokens: number[]; refused: number }> {
  return tab.evaluate(async ({ store, id, kind, rounds }) => {
    const now = window.zarisNow
    const record = (r: HistoryRecord) => void window.zarisRecord(r).catch(() => {})
    type Fence = { key: string; token: number }
    let acquire: () => Promise<Fence & { release(): Promise<boolean> }>
    let put: (value: unknown, fence: Fence) => Promise<number>
    if (kind === 'tabs') {
      window.zarisRecordElect(id)
      const app = window.zarisTabs.tabs(store, { id, ttl: 10_000 })
      acquire = async () => (await app.locks.acquire('lock:turns', { wait: 30_000 }))!
      put = async (value, fence) => (await app.put('res:turns', value as never, { fence })).revision
    } else {
      const c = await window.zarisRecorded(store, id)
      acquire = async () => (await c.locks.acquire('lock:turns', { ttl: 10_000, wait: 30_000 }))!
      put = async (value, fence) => (await c.put('res:turns', value as never, { fence })).revision
    }
    const tokens: number[] = []
    let refused = 0
    const write = async (fence: Fence, seq: number) => {
      const invokedAt = now()
      try {
        const revision = await put({ token: fence.token, by: id, seq }, fence)
        record({ type: 'write', client: id, resource: 'res:turns', lock: 'lock:turns', token: fence.token, outcome: 'accepted', revision, invokedAt, at: now() })
        return true
      } catch (err) {
        const code = (err as { code?: string }).code
        record({ type: 'write', client: id, resource: 'res:turns', lock: 'lock:turns', token: fence.token, outcome: code === 'FENCED' ? 'refused' : 'unknown', invokedAt, at: now() })
        return false
      }
    }
    for (let r = 0; r < rounds; r++) {
      const invokedAt = now()
      const lock = await acquire()
      record({ type: 'acquire', client: id, lock: 'lock:turns', token: lock.token, invokedAt, at: now() })
      tokens.push(lock.token)
      if (!(await write(lock, r))) throw new Error(`${id}: a write fenced by its held lock ${lock.token} was refused`)
      const releasedAt = now()
      await lock.release()
      record({ type: 'release', client: id, lock: 'lock:turns', token: lock.token, invokedAt: releasedAt, at: now(), released: true })
      if (!(await write(lock, -1))) refused++
      await new Promise((res) => setTimeout(res, Math.random() * 10))
    }
    return { tokens, refused }
  }, args)
}

describe('zaris/tabs', () => {
  it('locks: two zaris/tabs tabs and two full-client tabs x 10 holds of one key: tokens rise, no two holds overlap, every stale fenced write is refused; the checker passes the history', async () => {
    await withContext(async (open, records, operations) => {
      const store = ns()
      const pages = [await open(), await open(), await open(), await open()]
      const kinds: Kind[] = ['tabs', 'full', 'tabs', 'full']
      const n = 10
      const results = await Promise.all(pages.map((tab, i) => rounds(tab, { store, id: `${kinds[i]}-${i}`, kind: kinds[i]!, rounds: n })))
      for (const r of results) {
        expect(r.tokens).toHaveLength(n)
        expect(r.refused).toBe(n)
      }
      const { acquired, switches } = assertTurns(records, operations, 4 * n)
      console.log(`${acquired.length} holds, ${switches} changes of kind, ${operations.length / 2} recorded commits`)
      expect(switches).toBeGreaterThan(0)
    })
  }, 120_000)

  it("watch: every tab's puts, deletes and expiries (both kinds of tab, none sweeping but the watcher) arrive once each, in revision order, under the prefix only; fromRevision replays them", async () => {
    await withContext(async (open) => {
      const store = ns()
      const [watcher, a, b] = [await open(), await open(), await open()]
      await watcher.evaluate(async (store) => {
        const app = window.zarisTabs.tabs(store)
        const w = app.watch('job:', { prefix: true })
        await w.ready
        const seen: Array<{ type: string; key: string; revision: number }> = []
        window.kept.seen = seen
        window.kept.app = app
        void (async () => {
          for await (const ev of w) seen.push({ type: ev.type, key: ev.key, revision: ev.revision })
        })()
      }, store)
      // Two tabs write at once, so their announcements cross; one of them a full client.
      const writes = (tab: Page, kind: Kind, tag: string) =>
        tab.evaluate(
          async ({ store, kind, tag }) => {
            const put = kind === 'tabs' ? window.zarisTabs.tabs(store) : await window.zaris.connect(`zaris://idb/${store}`)
            for (let i = 0; i < 30; i++) {
              await put.put(`job:${tag}:${i % 5}`, i)
              if (i % 7 === 0) await put.delete(`job:${tag}:${i % 5}`)
              if (i % 10 === 0) await put.put(`other:${tag}`, i)
            }
            await put.put(`job:${tag}:short`, 'gone soon', { ttl: 300 })
          },
          { store, kind, tag },
        )
      await Promise.all([writes(a, 'tabs', 'a'), writes(b, 'full', 'b')])
      // The short entry expires: the watcher's own sweep tells it (the full client's tab is closed first, so its sweep does not).
      await b.close()
      await watcher.waitForFunction(() => (window.kept.seen as Array<{ type: string }>).some((e) => e.type === 'expire'), undefined, { timeout: 5_000, polling: 50 })
      const seen = await watcher.evaluate(() => window.kept.seen as Array<{ type: string; key: string; revision: number }>)
      // The store's log up to the last event seen (the expiry may come before the other tab's last writes).
      const last = seen[seen.length - 1]!.revision
      const log = await a.evaluate(
        async ({ store, last }) => {
          const c = await window.zaris.connect(`zaris://idb/${store}`)
          const events: Array<{ type: string; key: string; revision: number }> = []
          const w = c.watch('job:', { prefix: true, fromRevision: 0 })
          await w.ready
          for await (const ev of w) {
            events.push({ type: ev.type, key: ev.key, revision: ev.revision })
            if (ev.revision >= last) break
          }
          return events
        },
        { store, last },
      )
      console.log(`watch: ${seen.length} events seen, ${log.length} in the log`)
      expect(seen.every((e) => e.key.startsWith('job:'))).toBe(true)
      for (let k = 1; k < seen.length; k++) expect(seen[k]!.revision).toBeGreaterThan(seen[k - 1]!.revision)
      // Exactly what the store's log holds for the prefix: none missed, none twice.
      expect(seen).toEqual(log)
      expect(seen.filter((e) => e.type === 'delete').length).toBeGreaterThan(0)
      const replay = await watcher.evaluate(async () => {
        const app = window.kept.app as ReturnType<typeof window.zarisTabs.tabs>
        const w = app.watch('job:b:', { prefix: true, fromRevision: 0 })
        const out: number[] = []
        for await (const ev of w) {
          out.push(ev.revision)
          if (ev.key === 'job:b:short') break
        }
        return out
      })
      expect(replay).toEqual(log.filter((e) => e.key.startsWith('job:b:')).map((e) => e.revision).slice(0, replay.length))
      expect(replay.length).toBeGreaterThan(20)
    })
  }, 60_000)

  it('try, wait, abort, close and bad input: null while another tab holds; a wait runs out to null; an abort rejects with its reason; close() lets the next tab in at once; errors name the problem', async () => {
    await withContext(async (open) => {
      const store = ns()
      const [holder, other] = [await open(), await open()]
      const token = await holder.evaluate(async (store) => {
        const app = window.zarisTabs.tabs(store, { ttl: 30_000 })
        window.kept.app = app
        return (await app.locks.acquire('lock:x'))!.token
      }, store)
      const r = await other.evaluate(async (store) => {
        const app = window.zarisTabs.tabs(store)
        window.kept.app = app
        const t0 = Date.now()
        const tried = await app.locks.acquire('lock:x')
        const waited = await app.locks.acquire('lock:x', { wait: 300 })
        const waitedMs = Date.now() - t0
        const abort = new AbortController()
        setTimeout(() => abort.abort(new Error('no more')), 100)
        const aborted = await app.locks.acquire('lock:x', { wait: 10_000, signal: abort.signal }).then(
          () => 'held',
          (err: Error) => err.message,
        )
        const errs: string[] = []
        for (const f of [() => app.locks.acquire('\u0001q', {}), () => app.locks.acquire('k', { wait: -1 }), () => app.put('k', 1, { fence: { key: 'k' } as never }), () => app.watch('k', { fromRevision: 1.5 })]) {
          try {
            await f()
            errs.push('none')
          } catch (err) {
            errs.push((err as { code?: string }).code ?? String(err))
          }
        }
        return { tried, waited, waitedMs, aborted, errs }
      }, store)
      expect(r.tried).toBeNull()
      expect(r.waited).toBeNull()
      expect(r.waitedMs).toBeGreaterThanOrEqual(290)
      expect(r.aborted).toBe('no more')
      expect(r.errs).toEqual(['INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'INVALID_ARGUMENT', 'INVALID_ARGUMENT'])
      // The holder closes: the waiting tab holds within well under the TTL, with a larger token.
      const waiting = other.evaluate(async () => {
        const app = window.kept.app as ReturnType<typeof window.zarisTabs.tabs>
        const lock = await app.locks.acquire('lock:x', { wait: 20_000 })
        return { token: lock!.token, at: Date.now() }
      })
      await new Promise((res) => setTimeout(res, 200))
      const closedAt = Date.now()
      const closed = await holder.evaluate(async () => {
        await (window.kept.app as { close(): Promise<void> }).close()
        return (window.kept.app as { get(k: string): Promise<unknown> }).get('k').then(
          () => 'open',
          (err: { code?: string }) => err.code,
        )
      })
      const next = await waiting
      expect(closed).toBe('CLOSED')
      expect(next.token).toBeGreaterThan(token)
      expect(next.at - closedAt).toBeLessThan(2_000)
    })
  }, 60_000)
})
