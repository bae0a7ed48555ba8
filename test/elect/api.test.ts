/**
 * zaris/elect's election after the campaign: fenced writes (`put`), the
 * leader as others see it (`leader`, the `leader` event, `observe`), and
 * what a term's end tells (`deposed`). Real pages in Chromium, elections in
 * one page or in two tabs of one origin.
 */
import { expect, it } from 'vitest'
import type { TabElection } from 'zaris/elect'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'

const { withContext } = useRecordedTabs()

/** What a page keeps between evaluate calls (`window.kept`) in these tests. */
interface Kept {
  e: TabElection
  other: TabElection
  stop: AbortController
  seen: Array<string | null>
  closing: Array<string | null>
  ended: { bySignal: boolean; byClose: boolean }
  events: () => number
  watching: Promise<void>
  changes: Array<{ candidate: string | null; at: number }>
}

const fresh = (what: string) => `${what}-${Math.random().toString(36).slice(2, 10)}`

it('put: a bad key, fence or value is refused naming it; a live term writes a copy of the value; a resigned term is refused with FENCED naming the key and token', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const r = await tab.evaluate(async (ns) => {
      const code = (p: Promise<unknown>) =>
        p.then(
          () => 'accepted',
          (err: { code?: string; message?: string }) => `${err.code}: ${err.message}`,
        )
      const e = window.zarisElect.election('leader:put', { namespace: ns, ttl: 5_000 })
      const term = (await e.campaign())!
      const bad = {
        noOptions: await code(e.put('data', 1, undefined as never)),
        noFence: await code(e.put('data', 1, {} as never)),
        nullFence: await code(e.put('data', 1, { fence: null } as never)),
        textToken: await code(e.put('data', 1, { fence: { key: term.key, token: String(term.token) } } as never)),
        fenceKey: await code(e.put('data', 1, { fence: { key: '', token: term.token } })),
        key: await code(e.put('', 1, { fence: term })),
        value: await code(e.put('data', (() => 1) as never, { fence: term })),
      }
      // The value is copied when put is called: a change after the call is not written.
      const value = { n: 1 }
      const writing = e.put('data', value, { fence: term })
      value.n = 2
      await writing
      const c = await window.zaris.connect(`zaris://idb/${ns}`)
      const stored = (await c.get('data'))?.value
      await e.resign()
      const fenced = await code(e.put('data', 3, { fence: term }))
      const after = (await c.get('data'))?.value
      await Promise.all([e.close(), c.close()])
      return { bad, stored, fenced, after, key: term.key, token: term.token }
    }, fresh('put'))
    expect(r.bad.noOptions).toMatch(/^INVALID_ARGUMENT: /)
    for (const refusal of [r.bad.noFence, r.bad.nullFence, r.bad.textToken]) expect(refusal).toBe('INVALID_ARGUMENT: fence must be a term (an object with key and token)')
    expect(r.bad.fenceKey).toMatch(/^INVALID_ARGUMENT: fence\.key /)
    expect(r.bad.key).toMatch(/^INVALID_ARGUMENT: key /)
    expect(r.bad.value).toMatch(/^INVALID_ARGUMENT: /)
    expect(r.stored).toEqual({ n: 1 })
    expect(r.fenced).toBe(`FENCED: put "data" refused: "${r.key}" is no longer held with token ${r.token}`)
    expect(r.after).toEqual({ n: 1 })
  })
})

