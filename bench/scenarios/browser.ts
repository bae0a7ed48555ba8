/**
 * The browser scenarios, in headless Chromium: one tab's acquire + release,
 * handoff between tabs, a holder's or leader's tab closed, and cross-tab
 * watch latency — zaris on IndexedDB against navigator.locks,
 * broadcast-channel's LeaderElection, a bare BroadcastChannel message and
 * raw IndexedDB transactions.
 *
 * @module
 */
import { startBrowser, type BenchBrowser, type Tab } from '../browser/driver'
import { alternate, type Contender } from '../lib/compare'
import { absNow, type Trial } from '../lib/measure'
import type { Scenario } from '../lib/report'
import type { BenchContext } from './context'

type Kind = 'zaris' | 'tabs' | 'weblocks' | 'raw' | 'zaris-election' | 'elect-election' | 'elect-elected' | 'bc-election'

export async function browserScenarios(ctx: BenchContext): Promise<Scenario[]> {
  let b: BenchBrowser
  try {
    b = await startBrowser()
  } catch (err) {
    const why = `Chromium could not be started (${(err as Error).message.split('\n')[0]})`
    return ['one-tab', 'one-tab-shared', 'handoff', 'tab-closed', 'leader-closed', 'watch'].map((id) => ({ id, title: id, op: '-', metric: 'ops', rows: [], skipped: why }))
  }
  try {
    return [
      await oneTab(ctx, b),
      await sharedTab(ctx, b),
      await handoff(ctx, b),
      await tabClosed(ctx, b, 'holder'),
      await tabClosed(ctx, b, 'leader'),
      await watchLatency(ctx, b),
    ]
  } finally {
    await b.close()
  }
}

/** One tab, one namespace: the trials `contenders` make of it (each a loop timed in the page), as scenario `meta`. */
async function inOneTab(
  ctx: BenchContext,
  b: BenchBrowser,
  ns: string,
  contenders: (loop: (run: (dur: number) => Promise<Trial>) => () => Promise<Trial>, tab: Tab) => Contender[],
  meta: Omit<Scenario, 'rows' | 'metric'>,
): Promise<Scenario> {
  ctx.log(`browser: ${meta.title}`)
  const tab = await b.tab()
  await tab.page.evaluate((ns) => window.bench.ready(ns), ns)
  const dur = ctx.quick ? 200 : 500
  const rows = await alternate(contenders((run) => () => run(dur), tab), ctx.trials)
  await tab.close()
  return { ...meta, metric: 'ops', rows }
}

function oneTab(ctx: BenchContext, b: BenchBrowser): Promise<Scenario> {
  const ns = 'one-tab'
  return inOneTab(ctx, b, ns, (loop, tab) => {
    const contender = (label: string, kind: 'zaris' | 'tabs' | 'weblocks' | 'raw', zaris: boolean): Contender => ({
      label,
      zaris,
      trial: loop((dur) => tab.page.evaluate(([kind, ns, dur]) => window.bench.loop(kind, ns, dur), [kind, ns, dur] as const)),
    })
    return [
      contender('zaris idb', 'zaris', true),
      contender('zaris/tabs', 'tabs', true),
      contender('navigator.locks', 'weblocks', false),
      contender('2 IndexedDB readwrite txs', 'raw', false),
    ]
  }, {
    id: 'one-tab',
    title: 'One tab: IndexedDB lock',
    op: 'acquire + release in one tab (zaris://idb; a Web Lock request; or two bare readwrite transactions, the ceiling)',
  })
}

/** A shared lock in one tab: acquire shared + release, alone and beside another shared hold, against navigator.locks' shared mode. */
function sharedTab(ctx: BenchContext, b: BenchBrowser): Promise<Scenario> {
  const ns = 'one-tab-shared'
  return inOneTab(ctx, b, ns, (loop, tab) => {
    const contender = (label: string, kind: 'zaris' | 'weblocks', beside: boolean): Contender => ({
      label,
      zaris: kind === 'zaris',
      trial: loop((dur) => tab.page.evaluate(([kind, ns, dur, beside]) => window.bench.sharedLoop(kind, ns, dur, beside), [kind, ns, dur, beside] as const)),
    })
    return [
      contender('zaris idb, shared', 'zaris', false),
      contender('navigator.locks, shared', 'weblocks', false),
      contender('zaris idb, shared beside another', 'zaris', true),
      contender('navigator.locks, shared beside another', 'weblocks', true),
    ]
  }, {
    id: 'one-tab-shared',
    title: 'One tab: shared lock',
    op: "acquire mode 'shared' + release in one tab: alone (zaris: a new group, and the last one out deletes it), and beside another shared hold kept meanwhile (zaris: a join, +1 and -1 on the group's count)",
  })
}

