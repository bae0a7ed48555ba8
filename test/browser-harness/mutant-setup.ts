/**
 * setupFiles of the browser project: switches on the mutant Stryker runs
 * (`__STRYKER_ACTIVE_MUTANT__` in the command's environment, handed over by
 * test/http/browser-setup.ts), as the harness page does for real tabs
 * (./server.ts), so that page code mutated in place is tried by the
 * `.browser.test.ts` files too (test/mutation/page-code.mjs).
 */
import { inject } from 'vitest'

const id = inject('activeMutant')
if (id) {
  const g = globalThis as { __stryker__?: { activeMutant?: string } }
  g.__stryker__ = { ...g.__stryker__, activeMutant: id }
}
