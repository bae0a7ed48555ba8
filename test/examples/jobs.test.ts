/**
 * The job examples (examples/jobs: node-cron, croner, @nestjs/schedule), run
 * as users run them — tsx, the scheduler's own timers — three instances of
 * each against one zaris node (a real process), their wall clocks skewed by
 * -1.5, 0 and +1.5 s (test/faults/shift-clock.ts). Every slot any of them
 * fired is run by exactly one of them, the others say they skipped it, each
 * instance fires each slot once (its slots one second apart, none missed),
 * and every instance exits by itself.
 */
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { startNode, type NodeProcess } from '../server/node-process'

const root = resolve(import.meta.dirname, '../..')
const TICKS = 4
const OFFSETS = [-1_500, 0, 1_500]

let node: NodeProcess
beforeAll(async () => {
  node = await startNode()
})
afterAll(async () => {
  await node?.stop()
})

/**
 * Runs one instance of `example` to its end: its exit code, what it printed (`out`, its lines) and
 * everything with its stderr too (`all`: a scheduler's warnings, such as the cron package's "Missed execution
 * deadline" under @nestjs/schedule on a busy machine, are not the example's lines).
 */
function instance(example: string, url: string, id: string, offsetMs: number, env: Record<string, string>): Promise<{ id: string; code: number | null; out: string; all: string }> {
  return new Promise((done, fail) => {
    const args = ['--import', 'tsx', '--import', './test/faults/shift-clock.ts', example, url, '--id', id, '--ticks', String(TICKS)]
    const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env, ZARIS_CLOCK_OFFSET_MS: String(offsetMs) }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let all = ''
    child.stdout.on('data', (d) => ((out += d), (all += d)))
    child.stderr.on('data', (d) => (all += d))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      fail(new Error(`${example} (${id}) did not exit within 60 s:\n${all}`))
    }, 60_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      done({ id, code, out, all })
    })
  })
}

const LINE = /^(\S+) (ran with token \d+|skipped: (?:done|running|failed) by (\S+))$/

test.concurrent.each([
  ['node-cron', 'examples/jobs/node-cron.ts', {}],
  ['croner', 'examples/jobs/croner.ts', {}],
  ['@nestjs/schedule', 'examples/jobs/nestjs/main.ts', { TSX_TSCONFIG_PATH: 'examples/jobs/nestjs/tsconfig.json' }],
] as const)('%s: three instances with clocks 1.5 s apart run each slot once between them', async (name, example, env) => {
  const url = `zaris://127.0.0.1:${node.port}/${name.replace(/\W/g, '')}`
  const runs = await Promise.all(OFFSETS.map((offset, i) => instance(example, url, `i${i}`, offset, env)))
  const bySlot = new Map<string, Array<{ id: string; line: string }>>()
  for (const run of runs) {
    expect(run.code, `${run.id}:\n${run.all}`).toBe(0)
    const lines = run.out.trim().split('\n')
    expect(lines, `${run.id}:\n${run.all}`).toHaveLength(TICKS)
    const slots = lines.map((line) => {
      const m = LINE.exec(line)
      expect(m, `${run.id}: ${line}`).not.toBeNull()
      bySlot.set(m![1]!, [...(bySlot.get(m![1]!) ?? []), { id: run.id, line: m![2]! }])
      return Date.parse(m![1]!)
    }).sort((a, b) => a - b) // printed as the calls end, which may be out of order
    // One slot per tick, a second apart: the slot is the tick's scheduled time, none fired twice or left out.
    expect(slots.map((s, k) => s - slots[0]! - k * 1_000), `${run.id}:\n${run.out}`).toEqual(slots.map(() => 0))
  }
  for (const [slot, lines] of bySlot) {
    const ran = lines.filter((l) => l.line.startsWith('ran'))
    expect(ran, `${slot}: ${JSON.stringify(lines)}`).toHaveLength(1)
    for (const l of lines.filter((x) => x !== ran[0])) expect(l.line, slot).toMatch(new RegExp(`^skipped: (done|running) by ${ran[0]!.id}$`))
  }
  // The clocks' skew shows: some slot fired by more than one instance (started within a few seconds of each other).
  expect([...bySlot.values()].some((lines) => lines.length > 1)).toBe(true)
}, 90_000)
