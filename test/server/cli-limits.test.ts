/**
 * The `zaris serve` flags that bound a node under load: parsed with their
 * units, checked, and refused with a message naming the flag; and a node
 * started with them reports its budget and what it holds in /metrics.
 */
import { afterAll, expect, test } from 'vitest'
import { parseServeArgs, UsageError } from '../../src/cli/zaris'
import { startNode, type NodeProcess } from './node-process'

test('each limit flag parses, with KiB/MiB/GiB sizes', () => {
  const args = parseServeArgs(
    [
      '--max-memory', '512MiB', '--max-store-bytes', '100MiB', '--max-history-bytes=16MiB', '--max-output-bytes', '1GiB',
      '--max-input-bytes', '65536', '--output-limit', '8MiB,2MiB,5', '--send-timeout', '20', '--max-connections', '500',
      '--idle-timeout', '90', '--headers-timeout', '5', '--request-timeout', '15', '--max-page-bytes', '2MiB', '--max-body', '128KiB',
    ],
    {},
  )
  const MiB = 1024 * 1024
  expect(args.maxBody).toBe(128 * 1024)
  expect(args.limits).toEqual({
    maxMemory: 512 * MiB,
    maxStoreBytes: 100 * MiB,
    maxHistoryBytes: 16 * MiB,
    maxOutputBytes: 1024 * MiB,
    maxInputBytes: 65_536,
    output: { hard: 8 * MiB, soft: 2 * MiB, softMs: 5_000 },
    sendTimeoutMs: 20_000,
    maxConnections: 500,
    idleTimeoutMs: 90_000,
    headersTimeoutMs: 5_000,
    requestTimeoutMs: 15_000,
    maxPageBytes: 2 * MiB,
  })
})

test.each([
  [['--max-memory', 'lots'], /--max-memory must be a size/],
  [['--max-memory', '1MiB'], /--max-memory must be a size from/],
  [['--max-store-bytes', '12XB'], /--max-store-bytes must be a size/],
  [['--output-limit', '4MiB,1MiB'], /HARD,SOFT,SECONDS/],
  [['--output-limit', '1MiB,4MiB,10'], /SOFT must not be larger than HARD/],
  [['--output-limit', '4MiB,1MiB,0'], /SECONDS must be an integer/],
  [['--max-connections', '3'], /--max-connections must be an integer from 16/],
  [['--idle-timeout', '1.5'], /--idle-timeout must be an integer/],
])('%j is refused: %s', (argv, message) => {
  expect(() => parseServeArgs(argv, {})).toThrow(UsageError)
  expect(() => parseServeArgs(argv, {})).toThrow(message)
})

let node: NodeProcess | undefined
afterAll(async () => {
  await node?.kill9()
})

test('a node reports its memory budget and what its stores hold; a full store refuses a write that grows it', async () => {
  node = await startNode(['--max-memory', '64MiB', '--max-store-bytes', '64KiB'])
  const metrics = async () => await (await fetch(`${node!.url}/metrics`)).text()
  const metric = async (name: string) => Number(new RegExp(`^zaris_${name} (\\d+)`, 'm').exec(await metrics())?.[1])
  expect(await metric('memory_budget_bytes')).toBe(64 * 1024 * 1024)
  const put = (key: string, value: unknown) =>
    fetch(`${node!.url}/v1/q/commit`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ checks: [], ops: [{ type: 'set', key, value }] }) })
  expect((await put('a', 'x'.repeat(20_000))).status).toBe(200)
  expect(await metric('store_bytes')).toBeGreaterThan(40_000)
  const full = await put('b', 'x'.repeat(20_000))
  expect(full.status).toBe(413)
  expect((await full.json()).error).toMatchObject({ code: 'TOO_LARGE', message: expect.stringMatching(/store is full.*--max-store-bytes/) })
  // A write that does not grow the store still goes through.
  expect((await put('a', 'small')).status).toBe(200)
  expect((await put('b', 'x'.repeat(20_000))).status).toBe(200)
})
