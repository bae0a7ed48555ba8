/**
 * When the write-ahead log reaches the file (checkpoint.ts): not in the
 * commit that answers a caller, but on a timer soon after; and never a log
 * past its bound, however fast the commits come.
 */
import { createHash } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { expect, test } from 'vitest'
import { CHECKPOINT_MS, CHECKPOINT_PAGES } from '../../src/adapters/file/checkpoint'
import { newFile, open, until } from './helpers'

const digest = (path: string) => createHash('sha1').update(readFileSync(path)).digest('hex')

test('a commit is answered from the log alone; the background checkpoint copies it into the file within CHECKPOINT_MS', async () => {
  const path = newFile()
  const a = await open({ path })
  const opened = digest(path)
  await a.commit([], [{ type: 'set', key: 'k', value: 'before' }])
  // The first commit's timer copies what the opening and that commit wrote.
  await until(() => digest(path) !== opened, CHECKPOINT_MS + 5_000)
  const before = digest(path)
  const at = performance.now()
  const r = await a.commit([], [{ type: 'set', key: 'k', value: 'x'.repeat(500) }])
  expect(r.ok).toBe(true)
  expect(digest(path), 'the commit itself did not checkpoint').toBe(before)
  await until(() => digest(path) !== before, CHECKPOINT_MS + 3_000)
  expect(performance.now() - at, 'by the timer, not at once').toBeGreaterThanOrEqual(CHECKPOINT_MS - 50)
})

test(`the log stays within ${CHECKPOINT_PAGES} pages while commits come faster than the timer`, async () => {
  const path = newFile()
  const a = await open({ path })
  const value = 'v'.repeat(3000)
  // ~4 pages a commit (the entry, the 3 KB event, the namespace's row): past the bound within the loop, before any timer runs.
  for (let i = 0; i < 1500; i++) await a.commit([], [{ type: 'set', key: `k${i % 50}`, value }])
  const bound = (CHECKPOINT_PAGES + 50) * (4096 + 24) + 32
  expect(statSync(`${path}-wal`).size).toBeLessThanOrEqual(bound)
  // The bound is ours, not SQLite's default of 1 000 pages (the log grew past it before a commit checkpointed).
  expect(statSync(`${path}-wal`).size).toBeGreaterThan(1_100 * 4096)
  expect(statSync(path).size, 'checkpointed into the file by the commits themselves').toBeGreaterThan(1_000_000)
  expect((await a.get('k7'))?.value).toBe(value)
})

test('a write just before close leaves no checkpoint to run on the closed connection', async () => {
  const a = await open()
  await a.commit([], [{ type: 'set', key: 'k', value: 1 }])
  await a.close()
  const errors: unknown[] = []
  const onError = (e: unknown) => errors.push(e)
  process.on('uncaughtException', onError)
  await new Promise((r) => setTimeout(r, CHECKPOINT_MS + 200))
  process.off('uncaughtException', onError)
  expect(errors).toEqual([])
})
