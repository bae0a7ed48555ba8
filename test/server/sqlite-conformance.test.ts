/**
 * The conformance suite on the SQLite store's adapter itself (the node
 * serves it over HTTP, where test/http/conformance.test.ts runs the suite
 * again): one file, a namespace per test.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { Client } from 'zaris'
import { openSqlite } from '../../src/adapters/sqlite'
import { runConformance } from '../conformance'
import { storeDir } from '../setup/store-dir'

const dir = storeDir('zaris-sqlite-conformance-')
const db = await openSqlite(join(dir, 'conformance.db'))
afterAll(() => {
  db.close()
  rmSync(dir, { recursive: true, force: true })
})

let n = 0
runConformance('sqlite', async () => {
  const namespace = `conformance-${++n}`
  const opened: Client[] = []
  return {
    async connect(options) {
      const client = new Client(db.adapter(namespace), options)
      opened.push(client)
      return client
    },
    async adapter() {
      return db.adapter(namespace)
    },
    async close() {
      await Promise.all(opened.map((c) => c.close()))
    },
  }
})
