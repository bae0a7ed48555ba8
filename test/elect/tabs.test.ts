/**
 * zaris/elect across real tabs (Chromium, the harness page): election-only
 * tabs and full-client tabs (`client.election` over `zaris://idb`) on one
 * namespace and name take turns in one election. Every commit of both kinds
 * is recorded (test/elect/record.ts, test/lincheck/recorder.ts) and the
 * history judged by the checker (test/faults/checker.ts → test/lincheck);
 * the terms are checked besides: tokens strictly rise, no two terms overlap,
 * a write fenced by a term that ended is refused, and no two tabs lead at
 * once (an election-only tab leads from its gate's grant, before its term's
 * token comes).
 */
import { describe, expect, it } from 'vitest'
import type { Page } from 'playwright'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'
import { assertTurns } from '../browser-harness/turns'
import type { HistoryRecord } from '../faults/checker'

const { withContext } = useRecordedTabs()

const ns = () => `elect-${Math.random().toString(36).slice(2, 10)}`

/** A tab's candidate: `elect` (zaris/elect) or `full` (a recorded full client's `client.election`). */
type Kind = 'elect' | 'full'

/**
 * In `tab`, candidate `id` of kind `kind`: `rounds` times, campaign, write
 * fenced by the term, resign, then write fenced by the ended term (it must
 * be refused); records each step.
 */
function rounds(tab: Page, args: { store: string; id: string; kind: Kind; rounds: number }): Promise<{ tokens: number[]; refused: number; led: Array<[number, number]>; early: number }> {
  return tab.evaluate(async ({ store, id, kind, rounds }) => {
    const now = window.zarisNow
    const record = (r: HistoryRecord) => void window.zarisRecord(r).catch(() => {})
    type Fence = { key: string; token: number }
    let campaign: () => Promise<Fence>
    let put: (value: unknown, fence: Fence) => Promise<number | undefined>
    let resign: () => Promise<boolean>
    /** When this tab led: from `elected` to `deposed` (an election-only tab leads on its gate's grant), or a full client's term. */
    const led: Array<[number, number]> = []
    /** How many times it led on the grant, before its token came. */
    let early = 0
    if (kind === 'elect') {
      window.zarisRecordElect(id)
      const e = window.zarisElect.election('leader:turns', { namespace: store, id, ttl: 10_000 })
      e.addEventListener('elected', () => {
        led.push([now(), Infinity])
        if (!e.term) early++
      })
      e.addEventListener('deposed', () => (led.at(-1)![1] = now()))
      campaign = async () => (await e.campaign())!
      put = async (value, fence) => void (await e.put('res:turns', value as never, { fence }))
      resign = () => e.resign()
    } else {
      const c = await window.zarisRecorded(store, id)
      const e = c.election('leader:turns', { ttl: 10_000 })
      campaign = async () => (await e.campaign())!
      put = async (value, fence) => (await c.put('res:turns', value as never, { fence })).revision
      resign = () => e.resign()
    }
    const tokens: number[] = []
    let refused = 0
    const write = async (fence: Fence, seq: number) => {
      const invokedAt = now()
      try {
        const revision = await put({ token: fence.token, by: id, seq }, fence)
        record({ type: 'write', client: id, resource: 'res:turns', lock: 'leader:turns', token: fence.token, outcome: 'accepted', ...(revision === undefined ? {} : { revision }), invokedAt, at: now() })
        return true
      } catch (err) {
        const code = (err as { code?: string }).code
        record({ type: 'write', client: id, resource: 'res:turns', lock: 'leader:turns', token: fence.token, outcome: code === 'FENCED' ? 'refused' : 'unknown', invokedAt, at: now() })
        return false
      }
    }
    for (let r = 0; r < rounds; r++) {
      const invokedAt = now()
      const term = await campaign()
      if (kind === 'full') led.push([now(), Infinity])
      record({ type: 'acquire', client: id, lock: 'leader:turns', token: term.token, invokedAt, at: now() })
      tokens.push(term.token)
      if (!(await write(term, r))) throw new Error(`${id}: a write fenced by its live term ${term.token} was refused`)
      const releasedAt = now()
      if (kind === 'full') led.at(-1)![1] = releasedAt
      await resign()
      record({ type: 'release', client: id, lock: 'leader:turns', token: term.token, invokedAt: releasedAt, at: now(), released: true })
      if (!(await write(term, -1))) refused++
      // Let another tab take a turn now and then.
      await new Promise((res) => setTimeout(res, Math.random() * 10))
    }
    return { tokens, refused, led, early }
  }, args)
}

