/**
 * `file://` connection strings: what they name, and the mistakes refused
 * with an INVALID_URL that says what is wrong, before anything is loaded.
 */
import { describe, expect, test } from 'vitest'
import { parseUrl } from 'zaris'
import { parseFileUrl } from 'zaris/file'

describe('parseFileUrl', () => {
  test('the path, the namespace and the sync mode', () => {
    expect(parseFileUrl('file:///var/lib/app/zaris.db?ns=jobs')).toEqual({ path: '/var/lib/app/zaris.db', namespace: 'jobs', sync: 'normal' })
    expect(parseFileUrl('file:///tmp/a.db?ns=x&sync=full')).toEqual({ path: '/tmp/a.db', namespace: 'x', sync: 'full' })
    expect(parseFileUrl('file:///tmp/a.db?sync=normal&ns=x').sync).toBe('normal')
    expect(parseFileUrl('file://localhost/tmp/a.db?ns=x').path).toBe('/tmp/a.db')
    // Percent-encoding is decoded: a path with a space and a #, as pathToFileURL writes it.
    expect(parseFileUrl('file:///tmp/my%20dir/a%23b.db?ns=x').path).toBe('/tmp/my dir/a#b.db')
    // A Windows drive path; a drive-like part further in is an ordinary folder name.
    expect(parseFileUrl('file:///C:/data/a.db?ns=x').path).toBe('C:/data/a.db')
    expect(parseFileUrl('file:///data/C:/a.db?ns=x').path).toBe('/data/C:/a.db')
  })

  test.each([
    ['file:///tmp/a.db', /add \?ns=<namespace> to name the zaris namespace, as in file:\/\/\/var\/lib\/app\/zaris.db\?ns=demo/],
    ['file:///tmp/a.db?ns=', /names no namespace/],
    ['file:///tmp/a.db?ns=a/b', /namespace "a\/b" may use only/],
    ['file:///tmp/a.db?ns=x&mode=ro', /unknown parameter "mode"/],
    ['file:///tmp/a.db?ns=x&sync=off', /sync must be normal or full, got "off"/],
    ['file://server/share/a.db?ns=x', /names the host "server": a file:\/\/ store is a file of this machine/],
    ['file:///tmp/?ns=x', /names no file/],
    ['file:///?ns=x', /names no file/],
    ['file:///tmp/a%00b.db?ns=x', /names no file/],
    ['file:///tmp/a%E0%A4%A.db?ns=x', /not valid percent-encoding/],
    ['http://x/a.db?ns=x', /is not a file:\/\/ URL/],
    ['file://[::1/a.db?ns=x', /is not a valid file URL/],
  ])('%s is refused', (url, message) => {
    expect(() => parseFileUrl(url)).toThrow(expect.objectContaining({ code: 'INVALID_URL', message: expect.stringMatching(message) }))
  })
})

test('connect knows file:// and names what it opens, without opening it', () => {
  expect(parseUrl('file:///tmp/zaris.db?ns=demo')).toEqual({ scheme: 'file', kind: 'file', url: 'file:///tmp/zaris.db?ns=demo', namespace: 'demo' })
  expect(() => parseUrl('file:///tmp/zaris.db')).toThrow(expect.objectContaining({ code: 'INVALID_URL' }))
})
