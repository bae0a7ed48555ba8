/**
 * A test file's harness (Vite + Chromium, started before its tests and
 * stopped after them: `useHarness`) and `withContext`: a fresh browser context whose
 * pages record (the `zarisRecord` and `zarisOp` bindings, for the checker:
 * test/faults/checker.ts), closed after `fn`.
 */
import { afterAll, beforeAll } from 'vitest'
import type { Page } from 'playwright'
import type { HistoryEvent } from '../lincheck/history'
import type { HistoryRecord } from '../faults/checker'
import { launchRealTabs, UNTHROTTLED_ARGS, type RealTabsBrowser } from './real-tabs'
import { openHarnessTab, startHarness, type Harness } from './server'

/** Opens a harness tab of the context. */
export type OpenTab = () => Promise<Page>

/** The file's harness, started before its tests and closed after them: read `url` and `browser` inside tests. */
export function useHarness(): Harness {
  let harness: Harness | undefined
  beforeAll(async () => {
    harness = await startHarness()
  }, 60_000)
  afterAll(async () => {
    await harness?.close()
  })
  return {
    get url() {
      return harness!.url
    },
    get browser() {
      return harness!.browser
    },
    close: () => harness!.close(),
  }
}

/** Registers the file's `beforeAll`/`afterAll`; call `withContext` inside tests. */
export function useRecordedTabs(): {
  withContext(fn: (open: OpenTab, records: HistoryRecord[], operations: HistoryEvent[]) => Promise<void>): Promise<void>
} {
  const harness = useHarness()
  return {
    async withContext(fn) {
      const ctx = await harness.browser.newContext()
      const records: HistoryRecord[] = []
      const operations: HistoryEvent[] = []
      await ctx.exposeBinding('zarisRecord', (_s, r: HistoryRecord) => void records.push(r))
      await ctx.exposeBinding('zarisOp', (_s, e: HistoryEvent) => void operations.push(e))
      try {
        await fn(() => openHarnessTab(ctx, harness.url), records, operations)
      } finally {
        await ctx.close()
      }
    },
  }
}

/** The harness on a Chromium attached over CDP (./real-tabs: tabs that really freeze), started before the file's tests. */
export function useRealTabs(onStart?: (real: RealTabsBrowser) => Promise<void>): { readonly harness: Harness; readonly real: RealTabsBrowser } {
  let harness: Harness | undefined
  let real: RealTabsBrowser | undefined
  beforeAll(async () => {
    harness = await startHarness(async () => (real = await launchRealTabs({ args: UNTHROTTLED_ARGS })))
    await onStart?.(real!)
  }, 60_000)
  afterAll(async () => {
    await harness?.close()
  })
  return {
    get harness() {
      return harness!
    },
    get real() {
      return real!
    },
  }
}

/** The same, whose one context records into `records` and `operations` (shared by the file's tests). */
export function useRecordedRealTabs(): { readonly harness: Harness; readonly real: RealTabsBrowser; records: HistoryRecord[]; operations: HistoryEvent[] } {
  const records: HistoryRecord[] = []
  const operations: HistoryEvent[] = []
  const tabs = useRealTabs(async (real) => {
    await real.context.exposeBinding('zarisRecord', (_s, r: HistoryRecord) => void records.push(r))
    await real.context.exposeBinding('zarisOp', (_s, e: HistoryEvent) => void operations.push(e))
  })
  return {
    get harness() {
      return tabs.harness
    },
    get real() {
      return tabs.real
    },
    records,
    operations,
  }
}
