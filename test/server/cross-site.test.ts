/**
 * No cross-site use: requests as a browser marks them when they come from
 * another site (an `Origin` not given with --cors, `Sec-Fetch-Site`
 * cross-site or same-site) are refused with 403 on every route, token or
 * not, before any namespace opens; requests without those headers (Node
 * clients, curl) and those a browser marks same-origin or typed in are
 * served. Against a real node process, with raw HTTP requests (a browser
 * sends them so; test/browser/cross-site.test.ts has Chromium send them).
 */
import { request as httpRequest } from 'node:http'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { frameSocket } from './frame-socket'
import { startNode, type NodeProcess } from './node-process'

const ALLOWED = 'http://app.localhost:5173'
const EVIL = 'http://evil.example'
const TOKEN = 'cross-site-token-01'

function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: { ...headers, ...(body ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (d) => (text += d))
      // A watch stream that was let in never ends: its status is enough.
      if (res.headers['content-type']?.startsWith('text/event-stream')) {
        res.destroy()
        return resolve({ status: res.statusCode!, text })
      }
      res.on('end', () => resolve({ status: res.statusCode!, text }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

/** Every route of the node, as a browser could ask for it. */
const ROUTES: Array<[string, string, string | undefined]> = [
  ['GET', '/healthz', undefined],
  ['GET', '/metrics', undefined],
  ['POST', '/v1/x1/get', '{"key":"k"}'],
  ['POST', '/v1/x2/list', '{"prefix":""}'],
  ['POST', '/v1/x3/commit', '{"checks":[],"ops":[{"type":"set","key":"k","value":1}]}'],
  ['GET', '/v1/x4/watch?prefix=', undefined],
  ['GET', '/v1/x5/events?after=0', undefined],
  ['OPTIONS', '/v1/x6/commit', undefined],
]

const BROWSER_CROSS_SITE: Array<[string, Record<string, string>]> = [
  ['an Origin not given with --cors', { origin: EVIL }],
  ['an Origin not given with --cors, marked same-site', { origin: 'http://127.0.0.1:3000', 'sec-fetch-site': 'same-site' }],
  ['Sec-Fetch-Site: cross-site without an Origin (a no-cors GET)', { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' }],
  ['Sec-Fetch-Site: same-site without an Origin', { 'sec-fetch-site': 'same-site' }],
  ['Origin: null (a sandboxed or file page)', { origin: 'null' }],
]

describe.each([
  ['a tokenless node', [] as string[], {}],
  ['a node with a token (and the right token sent)', ['--token', TOKEN], { authorization: `Bearer ${TOKEN}` }],
])('%s', (_, args, auth: Record<string, string>) => {
  let node: NodeProcess
  beforeAll(async () => {
    node = await startNode(['--cors', ALLOWED, ...args])
  })
  afterAll(async () => {
    await node?.kill9()
  })
  const namespaces = async () => Number(/^zaris_namespaces (\d+)/m.exec((await send(node.port, 'GET', '/metrics', auth)).text)?.[1])

  test.each(BROWSER_CROSS_SITE)('%s: 403 on every route and on the upgrade, and no namespace opens', async (_, headers) => {
    for (const [method, path, body] of ROUTES) {
      const r = await send(node.port, method, path, { ...auth, ...headers }, body)
      expect(r.status, `${method} ${path}`).toBe(403)
      if (method !== 'OPTIONS') expect(JSON.parse(r.text).error, `${method} ${path}`).toMatchObject({ code: 'UNAUTHORIZED', message: expect.stringMatching(/cross-site request refused.*--cors/) })
    }
    const upgrade = await frameSocket(node.port, { ...auth, ...headers })
    expect(upgrade.status).toBe(403)
    expect(await namespaces()).toBe(0)
  })

  test.each<[string, Record<string, string>]>([
    ['no Origin and no Sec-Fetch-Site (Node, curl)', {}],
    ['the Origin given with --cors', { origin: ALLOWED, 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site: same-origin', { origin: 'https://host.example', 'sec-fetch-site': 'same-origin' }],
    ['Sec-Fetch-Site: none (typed in the address bar)', { 'sec-fetch-site': 'none' }],
  ])('%s: served', async (_, headers) => {
    for (const [method, path, body] of ROUTES) {
      if (method === 'OPTIONS') continue
      const r = await send(node.port, method, path, { ...auth, ...headers }, body)
      expect(r.status, `${method} ${path}`).toBe(200)
    }
  })
})
