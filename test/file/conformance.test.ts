/**
 * The conformance suite, unchanged, on the `file://` store: every adapter a
 * connection of its own to one SQLite file (as each process of the machine
 * has), a namespace per test. The same suite's promises across real
 * processes are checked in test/faults/file.test.ts (histories of real
 * processes, kill -9 and SIGSTOP) and test/model/file.test.ts.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { fileAdapter } from 'zaris/file'
import { testAdapter } from '../conformance'
import { storeDir } from '../setup/store-dir'
import { raw } from './helpers'

const dir = storeDir('zaris-file-conformance-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// npm test: half the race rounds (the same checks; 20 adapters each read the log per commit, and the
// full 20 x 200 ran past its limit on a loaded machine); the whole with ZARIS_FAULT_SCALE set.
const path = join(dir, 'store.db')
// History is pruned a thousand revisions at a time past `historySize`: the most kept is historySize + 1000.
const HISTORY = 100
testAdapter('file', (namespace) => fileAdapter({ path, namespace, historySize: HISTORY }), {
  scale: process.env.ZARIS_FAULT_SCALE ? 1 : 0.5,
  historyKept: HISTORY + 1000,
  // The namespace row's floor, as an SQL UPDATE by hand would move it (the reservation with it: else the next commit raises it).
  setRevision(namespace, revision) {
    const db = raw(path)
    db.prepare('UPDATE zaris_file_spaces SET revision = ?, reserved = max(reserved, ?) WHERE ns = ?').run(revision, revision, namespace)
    db.close()
  },
  // A file in a folder that does not exist: opening fails UNAVAILABLE. No store process here to restart: the `seen`
  // rule across a crash is checked by test/faults/file.test.ts (processes killed and started again, tokens rising).
  unreachable: () => fileAdapter({ path: join(dir, 'no-such-folder', 'store.db'), namespace: 'nowhere' }),
})
