/**
 * etcd watch events as zaris events.
 *
 * etcd reports a key's changes per revision: a put of a slot, a delete of a
 * slot. A zaris key's revision may hold several (a new life deletes one slot
 * and puts the other; a user delete deletes a slot and puts the tombstone),
 * so the events of one revision are read together, key by key:
 *
 * - a slot was put: `put` (the other slot's delete is part of it);
 * - else a slot was deleted and the tombstone put: the user deleted it, `delete`;
 * - else a slot was deleted alone: only a lease revocation does that (it is
 *   a revision of its own, with deletes only), so the entry's TTL ran out: `expire`;
 * - a tombstone alone (a delete of an absent key, or the tombstone's own lease
 *   ending) is no event.
 *
 * The decision reads only the key's own etcd keys, which every watch of a
 * prefix covering the key receives, in one response per revision; so every
 * watcher classifies every change alike, and exactly once.
 *
 * @module
 */
import type { IEvent } from 'etcd3'
import type { WatchEvent } from '../../core/contract/adapter'
import { putEvent, type Layout, type RawKv } from './layout'

interface KeyChange {
  put?: RawKv
  slotDeleted: boolean
  tombstonePut: boolean
}

/** The zaris events of a run of etcd events (whole revisions, in revision order). */
export function toWatchEvents(layout: Layout, events: IEvent[]): WatchEvent[] {
  const out: WatchEvent[] = []
  let i = 0
  while (i < events.length) {
    const revision = Number(events[i]!.kv.mod_revision)
    const changes = new Map<string, KeyChange>()
    for (; i < events.length && Number(events[i]!.kv.mod_revision) === revision; i++) {
      const ev = events[i]!
      const part = layout.part(ev.kv.key)
      if (!part) continue
      let change = changes.get(part.key)
      if (!change) changes.set(part.key, (change = { slotDeleted: false, tombstonePut: false }))
      const isDelete = (ev.type as unknown) === 'Delete' || (ev.type as unknown) === 1
      if (part.kind === 'tombstone') change.tombstonePut ||= !isDelete
      else if (isDelete) change.slotDeleted = true
      else change.put = ev.kv as unknown as RawKv
    }
    for (const [key, change] of changes) {
      if (change.put) out.push(putEvent(key, change.put))
      else if (change.slotDeleted) out.push({ type: change.tombstonePut ? 'delete' : 'expire', key, revision })
    }
  }
  return out
}
