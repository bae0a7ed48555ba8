// @ts-check
/**
 * A Stryker reporter that prints each surviving or uncovered mutant as soon
 * as it is known (`file:line:col mutator: replacement`), so a long run shows
 * what to look at before it ends; the full report comes at the end as usual.
 */
import { declareClassPlugin, PluginKind } from '@stryker-mutator/api/plugin'

class Survivors {
  /** @param {import('@stryker-mutator/api/core').MutantResult} m */
  onMutantTested(m) {
    if (m.status !== 'Survived' && m.status !== 'NoCoverage') return
    const at = `${m.fileName.replace(/^.*?\/src\//, 'src/')}:${m.location.start.line}:${m.location.start.column}`
    console.log(`[${m.status}] ${at} ${m.mutatorName}: ${(m.replacement ?? '').replace(/\s+/g, ' ').slice(0, 160)}`)
  }
}

export const strykerPlugins = [declareClassPlugin(PluginKind.Reporter, 'survivors', Survivors)]
