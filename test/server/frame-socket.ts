/**
 * A framed connection to a node as raw bytes over TCP, for the tests that
 * speak the protocol by hand (and send what no client would): the upgrade
 * request, then lines in and lines out.
 */
import { connect, type Socket } from 'node:net'

export interface FrameSocket {
  socket: Socket
  /** Status line and headers of the node's answer to the upgrade. */
  head: string
  /** The status the node answered the upgrade with. */
  status: number
  /** The body of a refused upgrade. */
  refusal: string
  /** Sends raw bytes (a frame needs its own `\n`). */
  write(bytes: string | Uint8Array): void
  /** The next answer line, parsed; rejects if the connection ends first. */
  next(timeoutMs?: number): Promise<{ id: number | null; status: number; body: any }>
  /** Resolves once the node closed the connection. */
  readonly closed: Promise<void>
  /** Whether the connection is closed. */
  isClosed(): boolean
}

/** Opens a TCP connection to `port` and asks for frames; resolves once the node answered the upgrade. */
export async function frameSocket(port: number, headers: Record<string, string> = {}, path = '/v1/frames'): Promise<FrameSocket> {
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => {})
  const all = { connection: 'Upgrade', upgrade: 'zaris-frames/1', host: `127.0.0.1:${port}`, ...headers }
  let request = `GET ${path} HTTP/1.1\r\n`
  for (const [k, v] of Object.entries(all)) request += `${k}: ${v}\r\n`
  socket.write(`${request}\r\n`)
  let isClosed = false
  const closed = new Promise<void>((resolve) => socket.once('close', () => ((isClosed = true), resolve())))
  let buf = Buffer.alloc(0)
  let wake: (() => void) | undefined
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d])
    wake?.()
  })
  void closed.then(() => wake?.())
  const waitFor = async (ready: () => boolean, timeoutMs: number, what: string): Promise<void> => {
    const deadline = Date.now() + timeoutMs
    while (!ready()) {
      if (isClosed) throw new Error(`the connection closed before ${what}`)
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms`)
      await new Promise<void>((r) => {
        const t = setTimeout(r, left)
        wake = () => (clearTimeout(t), r())
      })
    }
  }
  await waitFor(() => buf.includes('\r\n\r\n'), 10_000, 'answer to the upgrade').catch((err) => {
    if (!buf.includes('\r\n\r\n')) throw err
  })
  const end = buf.indexOf('\r\n\r\n')
  const head = buf.subarray(0, end).toString('latin1')
  buf = buf.subarray(end + 4)
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1])
  let refusal = ''
  if (status !== 101) {
    await closed
    refusal = buf.toString('utf8')
  }
  return {
    socket,
    head,
    status,
    refusal,
    write: (bytes) => socket.write(bytes),
    async next(timeoutMs = 10_000) {
      await waitFor(() => buf.includes(10), timeoutMs, 'answer frame')
      const nl = buf.indexOf(10)
      const line = buf.subarray(0, nl).toString('utf8')
      buf = buf.subarray(nl + 1)
      return JSON.parse(line)
    },
    closed,
    isClosed: () => isClosed,
  }
}