it('observe: the leader now first, then each change once (a renewal is no change); ends when its signal aborts, and when the election closes', async () => {
  await withContext(async (open) => {
    const [watcher, leader] = [await open(), await open()]
    const ns = fresh('observe')
    await watcher.evaluate((ns) => {
      const e = window.zarisElect.election('leader:observe', { namespace: ns })
      const stop = new AbortController()
      const seen: Array<string | null> = []
      const ended = { bySignal: false, byClose: false }
      void (async () => {
        for await (const l of e.observe({ signal: stop.signal })) seen.push(l ? `${l.candidate}@${l.token}` : null)
        ended.bySignal = true
      })()
      const other = window.zarisElect.election('leader:observe', { namespace: ns })
      const closing: Array<string | null> = []
      void (async () => {
        for await (const l of other.observe()) closing.push(l?.candidate ?? null)
        ended.byClose = true
      })()
      let events = 0
      e.addEventListener('leader', () => events++)
      window.kept = { e, other, stop, seen, closing, ended, events: () => events }
    }, ns)
    await watcher.waitForFunction(() => (window.kept as unknown as Kept).seen.length === 1 && (window.kept as unknown as Kept).closing.length === 1)
    // The leader renews every ttl/3 (here every 300 ms): 3 renewals in the second it leads, each far from its deadline on a loaded machine.
    const token = await leader.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:observe', { namespace: ns, candidate: 'tab-b', ttl: 900 })
      window.kept = { e }
      return (await e.campaign())!.token
    }, ns)
    await watcher.waitForFunction(() => (window.kept as unknown as Kept).seen.length === 2, undefined, { timeout: 5_000 })
    await new Promise((r) => setTimeout(r, 1_000))
    const leading = await watcher.evaluate(() => ({ seen: [...(window.kept as unknown as Kept).seen], events: (window.kept as unknown as Kept).events(), leader: (window.kept as unknown as Kept).e.leader }))
    await leader.evaluate(() => (window.kept as unknown as Kept).e.resign())
    await watcher.waitForFunction(() => (window.kept as unknown as Kept).seen.length === 3, undefined, { timeout: 5_000 })
    const r = await watcher.evaluate(async () => {
      (window.kept as unknown as Kept).stop.abort()
      await new Promise((r) => setTimeout(r, 50))
      const bySignal = (window.kept as unknown as Kept).ended.bySignal
      const closeWasOpen = !(window.kept as unknown as Kept).ended.byClose
      await (window.kept as unknown as Kept).other.close()
      await new Promise((r) => setTimeout(r, 50))
      await (window.kept as unknown as Kept).e.close()
      return { seen: (window.kept as unknown as Kept).seen, events: (window.kept as unknown as Kept).events(), bySignal, closeWasOpen, byClose: (window.kept as unknown as Kept).ended.byClose, closing: (window.kept as unknown as Kept).closing }
    })
    expect(leading.seen).toEqual([null, `tab-b@${token}`])
    expect(leading.events).toBe(1)
    expect(leading.leader).toEqual({ candidate: 'tab-b', token })
    expect(r.seen).toEqual([null, `tab-b@${token}`, null])
    expect(r.events).toBe(2)
    expect(r.bySignal).toBe(true)
    expect(r.closeWasOpen).toBe(true)
    expect(r.byClose).toBe(true)
    expect(r.closing).toEqual([null, 'tab-b', null])
    await leader.evaluate(() => (window.kept as unknown as Kept).e.close())
  })
})

it('a leader elected while observe reads the leader now is yielded once, not twice (two tabs, 16 namespaces opened cold on both sides)', async () => {
  await withContext(async (open) => {
    const [watcher, rival] = [await open(), await open()]
    const runs: Array<Array<string | null>> = []
    for (let i = 0; i < 16; i++) {
      const ns = fresh('race')
      await watcher.evaluate((ns) => {
        const e = window.zarisElect.election('leader:race', { namespace: ns })
        const stop = new AbortController()
        const seen: Array<string | null> = []
        const watching = (async () => {
          for await (const l of e.observe({ signal: stop.signal })) seen.push(l?.candidate ?? null)
        })()
        window.kept = { e, stop, seen, watching }
      }, ns)
      // The rival wins while the observer's first read may still be under way.
      await rival.evaluate(async (ns) => {
        window.kept = { e: window.zarisElect.election('leader:race', { namespace: ns, candidate: 'rival' }) }
        await (window.kept as unknown as Kept).e.campaign()
      }, ns)
      await watcher.waitForFunction(() => (window.kept as unknown as Kept).seen.at(-1) === 'rival', undefined, { timeout: 5_000 })
      await new Promise((r) => setTimeout(r, 100))
      runs.push(
        await watcher.evaluate(async () => {
          (window.kept as unknown as Kept).stop.abort()
          await (window.kept as unknown as Kept).watching
          await (window.kept as unknown as Kept).e.close()
          return (window.kept as unknown as Kept).seen
        }),
      )
      await rival.evaluate(() => (window.kept as unknown as Kept).e.close())
    }
    // Each entry a change from the one before: [null, 'rival'] or ['rival'].
    for (const seen of runs) expect([[null, 'rival'], ['rival']]).toContainEqual(seen)
  })
})

