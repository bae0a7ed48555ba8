/**
 * An instrumented copy of a zaris commit script, for the Redis breakdown
 * tools: every Redis call inside it is wrapped in a `TIME` pair, and a
 * commit that ends `ok` adds the per-command totals (and `#`, the count) to
 * the hash `profKey`. Throws when the script no longer has the ending it
 * hooks, so a tool never reports a profile that was not taken.
 */
const HOOK = "  return reply('ok', text)"

export function instrument(lua: string, profKey: string): string {
  if (!lua.includes(HOOK)) throw new Error(`redis-profile: the script no longer ends with ${JSON.stringify(HOOK)}`)
  const flush = `  for k, v in pairs(ZP) do redis.call('HINCRBY', '${profKey}', k, v) end\n  redis.call('HINCRBY', '${profKey}', '#', 1)\n`
  return (
    `local ZP = {}\nlocal function zcall(...)\n  local a = redis.call('TIME')\n  local r = redis.call(...)\n  local b = redis.call('TIME')\n` +
    `  local name = string.upper((...))\n  ZP[name] = (ZP[name] or 0) + (tonumber(b[1]) - tonumber(a[1])) * 1000000 + tonumber(b[2]) - tonumber(a[2])\n  return r\nend\n` +
    lua.replace(/redis\.call\(/g, 'zcall(').replace(HOOK, flush + HOOK)
  )
}

/** What a turn of one step does around its operations (e.g. reset and read Redis's command stats). */
export interface Turn {
  before?: (step: number) => Promise<unknown>
  after?: (step: number) => Promise<unknown>
}

/**
 * Runs `steps` operations `n` times each, in `rounds` rounds in which the
 * steps take turns (a different one first each round), so that load from
 * elsewhere falls on every step alike. Returns each step's latencies in µs.
 */
export async function takeTurns(steps: ReadonlyArray<() => Promise<unknown>>, n: number, rounds: number, turn: Turn = {}): Promise<number[][]> {
  const lat = steps.map(() => [] as number[])
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < steps.length; k++) {
      const j = (round + k) % steps.length
      await turn.before?.(j)
      for (let i = 0; i < n / rounds; i++) {
        const t = performance.now()
        await steps[j]!()
        lat[j]!.push((performance.now() - t) * 1000)
      }
      await turn.after?.(j)
    }
  }
  return lat
}
