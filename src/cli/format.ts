/**
 * How the inspect commands print for people: aligned tables, values as JSON
 * (so `"5"` and `5` differ), times left as seconds. `--json` output does not
 * come through here.
 *
 * @module
 */
import type { Entry, WatchEvent } from '../core/contract/adapter'

/** Longest value shown in a table cell; `--json` shows it whole. */
const MAX_CELL = 60

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(header), ...rows.map(line)].join('\n')
}

/** A value as JSON, cut to fit a cell. */
export function showValue(value: unknown): string {
  const text = JSON.stringify(value) ?? 'undefined'
  return text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 1)}…` : text
}

/** Milliseconds left as `29.9s` (or `-` when the entry does not expire). */
export function showTtl(ms: number | undefined): string {
  if (ms === undefined) return '-'
  return ms >= 10_000 ? `${Math.round(ms / 1000)}s` : `${(ms / 1000).toFixed(1)}s`
}

/** A key as shown: JSON-quoted only when it holds characters a terminal would hide or misplace. */
export function showKey(key: string): string {
  return /^[\x21-\x7e\u00a0-\uffff]+$/.test(key) && !/[\u2028\u2029]/.test(key) ? key : JSON.stringify(key)
}

/** The columns of `ls` and `get`. */
export const ENTRY_HEADER = ['KEY', 'VALUE', 'REVISION', 'CREATED', 'OWNER', 'TTL']

/** One entry as a row of {@link ENTRY_HEADER}. */
export function entryRow(e: Entry): string[] {
  return [showKey(e.key), showValue(e.value), String(e.revision), String(e.created), e.owner ?? '-', showTtl(e.ttl)]
}

/** One watch event as a line: revision, type, key, then what a put wrote. */
export function eventLine(ev: WatchEvent): string {
  const parts = [String(ev.revision), ev.type.padEnd(6), showKey(ev.key)]
  if (ev.type === 'put') {
    parts.push(showValue(ev.value))
    if (ev.owner !== undefined) parts.push(`owner=${ev.owner}`)
    if (ev.created !== undefined && ev.created !== ev.revision) parts.push(`created=${ev.created}`)
    if (ev.ttl !== undefined) parts.push(`ttl=${ev.ttl}ms`)
  }
  return parts.join('  ')
}
