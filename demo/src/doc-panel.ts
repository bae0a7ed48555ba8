/**
 * The shared document: one entry, `demo:doc`, written only with fenced
 * writes — `put(..., { fence: lock })`, which the store accepts only while
 * the lock is still held with that lock's token. A tab that was frozen past
 * its TTL, while another tab took the lock, still has its old token: its
 * write is refused (`FENCED`), and the new holder's goes in. That is what
 * fencing tokens are for, and what a lock without them cannot do.
 */
import { isZarisError, type Client, type Value } from 'zaris'
import { follow, h, quietly, type Say, type Unmount } from './dom'
import { LOCK_KEY } from './lock-panel'
import type { TabState } from './tab-state'

export const DOC_KEY = 'demo:doc'

interface Doc {
  text: string
  by: string
  token: number
}

function asDoc(value: Value | undefined): Doc | undefined {
  const v = value as Partial<Doc> | null | undefined
  return v && typeof v === 'object' && typeof v.text === 'string' && typeof v.by === 'string' && typeof v.token === 'number' ? (v as Doc) : undefined
}

export function docPanel(root: HTMLElement, client: Client, tab: TabState, say: Say): Unmount {
  const closing = new AbortController()
  const current = h('blockquote', { class: 'doc', 'data-testid': 'doc-value' }, 'Empty.')
  const text = h('input', { type: 'text', id: 'doc-text', 'data-testid': 'doc-text', maxlength: 120, value: `Hello from ${client.id}` })
  const write = h('button', { type: 'button', 'data-testid': 'doc-write', onclick: () => void onWrite() }, 'Write with this tab\'s lock')
  const result = h('p', { class: 'result', 'data-testid': 'doc-result', 'aria-live': 'polite' }, 'Take the lock, then write.')
  const attempts = h('ol', { class: 'attempts', 'data-testid': 'doc-attempts', reversed: true, 'aria-label': 'This tab\'s writes, newest first' })

  root.replaceChildren(
    h('h2', { id: 'doc-title' }, 'Shared document ', h('code', {}, DOC_KEY)),
    h('p', { class: 'hint' }, 'Written only with ', h('code', {}, '{ fence: lock }'), ': the store refuses a token that no longer holds the lock.'),
    current,
    h('div', { class: 'row' }, h('label', { for: 'doc-text' }, 'Text'), text),
    h('div', { class: 'row' }, write),
    result,
    attempts,
  )

  function show(doc: Doc | undefined) {
    current.textContent = doc ? `“${doc.text}” — written by ${doc.by}${doc.by === client.id ? ' (this tab)' : ''} with token ${doc.token}` : 'Empty.'
  }

  function outcome(kind: 'accepted' | 'refused' | 'none', message: string, data: Record<string, string | number> = {}) {
    result.textContent = message
    result.className = `result ${kind}`
    result.dataset.outcome = kind
    for (const [k, v] of Object.entries(data)) result.dataset[k] = String(v)
    if (kind === 'none') return
    attempts.prepend(h('li', { class: kind }, `${kind === 'accepted' ? '✓' : '✗'} token ${data.token}: ${kind}`))
    while (attempts.children.length > 5) attempts.lastElementChild!.remove()
  }

  async function onWrite() {
    const lock = tab.lastLock
    if (!lock) return outcome('none', 'This tab has not held the lock yet: take it first (Acquire).')
    delete result.dataset.current
    try {
      await client.put(DOC_KEY, { text: text.value, by: client.id, token: lock.token }, { fence: lock })
      outcome('accepted', `Accepted: written with token ${lock.token}.`, { token: lock.token })
    } catch (err) {
      if (!isZarisError(err, 'FENCED')) return say(`Write failed: ${(err as Error).message}`, true)
      const now = await quietly(client.locks.holder(LOCK_KEY))
      const against = now ? `the lock is held by ${now.owner}${now.owner === client.id ? ' (this tab)' : ''} with token ${now.token}` : 'the lock is free'
      outcome('refused', `Refused (FENCED): this tab's token ${lock.token} is stale — ${against}.`, { token: lock.token, current: now?.token ?? 'none' })
    }
  }

  const watch = client.watch(DOC_KEY, { signal: closing.signal })
  const watching = (async () => {
    show(asDoc((await quietly(client.get(DOC_KEY)))?.value))
    await follow(watch, (ev) => show(ev.type === 'put' ? asDoc(ev.value) : undefined), closing.signal, say, 'Document watch')
  })()

  return async () => {
    closing.abort()
    watch.close()
    await watching
  }
}
