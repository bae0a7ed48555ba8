import { Client } from 'zaris'
import { memoryAdapter } from 'zaris/memory'
import { runConformance } from '../conformance'

let n = 0
runConformance('memory', async () => {
  const namespace = `conformance-${++n}-${Math.random().toString(36).slice(2)}`
  const opened: Client[] = []
  return {
    async connect(options) {
      const client = new Client(memoryAdapter({ namespace }), options)
      opened.push(client)
      return client
    },
    async adapter() {
      return memoryAdapter({ namespace })
    },
    async close() {
      await Promise.all(opened.map((c) => c.close()))
    },
  }
})
