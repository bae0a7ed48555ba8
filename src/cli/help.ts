/**
 * The help texts of `zaris`: one summary for `zaris --help`, one page per
 * command for `zaris COMMAND --help`.
 *
 * @module
 */
import { DEFAULT_URL } from './args'

const CONNECTION = `Connection (every command but serve):
  --url URL         the store: a node (zaris://host:7861/NS), redis://host:6379/0?ns=NS,
                    file:///path/to/store.db?ns=NS (this machine's processes, no server), ...
                    (default ${DEFAULT_URL}, or ZARIS_URL)
  --token SECRET    bearer token of a node started with --token (or ZARIS_TOKEN)
  --json            print JSON for scripts (one value; JSON lines for watch)`

/** Each command: its synopsis (and a shorter one for the summary, if it needs one), one line of summary, and what more its page says. */
export const COMMANDS: Record<string, { synopsis: string; brief?: string; summary: string; details: string }> = {
  get: {
    synopsis: 'get KEY',
    summary: 'show the entry at KEY',
    details: 'Prints the entry: value (as JSON), revision, created (a lock\'s token), owner, time left.\nExit 1 when there is no entry (with --json: null).',
  },
  put: {
    synopsis: 'put KEY VALUE [--ttl MS] [--string] [--fence-token T]',
    summary: 'write VALUE at KEY',
    details:
      'VALUE is read as JSON when it parses (5, true, {"a":1}, "quoted"), else stored as a string;\n--string always stores it as a string. --ttl MS: the entry expires after MS milliseconds.\n--fence-token T: write only while the lock $ZARIS_LOCK_KEY (or --fence-key KEY) is still held\nwith token T (under zaris lock: --fence-token "$ZARIS_LOCK_TOKEN"); else exit 1, nothing written.\nPrints the revision written (with --json: the entry).',
  },
  del: {
    synopsis: 'del KEY [--fence-token T]',
    summary: 'delete the entry at KEY',
    details: 'Exit 1 when there was no entry (with --json: {"deleted":false}).\n--fence-token T: delete only while the lock is held with token T, as for put.',
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
  lock: {
    synopsis: 'lock NAME [--ttl MS] [--wait MS] [--grace MS] -- CMD [ARGS...]',
    brief: 'lock NAME [options] -- CMD...',
    summary: 'run CMD while holding the lock NAME',
    details: `Takes the lock (one try, or waiting up to --wait MS), runs CMD with ZARIS_LOCK_KEY, ZARIS_LOCK_TOKEN
(the fencing token) and ZARIS_URL in its environment, renews the lock while CMD runs, releases it after.
Exit: CMD's own code; 75 when the lock stays held (CMD did not run); 70 when the lock was lost while CMD ran
(CMD is sent SIGTERM, then SIGKILL after --grace MS, default 5000). SIGINT, SIGTERM and SIGHUP are passed on to CMD.
--ttl MS: the lock's TTL (default 30000): how long a crashed zaris can block the others.`,
  },
  elect: {
    synopsis: 'elect NAME [--candidate NAME] [--ttl MS] [--wait MS] [--grace MS] -- CMD [ARGS...]',
    brief: 'elect NAME [options] -- CMD...',
    summary: 'run CMD while this process leads the election NAME',
    details: `Campaigns until it leads (or --wait MS, then exit 75), runs CMD as lock does (ZARIS_LOCK_TOKEN: the
term's token), resigns after. Exit codes as for lock: 70 when leadership was lost while CMD ran.
--candidate NAME: how this process is shown to observers (default: host:pid).`,
  },
  semaphore: {
    synopsis: 'semaphore NAME --limit N [--ttl MS] [--wait MS] [--grace MS] -- CMD [ARGS...]',
    brief: 'semaphore NAME --limit N [options] -- CMD...',
    summary: 'run CMD holding one of N permits of NAME',
    details: `At most N commands run at once under NAME. Takes a permit (one try, or waiting up to --wait MS),
runs CMD as lock does (ZARIS_LOCK_TOKEN: the permit's token), releases it after. Exit codes as for lock.`,
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
  const width = Math.max(SERVE.length, ...Object.values(COMMANDS).map((c) => (c.brief ?? c.synopsis).length))
  const lines = Object.values(COMMANDS).map((c) => `  zaris ${(c.brief ?? c.synopsis).padEnd(width)}  ${c.summary}`)
  return `usage: zaris COMMAND [options]

  zaris ${SERVE.padEnd(width)}  start a node (zaris serve --help)
${lines.join('\n')}

${CONNECTION}

Exit codes: 0 done, 1 not found or refused, 2 usage mistake; lock, elect and semaphore exit with
CMD's code, 75 when they could not hold, 70 when they lost the hold while CMD ran. zaris COMMAND --help for more.`
}

/** `zaris COMMAND --help`. */
export function commandHelp(verb: string): string {
  const c = COMMANDS[verb]!
  // A command run under a hold comes last: every option of zaris goes before its --.
  const [own, command] = c.synopsis.split(' -- ')
  const usage = command === undefined ? `${own} [--url URL] [--token SECRET] [--json]` : `${own} [--url URL] [--token SECRET] -- ${command}`
  return `usage: zaris ${usage}

${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.
${c.details}

${CONNECTION}`
}