it('a leader entry that expires with nobody left to announce it: leader goes undefined at its deadline, not before, not a second after', async () => {
  await withContext(async (open) => {
    const [watcher, writer] = [await open(), await open()]
    const ns = fresh('expiry')
    await watcher.evaluate((ns) => {
      const e = window.zarisElect.election('leader:expiry', { namespace: ns })
      const changes: Array<{ candidate: string | null; at: number }> = []
      e.addEventListener('leader', (ev) => changes.push({ candidate: (ev as CustomEvent<{ candidate: string } | undefined>).detail?.candidate ?? null, at: Date.now() }))
      void e.observe().next()
      window.kept = { e, changes }
    }, ns)
    await watcher.waitForFunction(() => (window.kept as unknown as Kept).e.leader === undefined)
    // A full client writes a term-shaped entry with a 400 ms TTL and closes: no tab is left to expire it.
    const written = await writer.evaluate(async (ns) => {
      const c = await window.zaris.connect(`zaris://idb/${ns}`)
      await c.put('leader:expiry', { candidate: 'ghost' }, { ttl: 400 })
      const at = Date.now()
      await c.close()
      return at
    }, ns)
    await writer.close()
    await watcher.waitForFunction(() => (window.kept as unknown as Kept).changes.length === 2, undefined, { timeout: 5_000 })
    const changes = await watcher.evaluate(async () => {
      await (window.kept as unknown as Kept).e.close()
      return (window.kept as unknown as Kept).changes
    })
    expect(changes.map((c) => c.candidate)).toEqual(['ghost', null])
    const gone = changes[1]!.at - written
    // Its deadline is 400 ms after a commit that came just before \`written\`; the look again is timed from the event.
    expect(gone).toBeGreaterThanOrEqual(350)
    expect(gone).toBeLessThan(400 + 1_000)
  })
})

it('a term that ends: deposed tells its code, and the leader this page saw goes undefined with a leader event', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const r = await tab.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:ended', { namespace: ns, ttl: 5_000 })
      const codes: string[] = []
      const leaders: Array<string | null> = []
      // When deposed fires, this page no longer names its candidate leader.
      const atDeposed: Array<{ leader: string | null; isLeader: boolean }> = []
      e.addEventListener('deposed', (ev) => {
        codes.push((ev as CustomEvent<string>).detail)
        atDeposed.push({ leader: e.leader?.candidate ?? null, isLeader: e.isLeader })
      })
      e.addEventListener('leader', (ev) => leaders.push((ev as CustomEvent<{ candidate: string } | undefined>).detail?.candidate ?? null))
      const term = (await e.campaign())!
      await new Promise((r) => setTimeout(r, 50))
      const during = { leader: e.leader?.candidate ?? null, term: e.term === term, isLeader: e.isLeader }
      await e.resign()
      const after = { leader: e.leader ?? null, term: e.term ?? null, isLeader: e.isLeader }
      await e.close()
      return { during, after, codes, leaders, candidate: e.candidate, atDeposed }
    }, fresh('ended'))
    expect(r.atDeposed).toEqual([{ leader: null, isLeader: false }])
    expect(r.during).toEqual({ leader: r.candidate, term: true, isLeader: true })
    expect(r.after).toEqual({ leader: null, term: null, isLeader: false })
    expect(r.codes).toEqual(['RELEASED'])
    expect(r.leaders).toEqual([r.candidate, null])
  })
})