/** Moves a lock back and forth between two tabs; each handoff timed from the holder's release to the waiter's grant. */
async function handoff(ctx: BenchContext, b: BenchBrowser): Promise<Scenario> {
  ctx.log('browser: handoff')
  const tabs = [await b.tab(), await b.tab()] as const
  const ns = 'handoff'
  for (const t of tabs) await t.page.evaluate((ns) => window.bench.ready(ns), ns)
  const perTrial = ctx.quick ? 6 : 12
  const contender = (label: string, kind: Kind, zaris: boolean): Contender => ({
    label,
    zaris,
    async trial(index) {
      const key = `handoff-${kind}-${index}`
      const start = performance.now()
      await tabs[0].page.evaluate(([kind, ns, key]) => window.bench.hold(kind, ns, key), [kind, ns, key] as const)
      // released[i]: when the holder of handoff i let go; taken[i]: when the other tab got it, each on its own tab's clock.
      const released: number[] = []
      const taken: number[] = []
      for (let i = 0; i < perTrial; i++) {
        const [from, to] = i % 2 === 0 ? [tabs[0], tabs[1]] : [tabs[1], tabs[0]]
        await to.page.evaluate(([kind, ns, key]) => window.bench.wait(kind, ns, key, 15), [kind, ns, key] as const)
        released.push(await from.page.evaluate(() => window.bench.release()))
        taken.push(await to.page.evaluate(() => window.bench.waited()))
      }
      // Two handoffs in a row, on one clock each: the first tab's time from letting go to
      // getting it back, minus how long the other tab held it. No clock offset enters.
      const lat: number[] = []
      for (let i = 0; i + 1 < perTrial; i++) lat.push((taken[i + 1]! - released[i]! - (released[i + 1]! - taken[i]!)) / 2)
      await tabs[perTrial % 2]!.page.evaluate(() => window.bench.release())
      return { ops: lat.length, ms: performance.now() - start, lat }
    },
  })
  const rows = await alternate(
    [
      contender('zaris idb', 'zaris', true),
      contender('zaris/tabs', 'tabs', true),
      contender('navigator.locks', 'weblocks', false),
      contender('tx + BroadcastChannel msg + tx', 'raw', false),
    ],
    ctx.trials,
    { throughput: false },
  )
  for (const t of tabs) await t.close()
  return {
    id: 'handoff',
    title: 'Across tabs: handoff',
    op: 'the holder tab releases -> the waiting tab holds (release call to grant; each sample is half of two handoffs in a row, timed on each tab\'s own clock)',
    metric: 'latency',
    rows,
    notes: ['"tx + BroadcastChannel msg + tx" is the floor issue 7 measures against: the holder\'s transaction, one message, the taker\'s transaction.'],
  }
}

/** The holding (or leading) tab is closed; time from `page.close()` to the waiting tab's grant. */
async function tabClosed(ctx: BenchContext, b: BenchBrowser, what: 'holder' | 'leader'): Promise<Scenario> {
  ctx.log(`browser: ${what} tab closed`)
  const ns = `${what}-closed`
  const waiter = await b.tab()
  await waiter.page.evaluate((ns) => window.bench.ready(ns), ns)
  const trials = ctx.quick ? 4 : Math.max(7, ctx.trials + 2)
  const contender = (label: string, kind: Kind, zaris: boolean): Contender => ({
    label,
    zaris,
    async trial(index): Promise<Trial> {
      const key = `${what}-${kind}-${index}`
      const holder: Tab = await b.tab()
      await holder.page.evaluate(([kind, ns, key]) => window.bench.hold(kind, ns, key), [kind, ns, key] as const)
      await waiter.page.evaluate(([kind, ns, key]) => window.bench.wait(kind, ns, key, 30), [kind, ns, key] as const)
      const start = performance.now()
      const t0 = absNow()
      await holder.close()
      const t1 = await waiter.page.evaluate(() => window.bench.waited())
      await waiter.page.evaluate(() => window.bench.release())
      return { ops: 1, ms: performance.now() - start, lat: [t1 - waiter.offset - t0] }
    },
  })
  const contenders =
    what === 'holder'
      ? [contender('zaris idb lock', 'zaris', true), contender('zaris/tabs lock', 'tabs', true), contender('navigator.locks', 'weblocks', false)]
      : [
          contender('zaris idb election', 'zaris-election', true),
          contender('zaris/elect election', 'elect-election', true),
          contender('zaris/elect, elected', 'elect-elected', true),
          contender('broadcast-channel LeaderElection', 'bc-election', false),
        ]
  const rows = await alternate(contenders, trials, { throughput: false })
  await waiter.close()
  return {
    id: `${what}-closed`,
    title: what === 'holder' ? 'Across tabs: holder tab closed' : 'Across tabs: leader tab closed',
    op:
      what === 'holder'
        ? 'the holding tab is closed (page.close) -> the waiting tab holds the lock'
        : 'the leader\'s tab is closed (page.close) -> the other candidate leads',
    metric: 'latency',
    rows,
    notes: ['One sample per trial (a fresh tab each time), so p99 is the worst trial.'],
  }
}

/** A put in one tab seen by a watcher in another, against one BroadcastChannel message: half a ping-pong, timed in one tab. */
async function watchLatency(ctx: BenchContext, b: BenchBrowser): Promise<Scenario> {
  ctx.log('browser: watch')
  const ns = 'watch'
  const [pinger, echoer] = [await b.tab(), await b.tab()]
  for (const t of [pinger, echoer]) await t.page.evaluate((ns) => window.bench.ready(ns), ns)
  const count = ctx.quick ? 10 : 25
  const contender = (label: string, kind: 'zaris' | 'tabs' | 'bc', zaris: boolean): Contender => ({
    label,
    zaris,
    async trial() {
      await echoer.page.evaluate(([kind, ns]) => window.bench.echo(kind, ns), [kind, ns] as const)
      const t = await pinger.page.evaluate(([kind, ns, count]) => window.bench.ping(kind, ns, count, 3), [kind, ns, count] as const)
      await echoer.page.evaluate(() => window.bench.stopEcho())
      return t
    },
  })
  const rows = await alternate([contender('zaris idb watch', 'zaris', true), contender('zaris/tabs watch', 'tabs', true), contender('BroadcastChannel message', 'bc', false)], ctx.trials, {
    throughput: false,
  })
  await pinger.close()
  await echoer.close()
  return {
    id: 'watch',
    title: 'Across tabs: watch latency',
    op: 'a put in one tab -> the event in another tab\'s watch (or postMessage -> onmessage); half of a ping-pong timed in one tab',
    metric: 'latency',
    rows,
  }
}
