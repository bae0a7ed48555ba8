/** The Web Locks API cases (cases.ts) and the checked history (history.ts) against zaris/web-locks over a real redis-server. */
import { afterAll, beforeAll } from 'vitest'
import { startRedis, type RedisServer } from '../redis/server'
import { webLocksCases } from './cases'
import { zarisContexts } from './fixture'
import { historyCases } from './history'

let server: RedisServer
beforeAll(async () => {
  server = await startRedis()
})
afterAll(async () => {
  await server?.dispose()
})

webLocksCases('zaris/web-locks over Redis', zarisContexts(() => server.url('web-locks')))
historyCases('Redis', () => server.url('web-locks-history'))
