/**
 * The counter operations behind `client.counters` (counters.ts checks the
 * arguments). Small enough to come with the client: a chunk of their own
 * would cost a request, and split the errors off the entry (taking.ts).
 *
 * @module
 */
import type { Context } from './context'
import { InternalError, InvalidArgumentError } from './contract/errors'

/** Adds `delta` to the counter `key` in one commit of the `add` op, and resolves the new value. */
export async function increment(ctx: Context, key: string, delta: number): Promise<number> {
  const r = await ctx.adapter.commit([], [{ type: 'add', key, delta }])
  // No checks, so no failure: a store that answers otherwise breaks the contract.
  if (!r.ok) throw new InternalError(`counter ${JSON.stringify(key)}: the store refused an add with no checks`)
  return r.entries[0]!.value as number
}

/** The counter's current value (0 when it does not exist). */
export async function read(ctx: Context, key: string): Promise<number> {
  const entry = await ctx.adapter.get(key)
  if (entry === undefined) return 0
  if (typeof entry.value !== 'number') throw new InvalidArgumentError(`key ${JSON.stringify(key)} holds a ${typeof entry.value}, not a counter`)
  return entry.value
}
