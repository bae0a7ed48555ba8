/**
 * The connections of a listening node, and what each may cost. Modelled on
 * Redis (`maxclients`, `client-output-buffer-limit`) and nginx
 * (`send_timeout`):
 *
 * - At most `maxConnections` are open (plain requests, watch streams and
 *   framed connections alike); one more gets 503 to its request and is
 *   closed, or is closed after 2 s if it sends none.
 * - A connection's unread output (what the peer has not read yet, in the
 *   node's buffers) is cut off over a hard limit at once, over a soft limit
 *   for `softMs`, or when none of it has been taken for `sendTimeoutMs`; and
 *   when all connections together pass `maxOutputBytes`, the one with the
 *   most unread is cut. A cut watch resumes from its last revision; a framed
 *   client retries its requests on a new connection.
 *
 * The hard limit and the total are checked on every write of a stream, a
 * frame or an answer (a connection that adds output while the node is over
 * its total is the one cut); all limits are checked by a sweep four times a
 * second, which also counts the total afresh.
 *
 * @module
 */
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { noteAccepted } from './loop-share'

/** Limits on a node's connections. */
export interface ConnectionLimits {
  /** Most open connections. */
  maxConnections: number
  /** A connection with more unread output than this is cut at once. */
  outputHardBytes: number
  /** A connection with more unread output than this for `outputSoftMs` is cut. */
  outputSoftBytes: number
  outputSoftMs: number
  /** A connection whose unread output has not moved for this long is cut. */
  sendTimeoutMs: number
  /** Most unread output of all connections together; past it the connection with the most is cut. */
  maxOutputBytes: number
}

/** Why a connection was cut, for the metrics. */
export type CutReason = 'output-hard' | 'output-soft' | 'send-timeout' | 'output-total' | 'too-many'

interface Tracked {
  /** Its unread output when last looked at (the node's total is the sum). */
  unread: number
  /** When its unread output went over the soft limit. */
  softSince: number | undefined
  /** Bytes the kernel had taken at the last sweep, and when that last grew. */
  flushed: number
  movedAt: number
}

const SWEEP_MS = 250

/** The connections of one server. */
export class Connections {
  readonly #limits: ConnectionLimits
  readonly #sockets = new Map<Socket, Tracked>()
  readonly #refused = new WeakSet<Socket>()
  readonly #onCut: (reason: CutReason) => void
  readonly #timer: ReturnType<typeof setInterval>
  #output = 0

  constructor(server: Server, limits: ConnectionLimits, onCut: (reason: CutReason) => void) {
    this.#limits = limits
    this.#onCut = onCut
    server.on('connection', (socket: Socket) => this.#accept(socket))
    this.#timer = setInterval(() => this.sweep(), SWEEP_MS)
    this.#timer.unref()
  }

  /** Open connections. */
  get count(): number {
    return this.#sockets.size
  }

  /** Unread output of all connections, at the last sweep. */
  get outputBytes(): number {
    return this.#output
  }

  /** True for a connection over the limit: answer its request 503 and close it. */
  refused(socket: Socket): boolean {
    return this.#refused.has(socket)
  }

  /** The answer to a request on a refused connection. */
  refusal(): { status: number; body: string } {
    const message = `this node has ${this.#limits.maxConnections} connections open, its most (zaris serve --max-connections); try again shortly`
    return { status: 503, body: JSON.stringify({ error: { code: 'UNAVAILABLE', message } }) }
  }

  /** Cuts `socket` if its unread output passed the hard limit, or the node's passed its total; true if it did. Call after a write. */
  checkHard(socket: Socket): boolean {
    if (socket.destroyed) return false
    const unread = socket.writableLength
    const t = this.#sockets.get(socket)
    if (t) {
      this.#output += unread - t.unread
      t.unread = unread
    }
    if (unread > this.#limits.outputHardBytes) this.#cut(socket, 'output-hard')
    else if (this.#output > this.#limits.maxOutputBytes && unread > 0) this.#cut(socket, 'output-total')
    else return false
    return true
  }

  /** Applies every limit to every connection (the timer calls this). */
  sweep(now = performance.now()): void {
    const l = this.#limits
    let total = 0
    for (const [socket, t] of this.#sockets) {
      const unread = socket.writableLength
      t.unread = unread
      const flushed = socket.bytesWritten - unread
      if (flushed !== t.flushed || unread === 0) {
        t.flushed = flushed
        t.movedAt = now
      }
      if (unread === 0) {
        t.softSince = undefined
        continue
      }
      if (unread > l.outputHardBytes) {
        this.#cut(socket, 'output-hard')
        continue
      }
      if (unread > l.outputSoftBytes) t.softSince ??= now
      else t.softSince = undefined
      if (t.softSince !== undefined && now - t.softSince >= l.outputSoftMs) this.#cut(socket, 'output-soft')
      else if (now - t.movedAt >= l.sendTimeoutMs) this.#cut(socket, 'send-timeout')
      else total += unread
    }
    this.#output = total
    // Over the node's total: the connections holding the most go first.
    if (total > l.maxOutputBytes) {
      const heavy = [...this.#sockets.keys()].filter((s) => !s.destroyed).sort((a, b) => b.writableLength - a.writableLength)
      for (const socket of heavy) {
        if (this.#output <= l.maxOutputBytes) break
        this.#cut(socket, 'output-total')
      }
    }
  }

  /** Stops the sweep (the server is closing). */
  close(): void {
    clearInterval(this.#timer)
  }

  #accept(socket: Socket): void {
    noteAccepted()
    if (this.#sockets.size >= this.#limits.maxConnections) return this.#refuse(socket)
    this.#sockets.set(socket, { unread: 0, softSince: undefined, flushed: 0, movedAt: performance.now() })
    socket.once('close', () => this.#forget(socket))
  }

  #cut(socket: Socket, reason: CutReason): void {
    this.#forget(socket)
    socket.destroy()
    this.#onCut(reason)
  }

  #forget(socket: Socket): void {
    const t = this.#sockets.get(socket)
    if (!t) return
    this.#output -= t.unread
    this.#sockets.delete(socket)
  }

  /** A connection past the limit: its request (if one comes soon) is answered 503; it is closed within 2 s either way. */
  #refuse(socket: Socket): void {
    this.#onCut('too-many')
    this.#refused.add(socket)
    setTimeout(() => socket.destroy(), 2_000).unref()
  }
}
