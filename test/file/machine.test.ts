/**
 * What the processes of one machine share: the monotonic clock, and the
 * kernel's word on which process is alive — judged by pid and start time,
 * so a pid given to another process is not taken for the one that
 * registered. Real processes, started and killed here.
 */
import { spawn } from 'node:child_process'
import { readFileSync, readlinkSync } from 'node:fs'
import { expect, test } from 'vitest'
import { bootId, machineClock, parseStat, processAlive, thisProcess } from '../../src/adapters/file/machine'

const linux = process.platform === 'linux'

test('the machine clock is monotonic, in ms, and runs at the rate of performance.now()', async () => {
  const [a, p] = [machineClock.now(), performance.now()]
  await new Promise((r) => setTimeout(r, 50))
  const [b, q] = [machineClock.now(), performance.now()]
  expect(b).toBeGreaterThan(a)
  expect(Math.abs(b - a - (q - p))).toBeLessThan(5)
  // Sub-millisecond readings: not whole numbers every time.
  expect(Array.from({ length: 20 }, () => machineClock.now()).some((t) => !Number.isInteger(t))).toBe(true)
})

test('the machine clock is the same in another process', async () => {
  // Read before the spawn: a parent put off the CPU right after it (a loaded CI machine) read its clock after the child's.
  const before = machineClock.now()
  const child = spawn(process.execPath, ['-e', 'console.log(Number(process.hrtime.bigint() / 1000n) / 1000)'], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout!.on('data', (d) => (out += d))
  await new Promise((r) => child.once('exit', r))
  const after = machineClock.now()
  expect(Number(out), out).toBeGreaterThan(before)
  expect(Number(out), out).toBeLessThan(after)
})

test('parseStat reads state and start time after the command name, whatever it holds', () => {
  const fields = (comm: string) => `4242 (${comm}) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100 18446744073709551615`
  expect(parseStat(fields('node'))).toEqual({ state: 'S', start: '987654' })
  expect(parseStat(fields('a) b) (c'))).toEqual({ state: 'S', start: '987654' })
  expect(parseStat(fields('x').replace(' S ', ' Z '))).toEqual({ state: 'Z', start: '987654' })
  expect(parseStat('4242 (cut) S 1 2 3')).toBeUndefined()
})

test.runIf(linux)('this process: its pid, its start time from /proc, its boot and pid namespace', () => {
  const me = thisProcess()
  expect(me.pid).toBe(process.pid)
  expect(me.start).toBe(parseStat(readFileSync('/proc/self/stat', 'utf8'))!.start)
  expect(bootId()).toBe(readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim())
  expect(me.host).toBe(`${bootId()}/${readlinkSync('/proc/self/ns/pid')}`)
  expect(thisProcess()).toBe(me)
})

test('a process is alive while it runs, dead once it exited; a reused pid, another start time, is not it', async () => {
  const here = thisProcess()
  const child = spawn('sleep', ['30'], { stdio: 'ignore' })
  await new Promise((r) => child.once('spawn', r))
  const start = linux ? parseStat(readFileSync(`/proc/${child.pid}/stat`, 'utf8'))!.start : ''
  const it = { pid: child.pid!, start, host: here.host }
  expect(processAlive(it)).toBe(true)
  if (linux) expect(processAlive({ ...it, start: String(Number(start) - 1) })).toBe(false)
  // Stopped is alive.
  child.kill('SIGSTOP')
  expect(processAlive(it)).toBe(true)
  child.kill('SIGKILL')
  await new Promise((r) => child.once('exit', r))
  expect(processAlive(it)).toBe(false)
})

test('this process is alive, a registration of an earlier process with its pid is not; a pid that exists nowhere is dead', () => {
  const here = thisProcess()
  expect(processAlive(here)).toBe(true)
  if (linux) expect(processAlive({ ...here, start: '1' })).toBe(false)
  expect(processAlive({ pid: 2 ** 22 + 12345, start: '5', host: here.host })).toBe(false)
})

test('a process of another host (another boot or pid namespace) is never judged: alive', () => {
  expect(processAlive({ pid: 2 ** 22 + 12345, start: '5', host: 'another-boot/pid:[1]' })).toBe(true)
})

test.runIf(linux)('where /proc does not show the process (hidepid), the kernel is asked: an existing pid of another user is alive', () => {
  // pid 1 exists; a here without a start time stands for a system without /proc.
  const noProc = { ...thisProcess(), start: '' }
  expect(processAlive({ pid: 1, start: '', host: noProc.host }, noProc)).toBe(true)
  expect(processAlive({ pid: 2 ** 22 + 12345, start: '', host: noProc.host }, noProc)).toBe(false)
})
