import type { Scenario } from '../lib/report'
import type { BenchContext } from './context'
export async function scaleScenarios(ctx: BenchContext): Promise<Scenario[]> { void ctx; return [] }
