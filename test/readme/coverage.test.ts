/**
 * Every code block of README.md and docs/*.md runs in a test, or says on the
 * line before it why not (`<!-- not run: why -->`), and such markers stay
 * rare. Every relative link between them points at a file that exists and,
 * with `#anchor`, at a heading of that file.
 */
import { existsSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'
import { describe, expect, test } from 'vitest'
import { allBlocks, markdown, markdownFiles, root, runnerOf, titleOf } from './snippets'

/** Docs other branches are writing now; a link to one may dangle until it lands, and not after. */
const PENDING = new Set<string>([])

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-')
}

function anchorsOf(file: string): Set<string> {
  return new Set(markdown(file).split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => slug(l.replace(/^#+ /, ''))))
}

describe('code blocks of README and docs', () => {
  const blocks = allBlocks()

  test('each is run by a test or marked as not run', () => {
    const orphans = blocks.filter((b) => b.notRun === undefined && runnerOf(b) === undefined).map(titleOf)
    expect(orphans, 'make these runnable (a ts block that connects to a store a runner knows) or mark them <!-- not run: why -->').toEqual([])
  })

  test('a marked block says why, and marks are rare (at most one block in six)', () => {
    const marked = blocks.filter((b) => b.notRun !== undefined)
    for (const b of marked) expect(b.notRun!.length, titleOf(b)).toBeGreaterThan(20)
    expect(marked.length).toBeLessThanOrEqual(Math.floor(blocks.length / 6))
  })
})

describe('links of README and docs', () => {
  const links = markdownFiles().flatMap((file) =>
    [...markdown(file).matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1]!)
      .filter((href) => !/^[a-z]+:/.test(href))
      .map((href) => ({ file, href })),
  )

  test('there are links to check', () => {
    expect(links.length).toBeGreaterThan(30)
  })

  test.each(links.map((l) => ({ ...l, title: `${l.file} -> ${l.href}` })))('$title', ({ file, href }) => {
    const [path, anchor] = href.split('#') as [string, string | undefined]
    const target = path === '' ? file : relative(root, normalize(join(root, dirname(file), path)))
    if (PENDING.has(target) && !existsSync(join(root, target))) return
    expect(existsSync(join(root, target)), `${target} exists`).toBe(true)
    if (anchor !== undefined && target.endsWith('.md')) expect([...anchorsOf(target)], `#${anchor} in ${target}`).toContain(anchor)
  })

  test('each pending doc is still missing (once it lands, take it off PENDING)', () => {
    for (const file of PENDING) expect(existsSync(join(root, file)), file).toBe(false)
  })
})
