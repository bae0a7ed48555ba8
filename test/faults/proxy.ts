/**
 * A TCP proxy the test controls, between a client and a zaris node (or
 * Redis): the network faults of the suite.
 *
 * - `pass`: bytes flow.
 * - `delay(ms)`: every chunk, both ways, arrives `ms` late (in order).
 * - `blackhole`: bytes vanish both ways; connections stay open, as behind a
 *   dead route. `heal()` cuts those connections (they lost bytes) and passes again.
 * - `drop`: open connections are reset, new ones are reset at once.
 * - `holdReplies`: requests reach the server, its answers are thrown away —
 *   the server acts, the client never hears. Then `cut()`: the client retries.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net'

type Mode = { kind: 'pass' } | { kind: 'delay'; ms: number } | { kind: 'blackhole' } | { kind: 'drop' } | { kind: 'hold-replies'; after?: string }

interface Pair {
  client: Socket
  upstream: Socket
  /** When the last delayed chunk of each direction is due, so chunks stay in order. */
  due: { up: number; down: number }
  /** holdReplies: this connection sent what the hold waits for; its answers are dropped. */
  holding: boolean
}

export class FaultProxy {
  port = 0
  /** Bytes thrown away by blackhole and holdReplies. */
  dropped = 0
  /** Connections accepted since start, refused ones (drop) too. */
  accepted = 0
  readonly #target: { host: string; port: number }
  #server: Server | undefined
  #pairs = new Set<Pair>()
  #mode: Mode = { kind: 'pass' }

  constructor(targetPort: number, targetHost = '127.0.0.1') {
    this.#target = { host: targetHost, port: targetPort }
  }

  /** `http://127.0.0.1:<port>` */
  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  get connections(): number {
    return this.#pairs.size
  }

  async start(): Promise<this> {
    this.#server = createServer((client) => this.#accept(client))
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve))
    this.port = (this.#server!.address() as { port: number }).port
    return this
  }

  pass(): void {
    this.#mode = { kind: 'pass' }
  }

  delay(ms: number): void {
    this.#mode = { kind: 'delay', ms }
  }

  blackhole(): void {
    this.#mode = { kind: 'blackhole' }
  }

  drop(): void {
    this.#mode = { kind: 'drop' }
    this.cut()
  }

  /** Drops answers; with `after`, only on a connection once a request containing that text went up (e.g. `/commit`). */
  holdReplies(after?: string): void {
    for (const p of this.#pairs) p.holding = after === undefined
    this.#mode = { kind: 'hold-replies', after }
  }

  /** Back to passing; connections that lost bytes are cut first. */
  heal(): void {
    if (this.#mode.kind === 'blackhole' || this.#mode.kind === 'hold-replies') this.cut()
    this.pass()
  }

  /** Resets every open connection. */
  cut(): void {
    for (const p of this.#pairs) {
      p.client.resetAndDestroy()
      p.upstream.destroy()
    }
    this.#pairs.clear()
  }

  async stop(): Promise<void> {
    this.cut()
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()))
  }

  #accept(client: Socket): void {
    this.accepted++
    if (this.#mode.kind === 'drop') {
      client.on('error', () => {})
      client.resetAndDestroy()
      return
    }
    const upstream = createConnection(this.#target)
    const pair: Pair = { client, upstream, due: { up: 0, down: 0 }, holding: this.#mode.kind === 'hold-replies' && this.#mode.after === undefined }
    this.#pairs.add(pair)
    const end = () => {
      this.#pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on('close', end).on('error', end)
    upstream.on('close', end).on('error', end)
    client.on('data', (chunk: Buffer) => this.#forward(pair, 'up', chunk))
    upstream.on('data', (chunk: Buffer) => this.#forward(pair, 'down', chunk))
  }

  #forward(pair: Pair, direction: 'up' | 'down', chunk: Buffer): void {
    const to = direction === 'up' ? pair.upstream : pair.client
    const mode = this.#mode
    if (mode.kind === 'hold-replies' && direction === 'up' && mode.after !== undefined && chunk.includes(mode.after)) pair.holding = true
    if (mode.kind === 'blackhole' || mode.kind === 'drop' || (mode.kind === 'hold-replies' && direction === 'down' && pair.holding)) {
      this.dropped += chunk.length
      return
    }
    const now = performance.now()
    const wait = Math.max(mode.kind === 'delay' ? now + mode.ms : now, pair.due[direction]) - now
    if (wait <= 0) {
      if (!to.destroyed) to.write(chunk)
      return
    }
    pair.due[direction] = now + wait
    setTimeout(() => {
      if (!to.destroyed) to.write(chunk)
    }, wait)
  }
}
