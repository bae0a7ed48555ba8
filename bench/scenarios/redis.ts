import type { Scenario } from '../lib/report'
import type { BenchContext } from './context'
export async function redisScenarios(ctx: BenchContext): Promise<Scenario[]> { void ctx; return [] }
