/** The Web Locks API cases (cases.ts) and the checked history (history.ts) against zaris/web-locks over a zaris node with --data (SQLite), running as its own process. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { startNode, type NodeProcess } from '../server/node-process'
import { webLocksCases } from './cases'
import { zarisContexts } from './fixture'
import { historyCases } from './history'

let node: NodeProcess
const dir = mkdtempSync(join(tmpdir(), 'zaris-web-locks-'))
beforeAll(async () => {
  node = await startNode(['--data', join(dir, 'zaris.db')])
})
afterAll(async () => {
  await node?.stop()
  rmSync(dir, { recursive: true, force: true })
})

webLocksCases('zaris/web-locks over a node with --data', zarisContexts(() => `zaris://127.0.0.1:${node.port}/web-locks`))
historyCases('a node with --data', () => `zaris://127.0.0.1:${node.port}/web-locks-history`)
