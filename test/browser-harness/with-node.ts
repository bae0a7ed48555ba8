/**
 * A test file's harness (Vite + Chromium) and a real `zaris serve` process
 * that lets the harness's pages in (`--cors`), started before its tests and
 * stopped after them.
 */
import { afterAll, beforeAll } from 'vitest'
import { startNode, type NodeProcess } from '../server/node-process'
import { startHarness, type Harness } from './server'

/** Registers the file's `beforeAll`/`afterAll`; read `harness` and `node` inside tests. */
export function useHarnessWithNode(): { readonly harness: Harness; readonly node: NodeProcess } {
  let harness: Harness | undefined
  let node: NodeProcess | undefined
  beforeAll(async () => {
    harness = await startHarness()
    node = await startNode(['--cors', new URL(harness.url).origin])
  }, 60_000)
  afterAll(async () => {
    await node?.stop()
    await harness?.close()
  })
  return {
    get harness() {
      return harness!
    },
    get node() {
      return node!
    },
  }
}
