/**
 * The help texts of `zaris`: one summary for `zaris --help`, one page per
 * command for `zaris COMMAND --help`.
 *
 * @module
 */
import { DEFAULT_URL } from './args'

const CONNECTION = `Connection (every command but serve):
  --url URL         the store: a node (zaris://host:7861/NS), redis://host:6379/0?ns=NS, ...
                    (default ${DEFAULT_URL}, or ZARIS_URL)
  --token SECRET    bearer token of a node started with --token (or ZARIS_TOKEN)
  --json            print JSON for scripts (one value; JSON lines for watch)`

/** Each inspect command: its synopsis, one line of summary, and what more its page says. */
export const COMMANDS: Record<string, { synopsis: string; summary: string; details: string }> = {
  get: {
    synopsis: 'get KEY',
    summary: 'show the entry at KEY',
    details: 'Prints the entry: value (as JSON), revision, created (a lock\'s token), owner, time left.\nExit 1 when there is no entry (with --json: null).',
  },
  put: {
    synopsis: 'put KEY VALUE [--ttl MS] [--string]',
    summary: 'write VALUE at KEY',
    details:
      'VALUE is read as JSON when it parses (5, true, {"a":1}, "quoted"), else stored as a string;\n--string always stores it as a string. --ttl MS: the entry expires after MS milliseconds.\nPrints the revision written (with --json: the entry).',
  },
  del: {
    synopsis: 'del KEY',
    summary: 'delete the entry at KEY',
    details: 'Exit 1 when there was no entry (with --json: {"deleted":false}).',
  },
  ls: {
    synopsis: 'ls [PREFIX]',
    summary: 'list the entries whose key starts with PREFIX',
    details: 'Every live entry under PREFIX (default: all), sorted by key. With --json: an array of entries.',
  },
  watch: {
    synopsis: 'watch [PREFIX] [--from REV]',
    summary: 'print changes under PREFIX until Ctrl-C',
    details:
      'One line per change: revision, put / delete / expire, key, and what a put wrote.\n--from REV: first every change after revision REV the store still keeps.\nWith --json: one JSON object per line. Says "watching ..." on stderr once the watch is live.',
  },
  locks: {
    synopsis: 'locks [PREFIX]',
    summary: 'show held keys under PREFIX: holders and waiters in line',
    details:
      'Every key under PREFIX that a client holds (locks, leases, election terms): the owner, the\nfencing token and the time left (one row per holder of a lock held shared); then the clients\nwaiting for it, first in line first, with (shared) for a shared request.\nWith --json: [{ key, holder: { owner, token, ttl, mode } | null, holders: [...], waiters: [{ owner, since, mode }] }].',
  },
  release: {
    synopsis: 'release --force KEY',
    summary: 'free a lock someone else holds',
    details:
      'Deletes KEY if it is still held with the token read just before, in one conditional commit:\nthe holder\'s token dies (its fenced writes fail, its renewals report the loss) and the first\nwaiter takes the key. --force is required: this ends another process\'s hold.\nExit 1 when KEY is not held, or changed hands meanwhile (nothing is freed then).',
  },
  counter: {
    synopsis: 'counter KEY [+N|-N]',
    summary: 'read a counter, or add N to it',
    details: 'Without N: the counter\'s value (0 when absent). With N: adds it atomically and prints the new value.\nExit 1 when KEY holds something that is not a number.',
  },
  once: {
    synopsis: 'once NAME SLOT [...] -- cmd',
    summary: 'run cmd once for slot SLOT of job NAME, however many hosts run this',
    details: 'See zaris once --help.',
  },
}

const SERVE = 'serve [--port N] [--data FILE] ...'

/** `zaris --help`. */
export function mainHelp(): string {
  const width = Math.max(SERVE.length, ...Object.values(COMMANDS).map((c) => c.synopsis.length))
  const lines = Object.values(COMMANDS).map((c) => `  zaris ${c.synopsis.padEnd(width)}  ${c.summary}`)
  return `usage: zaris COMMAND [options]

  zaris ${SERVE.padEnd(width)}  start a node (zaris serve --help)
${lines.join('\n')}

${CONNECTION}

Exit codes: 0 done, 1 not found or refused, 2 usage mistake. zaris COMMAND --help for more.`
}

/** `zaris COMMAND --help`. */
export function commandHelp(verb: string): string {
  const c = COMMANDS[verb]!
  return `usage: zaris ${c.synopsis} [--url URL] [--token SECRET] [--json]

${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.
${c.details}

${CONNECTION}`
}
