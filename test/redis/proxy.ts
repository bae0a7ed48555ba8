/**
 * A TCP proxy on a free loopback port in front of a redis-server, so a test
 * can stall (`freeze`/`thaw`) or drop (`cut`) the connections of the clients
 * that go through it, while others talk to Redis directly.
 */
import { createServer, createConnection, type Server, type Socket } from 'node:net'

export class TcpProxy {
  port = 0
  readonly #target: number
  #server: Server | undefined
  #pairs = new Set<{ client: Socket; upstream: Socket }>()
  #frozen = false

  constructor(targetPort: number) {
    this.#target = targetPort
  }

  url(namespace: string, db = 0): string {
    return `redis://127.0.0.1:${this.port}/${db}?ns=${namespace}`
  }

  async start(): Promise<this> {
    this.#server = createServer((client) => {
      const upstream = createConnection({ host: '127.0.0.1', port: this.#target })
      const pair = { client, upstream }
      this.#pairs.add(pair)
      client.pipe(upstream)
      upstream.pipe(client)
      if (this.#frozen) {
        client.pause()
        upstream.pause()
      }
      const end = () => {
        this.#pairs.delete(pair)
        client.destroy()
        upstream.destroy()
      }
      client.on('close', end).on('error', end)
      upstream.on('close', end).on('error', end)
    })
    await new Promise<void>((resolve) => this.#server!.listen(0, '127.0.0.1', resolve))
    this.port = (this.#server!.address() as { port: number }).port
    return this
  }

  /** Stops moving bytes either way (what was sent waits in the proxy). */
  freeze(): void {
    this.#frozen = true
    for (const { client, upstream } of this.#pairs) {
      client.unpipe(upstream)
      upstream.unpipe(client)
      client.pause()
      upstream.pause()
    }
  }

  /** Lets requests through but holds back every answer: the server acts, the client hears nothing. */
  holdReplies(): void {
    for (const { client, upstream } of this.#pairs) {
      upstream.unpipe(client)
      upstream.pause()
    }
  }

  /** How many client connections go through the proxy now. */
  get connections(): number {
    return this.#pairs.size
  }

  /** Holds back the answers of the newest connection only (an adapter's watch reader opens after its commands' connection). */
  holdRepliesOfNewest(): void {
    const newest = [...this.#pairs].at(-1)
    newest?.upstream.unpipe(newest.client)
    newest?.upstream.pause()
  }

  /** Moves bytes again, the waiting ones first. */
  thaw(): void {
    this.#frozen = false
    for (const { client, upstream } of this.#pairs) {
      client.pipe(upstream)
      upstream.pipe(client)
      client.resume()
      upstream.resume()
    }
  }

  /** Drops every connection (new ones are accepted). */
  cut(): void {
    for (const { client, upstream } of this.#pairs) {
      client.destroy()
      upstream.destroy()
    }
    this.#pairs.clear()
  }

  async stop(): Promise<void> {
    this.cut()
    await new Promise<void>((resolve) => (this.#server ? this.#server.close(() => resolve()) : resolve()))
  }
}
