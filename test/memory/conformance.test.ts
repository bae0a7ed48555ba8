import { memoryAdapter } from 'zaris/memory'
import { testAdapter } from '../conformance'

testAdapter('memory', (namespace) => memoryAdapter({ namespace }))
