/**
 * The error table of docs/api.md against the code: it lists every code of the
 * `ErrorCode` union (ERROR_CODES is that union's one list) and no other, each
 * row names a class that `zaris` exports, and an error of each code that
 * crosses the wire comes back as the class its row names — so the table
 * cannot drift from the code.
 */
import { describe, expect, test } from 'vitest'
import * as zaris from 'zaris'
import { ERROR_CODES } from '../../src/core/contract/errors'
import { section } from './snippets'

interface Row {
  className: string
  codes: string[]
  when: string
}

/** The rows of the first table under `## Errors`: `| \`Class\` | \`CODE\` \`CODE\` | when |`. */
function errorTable(): Row[] {
  const lines = section('docs/api.md', 'Errors').split('\n')
  return lines.filter((line) => /^\| `\w+Error` \|/.test(line)).map((line) => {
    const [className, codes, when] = line.split('|').slice(1, -1).map((cell) => cell.trim())
    return { className: className!.replaceAll('`', ''), codes: [...codes!.matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]!), when: when! }
  })
}

const rows = errorTable()
const exported = zaris as unknown as Record<string, unknown>

describe("the error table of docs/api.md", () => {
  test('lists every code of ErrorCode, and only those', () => {
    const listed = new Set(rows.flatMap((r) => r.codes))
    expect([...listed].sort()).toEqual([...ERROR_CODES].sort())
  })

  test.each(rows)('$className is exported by zaris, is a ZarisError and says when', ({ className, when }) => {
    const Class = exported[className]
    expect(typeof Class).toBe('function')
    expect((Class as { prototype: unknown }).prototype).toBeInstanceOf(zaris.ZarisError)
    expect(when.length).toBeGreaterThan(10)
  })

  test.each(ERROR_CODES.map((code) => ({ code })))('$code comes back from the wire as the class its row names', ({ code }) => {
    const back = zaris.errorFromJSON({ code, message: `a ${code} error` })
    expect(back).toMatchObject({ code, message: `a ${code} error` })
    expect(zaris.isZarisError(back, code)).toBe(true)
    // CLOSED has two rows (a hold's end, a call on a closed client); the wire gives the call's class.
    const classes = rows.filter((r) => r.codes.includes(code)).map((r) => r.className)
    expect(classes).toContain(back.constructor.name)
    expect(back).toBeInstanceOf(exported[back.constructor.name] as new () => unknown)
  })

  test('a code this version does not know is an InternalError that keeps its message', () => {
    const back = zaris.errorFromJSON({ code: 'FROM_THE_FUTURE', message: 'x' })
    expect(back).toBeInstanceOf(zaris.InternalError)
    expect(back).toMatchObject({ code: 'INTERNAL', message: 'x' })
  })
})
