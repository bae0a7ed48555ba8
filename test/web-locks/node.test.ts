/** The Web Locks API cases (cases.ts) and the checked history (history.ts) against zaris/web-locks over a zaris node running as its own process. */
import { afterAll, beforeAll } from 'vitest'
import { startNode, type NodeProcess } from '../server/node-process'
import { webLocksCases } from './cases'
import { zarisContexts } from './fixture'
import { historyCases } from './history'

let node: NodeProcess
beforeAll(async () => {
  node = await startNode()
})
afterAll(async () => {
  await node?.stop()
})

webLocksCases('zaris/web-locks over a node', zarisContexts(() => `zaris://127.0.0.1:${node.port}/web-locks`))
historyCases('a node', () => `zaris://127.0.0.1:${node.port}/web-locks-history`)
