/**
 * The handler as a web-standard fetch handler: a `Request` turned into an
 * {@link Exchange}, and a {@link Reply} into a `Response` (a streamed reply
 * as a `ReadableStream`), for servers other than Node's http module.
 *
 * @module
 */
import { InvalidArgumentError } from '../core/contract/errors'
import { tooLarge, type Exchange, type Reply } from './reply'

/** The most bytes a streamed response may have queued before its peer counts as too far behind. */
const MAX_QUEUED = 1024 * 1024

/** Serves `request` with `handle`. */
export async function serveRequest(handle: (ex: Exchange) => Promise<Reply>, request: Request): Promise<Response> {
  const ex: Exchange = {
    method: request.method,
    url: new URL(request.url),
    header: (n) => request.headers.get(n),
    body: (limit) => readLimited(request, limit),
  }
  const reply = await handle(ex)
  if ('body' in reply) return new Response(reply.status === 204 ? null : reply.body, { status: reply.status, headers: reply.headers })
  const encoder = new TextEncoder()
  let stop: (() => void) | undefined
  let waiting: Array<() => void> = []
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      stop = reply.stream({
        write(chunk) {
          try {
            controller.enqueue(encoder.encode(chunk))
          } catch {
            return false
          }
          const desired = controller.desiredSize ?? 0
          // Too far behind: cut off (it resumes from its last revision).
          if (desired < -MAX_QUEUED) queueMicrotask(() => stop?.())
          return desired > 0
        },
        drain(fn) {
          if ((controller.desiredSize ?? 1) > 0) queueMicrotask(fn)
          else waiting.push(fn)
        },
        end() {
          try {
            controller.close()
          } catch {
            // already closed or cancelled
          }
        },
      })
    },
    pull() {
      const ready = waiting
      waiting = []
      for (const fn of ready) fn()
    },
    cancel() {
      stop?.()
    },
  })
  request.signal?.addEventListener('abort', () => stop?.(), { once: true })
  return new Response(body, { status: reply.status, headers: reply.headers })
}

async function readLimited(request: Request, limit: number): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (declared > limit) throw tooLarge(limit)
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel().catch(() => {})
      throw tooLarge(limit)
    }
    chunks.push(value)
  }
  const all = new Uint8Array(size)
  let at = 0
  for (const c of chunks) {
    all.set(c, at)
    at += c.byteLength
  }
  try {
    // Strict, as the Node listener: replacing bad bytes with U+FFFD would write a key the client never sent.
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(all)
  } catch {
    throw new InvalidArgumentError('body: not valid UTF-8')
  }
}