it('an entry at another key of the namespace, one under the name as a prefix included, never names the leader', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const r = await tab.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:mine', { namespace: ns })
      await e.observe().next()
      const events: Array<string | null> = []
      e.addEventListener('leader', (ev) => events.push((ev as CustomEvent<{ candidate: string } | undefined>).detail?.candidate ?? null))
      const c = await window.zaris.connect(`zaris://idb/${ns}`)
      // Term-shaped entries at other keys, one of them sharing the name as a prefix.
      await c.put('leader:other', { candidate: 'other' })
      await c.put('leader:mine:x', { candidate: 'prefixed' })
      await c.put('leader:mine', { candidate: 'mine' })
      await c.close()
      const deadline = Date.now() + 2_000
      while (events.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
      await e.close()
      return events
    }, fresh('keys'))
    expect(r).toEqual(['mine'])
  })
})

it('close() twice gives back its share of the page store once: another election of the page on that namespace keeps hearing changes; disposing is closing', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const r = await tab.evaluate(async (ns) => {
      const closing = window.zarisElect.election('leader:shared', { namespace: ns })
      const staying = window.zarisElect.election('leader:shared', { namespace: ns })
      await Promise.all([closing.observe().next(), staying.observe().next()])
      await closing.close()
      await closing.close()
      const c = await window.zaris.connect(`zaris://idb/${ns}`)
      await c.put('leader:shared', { candidate: 'later' })
      await c.close()
      const deadline = Date.now() + 2_000
      while (!staying.leader && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
      const seen = staying.leader?.candidate ?? null
      // Disposing is closing: a campaign after it resolves null.
      const disposed = window.zarisElect.election('leader:disposed', { namespace: ns })
      await disposed[Symbol.asyncDispose]()
      const campaign = await Promise.race([disposed.campaign(), new Promise((r) => setTimeout(() => r('still campaigning'), 2_000))])
      await Promise.all([staying.close(), disposed.close()])
      return { seen, campaign }
    }, fresh('shared'))
    expect(r).toEqual({ seen: 'later', campaign: null })
  })
})

it('observe() begun after a leader won yields that leader first; an entry already past its deadline names nobody; one that expires later is dropped at its deadline', async () => {
  await withContext(async (open) => {
    const [leader, watcher] = [await open(), await open()]
    const ns = fresh('before')
    const token = await leader.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:before', { namespace: ns, candidate: 'first', ttl: 5_000 })
      window.kept = { e }
      return (await e.campaign())!.token
    }, ns)
    const r = await watcher.evaluate(async (ns) => {
      const c = await window.zaris.connect(`zaris://idb/${ns}`)
      await c.put('leader:gone', { candidate: 'gone' }, { ttl: 100 })
      await c.put('leader:soon', { candidate: 'soon' }, { ttl: 600 })
      await c.close()
      await new Promise((r) => setTimeout(r, 200))
      const first = async (name: string) => {
        const e = window.zarisElect.election(name, { namespace: ns })
        const got = (await e.observe().next()).value as { candidate: string; token: number } | undefined
        return { e, got: got ? `${got.candidate}@${got.token}` : null }
      }
      const [before, gone, soon] = [await first('leader:before'), await first('leader:gone'), await first('leader:soon')]
      const deadline = Date.now() + 2_000
      while (soon.e.leader && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
      const soonAfter = soon.e.leader?.candidate ?? null
      await Promise.all([before.e.close(), gone.e.close(), soon.e.close()])
      return { before: before.got, gone: gone.got, soon: soon.got, soonAfter }
    }, ns)
    await leader.evaluate(() => (window.kept as unknown as Kept).e.close())
    expect(r.before).toBe(`first@${token}`)
    expect(r.gone).toBeNull()
    expect(r.soon).toMatch(/^soon@\d+$/)
    expect(r.soonAfter).toBeNull()
  })
})

