/**
 * A watch's metrics through zaris/otel, for any store (Node and a page):
 * `zaris.watch.lag` — how many events a watch had received that its reader
 * had not taken, as each came — and, where the test can break the store's
 * connection (`cut`), `zaris.watch.reconnects` — one for the break, with
 * two watches on the connection — and the watch going on after it.
 */
import type { Histogram } from '@opentelemetry/sdk-metrics'
import { expect } from 'vitest'
import type { Client } from 'zaris'
import { otel, type Telemetry } from 'zaris/otel'
import { sdk } from './scenario'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Runs the watch scenario on a client `make` connects; `cut` drops its connections to the store (none: the store has none). */
export async function watchScenario(make: (telemetry: Telemetry) => Promise<Client>, store: string, cut?: () => void | Promise<void>): Promise<void> {
  const otelSdk = sdk()
  const client = await make(otel({ meterProvider: otelSdk.meterProvider }))
  const lag = async () => (await otelSdk.points<Histogram>('zaris.watch.lag')).find((p) => p.attributes['zaris.store'] === store)?.value
  try {
    const watch = client.watch('w:', { prefix: true })
    await watch.ready
    // Five changes the reader does not read yet: each came with the ones before it still waiting.
    for (let i = 0; i < 5; i++) await client.put(`w:${i}`, i)
    const end = performance.now() + 10_000
    while (((await lag())?.count ?? 0) < 5 && performance.now() < end) await sleep(20)
    expect(await lag()).toMatchObject({ count: 5, sum: 0 + 1 + 2 + 3 + 4, max: 4 })
    for (let i = 0; i < 5; i++) expect((await watch.next()).value).toMatchObject({ key: `w:${i}` })
    // A reader that waits takes the next change at once: no backlog.
    const next = watch.next()
    await client.put('w:5', 5)
    expect((await next).value).toMatchObject({ key: 'w:5' })
    expect(await lag()).toMatchObject({ count: 6, sum: 10, max: 4, min: 0 })

    if (cut) {
      expect(await otelSdk.points('zaris.watch.reconnects')).toEqual([])
      // A second watch on the same connection: one break still counts once.
      const other = client.watch('x:', { prefix: true })
      await other.ready
      await cut()
      // The watch goes on after the break, and the change after it comes (the put retries through the break).
      const after = watch.next()
      await client.put('w:6', 6)
      expect((await after).value).toMatchObject({ key: 'w:6' })
      const reconnects = await otelSdk.points('zaris.watch.reconnects')
      expect(reconnects.map((p) => [p.attributes['zaris.store'], p.value])).toEqual([[store, 1]])
      other.close()
    }
    watch.close()
  } finally {
    await client.close()
    await otelSdk.shutdown()
  }
}
