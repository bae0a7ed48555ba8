/**
 * The node's end of a framed connection (see the protocol module): splits
 * the socket's bytes into newline-ended frames, hands each to the handler's
 * session and writes the answers back as they come, in any order.
 *
 * Bounded:
 * - A frame longer than the handler's limit is not buffered; if its id can
 *   be read from its start it is answered TOO_LARGE like an HTTP body over
 *   the limit (and the rest of it skipped, up to 4 MiB), otherwise, as for
 *   bytes that are not UTF-8 or not a frame, the node answers `id: null` and
 *   closes the connection.
 * - In flight, by count and by bytes: each request reserves the most its
 *   answer may take (a `list` page, an entry for `get`, about its own size
 *   for `commit`), and with too many requests in flight, or too many bytes
 *   reserved and unread, the socket stops being read, so TCP pushes back on
 *   the client instead of the node's memory growing. The listener's output
 *   limits cut a connection whose unread answers still grow too far.
 * - Idle: a connection with nothing in flight that sends nothing for the
 *   idle timeout is closed (the client's ping keeps a live one open).
 *
 * @module
 */
import type { Socket } from 'node:net'
import { InternalError, InvalidArgumentError, TooLargeError, type ZarisError } from '../core/contract/errors'
import { FRAMES_MAX_PENDING, answerFrame, statusOf } from './protocol'
import type { FrameSession } from './frame-session'
import type { InputBudget } from './input-budget'

/** Limits of one framed connection. */
export interface FrameLimits {
  /** The longest request frame, in bytes. */
  maxFrameBytes: number
  /** Most requests in flight before the node stops reading. Default {@link FRAMES_MAX_PENDING}. */
  maxPending?: number
  /** Most bytes reserved for answers in flight plus unread, before the node stops reading. Default 4 MiB. */
  maxInflightBytes?: number
  /** The most one `list` answer takes (the node's page limit). Default 1 MiB. */
  pageBytes?: number
  /** A connection with nothing in flight that sends nothing for this long is closed. Default 60 s. */
  idleMs?: number
  /** Called after each answer is written, to apply the listener's output limits; true if it cut the connection. */
  afterWrite?: (socket: Socket) => boolean
  /** Told when the connection is closed for being idle. */
  onIdle?: () => void
  /** The node's budget for requests in progress: the reservations count against it too, and the socket waits while it is spent. */
  budget?: InputBudget
}

/** A framed connection being served. */
export interface FrameConnection {
  /** Stops reading, lets the requests in flight answer, then ends the connection. */
  end(): void
  /** Cuts the connection now. */
  destroy(): void
}

/** Strict: a frame with bytes that are not UTF-8 is refused rather than altered. */
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const NEWLINE = 10
/** Bytes of an over-long frame skipped before the node hangs up (as for an HTTP body past the limit). */
const MAX_SKIP = 4 * 1024 * 1024
/** The id at the start of a frame, as the adapter writes it. */
const LEADING_ID = /^\s*\{\s*"id"\s*:\s*(\d{1,15})\s*,/
/** The route a frame names, read from its start to size what its answer may take. */
const ROUTE_OP = /"path"\s*:\s*"[^"]{0,512}\/(list|get|commit)"/

/**
 * Serves frames on `socket` (already switched to the protocol), starting
 * with the bytes in `head` that came with the upgrade request.
 *
 * @example
 * server.on('upgrade', (req, socket, head) => serveFrames(socket, head, session, { maxFrameBytes: 65_536 }))
 */
export function serveFrames(socket: Socket, head: Buffer, session: FrameSession, limits: FrameLimits): FrameConnection {
  const served = new FramedSocket(socket, session, limits)
  if (head.length > 0) served.onData(head)
  return served
}

class FramedSocket implements FrameConnection {
  readonly #socket: Socket
  readonly #session: FrameSession
  readonly #limits: Required<Omit<FrameLimits, 'afterWrite' | 'onIdle' | 'budget'>> & Pick<FrameLimits, 'afterWrite' | 'onIdle'>
  readonly #budget: InputBudget | undefined
  readonly #wake = () => this.#resumeLater()
  /** A later turn of the loop will resume reading. */
  #resumeSoon = false
  #parts: Buffer[] = []
  #size = 0
  #inflight = 0
  /** Bytes reserved for the answers in flight. */
  #reserved = 0
  /** Skipping the rest of an over-long frame: its id, and the bytes skipped so far. */
  #skipping: { id: number; bytes: number } | undefined
  #ending = false
  #done = false
  /** Bytes read but not yet split, left when the connection had to stop taking requests. */
  #rest: Buffer | undefined
  #idle: ReturnType<typeof setTimeout> | undefined
  /** When the peer last sent anything (performance.now() ms): the idle timer looks at it, rather than being reset per chunk. */
  #lastData = performance.now()

