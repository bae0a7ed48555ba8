/**
 * Operations in words, for reports: a commit of a known shape is named as
 * the lock operation it is (grant, steal, renewal, release, fenced write).
 *
 * @module
 */
import { FAMILY_OPS, describeFamily } from './family'
import { canonical, type CheckJson, type EntryJson, type OpJson, type Operation } from './history'

const ms = (t: number) => (Number.isFinite(t) ? `${+t.toFixed(3)}` : '∞')

/** `[call, return] process (client): what it did -> what came back`. */
export function describeOperation(op: Operation): string {
  const who = `${op.client ?? `process ${op.process}`}`
  if (FAMILY_OPS.has(op.f)) {
    const d = describeFamily(op)
    return `#${op.events[0]?.index ?? op.id} [${ms(op.call)}, ${ms(op.ret)}] ${who}: ${d.what} -> ${d.outcome}`
  }
  return `#${op.events[0]?.index ?? op.id} [${ms(op.call)}, ${ms(op.ret)}] ${who}: ${what(op)} -> ${outcome(op)}`
}

function what(op: Operation): string {
  if (op.f === 'get') return `get ${op.input.key}`
  if (op.f !== 'commit') return `${op.f} ${op.input === undefined ? '' : canonical(op.input)}`
  const checks = op.input.checks as CheckJson[]
  const ops = op.input.ops as OpJson[]
  const [c] = checks
  const [o] = ops
  if (checks.length === 1 && ops.length === 1 && o && c) {
    if (o.type === 'set' && o.owner !== undefined && o.key === c.key) {
      if ('revision' in c && c.revision === null) return `grant ${o.key} to ${o.owner} (TTL ${o.ttl ?? '-'})`
      if ('revision' in c && o.fresh) return `steal ${o.key} for ${o.owner} (TTL ${o.ttl ?? '-'}) from revision ${c.revision}`
      if ('created' in c) return `renew ${o.key} token ${c.created} for ${o.owner} (TTL ${o.ttl ?? '-'})`
    }
    if (o.type === 'delete' && o.key === c.key && 'created' in c) return `release ${o.key} token ${c.created}`
    if ('created' in c && o.key !== c.key) return `fenced ${op1(o)} by ${c.key} token ${c.created}`
  }
  const cs = checks.map((c) => ('revision' in c ? `${c.key}@rev ${c.revision ?? 'absent'}` : `${c.key}@created ${c.created ?? 'absent'}`))
  return `${ops.map(op1).join(', ') || 'nothing'}${cs.length ? ` if ${cs.join(' and ')}` : ''}`
}

function op1(o: OpJson): string {
  if (o.type === 'delete') return `delete ${o.key}`
  if (o.type === 'add') return `add ${o.delta} to ${o.key}`
  const extra = [o.owner !== undefined ? `owner ${o.owner}` : '', o.ttl !== undefined ? `TTL ${o.ttl}` : '', o.fresh ? 'fresh' : ''].filter(Boolean).join(', ')
  return `put ${o.key}=${canonical(o.value)}${extra ? ` (${extra})` : ''}`
}

function outcome(op: Operation): string {
  if (op.status === 'unknown') return 'unknown outcome'
  if (op.f === 'get') return op.output?.entry ? entry(op.output.entry) : 'absent'
  if (op.f !== 'commit') return op.status
  if (op.status === 'fail') {
    const failed = op.output?.failed as Array<{ key: string; entry?: EntryJson | null }> | undefined
    if (!failed) return `refused: ${canonical(op.output?.error ?? op.output)}`
    return `failed (${failed.map((f) => `${f.key} is ${f.entry ? entry(f.entry) : 'absent'}`).join('; ')})`
  }
  const written = (op.output.entries as EntryJson[] | undefined)?.map((e) => `${e.key} created ${e.created}`).join(', ')
  return `ok at revision ${op.output.revision}${written ? ` (${written})` : ''}${op.output.deleted?.length ? ` deleted ${op.output.deleted.join(', ')}` : ''}`
}

function entry(e: EntryJson): string {
  return `${canonical(e.value)} @rev ${e.revision} created ${e.created}${e.owner !== undefined ? ` owner ${e.owner}` : ''}${e.ttl !== undefined ? ` ttl ${e.ttl}` : ''}`
}
