/**
 * "Try this": five steps through the page, each with the few lines of zaris
 * the panel runs for it (`demo/src` has them in full).
 */
import { h } from './dom'

interface Step {
  title: string
  text: string
  code: (url: string) => string
}

const STEPS: Step[] = [
  {
    title: 'Open two more tabs.',
    text: 'Each tab connects with an id of its own and campaigns: one leads, and its title and icon say so.',
    code: (url) => `const client = await connect('${url}')
const election = client.election('demo:leader', { ttl: 5_000 })
election.addEventListener('elected', showLeader)
await election.campaign()`,
  },
  {
    title: 'Take the lock in one tab; wait for it in the others.',
    text: '"Acquire" tries once; "Acquire and wait" joins the line, shown in order under the lock.',
    code: () => `// "Acquire": one try, null while another tab holds it
const lock = await client.locks.acquire('demo:lock', { ttl: 8_000 })
// "Acquire and wait": in line until served, or until signal aborts
const next = await client.locks.acquire('demo:lock', { ttl: 8_000, wait: Infinity, signal })`,
  },
  {
    title: 'Freeze the holder.',
    text: 'It stops renewing, as a paused process would; at its TTL the first tab in line gets the lock, with a larger token.',
    code: () => `lock.signal.addEventListener('abort', () => say(lock.signal.reason.code)) // EXPIRED
next.token > lock.token // true: every new holder's token is larger`,
  },
  {
    title: 'Unfreeze it, and write the shared document from both tabs.',
    text: "The stale tab's write is refused, its old token against the current one; the new holder's goes in.",
    code: () => `await client.put('demo:doc', doc, { fence: lock }) // throws FencedError (FENCED)
await client.put('demo:doc', doc, { fence: next }) // accepted`,
  },
  {
    title: 'Close the leader’s tab, or the holder’s.',
    text: 'Another tab leads, and a plain "Acquire" gets the lock, at once.',
    code: () => `// nothing to call: a closed tab's locks, leases and places in line end
// for every tab (IndexedDB: at once; a zaris node: sent on pagehide)`,
  },
]

/** Draws the guide; returns the function that shows another store URL in it. */
export function guide(root: HTMLElement): (url: string) => void {
  const codes = STEPS.map(() => h('code'))
  root.replaceChildren(
    h('h2', { id: 'guide-title' }, 'Try this'),
    h('ol', { class: 'steps', 'data-testid': 'guide' }, ...STEPS.map((s, i) => h('li', {}, h('p', {}, h('span', { class: 'step', 'aria-hidden': 'true' }, `${i + 1}`), h('strong', {}, s.title), ' ', s.text), h('pre', { tabindex: 0, 'aria-label': `Code of step ${i + 1}` }, codes[i]!)))),
  )
  return (url) => STEPS.forEach((s, i) => (codes[i]!.textContent = s.code(url)))
}
