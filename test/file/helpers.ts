/**
 * Opening `file://` stores in a test: adapters on files of one temporary
 * folder (all closed after each test), and a raw better-sqlite3 connection
 * to look at (or damage) what they wrote.
 */
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, afterEach } from 'vitest'
import type { Adapter, WatchEvent } from 'zaris'
import { fileAdapter, type FileAdapterOptions } from 'zaris/file'
import { storeDir } from '../setup/store-dir'

const dir = storeDir('zaris-file-')
const opened: Array<{ close(): unknown }> = []
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close()
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let files = 0

/** A path for a new store file. */
export function newFile(): string {
  const folder = join(dir, `f${++files}`)
  mkdirSync(folder)
  return join(folder, 'store.db')
}

/** An adapter on `path` (a new file by default), closed after the test. */
export async function open(options: Partial<FileAdapterOptions> = {}): Promise<Adapter> {
  const adapter = await fileAdapter({ path: options.path ?? newFile(), namespace: options.namespace ?? 'test', ...options })
  opened.push(adapter)
  return adapter
}

/** A raw connection to `path`, closed after the test. */
export function raw(path: string): Database.Database {
  const db = new Database(path)
  db.pragma('busy_timeout = 5000')
  opened.push(db)
  return db
}

/** Events of a watch, as they come. */
export function collect(): { events: WatchEvent[]; sink: { event(e: WatchEvent): void; error(e: Error): void }; errors: Error[] } {
  const events: WatchEvent[] = []
  const errors: Error[] = []
  return { events, errors, sink: { event: (e) => void events.push(e), error: (e) => void errors.push(e) } }
}

/** Polls `check` every 5 ms until it holds (fails after `ms`). */
export async function until(check: () => boolean | Promise<boolean>, ms = 3_000): Promise<void> {
  const deadline = performance.now() + ms
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`not within ${ms} ms`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

/** The namespace's revision in SQL, on a row of `zaris_file_spaces`: its floor or its last event's, the larger (schema.ts). */
export const REVISION = `max(revision, coalesce((SELECT max(e.revision) FROM zaris_file_events e WHERE e.ns = zaris_file_spaces.ns), 0))`

/** A put of `key` written straight into the file by a connection of its own, as another process's commit would be. */
export function rawPut(path: string, key: string, ns = 'test'): void {
  const db = raw(path)
  db.transaction(() => {
    const { revision } = db.prepare(`SELECT ${REVISION} AS revision FROM zaris_file_spaces WHERE ns = ?`).get(ns) as { revision: number }
    db.prepare('UPDATE zaris_file_spaces SET revision = ?, reserved = max(reserved, ?) WHERE ns = ?').run(revision + 1, revision + 1, ns)
    db.prepare(`INSERT INTO zaris_file_events (ns, revision, seq, type, key, value, created) VALUES (?, ?, 0, 'put', ?, '1', ?)`).run(ns, revision + 1, key, revision + 1)
  }).immediate()
}