describe('zaris/elect and client.election take turns in one election', () => {
  it('two election-only tabs and two full-client tabs x 12 terms: tokens rise, no two terms overlap, every stale fenced write is refused; the checker passes the history', async () => {
    await withContext(async (open, records, operations) => {
      const store = ns()
      const tabs = [await open(), await open(), await open(), await open()]
      const kinds: Kind[] = ['elect', 'full', 'elect', 'full']
      const n = 12
      const results = await Promise.all(tabs.map((tab, i) => rounds(tab, { store, id: `${kinds[i]}-${i}`, kind: kinds[i]!, rounds: n })))
      for (const r of results) {
        expect(r.tokens).toHaveLength(n)
        expect(r.refused).toBe(n)
      }
      // Tokens rise with every term, and each term began after the one before it was let go; the checker passes the history.
      const { acquired, switches } = assertTurns(records, operations, 4 * n)
      const early = results.reduce((n, r) => n + r.early, 0)
      console.log(`${acquired.length} terms, ${switches} changes of kind, ${operations.length / 2} recorded commits; ${early} of the election-only tabs' terms led on the grant`)
      expect(early).toBeGreaterThan(0)
      expect(switches).toBeGreaterThan(0)
      // Nobody led beside another (no tab was frozen here): an election-only tab from its grant to its resign, a full client for its term.
      const led = results.flatMap((r, i) => r.led.map(([from, to]) => ({ i, from, to }))).sort((a, b) => a.from - b.from)
      expect(led.length).toBeGreaterThanOrEqual(4 * n)
      for (let k = 1; k < led.length; k++) expect(led[k]!.from, `tab ${led[k]!.i} led while tab ${led[k - 1]!.i} did`).toBeGreaterThanOrEqual(led[k - 1]!.to)
    })
  }, 120_000)

  it('leader tab closed: the next leads at once (well under the TTL) with a larger token, from either kind to the other', async () => {
    await withContext(async (open) => {
      const store = ns()
      const start = (tab: Page, kind: Kind, id: string) =>
        tab.evaluate(
          async ({ store, kind, id }) => {
            const e =
              kind === 'elect'
                ? window.zarisElect.election('leader:closed', { namespace: store, id, ttl: 30_000 })
                : (await window.zaris.connect(`zaris://idb/${store}`, { id })).election('leader:closed', { ttl: 30_000 })
            window.kept.election = e
            window.kept.led = e.campaign().then((t) => ({ token: t!.token, at: Date.now() }))
          },
          { store, kind, id },
        )
      const leads = (tab: Page) =>
        tab.evaluate(() => Promise.race([window.kept.led as Promise<{ token: number; at: number }>, new Promise<null>((r) => setTimeout(() => r(null), 50))]))
      const tabs = [await open(), await open(), await open()]
      const kinds: Kind[] = ['elect', 'full', 'elect']
      await start(tabs[0]!, 'elect', 'elect-0')
      expect(await tabs[0]!.evaluate(() => window.kept.led)).toBeTruthy()
      await start(tabs[1]!, 'full', 'full-1')
      await new Promise((r) => setTimeout(r, 200))
      await start(tabs[2]!, 'elect', 'elect-2')
      await new Promise((r) => setTimeout(r, 200))
      let leader = 0
      let token = (await leads(tabs[0]!))!.token
      const took: string[] = []
      for (const round of [0, 1]) {
        const closedAt = Date.now()
        await tabs[leader]!.close()
        const rest = tabs.map((t, i) => i).filter((i) => i !== leader && !tabs[i]!.isClosed())
        let next: { i: number; token: number; at: number } | undefined
        for (let k = 0; k < 100 && !next; k++) {
          for (const i of rest) {
            const got = await leads(tabs[i]!)
            if (got && !next) next = { i, ...got }
          }
        }
        expect(next, `round ${round}: someone leads`).toBeDefined()
        // Nobody else leads beside it.
        for (const i of rest) if (i !== next!.i) expect(await tabs[i]!.evaluate(() => (window.kept.election as { isLeader: boolean }).isLeader)).toBe(false)
        took.push(`${kinds[leader]} -> ${kinds[next!.i]} in ${next!.at - closedAt} ms (token ${token} -> ${next!.token})`)
        expect(next!.token).toBeGreaterThan(token)
        expect(next!.at - closedAt).toBeLessThan(5_000)
        leader = next!.i
        token = next!.token
      }
      console.log(`leader tab closed: ${took.join('; ')}`)
    })
  }, 60_000)
})
