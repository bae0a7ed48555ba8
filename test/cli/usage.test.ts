/**
 * The command line itself, run as a process: help pages, usage mistakes
 * (exit 2, said before anything connects), a node that is down or wants a
 * token (exit 1 with the store's reason).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startNode, type NodeProcess } from '../server/node-process'
import { zaris } from './run'

const VERBS = ['get', 'put', 'del', 'ls', 'watch', 'locks', 'release', 'counter']

describe('help', () => {
  test('zaris --help lists every command and exits 0; zaris alone prints it to stderr and exits 2', async () => {
    const [help, bare, short] = await Promise.all([zaris(['--help']), zaris([]), zaris(['-h'])])
    expect(help.code).toBe(0)
    for (const verb of ['serve', ...VERBS]) expect(help.stdout).toMatch(new RegExp(`^  zaris ${verb}\\b`, 'm'))
    expect(help.stdout).toContain('Exit codes: 0 done, 1 not found or refused, 2 usage mistake')
    expect(bare).toMatchObject({ code: 2, stdout: '', stderr: help.stdout })
    expect(short.stdout).toBe(help.stdout)
  }, 30_000)

  test('zaris COMMAND --help shows that command’s page and exits 0', async () => {
    const pages = await Promise.all(VERBS.map((verb) => zaris([verb, '--help'])))
    pages.forEach((page, i) => {
      expect(page.code).toBe(0)
      expect(page.stdout).toMatch(new RegExp(`^usage: zaris ${VERBS[i]}\\b`))
      expect(page.stdout).toContain('--url URL')
    })
    expect((await zaris(['serve', '--help'])).stdout).toMatch(/^usage: zaris serve \[options\]/)
  }, 30_000)
})

describe('usage mistakes exit 2 with the reason, without connecting', () => {
  // The URL names a port nothing listens on: a run that connected would exit 1, not 2.
  const env = { ZARIS_URL: 'zaris://127.0.0.1:1/none' }
  const cases: Array<[string[], RegExp]> = [
    [['frobnicate'], /unknown command "frobnicate"/],
    [['get'], /get needs a KEY/],
    [['put', 'k'], /put needs KEY and VALUE/],
    [['get', 'a', 'b'], /get takes at most 1 argument, got 2/],
    [['get', 'k', '--bogus'], /Unknown option '--bogus'/],
    [['get', 'k', '--ttl', '5'], /--ttl is not an option of get/],
    [['put', 'k', 'v', '--ttl', '0'], /--ttl must be a whole number from 1 to 2147483647, got "0"/],
    [['put', 'k', 'v', '--ttl', '1.5'], /--ttl must be a whole number/],
    [['counter', 'k', 'x'], /N must be a whole number/],
    [['release', 'k'], /say release --force KEY/],
    [['get', '\u0001qk'], /must not start with U\+0001: zaris keeps those keys/],
    [['get', ''], /KEY must not be empty/],
    [['watch', '--from', 'x'], /--from must be a whole number/],
    [['get', 'k', '--url', 'nope'], /"nope" is not a connection string/],
    [['--url', 'x', 'serve'], /serve comes first/],
  ]
  test.each(cases)('zaris %j', async (args, message) => {
    const r = await zaris(args, env)
    expect(r.stderr).toMatch(message)
    expect(r).toMatchObject({ code: 2, stdout: '' })
  }, 20_000)
})

describe('the store refuses: exit 1 with its reason', () => {
  let node: NodeProcess
  beforeAll(async () => {
    node = await startNode(['--token', 'cli-secret-1'])
  }, 30_000)
  afterAll(() => node?.stop())

  test('a node that is down', async () => {
    const r = await zaris(['get', 'k'], { ZARIS_URL: 'zaris://127.0.0.1:1/none' })
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/^zaris: no zaris node answered get \(http:\/\/127\.0\.0\.1:1\).*\(UNAVAILABLE\)$/m)
  }, 20_000)

  test('a Redis that is down', async () => {
    const r = await zaris(['get', 'k', '--url', 'redis://127.0.0.1:1/0?ns=none'])
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/^zaris: cannot connect to Redis at redis:\/\/127\.0\.0\.1:1\/0.*\(UNAVAILABLE\)$/m)
  }, 20_000)

  test('a node with a token: --token or ZARIS_TOKEN, else refused', async () => {
    const url = `zaris://127.0.0.1:${node.port}/auth`
    const refused = await zaris(['put', 'k', '1', '--url', url])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/\(UNAUTHORIZED\)/)
    expect((await zaris(['put', 'k', '1', '--url', url, '--token', 'cli-secret-1'])).code).toBe(0)
    expect(await zaris(['counter', 'k'], { ZARIS_URL: url, ZARIS_TOKEN: 'cli-secret-1' })).toMatchObject({ code: 0, stdout: '1\n' })
    expect((await zaris(['get', 'k', '--url', url, '--token', 'wrong-secret'])).code).toBe(1)
  }, 30_000)
})
