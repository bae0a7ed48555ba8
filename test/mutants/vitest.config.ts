/**
 * The test configuration with one injected bug: `ZARIS_MUTANT=<name>`
 * rewrites one expression of one module of src/ as it is loaded (see
 * mutants.ts). Without the variable it is the ordinary configuration.
 * A module named by the mutant that no longer contains its text is an error,
 * so a mutant cannot go stale silently.
 */
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { mergeConfig, type Plugin } from 'vite'
import base from '../../vite.config'
import { MUTANTS } from './mutants'

const root = fileURLToPath(new URL('../..', import.meta.url))
const name = process.env.ZARIS_MUTANT

function mutate(): Plugin {
  const mutant = name ? MUTANTS.find((m) => m.name === name) : undefined
  if (name && !mutant) throw new Error(`ZARIS_MUTANT=${name}: no such mutant (${MUTANTS.map((m) => m.name).join(', ')})`)
  return {
    name: 'zaris-mutant',
    enforce: 'pre',
    transform(code, id) {
      if (!mutant || !id.split('?')[0]!.endsWith(mutant.file)) return undefined
      if (!code.includes(mutant.from)) throw new Error(`mutant ${mutant.name}: ${mutant.file} no longer contains ${JSON.stringify(mutant.from)}`)
      // Tells the runner the mutant was applied (a module never loaded would let it pass unseen).
      if (process.env.ZARIS_MUTANT_MARK) writeFileSync(process.env.ZARIS_MUTANT_MARK, mutant.name)
      return { code: code.replace(mutant.from, mutant.to), map: null }
    },
  }
}

export default mergeConfig(base, { root, plugins: [mutate()] })
