/**
 * The kernel's notes and the process's wake-ups of the `file://` store's
 * tail, beyond the plain case (wake.test.ts): a write-ahead log deleted and
 * made again, the looks after a note coming to an end, several tails of a
 * process on one file, and a tail whose last watch ended just as it was
 * woken. Most read the log by hand (a Tail over a hand source) with real
 * `-wal` files, real fs.watch and real timers: a real SQLite writer cannot
 * be made to replace its log under a connection that stays open.
 */
import { execFile } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { appendFileSync, unlinkSync, writeFileSync, type FSWatcher } from 'node:fs'
import { resolve } from 'node:path'
import { describe, expect, test } from 'vitest'
import { Tail, wakeOthers, type TailSource } from '../../src/adapters/file/tail'
import { collect, newFile, open, until } from './helpers'

const HOUR = 3_600_000
const nothing = () => {}

/** A log kept by hand: `publish` commits an event (seen by the tail's next read); `looks` counts the tail's questions. */
function handLog() {
  const rows: Array<{ revision: number; seq: number; type: string; key: string; value: string; created: number; owner: null; ttl: null }> = []
  let seen = 0
  const log = {
    looks: 0,
    publish(key: string) {
      rows.push({ revision: rows.length + 1, seq: 0, type: 'put', key, value: '1', created: 1, owner: null, ttl: null })
    },
    source: {
      read: (revision: number) => ({ revision: rows.length, compacted: 0, events: rows.filter((r) => r.revision > revision) }),
      changed: () => {
        log.looks++
        const changed = seen !== rows.length
        seen = rows.length
        return changed
      },
    } satisfies TailSource,
  }
  return log
}

