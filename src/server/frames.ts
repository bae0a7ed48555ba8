/**
 * The node's end of a framed connection (see the protocol module): splits
 * the socket's bytes into newline-ended frames, hands each to the handler's
 * session and writes the answers back as they come, in any order.
 *
 * Bounded: a frame longer than the handler's limit is not buffered; if its
 * id can be read from its start it is answered TOO_LARGE like an HTTP body
 * over the limit (and the rest of it skipped, up to 4 MiB), otherwise, as
 * for bytes that are not UTF-8 or not a frame, the node answers `id: null`
 * and closes the connection. With too many requests in flight, or too many
 * answers the peer has not read, the socket stops being read, so TCP pushes
 * back on the client instead of the node's memory growing.
 *
 * @module
 */
import type { Socket } from 'node:net'
import { InternalError, InvalidArgumentError, TooLargeError, type ZarisError } from '../core/errors'
import { FRAMES_MAX_PENDING, answerFrame, statusOf } from '../adapters/http/protocol'
import type { FrameSession } from './frame-session'

/** Limits of one framed connection. */
export interface FrameLimits {
  /** The longest request frame, in bytes. */
  maxFrameBytes: number
  /** Most requests in flight before the node stops reading. Default {@link FRAMES_MAX_PENDING}. */
  maxPending?: number
  /** Most bytes of unread answers before the node stops reading. Default 1 MiB. */
  maxBuffered?: number
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

/**
 * Serves frames on `socket` (already switched to the protocol), starting
 * with the bytes in `head` that came with the upgrade request.
 *
 * @example
 * server.on('upgrade', (req, socket, head) => serveFrames(socket, head, session, { maxFrameBytes: 65_536 }))
 */
export function serveFrames(socket: Socket, head: Buffer, session: FrameSession, limits: FrameLimits): FrameConnection {
  const maxFrame = limits.maxFrameBytes
  const maxPending = limits.maxPending ?? FRAMES_MAX_PENDING
  const maxBuffered = limits.maxBuffered ?? 1024 * 1024
  let parts: Buffer[] = []
  let size = 0
  let inflight = 0
  /** Skipping the rest of an over-long frame: its id, and the bytes skipped so far. */
  let skipping: { id: number; bytes: number } | undefined
  let ending = false
  let done = false
  /** Bytes read but not yet split, left when the connection had to stop taking requests. */
  let rest: Buffer | undefined

  const canRead = () => !ending && !done && inflight < maxPending && socket.writableLength < maxBuffered
  const resume = () => {
    if (!canRead()) return
    if (rest) {
      const r = rest
      rest = undefined
      onData(r)
    }
    if (canRead() && !rest && socket.isPaused()) socket.resume()
  }

  /** Answers a frame that could not be read, and closes. */
  const refuse = (err: ZarisError) => {
    if (done) return
    done = true
    socket.off('data', onData)
    socket.end(answerFrame(null, statusOf(err.code), JSON.stringify({ error: err.toJSON() })))
  }

  const dispatch = (frame: Buffer) => {
    let text: string
    try {
      text = UTF8.decode(frame)
    } catch {
      refuse(new InvalidArgumentError('frame: not valid UTF-8'))
      return
    }
    inflight++
    session.answer(text).then(
      (a) => {
        inflight--
        if (done) return
        if (a.fatal) {
          done = true
          socket.off('data', onData)
          socket.end(a.frame)
          return
        }
        socket.write(a.frame)
        if (ending && inflight === 0) finish()
        else resume()
      },
      () => {
        // answer() never rejects; if it ever did, this connection can no longer be trusted.
        inflight--
        refuse(new InternalError('internal error'))
      },
    )
  }

  /** Starts skipping an over-long frame whose first bytes are `first`, or refuses it if it shows no id. */
  const tooLongFrame = (first: Buffer, bytes: number): boolean => {
    const m = LEADING_ID.exec(first.toString('latin1', 0, 64))
    if (!m) {
      refuse(tooLong(maxFrame))
      return false
    }
    skipping = { id: Number(m[1]), bytes }
    parts = []
    size = 0
    return true
  }

  function onData(chunk: Buffer): void {
    let start = 0
    if (skipping) {
      const nl = chunk.indexOf(NEWLINE)
      skipping.bytes += nl === -1 ? chunk.length : nl
      if (skipping.bytes > maxFrame + MAX_SKIP) return refuse(tooLong(maxFrame))
      if (nl === -1) return
      const err = tooLong(maxFrame)
      socket.write(answerFrame(skipping.id, statusOf(err.code), JSON.stringify({ error: err.toJSON() })))
      skipping = undefined
      start = nl + 1
    }
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start)
      if (nl === -1) break
      let frame: Buffer
      if (parts.length > 0) {
        parts.push(chunk.subarray(start, nl))
        frame = Buffer.concat(parts, size + nl - start)
        parts = []
        size = 0
      } else {
        frame = chunk.subarray(start, nl)
      }
      start = nl + 1
      if (frame.length > maxFrame) {
        if (!tooLongFrame(frame, 0)) return
        const err = tooLong(maxFrame)
        socket.write(answerFrame(skipping!.id, statusOf(err.code), JSON.stringify({ error: err.toJSON() })))
        skipping = undefined
        continue
      }
      // A blank line (or a lone CR) between frames is tolerated.
      if (frame.length > 1 || (frame.length === 1 && frame[0] !== 13)) dispatch(frame)
      if (done) return
      if (!canRead()) {
        // Enough in flight (or unread): the rest waits, and TCP holds back the sender meanwhile.
        socket.pause()
        if (start < chunk.length) rest = chunk.subarray(start)
        return
      }
    }
    if (start < chunk.length) {
      size += chunk.length - start
      parts.push(chunk.subarray(start))
      if (size > maxFrame) {
        const first = Buffer.concat(parts, Math.min(size, 64))
        if (!tooLongFrame(first, size)) return
      }
    }
    if (!canRead()) socket.pause()
  }

  const finish = () => {
    if (done) return
    done = true
    socket.end()
  }

  socket.setNoDelay(true)
  // A peer that vanished without a FIN is found out and its socket freed.
  socket.setKeepAlive(true, 30_000)
  socket.on('error', () => {})
  socket.on('close', () => {
    done = true
  })
  const end = () => {
    if (ending || done) return
    ending = true
    socket.pause()
    if (inflight === 0) finish()
  }
  socket.on('drain', resume)
  socket.on('data', onData)
  // The server's sockets allow half-open connections: a client that is done sending gets its answers, then the end.
  socket.on('end', end)
  if (head.length > 0) onData(head)

  return {
    end,
    destroy() {
      done = true
      socket.destroy()
    },
  }
}

function tooLong(limit: number): ZarisError {
  return new TooLargeError(`frame: longer than ${limit} bytes`)
}