it('an entry at the name that is not a term (text, a list, null, a candidate that is not text) names nobody; a term-shaped one names its candidate', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const r = await tab.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:shape', { namespace: ns })
      await e.observe().next()
      const events: Array<string | null> = []
      e.addEventListener('leader', (ev) => events.push((ev as CustomEvent<{ candidate: string } | undefined>).detail?.candidate ?? null))
      const c = await window.zaris.connect(`zaris://idb/${ns}`)
      // An entry of any shape is heard without an error thrown in the page.
      const errors: string[] = []
      window.addEventListener('error', (ev) => errors.push(String(ev.message)))
      const seen: Array<string | null> = []
      for (const value of ['plain', ['a', 'list'], null, { candidate: 7 }, { candidate: 'shaped' }]) {
        await c.put('leader:shape', value as never)
        await new Promise((r) => setTimeout(r, 100))
        seen.push(e.leader?.candidate ?? null)
      }
      await c.close()
      await e.close()
      return { seen, events, errors }
    }, fresh('shape'))
    expect(r.seen).toEqual([null, null, null, null, 'shaped'])
    expect(r.events).toEqual(['shaped'])
    expect(r.errors).toEqual([])
  })
})

it('a waiting candidate that wins when the leader resigns sees the first, then itself (nobody between when the resign deleted the entry before its take), each once', async () => {
  await withContext(async (open) => {
    const [first, second] = [await open(), await open()]
    const ns = fresh('next')
    await first.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:next', { namespace: ns, candidate: 'first' })
      window.kept = { e }
      await e.campaign()
    }, ns)
    await second.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:next', { namespace: ns, candidate: 'second' })
      const seen: Array<string | null> = []
      e.addEventListener('leader', (ev) => seen.push((ev as CustomEvent<{ candidate: string } | undefined>).detail?.candidate ?? null))
      await e.observe().next()
      window.kept = { e, seen, won: e.campaign() }
    }, ns)
    await second.waitForFunction(() => (window.kept as unknown as Kept).seen.length > 0 || (window.kept as unknown as Kept).e.leader !== undefined)
    await first.evaluate(() => (window.kept as unknown as Kept).e.resign())
    const r = await second.evaluate(async () => {
      const k = window.kept as unknown as Kept & { won: Promise<unknown> }
      await k.won
      await new Promise((r) => setTimeout(r, 100))
      const out = { seen: [...k.seen], leader: k.e.leader?.candidate }
      await k.e.close()
      return out
    })
    await first.evaluate(() => (window.kept as unknown as Kept).e.close())
    expect(r.leader).toBe('second')
    // The resign leaves the key to a waiting take, or deletes it first: both are one change each.
    expect([['first', 'second'], ['first', null, 'second']]).toContainEqual(r.seen)
  })
})

it('a waiting candidate that takes over a closed leader tab\'s live entry (both named alike) sees the first term, then its own, with nobody between (its own take is told by its campaign)', async () => {
  await withContext(async (open) => {
    const [first, second] = [await open(), await open()]
    const ns = fresh('closed')
    const firstToken = await first.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:closed', { namespace: ns, candidate: 'same', ttl: 30_000 })
      window.kept = { e }
      return (await e.campaign())!.token
    }, ns)
    await second.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:closed', { namespace: ns, candidate: 'same', ttl: 30_000 })
      const seen: Array<string | null> = []
      e.addEventListener('leader', (ev) => {
        // With the term known when its own win is told (the campaign sets it first).
        const l = (ev as CustomEvent<{ candidate: string; token: number } | undefined>).detail
        seen.push(l ? `${l.candidate}@${l.token} term ${e.term?.token ?? null}` : null)
      })
      await e.observe().next()
      window.kept = { e, seen, won: e.campaign() }
    }, ns)
    await second.waitForFunction(() => (window.kept as unknown as Kept).e.leader?.candidate === 'same')
    await first.close()
    const r = await second.evaluate(async () => {
      const k = window.kept as unknown as Kept & { won: Promise<{ token: number }> }
      const token = (await k.won).token
      await new Promise((r) => setTimeout(r, 100))
      const out = { seen: [...k.seen], token }
      await k.e.close()
      return out
    })
    expect(r.token).toBeGreaterThan(firstToken)
    // A change of term is news even with the same candidate name.
    expect(r.seen).toEqual([`same@${firstToken} term null`, `same@${r.token} term ${r.token}`])
  })
})

