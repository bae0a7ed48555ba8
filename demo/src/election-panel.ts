/**
 * The election panel: every tab campaigns for `demo:leader`; one leads, the
 * others follow and take over when it goes. Presence of the open tabs comes
 * from leases at `demo:presence:<id>`, which vanish when a tab stops renewing.
 */
import type { Client, Election, Entry, Lease } from 'zaris'
import { h } from './dom'

const LEADER_KEY = 'demo:leader'
const PRESENCE = 'demo:presence:'
const TTL = 5_000

export function electionPanel(root: HTMLElement, client: Client, say: (msg: string, error?: boolean) => void): () => void {
  const stop = new AbortController()
  const role = h('span', { class: 'badge follower', 'data-testid': 'role' }, 'follower')
  const leaderText = h('dd', { 'data-testid': 'leader' }, '—')
  const termText = h('dd', { 'data-testid': 'leader-token' }, '—')
  const presence = h('ul', { class: 'presence', 'data-testid': 'presence', 'aria-live': 'polite' })
  const resign = h('button', { type: 'button', class: 'secondary', 'data-testid': 'resign', onclick: () => void election.resign() }, 'Step down')

  root.replaceChildren(
    h('h2', { id: 'election-title' }, 'Leader election ', role),
    h('dl', { class: 'facts' }, h('dt', {}, 'Leader'), leaderText, h('dt', {}, 'Term (token)'), termText),
    h('div', { class: 'row' }, resign),
    h('h2', {}, 'Open tabs'),
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
    for (const li of presence.children) li.classList.toggle('leads', li.getAttribute('data-id') === leader?.candidate)
  }
  election.addEventListener('leader', render)
  election.addEventListener('elected', () => {
    say('This tab is now the leader.')
    render()
  })
  election.addEventListener('deposed', () => {
    render()
    // Stand again, unless this tab is closing.
    if (!stop.signal.aborted) void campaign()
  })
  const campaign = () => election.campaign({ signal: stop.signal }).catch((err) => {
    if (!stop.signal.aborted) say(`Campaign failed: ${err.message}`, true)
  })
  void campaign()

  // This tab's presence: a lease that lives while the tab does.
  let lease: Lease | null = null
  void client.leases.grant(`${PRESENCE}${client.id}`, { ttl: TTL, value: { since: new Date().toISOString() } }).then((l) => (lease = l))

  const tabs = new Map<string, Entry>()
  const drawPresence = () => {
    presence.replaceChildren(
      ...[...tabs.keys()].sort().map((key) => {
        const id = key.slice(PRESENCE.length)
        return h('li', { 'data-id': id }, `${id}${id === client.id ? ' (this tab)' : ''}${id === election.leader?.candidate ? ' — leader' : ''}`)
      }),
    )
  }
  const watch = client.watch(PRESENCE, { prefix: true, signal: stop.signal })
  void (async () => {
    await watch.ready
    for (const e of await client.list(PRESENCE)) tabs.set(e.key, e)
    drawPresence()
    for await (const ev of watch) {
      if (ev.type === 'put') tabs.set(ev.key, { key: ev.key, value: ev.value ?? null, revision: ev.revision, created: ev.created ?? ev.revision })
      else tabs.delete(ev.key)
      drawPresence()
    }
  })().catch((err) => say(`Presence failed: ${err.message}`, true))
  election.addEventListener('leader', drawPresence)
  render()

  return () => {
    stop.abort()
    void election.close()
    void lease?.revoke()
  }
}
