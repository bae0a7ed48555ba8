/**
 * The election panel: every tab campaigns for `demo:leader`; one leads, the
 * others follow and take over when it goes. Presence of the open tabs comes
 * from leases at `demo:presence:<id>`, which end when a tab goes away (at
 * once on IndexedDB and through a node, at their TTL for a crashed browser).
 */
import type { Client, Election, Lease } from 'zaris'
import { follow, h, quietly, type Say, type Unmount } from './dom'
import type { TabState } from './tab-state'

const LEADER_KEY = 'demo:leader'
const PRESENCE = 'demo:presence:'
const TTL = 5_000

export function electionPanel(root: HTMLElement, client: Client, tab: TabState, say: Say): Unmount {
  const closing = new AbortController()
  const role = h('span', { class: 'badge follower', 'data-testid': 'role' }, 'follower')
  const leaderText = h('dd', { 'data-testid': 'leader' }, '—')
  const termText = h('dd', { 'data-testid': 'leader-token' }, '—')
  const presence = h('ul', { class: 'presence', 'data-testid': 'presence', 'aria-live': 'polite', 'aria-labelledby': 'tabs-title' })
  const resign = h('button', { type: 'button', class: 'secondary', 'data-testid': 'resign', onclick: () => void election.resign() }, 'Step down')

  root.replaceChildren(
    h('h2', { id: 'election-title' }, 'Leader election ', role),
    h('dl', { class: 'facts' }, h('dt', {}, 'Leader'), leaderText, h('dt', {}, 'Term (token)'), termText),
    h('div', { class: 'row' }, resign),
    h('h3', { id: 'tabs-title' }, 'Open tabs'),
    presence,
  )

  const election: Election = client.election(LEADER_KEY, { ttl: TTL, candidate: client.id })
  const render = () => {
    const leader = election.leader
    const leading = election.isLeader
    role.textContent = leading ? 'leader' : 'follower'
    role.className = `badge ${leading ? 'leader' : 'follower'}`
    leaderText.textContent = leader ? `${leader.candidate}${leader.candidate === client.id ? ' (this tab)' : ''}` : 'nobody yet'
    termText.textContent = leader ? String(leader.token) : '—'
    resign.disabled = !leading
    tab.set({ leader: leading })
    drawPresence()
  }
  election.addEventListener('leader', render)
  election.addEventListener('elected', () => {
    say('This tab is now the leader.')
    render()
  })
  election.addEventListener('deposed', () => {
    render()
    if (!closing.signal.aborted) void campaign() // stand again
  })
  let campaigning: Promise<unknown> = Promise.resolve()
  const campaign = () => (campaigning = election.campaign({ signal: closing.signal }).catch((err) => {
    if (!closing.signal.aborted) say(`Campaign failed: ${err.message}`, true)
  }))
  void campaign()

  // This tab's presence: a lease that lives while the tab does. The key may
  // still be held a moment (this tab's id, from before a store switch), so
  // wait for it, and take it again whenever it is lost.
  let lease: Lease | null = null
  const present = (async () => {
    while (!closing.signal.aborted) {
      lease = await quietly(client.leases.grant(`${PRESENCE}${client.id}`, { ttl: TTL, wait: Infinity, signal: closing.signal, value: { since: new Date().toISOString() } })) ?? null
      if (!lease) {
        if (!closing.signal.aborted) await new Promise((r) => setTimeout(r, 500))
        continue
      }
      // Until it is lost (then take it again) or the panel goes.
      const held = lease
      await new Promise<void>((r) => {
        if (held.signal.aborted || closing.signal.aborted) return r()
        held.signal.addEventListener('abort', () => r(), { once: true })
        closing.signal.addEventListener('abort', () => r(), { once: true })
      })
    }
  })()

  // The open tabs, redrawn only when one comes or goes (not on every renewal).
  const tabs = new Set<string>()
  let drawn = ''
  function drawPresence() {
    const ids = [...tabs].sort()
    const leaderId = election.leader?.candidate
    const key = `${ids.join(',')}|${leaderId}`
    if (key === drawn) return
    drawn = key
    if (ids.length === 0) return presence.replaceChildren(h('li', { class: 'empty' }, 'Looking…'))
    presence.replaceChildren(
      ...ids.map((id) => h('li', { 'data-id': id, class: id === leaderId ? 'leads' : '' }, `${id}${id === client.id ? ' (this tab)' : ''}${id === leaderId ? ' — leader' : ''}`)),
    )
  }
  const watch = client.watch(PRESENCE, { prefix: true, signal: closing.signal })
  const watching = (async () => {
    await quietly(watch.ready)
    for (const e of (await quietly(client.list(PRESENCE))) ?? []) tabs.add(e.key.slice(PRESENCE.length))
    drawPresence()
    await follow(watch, (ev) => {
      const id = ev.key.slice(PRESENCE.length)
      if (ev.type === 'put') tabs.add(id)
      else tabs.delete(id)
      drawPresence()
    }, closing.signal, say, 'Presence')
  })()
  render()

  return async () => {
    closing.abort()
    await campaigning
    await election.close()
    await present
    if (lease?.held) await quietly(lease.revoke())
    watch.close()
    await watching
  }
}
