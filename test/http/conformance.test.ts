/**
 * The conformance suite, unchanged, against the HTTP adapter talking to a
 * zaris node that runs as its own OS process: once with the node in memory
 * mode and once with `--data` (SQLite).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe } from 'vitest'
import { Client, connect } from 'zaris'
import { httpAdapter } from 'zaris/http'
import { runConformance } from '../conformance'
import { startNode, type NodeProcess } from '../server/node-process'

function suite(name: string, args: () => string[]) {
  describe(name, () => {
    let node: NodeProcess
    beforeAll(async () => {
      node = await startNode(args())
    })
    afterAll(async () => {
      await node?.stop()
    })
    let n = 0
    runConformance(name, async () => {
      const namespace = `c${++n}-${Math.random().toString(36).slice(2)}`
      const opened: Array<{ close(): Promise<void> }> = []
      return {
        async connect(options) {
          const client: Client = await connect(`zaris://127.0.0.1:${node.port}/${namespace}`, { ...options })
          opened.push(client)
          return client
        },
        async adapter() {
          const adapter = httpAdapter({ endpoints: [node.url], namespace })
          opened.push(adapter)
          return adapter
        },
        async close() {
          await Promise.all(opened.map((c) => c.close()))
        },
      }
    }, { scale: 1 })
  })
}

suite('http (memory node)', () => [])

const dir = mkdtempSync(join(tmpdir(), 'zaris-conf-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
suite('http (--data node)', () => ['--data', join(dir, 'data.db')])
