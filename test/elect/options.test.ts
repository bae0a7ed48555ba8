/**
 * zaris/elect's constructor: where it can run, and what it says of bad
 * arguments. In Node (no IndexedDB) it refuses plainly; in a page
 * (Chromium, the harness) an election defaults to the `default` namespace
 * and names the argument it refuses.
 */
import { expect, it } from 'vitest'
import { election } from 'zaris/elect'
import { useRecordedTabs } from '../browser-harness/recorded-tabs'

const { withContext } = useRecordedTabs()

it('outside a page (Node: BroadcastChannel, no IndexedDB) it refuses with UNSUPPORTED, naming what it needs', () => {
  expect(globalThis.BroadcastChannel).toBeDefined()
  expect(() => election('leader')).toThrow(expect.objectContaining({ code: 'UNSUPPORTED', message: expect.stringMatching(/IndexedDB and BroadcastChannel/) }))
})

it('in a page: the namespace defaults to "default"; a bad name or namespace is refused naming which', async () => {
  await withContext(async (open) => {
    const tab = await open()
    const r = await tab.evaluate(async () => {
      const refusal = (f: () => unknown) => {
        try {
          f()
          return 'accepted'
        } catch (err) {
          return `${(err as { code?: string }).code}: ${(err as Error).message}`
        }
      }
      const e = window.zarisElect.election('leader:options')
      const namespace = e.namespace
      await e.close()
      return {
        namespace,
        name: refusal(() => window.zarisElect.election('')),
        ns: refusal(() => window.zarisElect.election('leader:options', { namespace: '' })),
      }
    })
    expect(r.namespace).toBe('default')
    expect(r.name).toMatch(/^INVALID_ARGUMENT: name /)
    expect(r.ns).toMatch(/^INVALID_ARGUMENT: namespace /)
  })
})