describe('the kernel\'s notes', () => {
  test('a log deleted and made again (as SQLite does when its last connection closes) is followed again from the next poll', async () => {
    const pollMs = 6_000
    const file = newFile()
    writeFileSync(`${file}-wal`, '')
    const log = handLog()
    const w = collect()
    const stop = new Tail(log.source, { file, notify: true, pollMs }, nothing, nothing).subscribe('', w.sink)
    try {
      unlinkSync(`${file}-wal`)
      writeFileSync(`${file}-wal`, '')
      // Past the looks the deletion's note asked for: a commit no note tells of, the poll finds (listening to the new log first).
      await new Promise((r) => setTimeout(r, 1_500))
      log.publish('by-poll')
      await until(() => w.events.length === 1, pollMs + 5_000)
      // Written to the new log: heard at once, each time (past the looks of the note before), not at the poll after.
      for (const key of ['noted', 'noted-again']) {
        await new Promise((r) => setTimeout(r, 1_000))
        log.publish(key)
        const at = performance.now()
        appendFileSync(`${file}-wal`, 'frames')
        await until(() => w.events.some((e) => e.key === key), pollMs + 5_000)
        expect(performance.now() - at, `${key}: before the next poll`).toBeLessThan(pollMs / 3)
      }
      expect(w.events.map((e) => e.key)).toEqual(['by-poll', 'noted', 'noted-again'])
    } finally {
      stop()
    }
  }, 40_000)

  test('the looks after a note come to an end: a log written to no more is not looked at again before the poll', async () => {
    const file = newFile()
    writeFileSync(`${file}-wal`, '')
    const log = handLog()
    const w = collect()
    const stop = new Tail(log.source, { file, notify: true, pollMs: HOUR }, nothing, nothing).subscribe('', w.sink)
    try {
      log.publish('k')
      appendFileSync(`${file}-wal`, 'frames')
      await until(() => w.events.length === 1, 2_000)
      // The last look is 1 + 4 + 16 + 64 + 256 ms after the note (later on a loaded machine).
      await new Promise((r) => setTimeout(r, 1_500))
      const looks = log.looks
      await new Promise((r) => setTimeout(r, 1_000))
      expect(log.looks).toBe(looks)
    } finally {
      stop()
    }
  })
  test('a watcher that fails (its error emitted by hand: the kernel\'s watch of a file cannot be made to fail for real) is dropped, and listened to again from the next poll', async () => {
    const pollMs = 3_000
    const file = newFile()
    writeFileSync(`${file}-wal`, '')
    const log = handLog()
    const w = collect()
    // The tail's real watcher, caught as the tail hears its errors.
    const watchers: FSWatcher[] = []
    const on = EventEmitter.prototype.on
    EventEmitter.prototype.on = function (this: EventEmitter, name: string | symbol, fn: (...args: unknown[]) => void) {
      if (this.constructor.name === 'FSWatcher' && name === 'error') watchers.push(this as FSWatcher)
      return on.call(this, name, fn)
    }
    let stop: () => void
    try {
      stop = new Tail(log.source, { file, notify: true, pollMs }, nothing, nothing).subscribe('', w.sink)
    } finally {
      EventEmitter.prototype.on = on
    }
    try {
      expect(watchers).toHaveLength(1)
      expect(() => watchers[0]!.emit('error', new Error('ENOSPC'))).not.toThrow()
      log.publish('by-poll')
      await until(() => w.events.length === 1, pollMs + 5_000)
      log.publish('noted')
      const at = performance.now()
      appendFileSync(`${file}-wal`, 'frames')
      await until(() => w.events.length === 2, pollMs + 5_000)
      expect(performance.now() - at, 'before the next poll').toBeLessThan(pollMs / 3)
    } finally {
      stop()
    }
  }, 30_000)

  test('an open watch keeps no process alive: one that has nothing else to do exits, its watch still open', async () => {
    const path = newFile()
    const code = `const { fileAdapter } = await import(${JSON.stringify(resolve(import.meta.dirname, '../../src/adapters/file/index.ts'))})
      const a = await fileAdapter({ path: ${JSON.stringify(path)}, namespace: 'test', notify: true })
      await a.watch('', { event: () => {}, error: () => {} })
      console.log('watching')`
    const out = await new Promise<string>((done, fail) =>
      execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { timeout: 15_000 }, (err, stdout, stderr) => (err ? fail(new Error(`${err.message} ${stderr}`)) : done(stdout))),
    )
    expect(out.trim()).toBe('watching')
  }, 20_000)
})

describe('the tails of a process on one file', () => {
  test('a commit wakes every other tail at once, also once one of them stopped', async () => {
    const path = newFile()
    // Told apart by their options, so each has a tail of its own.
    const [writer, b, c] = [await open({ path, notify: false, pollMs: HOUR }), await open({ path, notify: false, pollMs: HOUR - 1 }), await open({ path, notify: false, pollMs: HOUR - 2 })]
    const [wb, wc] = [collect(), collect()]
    await b.watch('', wb.sink)
    const stopC = await c.watch('', wc.sink)
    await writer.commit([], [{ type: 'set', key: 'k1', value: 1 }])
    await until(() => wb.events.length === 1 && wc.events.length === 1, 2_000)
    stopC()
    await writer.commit([], [{ type: 'set', key: 'k2', value: 1 }])
    await until(() => wb.events.length === 2, 2_000)
    expect(wb.events.map((e) => e.key)).toEqual(['k1', 'k2'])
    expect(wc.events.map((e) => e.key)).toEqual(['k1'])
  })

  test('a tail woken just as its last watch ended does not ask its source (an adapter that may be closing) anything', async () => {
    const file = newFile()
    const log = handLog()
    const tail = new Tail(log.source, { file, notify: false, pollMs: HOUR }, nothing, nothing)
    const writer = new Tail(handLog().source, { file, notify: false, pollMs: HOUR }, nothing, nothing)
    const stop = tail.subscribe('', collect().sink)
    const looks = log.looks
    wakeOthers(file, writer)
    stop()
    await new Promise((r) => setTimeout(r, 20))
    expect(log.looks).toBe(looks)
  })
})
