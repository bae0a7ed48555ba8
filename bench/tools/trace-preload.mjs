// Loaded into a `zaris serve` process by bench/tools/handover-breakdown.ts
// (NODE_OPTIONS=--import=...): stamps every socket write and every chunk read
// with the wall clock, keeps the ones that carry a revision, and writes them
// to ZARIS_TRACE_OUT on SIGUSR2. Measurement only; nothing in src/ knows of it.
import net from 'node:net'
import { Readable } from 'node:stream'
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector'

const out = process.env.ZARIS_TRACE_OUT
const log = []
// The tool that imports this file in its own process reads the stamps here.
globalThis.__zarisSocketTrace = log
const now = () => performance.timeOrigin + performance.now()
const keep = (s) => s.includes('id: ') || s.includes('"revision"') || s.includes('"path"')
const text = (data) => {
  if (typeof data === 'string') return data
  if (Buffer.isBuffer(data) || data instanceof Uint8Array) return Buffer.from(data).toString('utf8')
  if (Array.isArray(data)) return data.map((d) => text(d.chunk ?? d)).join('')
  return ''
}
const writeGeneric = net.Socket.prototype._writeGeneric
net.Socket.prototype._writeGeneric = function (writev, data, encoding, cb) {
  const t = now()
  const s = text(data)
  if (keep(s) && log.length < 200_000) log.push({ t, dir: 'w', port: this.remotePort, s: s.slice(0, 400) })
  return writeGeneric.call(this, writev, data, encoding, cb)
}
const push = Readable.prototype.push
net.Socket.prototype.push = function (chunk, encoding) {
  if (chunk) {
    const s = text(chunk)
    if (keep(s) && log.length < 200_000) log.push({ t: now(), dir: 'r', port: this.remotePort, s: s.slice(0, 400) })
  }
  return push.call(this, chunk, encoding)
}
// ZARIS_TRACE_PROFILE=1: a V8 CPU profile too (--cpu-prof is not allowed in NODE_OPTIONS), written next to the stamps.
const session = process.env.ZARIS_TRACE_PROFILE === '1' ? new Session() : undefined
if (session) {
  session.connect()
  session.post('Profiler.enable')
  session.post('Profiler.setSamplingInterval', { interval: 100 })
  session.post('Profiler.start')
}
const dump = () => {
  if (out) writeFileSync(out, JSON.stringify(log))
  log.length = 0
}
process.on('SIGUSR2', () => {
  if (!session) return dump()
  session.post('Profiler.stop', (err, r) => {
    if (!err && out) writeFileSync(`${out}.cpuprofile`, JSON.stringify(r.profile))
    dump()
  })
})
