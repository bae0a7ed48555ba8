// @ts-check
/**
 * A Stryker ignorer: the text of an error's message is not mutated. A
 * message is for people; a test that pinned its wording would pin an
 * implementation detail, so a mutant that empties it can only survive and
 * would only lower the score. What the error is (its class and `code`, the
 * arguments without a space: 'EXPIRED', 'STOLEN'...) is still mutated.
 * Same for the helpers that only name a hold in messages (`holdName`, and
 * `Hold#what`, which calls it).
 */
import { declareValuePlugin, PluginKind } from '@stryker-mutator/api/plugin'

/** @param {import('@babel/core').NodePath} path */
function isMessage(path) {
  if (!path.isStringLiteral() && !path.isTemplateLiteral()) return false
  const parent = path.parentPath
  if (!parent?.isNewExpression() || !parent.node.arguments.includes(/** @type {any} */ (path.node))) return false
  const callee = parent.node.callee
  if (callee.type !== 'Identifier' || !callee.name.endsWith('Error')) return false
  const text = path.isStringLiteral() ? path.node.value : path.node.quasis.map((q) => q.value.cooked ?? '').join('')
  return text.includes(' ')
}

/** Functions whose result is only the text of messages. */
const NAMERS = new Set(['holdName', 'what'])

/** @param {import('@babel/core').NodePath} path */
function isNamer(path) {
  const node = path.node
  if (node.type === 'FunctionDeclaration') return NAMERS.has(node.id?.name ?? '')
  if (node.type === 'ClassPrivateMethod') return NAMERS.has(node.key.id.name)
  return false
}

export const strykerPlugins = [
  declareValuePlugin(PluginKind.Ignore, 'error-messages', {
    /** @param {import('@babel/core').NodePath} path */
    shouldIgnore(path) {
      if (isMessage(path)) return 'the text of an error message (for people, not behaviour)'
      if (isNamer(path)) return 'names a hold in messages only'
      return undefined
    },
  }),
]
