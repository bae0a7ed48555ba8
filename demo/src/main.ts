/**
 * The zaris demo page. Each tab connects to the chosen store with an id of
 * its own and mounts the panels; switching the store unmounts them (every
 * watch, wait, campaign, lease and lock of the old client ends) before the
 * old client closes, then connects again.
 */
import { connect, type Client } from 'zaris'
import { counterPanel } from './counter-panel'
import { docPanel } from './doc-panel'
import type { Unmount } from './dom'
import { electionPanel } from './election-panel'
import { guide } from './guide'
import { lockPanel } from './lock-panel'
import { logPanel } from './log-panel'
import { semaphorePanel } from './semaphore-panel'
import { TabState } from './tab-state'
import { timeline } from './timeline'

type Store = 'idb' | 'node' | 'memory'

const params = new URLSearchParams(location.search)
const nodeUrl = params.get('node') ?? `zaris://${location.hostname}:7861/demo`
const urls: Record<Store, string> = { idb: 'zaris://idb/demo', node: nodeUrl, memory: 'zaris://inproc/demo' }
const id = `tab-${Math.random().toString(36).slice(2, 6)}`
const tab = new TabState(id)

const $ = <T extends HTMLElement>(selector: string) => document.querySelector<T>(selector)!
const status = $('#status')
const say = (msg: string, error = false) => {
  status.textContent = msg
  status.classList.toggle('error', error)
}
const showUrl = guide($('#guide'))

let client: Client | undefined
let unmount: Unmount[] = []
let switching: Promise<void> = Promise.resolve()

async function start(store: Store) {
  const old = client
  client = undefined
  delete document.body.dataset.connected
  say(`Connecting to ${urls[store]}…`)
  // Everything of the old client ends before it closes: no watch or wait is left to fail on a closed store.
  await Promise.allSettled(unmount.splice(0).map((stop) => stop()))
  await old?.close()
  tab.set({ leader: false, holds: false, waiting: false, frozen: false })
  tab.lastLock = null
  showUrl(urls[store])
  let next: Client
  try {
    next = await connect(urls[store], { id })
  } catch (err) {
    return say(`Could not connect to ${urls[store]}: ${(err as Error).message}`, true)
  }
  client = next
  $('#client-id').textContent = id
  unmount = [
    lockPanel($('#lock-panel'), next, tab, say),
    docPanel($('#doc-panel'), next, tab, say),
    electionPanel($('#election-panel'), next, tab, say),
    timeline($('#timeline-panel'), next, say),
    counterPanel($('#counter-panel'), next, say),
    semaphorePanel($('#semaphore-panel'), next, say),
    logPanel($('#log-panel'), next, say),
  ]
  say(`Connected to ${urls[store]} as ${id}.`)
  document.body.dataset.connected = urls[store] // for tests: the panels are mounted on this store
}

const select = $<HTMLSelectElement>('#store')
select.value = (params.get('store') as Store | null) ?? 'idb'
select.addEventListener('change', () => {
  params.set('store', select.value)
  history.replaceState(null, '', `?${params}`)
  const store = select.value as Store
  switching = switching.then(() => start(store))
})
$('#open-tab').addEventListener('click', () => window.open(location.href, '_blank'))
// The stores release a closing tab's holds themselves; closing says goodbye sooner where it can.
addEventListener('pagehide', (ev) => {
  if (!ev.persisted) void client?.close()
})
switching = start(select.value as Store)
