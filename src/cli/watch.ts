/**
 * `zaris watch [PREFIX]`: prints each change as it comes, until Ctrl-C
 * (SIGINT) or SIGTERM, which end it with exit code 0. A watch the store ends
 * (the node went away for longer than the client reconnects, history
 * compacted past `--from`) exits 1 with the reason.
 *
 * @module
 */
import type { Client } from '../core/client'
import { integerArg, type Parsed } from './args'
import type { Io, Run } from './run'
import { eventLine, showKey } from './format'

/**
 * Checks the arguments of `watch` and resolves what to run.
 *
 * @example
 * await prepareWatch(parsed)(client, io)
 */
export function prepareWatch(p: Parsed): Run {
  const prefix = p.args[0] ?? ''
  const from = p.options.from === undefined ? undefined : integerArg(String(p.options.from), '--from', { min: 0, max: Number.MAX_SAFE_INTEGER })
  return (client, io) => watch(client, io, prefix, from, p.json)
}

async function watch(client: Client, io: Io, prefix: string, from: number | undefined, asJson: boolean): Promise<0 | 1> {
  const stop = new AbortController()
  const onSignal = () => stop.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    const events = client.watch(prefix, { prefix: true, signal: stop.signal, ...(from === undefined ? {} : { fromRevision: from }) })
    await events.ready
    io.err(`watching ${prefix === '' ? 'every key' : showKey(prefix)} (Ctrl-C to stop)`)
    for await (const ev of events) io.out(asJson ? JSON.stringify(ev) : eventLine(ev))
    return 0
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}
