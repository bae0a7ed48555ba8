/**
 * The terminal sessions of docs/cli.md (```console blocks of `$ zaris ...`
 * lines, each followed by what it prints) replayed against a node process:
 * each command runs as a process and must print what the doc shows, digits
 * aside (revisions, tokens and times differ from run to run) and column
 * padding aside. A doc's blocks share one namespace, in order, like the
 * story they tell; the locks and watch sessions get their holders, waiters
 * and writers from this test (SCENES), keyed by the heading above them.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { connect, type Client, type Lock } from 'zaris'
import { readLocks } from '../../src/cli/lock-table'
import { blocksFor, titleOf, type Block } from '../readme/snippets'
import { startNode, type NodeProcess } from '../server/node-process'
import { start, zaris } from './run'

/** A store of the session's, and what the scenes left running. */
interface Stage {
  url: string
  client(id: string): Promise<Client>
  /** The first waiter's acquire, once the locks scene started it. */
  firstWaiter?: Promise<Lock | null>
}

/** What happens around a heading's commands: before its first command, while a watch runs, after each command. */
const SCENES: Record<string, { before?(s: Stage): Promise<void>; during?(s: Stage): Promise<void>; after?(s: Stage): Promise<void> }> = {
  'Looking at locks': {
    async before(s) {
      const holder = await s.client('holder-1')
      await holder.locks.acquire('lock:a', { ttl: 20_000 })
      const line = async (n: number) => {
        while (((await readLocks(holder, 'lock:'))[0]?.waiters.length ?? 0) < n) await new Promise((r) => setTimeout(r, 20))
      }
      s.firstWaiter = (await s.client('waiter-a')).locks.acquire('lock:a', { wait: 60_000 })
      await line(1)
      void (await s.client('waiter-b')).locks.acquire('lock:a', { wait: 60_000 }).catch(() => {})
      await line(2)
    },
  },
  'Freeing a stuck lock': {
    // Once freed, the key is the first waiter's as soon as it has taken it.
    after: async (s) => void (await s.firstWaiter),
  },
  'Running a command under a lock': {
    // Someone else holds deploy, so the second command exits 75.
    before: async (s) => void (await (await s.client('ci-runner-2')).locks.acquire('deploy', { ttl: 60_000 })),
  },
  Watching: {
    async during(s) {
      const worker = await s.client('worker-2')
      const lease = await worker.leases.grant('jobs:nightly', { value: 'running', ttl: 30_000 })
      await lease!.revoke()
      await worker.put('jobs:retry', 1, { ttl: 200 })
    },
  },
}

/** One `$ zaris ...` line of a block and the lines it prints. */
interface Step {
  argv: string[]
  expected: string
}

function stepsOf(block: Block): Step[] {
  const steps: Step[] = []
  for (const line of block.code.trimEnd().split('\n')) {
    if (line.startsWith('$ ')) steps.push({ argv: words(line.slice(2)).slice(1), expected: '' })
    else steps.at(-1)!.expected += `${line}\n`
  }
  return steps
}

/** A command line split as a POSIX shell would for the quoting the docs use: '...' and "...". */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g)].map((m) => m[1] ?? m[2]?.replace(/\\(.)/g, '$1') ?? m[3]!)
}

/** The doc's text as a pattern: every number stands for any number, every run of spaces for any. */
function shape(expected: string): RegExp {
  const escaped = expected.trimEnd().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  return new RegExp(`^${escaped.replace(/\d+/g, '\\d+').replace(/ +/g, ' +')}$`)
}

const blocks = blocksFor('cli')

describe.each([...new Set(blocks.map((b) => b.file))])('%s', (file) => {
  let node: NodeProcess
  const clients: Client[] = []
  let stage: Stage
  const staged = new Set<string>()
  beforeAll(async () => {
    node = await startNode([])
    const url = `zaris://127.0.0.1:${node.port}/docs`
    stage = {
      url,
      async client(id) {
        const c = await connect(url, { id })
        clients.push(c)
        return c
      },
    }
  }, 30_000)
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()))
    await node?.stop()
  })

  const mine = blocks.filter((b) => b.file === file)
  test('has sessions to replay', () => expect(mine.length).toBeGreaterThanOrEqual(4))

  test.each(mine.map((b) => ({ block: b, title: titleOf(b) })))('$title', async ({ block }) => {
    const scene = SCENES[block.heading] ?? {}
    // A heading's scene is set once, for its first block.
    if (!staged.has(block.heading)) await scene.before?.(stage)
    staged.add(block.heading)
    const env = { ZARIS_URL: stage.url }
    for (const step of stepsOf(block)) {
      let printed: string
      if (step.argv[0] === 'watch') {
        const watch = start(step.argv, env)
        await watch.waitFor(/watching/, 'stderr')
        await scene.during?.(stage)
        const lines = step.expected.trimEnd().split('\n').length - 1 // less the "watching" line on stderr
        await watch.waitFor(new RegExp(`^(.*\\n){${lines}}`))
        expect(await watch.stop('SIGINT'), 'watch exits 0 on Ctrl-C').toBe(0)
        printed = watch.stderr() + watch.stdout()
      } else {
        const ran = await zaris(step.argv, env)
        printed = ran.stderr + ran.stdout
      }
      expect(printed.trimEnd(), `$ zaris ${step.argv.join(' ')}`).toMatch(shape(step.expected))
      await scene.after?.(stage)
    }
  }, 60_000)
})
