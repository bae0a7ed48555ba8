/**
 * globalSetup of the browser project: starts a zaris node as its own OS
 * process, with CORS open to the origin the test page is served from, and
 * hands its URL to the browser tests (`inject('zarisNodeUrl')`).
 */
import type { TestProject } from 'vitest/node'
import { startNode } from '../server/node-process'

declare module 'vitest' {
  export interface ProvidedContext {
    /** `http://127.0.0.1:PORT` of the node started for the browser tests. */
    zarisNodeUrl: string
    /** The mutant a Stryker run switched on (test/browser-harness/mutant-setup.ts); empty outside one. */
    activeMutant: string
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const served = project.browser?.vite.resolvedUrls?.local[0]
  const port = served ? new URL(served).port : String(project.config.browser?.api?.port ?? 63315)
  // The page may be opened as localhost or 127.0.0.1; allow exactly those two.
  const origins = [`http://localhost:${port}`, `http://127.0.0.1:${port}`]
  const node = await startNode(['--cors', ...origins])
  project.provide('zarisNodeUrl', node.url)
  project.provide('activeMutant', process.env.__STRYKER_ACTIVE_MUTANT__ ?? '')
  return async () => {
    await node.stop()
  }
}