  constructor(socket: Socket, session: FrameSession, limits: FrameLimits) {
    this.#socket = socket
    this.#session = session
    this.#limits = {
      maxPending: FRAMES_MAX_PENDING,
      maxInflightBytes: 4 * 1024 * 1024,
      pageBytes: 1024 * 1024,
      idleMs: 60_000,
      ...limits,
    }
    this.#budget = limits.budget
    socket.setNoDelay(true)
    // A peer that vanished without a FIN is found out and its socket freed.
    socket.setKeepAlive(true, 30_000)
    socket.on('error', () => {})
    socket.on('close', () => {
      this.#session.close?.()
      this.#done = true
      this.#clearIdle()
      this.#budget?.forget(this.#wake)
    })
    socket.on('drain', () => this.#resume())
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    // The server's sockets allow half-open connections: a client that is done sending gets its answers, then the end.
    socket.on('end', () => this.end())
    this.#armIdle()
  }

  end(): void {
    if (this.#ending || this.#done) return
    this.#ending = true
    // Parked commits would hold the end back for their whole wait: they are answered now, with their first try.
    this.#session.close?.()
    this.#socket.pause()
    if (this.#inflight === 0) this.#finish()
  }

  destroy(): void {
    this.#done = true
    this.#clearIdle()
    this.#socket.destroy()
  }

  onData(chunk: Buffer): void {
    // After a refusal the rest is read and dropped (so closing does not reset the answer away).
    if (this.#done) return
    this.#lastData = performance.now()
    let start = 0
    if (this.#skipping) {
      start = this.#skip(chunk)
      if (start < 0) return
    }
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start)
      if (nl === -1) break
      const frame = this.#take(chunk, start, nl)
      start = nl + 1
      if (frame.length > this.#limits.maxFrameBytes) {
        if (!this.#tooLongFrame(frame, 0)) return
        this.#answerTooLong()
        continue
      }
      // A blank line (or a lone CR) between frames is tolerated.
      if (frame.length > 1 || (frame.length === 1 && frame[0] !== 13)) this.#dispatch(frame)
      if (this.#done) return
      if (!this.#canRead()) {
        // Enough in flight (or unread): the rest waits, and TCP holds back the sender meanwhile.
        this.#socket.pause()
        if (start < chunk.length) this.#rest = chunk.subarray(start)
        return
      }
    }
    if (start < chunk.length) {
      this.#size += chunk.length - start
      this.#parts.push(chunk.subarray(start))
      if (this.#size > this.#limits.maxFrameBytes && !this.#tooLongFrame(Buffer.concat(this.#parts, Math.min(this.#size, 64)), this.#size)) return
    }
    if (!this.#canRead()) this.#socket.pause()
  }

  /** The frame ending at `nl`, joined with the parts before it. */
  #take(chunk: Buffer, start: number, nl: number): Buffer {
    if (this.#parts.length === 0) return chunk.subarray(start, nl)
    this.#parts.push(chunk.subarray(start, nl))
    const frame = Buffer.concat(this.#parts, this.#size + nl - start)
    this.#parts = []
    this.#size = 0
    return frame
  }

  /** Skips on through an over-long frame; the offset after it, or -1 when the chunk is used up (or the connection refused). */
  #skip(chunk: Buffer): number {
    const skipping = this.#skipping!
    const nl = chunk.indexOf(NEWLINE)
    skipping.bytes += nl === -1 ? chunk.length : nl
    if (skipping.bytes > this.#limits.maxFrameBytes + MAX_SKIP) {
      this.#refuse(tooLong(this.#limits.maxFrameBytes))
      return -1
    }
    if (nl === -1) return -1
    this.#answerTooLong()
    return nl + 1
  }

  #canRead(): boolean {
    if (this.#ending || this.#done || this.#inflight >= this.#limits.maxPending) return false
    if (this.#reserved + this.#socket.writableLength >= this.#limits.maxInflightBytes) return false
    if (this.#budget && !this.#budget.open) {
      // The node as a whole has enough in progress: read on once some of it is answered.
      this.#budget.waitForRoom(this.#wake)
      return false
    }
    return true
  }

  /**
   * Resumes reading in a later turn of the event loop. An answer (or room in
   * the node's budget) comes in a microtask of whatever finished it; reading
   * on right there let one connection whose answers the kernel still took
   * dispatch, answer and dispatch again without the loop ever turning, while
   * no other socket was read or accepted.
   */
  #resumeLater(): void {
    if (this.#resumeSoon || this.#done || (!this.#rest && !this.#socket.isPaused())) return
    this.#resumeSoon = true
    setImmediate(() => {
      this.#resumeSoon = false
      this.#resume()
    })
  }

  #resume(): void {
    if (!this.#canRead()) return
    if (this.#rest) {
      const r = this.#rest
      this.#rest = undefined
      this.onData(r)
    }
    if (this.#canRead() && !this.#rest && this.#socket.isPaused()) this.#socket.resume()
  }

  /** The most the answer to `text` may take. */
  #reserve(text: string): number {
    const op = ROUTE_OP.exec(text.length > 700 ? text.slice(0, 700) : text)?.[1]
    if (op === 'list') return this.#limits.pageBytes
    if (op === 'get') return this.#limits.maxFrameBytes
    return text.length + 1024
  }

  #dispatch(frame: Buffer): void {
    let text: string
    try {
      text = UTF8.decode(frame)
    } catch {
      this.#refuse(new InvalidArgumentError('frame: not valid UTF-8'))
      return
    }
    const reserved = this.#reserve(text)
    this.#inflight++
    this.#reserved += reserved
    this.#budget?.take(reserved)
    // A parked commit's answer may come early, in the step of the release that hands over: it is sent
    // then, ahead of that step's other work and of the release's own answer; the settled answer only counts.
    let sent = false
    const early = (frame: string) => {
      if (sent || this.#done) return
      sent = true
      this.#socket.write(frame)
    }
    this.#session.answer(text, early).then(
      (a) => {
        this.#inflight--
        this.#reserved -= reserved
        this.#budget?.give(reserved)
        if (this.#done) return
        if (a.fatal) {
          this.#done = true
          this.#socket.end(a.frame)
          return
        }
        if (!sent) this.#socket.write(a.frame)
        if (this.#limits.afterWrite?.(this.#socket)) return
        if (this.#ending && this.#inflight === 0) this.#finish()
        else this.#resumeLater()
      },
      () => {
        // answer() never rejects; if it ever did, this connection can no longer be trusted.
        this.#inflight--
        this.#reserved -= reserved
        this.#budget?.give(reserved)
        this.#refuse(new InternalError('internal error'))
      },
    )
  }

  /** Starts skipping an over-long frame whose first bytes are `first`, or refuses it if it shows no id. */
  #tooLongFrame(first: Buffer, bytes: number): boolean {
    const m = LEADING_ID.exec(first.toString('latin1', 0, 64))
    if (!m) {
      this.#refuse(tooLong(this.#limits.maxFrameBytes))
      return false
    }
    this.#skipping = { id: Number(m[1]), bytes }
    this.#parts = []
    this.#size = 0
    return true
  }

  /** Answers the over-long frame being skipped, which has ended. */
  #answerTooLong(): void {
    const err = tooLong(this.#limits.maxFrameBytes)
    this.#socket.write(answerFrame(this.#skipping!.id, statusOf(err.code), JSON.stringify({ error: err.toJSON() })))
    this.#skipping = undefined
  }

  /** Answers a frame that could not be read, and closes. */
  #refuse(err: ZarisError): void {
    if (this.#done) return
    this.#done = true
    this.#clearIdle()
    this.#socket.end(answerFrame(null, statusOf(err.code), JSON.stringify({ error: err.toJSON() })))
  }

  #finish(): void {
    if (this.#done) return
    this.#done = true
    this.#clearIdle()
    this.#socket.end()
  }

  /** Looks again in `ms`: a connection that sent something since, or has answers in flight, is not idle. */
  #armIdle(ms = this.#limits.idleMs): void {
    this.#clearIdle()
    if (this.#done) return
    this.#idle = setTimeout(() => {
      this.#idle = undefined
      const quiet = performance.now() - this.#lastData
      if (this.#inflight > 0) return this.#armIdle()
      if (quiet < this.#limits.idleMs) return this.#armIdle(this.#limits.idleMs - quiet)
      this.#limits.onIdle?.()
      this.end()
    }, ms)
    this.#idle.unref()
  }

  #clearIdle(): void {
    if (this.#idle !== undefined) clearTimeout(this.#idle)
    this.#idle = undefined
  }
}

function tooLong(limit: number): ZarisError {
  return new TooLargeError(`frame: longer than ${limit} bytes`)
}
