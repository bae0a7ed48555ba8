/** The Web Locks API cases (cases.ts) and the checked history (history.ts) against zaris/web-locks over the memory store. */
import { webLocksCases } from './cases'
import { zarisContexts } from './fixture'
import { historyCases } from './history'

const url = `zaris://inproc/web-locks-${Math.random().toString(36).slice(2)}`
webLocksCases('zaris/web-locks over memory', zarisContexts(() => url))
historyCases('memory', () => url)
