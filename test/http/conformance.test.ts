/**
 * The conformance suite, unchanged, against the HTTP adapter talking to a
 * zaris node that runs as its own OS process: once with the node in memory
 * mode and once with `--data` (SQLite).
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe } from 'vitest'
import { httpAdapter } from 'zaris/http'
import { testAdapter } from '../conformance'
import { startNode, type NodeProcess } from '../server/node-process'
import { storeDir } from '../setup/store-dir'

function suite(name: string, args: () => string[]) {
  describe(name, () => {
    let node: NodeProcess
    beforeAll(async () => {
      node = await startNode(args())
    })
    afterAll(async () => {
      await node?.stop()
    })
    testAdapter(name, (namespace) => httpAdapter({ endpoints: [node.url], namespace }))
  })
}

suite('http (memory node)', () => [])

const dir = storeDir('zaris-conf-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))
suite('http (--data node)', () => ['--data', join(dir, 'data.db')])
