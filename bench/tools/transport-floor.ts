/**
 * The floor under "through a node": round trips on loopback with no zaris
 * code at all, taking turns like the bench. A Node `node:http` server that
 * answers a tiny JSON body (keep-alive agent client), a Node raw TCP server
 * that echoes one line, the zaris node's own `/healthz` and `get` (over HTTP,
 * and as a frame of the Node transport's upgraded connection), and Redis
 * `PING` / `EVALSHA` through ioredis. Tells how much of the node's cost is
 * HTTP in Node itself.
 *
 *   npx tsx bench/tools/transport-floor.ts
 *
 * @module
 */
import { Redis } from 'ioredis'
import http from 'node:http'
import net from 'node:net'
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { alternate } from '../lib/compare'
import { loop } from '../lib/measure'
import { fmtMs, fmtOps } from '../lib/report'
import { node, redis } from '../lib/procs'
import { nodeTransport } from '../../src/adapters/http/node-transport'

if (process.argv[2] === 'child') {
  // The bare servers run in a process of their own, as the zaris node does.
  const h = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{"entry":null}')
    })
  })
  const t = net.createServer((s) => {
    s.setNoDelay(true)
    s.on('data', (d) => s.write(d))
  })
  h.listen(0, '127.0.0.1', () =>
    t.listen(0, '127.0.0.1', () => process.send!({ http: (h.address() as net.AddressInfo).port, tcp: (t.address() as net.AddressInfo).port })),
  )
} else {
  const child = fork(fileURLToPath(import.meta.url), ['child'], { execArgv: ['--import', 'tsx'] })
  const ports = await new Promise<{ http: number; tcp: number }>((r) => child.once('message', (m) => r(m as { http: number; tcp: number })))
  const zn = await node()
  const rs = await redis()
  const io = new Redis({ host: '127.0.0.1', port: rs.port })
  const agent = new http.Agent({ keepAlive: true })
  const post = (url: string, body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume()
        res.on('end', resolve)
      })
      req.on('error', reject)
      req.end(body)
    })
  const sock = net.connect(ports.tcp, '127.0.0.1')
  sock.setNoDelay(true)
  await new Promise((r) => sock.once('connect', r))
  let pending: (() => void) | undefined
  sock.on('data', () => pending?.())
  const echo = () => new Promise<void>((r) => ((pending = r), sock.write('{"op":"get","key":"a"}\n')))
  io.defineCommand('benchGet', { numberOfKeys: 1, lua: "return redis.call('get', KEYS[1])" })
  const benchGet = (io as unknown as { benchGet(k: string): Promise<unknown> }).benchGet.bind(io)
  const framed = await nodeTransport()
  const never = new AbortController().signal
  const frameGet = async () => {
    const res = await framed.send({ method: 'POST', url: `${zn.url}/v1/x/get`, headers: {}, body: '{"key":"a"}', signal: never })
    await res.json!()
  }
  await frameGet()
  const d = 400
  const rows = await alternate(
    [
      { label: 'raw TCP line echo (Node server)', zaris: false, trial: () => loop(echo, d) },
      { label: 'node:http POST, bare Node server', zaris: false, trial: () => loop(() => post(`http://127.0.0.1:${ports.http}/`, '{"key":"a"}'), d) },
      { label: 'zaris node POST /v1/x/get', zaris: true, trial: () => loop(() => post(`${zn.url}/v1/x/get`, '{"key":"a"}'), d) },
      { label: 'zaris node get, framed connection', zaris: true, trial: () => loop(frameGet, d) },
      { label: 'Redis PING (ioredis)', zaris: false, trial: () => loop(() => io.ping(), d) },
      { label: 'Redis EVALSHA (ioredis)', zaris: false, trial: () => loop(() => benchGet('a'), d) },
    ],
    5,
  )
  for (const r of rows) console.log(`${r.contender.padEnd(36)} ${fmtOps(r.opsPerSec).padStart(7)} rt/s  p50 ${fmtMs(r.p50).padStart(8)}  p99 ${fmtMs(r.p99).padStart(8)}`)
  sock.destroy()
  agent.destroy()
  framed.close()
  io.disconnect()
  await zn.stop()
  await rs.dispose()
  child.kill()
}
