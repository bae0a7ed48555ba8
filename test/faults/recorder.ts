/**
 * Recording a history from client processes: each process appends JSON
 * lines to its own file with a synchronous write per record, so whatever it
 * recorded before a `kill -9` is on disk. Also catches unhandled rejections
 * and uncaught exceptions and records them, so the checker fails on them.
 */
import { existsSync, openSync, readFileSync, writeSync } from 'node:fs'
import { sharedNow, type HistoryRecord } from './checker'

/** Appends one record. */
export type Record_ = (record: HistoryRecord) => void

/** A recorder that appends to `path`. */
export function fileRecorder(path: string): Record_ {
  const fd = openSync(path, 'a')
  return (record) => {
    writeSync(fd, JSON.stringify(record) + '\n')
  }
}

/** Records unhandled rejections (and goes on) and uncaught exceptions (and exits 70) of this process as `unhandled`. */
export function recordUnhandled(record: Record_, client: string): void {
  const log = (kind: string) => (err: unknown) => {
    record({ type: 'unhandled', client, error: `${kind}: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`, at: sharedNow() })
  }
  process.on('unhandledRejection', log('unhandled rejection'))
  process.on('uncaughtException', (err) => {
    log('uncaught exception')(err)
    console.error(err)
    process.exit(70)
  })
}

/** Reads the records of the given files; a line cut short by a kill is skipped. */
export function readHistory(paths: string[]): HistoryRecord[] {
  const out: HistoryRecord[] = []
  for (const path of paths) {
    if (!existsSync(path)) continue
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      if (line === '') continue
      try {
        out.push(JSON.parse(line) as HistoryRecord)
      } catch {
        // The last line of a process killed mid-write.
      }
    }
  }
  return out
}
