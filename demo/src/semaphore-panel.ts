/**
 * The semaphore panel: three permits shared by every open tab. A tab takes
 * one (waiting in line when all three are out) and gives it back; every tab
 * shows who holds which slot, and which tabs wait.
 */
import { isZarisError, type Client, type Permit, type PermitHolder } from 'zaris'
import { every, h, ownerName, quietly, type Say, type Unmount } from './dom'

export const SEMAPHORE_KEY = 'demo:uploads'
export const PERMITS = 3

export function semaphorePanel(root: HTMLElement, client: Client, say: Say): Unmount {
  const closing = new AbortController()
  let permit: Permit | null = null
  let waiting: AbortController | undefined
  let holders: PermitHolder[] = []

  const take = h('button', { type: 'button', 'data-testid': 'sem-acquire', onclick: () => void onTake() }, 'Take a permit')
  const cancel = h('button', { type: 'button', class: 'secondary', 'data-testid': 'sem-cancel', onclick: () => waiting?.abort(new Error('cancelled')) }, 'Stop waiting')
  const give = h('button', { type: 'button', class: 'secondary', 'data-testid': 'sem-release', onclick: () => void permit?.release() }, 'Give it back')
  const count = h('output', { class: 'counter', 'data-testid': 'sem-count', 'aria-live': 'polite' }, `0 of ${PERMITS}`)
  const mine = h('p', { 'data-testid': 'sem-mine' }, 'This tab holds no permit.')
  const list = h('ol', { class: 'line', start: 0, 'data-testid': 'sem-holders', 'aria-label': 'Permits by slot' })
  root.replaceChildren(
    h('h2', { id: 'semaphore-title' }, 'Semaphore ', h('code', {}, SEMAPHORE_KEY), `: ${PERMITS} permits`),
    h('p', { class: 'note' }, `At most ${PERMITS} tabs hold a permit at once; the others wait in line.`),
    h('div', { class: 'row' }, count, take, cancel, give),
    mine,
    list,
  )

  async function onTake() {
    if (permit?.held || waiting) return
    const controller = (waiting = new AbortController())
    const stop = () => controller.abort(new Error('closing'))
    closing.signal.addEventListener('abort', stop)
    render()
    try {
      const got = await client.semaphores.acquire(SEMAPHORE_KEY, { limit: PERMITS, ttl: 10_000, wait: Infinity, signal: controller.signal })
      permit = got
      if (got) {
        say(`Took a permit (token ${got.token}).`)
        got.signal.addEventListener('abort', () => {
          const code = isZarisError(got.signal.reason) ? got.signal.reason.code : 'ENDED'
          if (!closing.signal.aborted) say(code === 'RELEASED' ? 'Gave the permit back.' : `Lost the permit (${code}).`, code !== 'RELEASED')
          render()
        })
      }
    } catch (err) {
      if (!controller.signal.aborted) say(`Taking a permit failed: ${(err as Error).message}`, true)
    } finally {
      closing.signal.removeEventListener('abort', stop)
      waiting = undefined
      render()
    }
  }

  function render() {
    const held = Boolean(permit?.held)
    take.disabled = held || Boolean(waiting)
    cancel.disabled = !waiting
    give.disabled = !held
    count.textContent = `${holders.length} of ${PERMITS}`
    const own = held ? holders.find((x) => x.token === permit!.token) : undefined
    mine.textContent = held ? `This tab holds a permit${own ? ` (slot ${own.slot}, token ${own.token})` : ''}.` : waiting ? 'This tab waits for a permit.' : 'This tab holds no permit.'
    mine.dataset.state = held ? 'holds' : waiting ? 'waiting' : 'none'
    if (holders.length === 0) list.replaceChildren(h('li', { class: 'empty' }, 'Every permit is free.'))
    else list.replaceChildren(...holders.map((x) => h('li', { 'data-owner': x.owner, 'data-slot': x.slot }, `slot ${x.slot}: ${ownerName(x.owner, client.id)}`)))
  }
  let reading = false
  const read = async () => {
    if (reading || closing.signal.aborted) return
    reading = true
    holders = (await quietly(client.semaphores.holders(SEMAPHORE_KEY))) ?? holders
    reading = false
    if (!closing.signal.aborted) render()
  }
  void read()
  const stopReading = every(300, () => void read())

  return async () => {
    stopReading()
    closing.abort()
    if (permit?.held) await quietly(permit.release())
  }
}
