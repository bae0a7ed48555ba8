/**
 * How soon a watcher in another process hears of a commit to a `file://`
 * store: this process commits `n` times, a child process watches and prints
 * when each event reached it (wall-clock ms with sub-ms resolution, shared by
 * the processes of the machine); prints p50, p90, p99 and max of the delay.
 * With `--poll` the watcher's fs.watch is not used (the poll alone), to show
 * what the notification buys.
 *
 *   npx tsx bench/tools/file-watch-latency.ts [n=200] [--poll]
 *
 * @module
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect } from 'zaris'
import { quantile } from '../lib/measure'

const args = process.argv.slice(2)
if (args[0] === 'watcher') {
  // The child: watch and print each event's arrival.
  const client = await connect(args[1]!)
  const events = client.watch('k:', { prefix: true })
  await events.ready
  console.log('ready')
  for await (const ev of events) console.log(`${ev.key} ${performance.timeOrigin + performance.now()}`)
} else {
  const n = Number(args.find((a) => /^\d+$/.test(a)) ?? 200)
  const dir = mkdtempSync(join(tmpdir(), 'zaris-watch-latency-'))
  const url = `file://${join(dir, 'store.db')}?ns=latency`
  const client = await connect(url)
  const env = { ...process.env, ...(args.includes('--poll') ? { ZARIS_FILE_NO_NOTIFY: '1' } : {}) }
  const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, 'watcher', url], { stdio: ['ignore', 'pipe', 'inherit'], env })
  const arrived = new Map<string, number>()
  let out = ''
  const ready = new Promise<void>((resolve) => {
    child.stdout!.on('data', (d) => {
      out += d
      const lines = out.split('\n')
      out = lines.pop()!
      for (const l of lines) {
        if (l === 'ready') resolve()
        const [key, at] = l.split(' ')
        if (at) arrived.set(key!, Number(at))
      }
    })
  })
  await ready
  const sent = new Map<string, number>()
  for (let i = 0; i < n; i++) {
    sent.set(`k:${i}`, performance.timeOrigin + performance.now())
    await client.put(`k:${i}`, i)
    await new Promise((r) => setTimeout(r, 5 + Math.random() * 10))
  }
  const deadline = performance.now() + 5_000
  while (arrived.size < n && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20))
  const delays = [...sent].filter(([k]) => arrived.has(k)).map(([k, at]) => arrived.get(k)! - at)
  const f = (q: number) => quantile(delays, q).toFixed(2)
  console.log(`${args.includes('--poll') ? 'poll only' : 'fs.watch + poll'}: ${delays.length}/${n} events; delay ms p50 ${f(0.5)} p90 ${f(0.9)} p99 ${f(0.99)} max ${f(1)}`)
  child.kill()
  await client.close()
  rmSync(dir, { recursive: true, force: true })
}
