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

const dir = storeDir('zaris-file-conformance-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

// npm test: half the race rounds (the same checks; 20 adapters each read the log per commit, and the
// full 20 x 200 ran past its limit on a loaded machine); the whole with ZARIS_FAULT_SCALE set.
testAdapter('file', (namespace) => fileAdapter({ path: join(dir, 'store.db'), namespace }), { scale: process.env.ZARIS_FAULT_SCALE ? 1 : 0.5 })
