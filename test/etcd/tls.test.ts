/**
 * `etcds://`: the adapter over TLS, against a real etcd member whose client
 * port serves a certificate of a CA made for this test (openssl).
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { connect } from 'zaris'
import { EtcdMember, FAST } from './server'

let member: EtcdMember
let ca: Buffer
beforeAll(async () => {
  member = new EtcdMember('tls', FAST)
  const file = (name: string) => join(member.dir, name)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' })
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=zaris test CA', '-keyout', file('ca.key'), '-out', file('ca.pem'))
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', file('server.key'), '-out', file('server.csr'))
  execFileSync('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1' > '${file('san.ext')}'`])
  openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '1', '-extfile', file('san.ext'), '-out', file('server.pem'))
  ca = readFileSync(file('ca.pem'))
  member.tls = { certFile: file('server.pem'), keyFile: file('server.key') }
  await member.start()
}, 60_000)
afterAll(async () => {
  await member?.dispose()
})

test('etcds:// with the CA given: a store over TLS', async () => {
  const client = await connect(`etcds://127.0.0.1:${member.clientPort}/tls`, { etcd: { credentials: { rootCertificate: ca } } })
  const lock = (await client.locks.acquire('lock:tls', { ttl: 5_000 }))!
  await client.put('res', 1, { fence: lock })
  expect((await client.get('res'))?.value).toBe(1)
  await lock.release()
  await client.close()
})

test('etcds:// to a certificate nobody vouched for fails with UNAVAILABLE, not a hang', async () => {
  await expect(connect(`etcds://127.0.0.1:${member.clientPort}/tls`, { etcd: { timeout: 1_500, callTimeout: 500 } })).rejects.toMatchObject({ code: 'UNAVAILABLE' })
})

test('etcd:// (plain) to a TLS port fails with UNAVAILABLE', async () => {
  await expect(connect(`etcd://127.0.0.1:${member.clientPort}/tls`, { etcd: { timeout: 1_500, callTimeout: 500 } })).rejects.toMatchObject({ code: 'UNAVAILABLE' })
})
