/**
 * Recording a history from client processes: each process appends JSON
 * lines to its own file with a synchronous write per record, so whatever it
 * recorded before a `kill -9` is on disk. Two kinds of lines share a file:
 * - the operations its client sent to the store, in the Jepsen shape
 *   (`{ process, type, f, value, time }`, test/lincheck/history.ts), written
 *   by a recording adapter (test/lincheck/recorder.ts): the checker's input;
 * - observations of the fault suite (`{ type: 'loss' | 'pause' | ... }`,
 *   test/faults/checker.ts) that no store operation shows: a hold's signal,
 *   a pause, an unhandled rejection, what a watcher got.
 * A failing check writes both as one Jepsen-shaped history (observations as
 * standalone `info` events: `saveHistory` in checker.ts), the file `npm run
 * check:history` reads.
 * Also catches unhandled rejections and uncaught exceptions and records
 * them, so the checker fails on them.
 */
import { existsSync, openSync, readFileSync, writeSync } from 'node:fs'
import type { HistoryEvent } from '../lincheck/history'
import { streamSink, type HistorySink } from '../lincheck/recorder'
import { sharedNow, type HistoryRecord } from './checker'

/** Appends one observation. */
export type Record_ = (record: HistoryRecord) => void

/** Appends lines to `path`: observations through `record`, operations through `sink` (processes numbered from `firstProcess`). */
export function fileRecorder(path: string, firstProcess = 0): Record_ & { sink: HistorySink } {
  const fd = openSync(path, 'a')
  const write = (line: object) => void writeSync(fd, JSON.stringify(line) + '\n')
  const record = ((r: HistoryRecord) => write(r)) as Record_ & { sink: HistorySink }
  record.sink = streamSink(write, sharedNow, firstProcess)
  return record
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

const isOperation = (line: object): line is HistoryEvent => 'process' in line

function readLines(paths: string[]): object[] {
  const out: object[] = []
  for (const path of paths) {
    if (!existsSync(path)) continue
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      if (line === '') continue
      try {
        out.push(JSON.parse(line) as object)
      } catch {
        // The last line of a process killed mid-write.
      }
    }
  }
  return out
}

/** The observations in the given files; a line cut short by a kill is skipped. */
export function readHistory(paths: string[]): HistoryRecord[] {
  return readLines(paths).filter((l): l is HistoryRecord => !isOperation(l))
}

/** The store operations in the given files. */
export function readOperations(paths: string[]): HistoryEvent[] {
  return readLines(paths).filter(isOperation)
}
