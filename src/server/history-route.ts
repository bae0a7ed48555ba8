/**
 * `GET /v1/<ns>/events?after=R`: one page of the history after revision R,
 * what a watch from R would replay, as JSON — for a client that already
 * streams the namespace and needs the past of one prefix.
 *
 * @module
 */
import type { WatchEvent } from '../core/adapter'
import { CompactedError } from '../core/errors'
import { eventsQuery, parseWith } from '../adapters/http/protocol'
import type { Namespaces } from './namespaces'
import type { Settings } from './options'
import { jsonText, queryOf, type Exchange, type Reply } from './reply'

/** An `events` page stops at a revision boundary once it holds this many events or bytes. */
const PAGE_EVENTS = 1_000
const PAGE_BYTES = 1024 * 1024

/**
 * One page of the history after `after`. The whole namespace is followed
 * (and filtered here) so that `through` can say up to where the page is
 * complete even when the prefix saw no change: the store's revision, or
 * where a full page was cut.
 */
export async function history(ex: Exchange, ns: string, namespaces: Namespaces, settings: Settings): Promise<Reply> {
  const { prefix, after, epoch } = parseWith(eventsQuery, { prefix: '', ...queryOf(ex) }, 'query')
  const adapter = await namespaces.adapterOf(ns)
  const parts: string[] = []
  let bytes = 0
  let through = after
  let more = false
  let early: Error | undefined
  const sink = {
    event: (ev: WatchEvent) => {
      if (more) return
      // Cut only between revisions, so `through` is complete.
      if (ev.revision !== through && (parts.length >= PAGE_EVENTS || bytes >= PAGE_BYTES)) {
        more = true
        return
      }
      through = ev.revision
      if (!ev.key.startsWith(prefix)) return
      const part = JSON.stringify(ev)
      parts.push(part)
      bytes += part.length
    },
    error: (err: Error) => {
      early ??= err
    },
  }
  const unsubscribe = await adapter.watch('', sink, after)
  try {
    const position = early ? undefined : await settings.positionOf?.(ns)
    if (!early && position && epoch !== undefined && epoch !== position.epoch) {
      early = new CompactedError(`events after revision ${after}: the store here is not the one that history came from (it was reset or replaced); read the current state again`)
    }
    if (!early && position && after > position.revision) {
      early = new CompactedError(`events after revision ${after}: this store is at revision ${position.revision}; it was reset, so read the current state again`)
    }
    if (early) throw early
    if (!more && position) through = Math.max(through, position.revision)
  } finally {
    unsubscribe()
  }
  return jsonText(200, `{"events":[${parts.join(',')}],"through":${through},"more":${more}}`)
}
