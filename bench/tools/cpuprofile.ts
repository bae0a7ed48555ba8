/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof` or Chromium's
 * Profiler domain): the functions with the most self time, and the most
 * inclusive time, so a bench finding can cite where the time goes.
 *
 *   npx tsx bench/tools/cpuprofile.ts FILE.cpuprofile [top=25] [filter]
 *
 * @module
 */
import { readFileSync } from 'node:fs'

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  hitCount?: number
  children?: number[]
}
interface Profile {
  nodes: Node[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
  endTime: number
}

export function summarise(profile: Profile, top = 25, filter?: string): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const selfUs = new Map<number, number>()
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const total = profile.endTime - profile.startTime
  const name = (n: Node) => {
    const url = n.callFrame.url.replace(/^.*\/(src|node_modules|bench)\//, '$1/')
    return `${n.callFrame.functionName || '(anonymous)'} ${url ? `${url}:${n.callFrame.lineNumber + 1}` : ''}`.trim()
  }
  const self = new Map<string, number>()
  const incl = new Map<string, number>()
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!
    self.set(name(n), (self.get(name(n)) ?? 0) + us)
    // Inclusive: each distinct function on the stack once.
    const seen = new Set<string>()
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = name(byId.get(cur)!)
      if (seen.has(k)) continue
      seen.add(k)
      incl.set(k, (incl.get(k) ?? 0) + us)
    }
  }
  const fmt = (m: Map<string, number>) =>
    [...m]
      .filter(([k]) => !filter || k.includes(filter))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`)
      .join('\n')
  return `total ${(total / 1000).toFixed(0)} ms\n-- self --\n${fmt(self)}\n-- inclusive --\n${fmt(incl)}`
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const [file, top, filter] = process.argv.slice(2)
  if (!file) throw new Error('usage: cpuprofile.ts FILE [top] [filter]')
  console.log(summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile, Number(top ?? 25), filter))
}
