/**
 * `GET /v1/<ns>/events?after=R`: one page of the history after revision R,
 * what a watch from R would replay, as JSON — for a client that already
 * streams the namespace and needs the past of one prefix. A page holds at
 * most 1 000 events and about the node's page byte limit (a commit is never
 * split, so it may pass that by the rest of one commit).
 *
 * @module
 */
import type { HistoryLimits } from '../core/contract/adapter'
import { CompactedError } from '../core/contract/errors'
import { eventsQuery, parseWith } from './protocol'
import { readHistory } from './history-reader'
import type { Namespaces } from './namespaces'
import type { Settings, StorePosition } from './options'
import { jsonText, queryOf, type Exchange, type Reply } from './reply'

/** Most events in one `events` page. */
const PAGE_EVENTS = 1_000

/** The answer to `GET events`. */
export async function history(ex: Exchange, ns: string, namespaces: Namespaces, settings: Settings): Promise<Reply> {
  const { prefix, after, epoch } = parseWith(eventsQuery, { prefix: '', ...queryOf(ex) }, 'query')
  const adapter = await namespaces.adapterOf(ns)
  const position = await settings.positionOf?.(ns)
  checkResume('events after', after, epoch, position)
  const limits: HistoryLimits = { maxEvents: PAGE_EVENTS, maxBytes: settings.maxPageBytes }
  const page = await readHistory(adapter, prefix, after, limits)
  if (!page.more && position) page.through = Math.max(page.through, position.revision)
  return jsonText(200, `{"events":[${page.events.map((e) => JSON.stringify(e)).join(',')}],"through":${page.through},"more":${page.more}}`)
}

/**
 * Refuses a resume from `after` that this store cannot serve though it may
 * still have history that old: the store is another one than the epoch the
 * client knew (reset, or replaced), or it never reached `after` (it was reset).
 */
export function checkResume(what: string, after: number, epoch: string | undefined, position: StorePosition | undefined): void {
  if (!position) return
  if (epoch !== undefined && epoch !== position.epoch) {
    throw new CompactedError(`${what} revision ${after}: the store here is not the one that history came from (it was reset or replaced); read the current state again`)
  }
  if (after > position.revision) {
    throw new CompactedError(`${what} revision ${after}: this store is at revision ${position.revision}; it was reset, so read the current state again`)
  }
}
