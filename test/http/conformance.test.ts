/**
 * The conformance suite, unchanged, against the HTTP adapter talking to a
 * zaris node that runs as its own OS process: once with the node in memory
 * mode and once with `--data` (SQLite). The node runs on a fixed port, so
 * the suite's restart (kill -9, then start again) comes back at the same
 * address: the memory node comes back empty (the `seen` rule), the `--data`
 * node with its state.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe } from 'vitest'
import { httpAdapter } from 'zaris/http'
import { testAdapter } from '../conformance'
import { freePort, startNode, type NodeProcess } from '../server/node-process'
import { storeDir } from '../setup/store-dir'

function suite(name: string, args: () => string[]) {
  describe(name, () => {
    let node: NodeProcess
    let port: number
    beforeAll(async () => {
      port = await freePort()
      node = await startNode(['--port', String(port), ...args()])
    })
    afterAll(async () => {
      await node?.stop()
    })
    testAdapter(name, (namespace) => httpAdapter({ endpoints: [node.url], namespace }), {
      async restart() {
        await node.kill9()
        node = await startNode(['--port', String(port), ...args()])
      },
      // A port nobody listens on: the adapter gives up after its retries, a watch after watchReconnectLimit (both cut short here).
      unreachable: async () => httpAdapter({ endpoints: [`http://127.0.0.1:${await freePort()}`], namespace: 'nowhere', retries: 1, watchReconnectLimit: 500 }),
    })
  })
}

suite('http (memory node)', () => [])

const dir = storeDir('zaris-conf-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))
suite('http (--data node)', () => ['--data', join(dir, 'data.db')])