it('tabs of one id: each sees the others lead (an entry of its id names it only if this election wrote it), in reads and in the news, while it waits too', async () => {
  await withContext(async (open) => {
    const [a, b, c, d] = [await open(), await open(), await open(), await open()]
    const ns = fresh('one-id')
    const join = (tab: typeof a, id: string, candidate: string, campaign: boolean) =>
      tab.evaluate(
        async ([ns, id, candidate, campaign]) => {
          const e = window.zarisElect.election('leader:one-id', { namespace: ns, id, candidate, ttl: 900 })
          const seen: Array<string | null> = []
          e.addEventListener('leader', (ev) => seen.push((ev as CustomEvent<{ candidate: string } | undefined>).detail?.candidate ?? null))
          const first = (await e.observe().next()).value
          window.kept = { e, seen, won: campaign ? e.campaign() : undefined } as never
          return first?.candidate ?? null
        },
        [ns, id, candidate, campaign] as const,
      )
    await a.evaluate(async (ns) => {
      const e = window.zarisElect.election('leader:one-id', { namespace: ns, id: 'X', candidate: 'tab-a', ttl: 900 })
      window.kept = { e } as never
      await e.campaign()
    }, ns)
    // In line for the election's Web Lock: D, then B; C only watches. A, B and D share the id X.
    await join(d, 'X', 'tab-d', true)
    await new Promise((r) => setTimeout(r, 100))
    const firstB = await join(b, 'X', 'tab-b', true)
    const firstC = await join(c, 'Y', 'tab-c', false)
    // A renews every 300 ms: its renewals, heard by B while B waits, still name it.
    await new Promise((r) => setTimeout(r, 700))
    const leaderNow = (tab: typeof a) => tab.evaluate(() => (window.kept as unknown as Kept).e.leader?.candidate ?? null)
    const during = { b: await leaderNow(b), c: await leaderNow(c) }
    await a.evaluate(() => (window.kept as unknown as Kept).e.resign())
    await d.evaluate(() => (window.kept as unknown as { won: Promise<unknown> }).won)
    // D's take, by another tab of B's id while B waits, is news to B.
    const sawD = await b.waitForFunction(() => (window.kept as unknown as Kept).e.leader?.candidate === 'tab-d', undefined, { timeout: 3_000 }).then(() => true, () => false)
    await d.evaluate(() => (window.kept as unknown as Kept).e.resign())
    await b.evaluate(() => (window.kept as unknown as { won: Promise<unknown> }).won)
    await c.waitForFunction(() => (window.kept as unknown as Kept).e.leader?.candidate === 'tab-b')
    const resigned = await Promise.all([a, d].map((tab) => tab.waitForFunction(() => (window.kept as unknown as Kept).e.leader?.candidate === 'tab-b', undefined, { timeout: 3_000 }).then(() => true, () => false)))
    const seenB = await b.evaluate(() => (window.kept as unknown as Kept).seen)
    for (const tab of [a, b, c, d]) await tab.evaluate(() => (window.kept as unknown as Kept).e.close())
    expect({ firstB, firstC }).toEqual({ firstB: 'tab-a', firstC: 'tab-a' })
    expect(during).toEqual({ b: 'tab-a', c: 'tab-a' })
    expect(sawD).toBe(true)
    expect(resigned).toEqual([true, true])
    expect(seenB.filter((l) => l !== null)).toEqual(['tab-a', 'tab-d', 'tab-b'])
  })
})

it('two candidates of one page and name, of different ids, campaigning at once: the one in line names the other leader', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const r = await tab.evaluate(async (ns) => {
      const a = window.zarisElect.election('leader:pair', { namespace: ns, id: 'A', candidate: 'a' })
      const b = window.zarisElect.election('leader:pair', { namespace: ns, id: 'B', candidate: 'b' })
      const won = await Promise.race([a.campaign().then(() => a), b.campaign().then(() => b)])
      const waiting = won === a ? b : a
      await new Promise((r) => setTimeout(r, 200))
      const out = { winner: won.candidate, seen: waiting.leader?.candidate ?? null, waitingLeads: waiting.isLeader }
      await Promise.all([a.close(), b.close()])
      return out
    }, fresh('pair'))
    expect(r.seen).toBe(r.winner)
    expect(r.waitingLeads).toBe(false)
  })
})
