/**
 * The zaris demo page. Each tab connects to the chosen store with an id of
 * its own and mounts the panels; switching the store reconnects.
 */
import { connect, type Client } from 'zaris'
import { counterPanel } from './counter-panel'
import { electionPanel } from './election-panel'
import { lockPanel } from './lock-panel'
import { logPanel } from './log-panel'
import { timeline } from './timeline'

type Store = 'idb' | 'node' | 'memory'

const params = new URLSearchParams(location.search)
const nodeUrl = params.get('node') ?? `zaris://${location.hostname}:7861/demo`
const urls: Record<Store, string> = { idb: 'zaris://idb/demo', node: nodeUrl, memory: 'zaris://inproc/demo' }
const id = `tab-${Math.random().toString(36).slice(2, 6)}`

const $ = <T extends HTMLElement>(selector: string) => document.querySelector<T>(selector)!
const status = $('#status')
const say = (msg: string, error = false) => {
  status.textContent = msg
  status.classList.toggle('error', error)
}

let client: Client | undefined
let unmount: Array<() => void> = []

async function start(store: Store) {
  for (const stop of unmount) stop()
  unmount = []
  await client?.close()
  say(`Connecting to ${urls[store]}…`)
  try {
    client = await connect(urls[store], { id })
  } catch (err) {
    return say(`Could not connect to ${urls[store]}: ${(err as Error).message}`, true)
  }
  $('#client-id').textContent = id
  unmount = [
    lockPanel($('#lock-panel'), client, say),
    electionPanel($('#election-panel'), client, say),
    timeline($('#timeline-panel'), client, say),
    counterPanel($('#counter-panel'), client, say),
    logPanel($('#log-panel'), client, say),
  ]
  say(`Connected to ${urls[store]} as ${id}.`)
}

const select = $<HTMLSelectElement>('#store')
select.value = (params.get('store') as Store | null) ?? 'idb'
select.addEventListener('change', () => {
  params.set('store', select.value)
  history.replaceState(null, '', `?${params}`)
  void start(select.value as Store)
})
$('#open-tab').addEventListener('click', () => window.open(location.href, '_blank'))
addEventListener('pagehide', () => void client?.close())
void start(select.value as Store)
