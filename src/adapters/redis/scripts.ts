/**
 * The Lua scripts of the Redis adapter. Every read and write of a namespace
 * is one script, so Redis runs it atomically against every other client.
 *
 * Keys (all share the hash tag `{ns}`, so a namespace lives in one Redis
 * Cluster slot, and every key a script touches is declared in KEYS):
 *
 * 1. `rev`  hash    `n`: the store-wide revision counter (HINCRBY); `g`: the epoch, Redis's
 *                   time when the counter was created, which changes if Redis lost everything;
 *                   `p`: no `reqt` score is below it (when the records are next pruned; 0: now);
 *                   `pq`: the parked commits' counter, there only while `park` or `pkey` may hold anything
 * 2. `data` hash    key -> `<rev> <created> <deadline|-> <ttl|-> <value json>[\n<owner>]`
 * 3. `idx`  zset    every stored key at score 0 (as `ix(key)`, see below), for prefix ranges and pages (ZRANGEBYLEX)
 * 4. `exp`  zset    key -> deadline in microseconds on Redis's clock (TIME)
 * 5. `log`  stream  the events, id `<revision>-<n>`; trimmed to the last `history` revisions
 * 6. `req`  hash    requestId -> the answer of the commit that carried it
 * 7. `reqt` zset    requestId -> when it was answered, for pruning
 * 8. `park` hash    the parked commits (handover.ts)
 * 9. `pkey` hash    checked key -> the parked commits that check it
 *
 * Every script ends by trying the parked commits that the keys it wrote,
 * deleted or expired may let through (handover.ts), so a release or an
 * expiry hands a lock over in its own script.
 *
 * Every revision appends at least one stream entry (an `n` no-op when a commit
 * changed nothing), and the last entry of a revision carries `z`, so a reader
 * can tell a gap from a quiet stretch: the entry after `r-s` must be `r-(s+1)`,
 * or `(r+1)-0` when `r-s` was the last of its revision. Every entry carries
 * the epoch `g`. When a script finds the store behind a revision a client has
 * already seen (Redis lost writes), it moves the counter past it and logs an
 * `x` entry first, so readers learn that the store lost history.
 *
 * Revisions stop at 2^53 - 1 (`Number.MAX_SAFE_INTEGER`): a script that
 * would need a later one writes nothing and answers `exhausted` (commit), or
 * leaves due entries unexpired (every other script), so reads keep working.
 *
 * Expiry: Redis's own key TTLs are not used, because an expiry must take a
 * revision and an event. Every script first expires the due entries of `exp`
 * (each with its own revision and `e` event), and treats any entry whose
 * deadline has passed as expired the moment it touches it.
 *
 * Numbers are passed to Redis with `%d`: Lua's default number-to-string
 * conversion keeps only 14 digits, too few for microsecond deadlines.
 *
 * @module
 */

import { HANDOVER_PARTS, TURN_US } from './handover'
import { CHECKED_PARTS, COMMIT_PARTS, PRELUDE } from './prelude'

/** What every script holds after the prelude: a script that expires a key may hand it over (handover.ts). */
const PARTS = COMMIT_PARTS + CHECKED_PARTS + HANDOVER_PARTS

/**
 * A script: the parts it uses after {@link PRELUDE} and its body. Run as
 * `EVAL` ({@link evalText}) or as a function of the library
 * (`functions.ts`) that holds every part once; the body is the same text.
 */
export interface ScriptSource {
  readonly parts: string
  readonly body: string
}

/**
 * The text `EVAL` runs: the helpers (built on every call), `init` with the
 * call's KEYS and ARGV (captured first: the prelude's locals of the same
 * names hide them), then the body.
 */
export function evalText(source: ScriptSource): string {
  return `local CALL_KEYS, CALL_ARGV = KEYS, ARGV\n${PRELUDE}${source.parts}\ninit(CALL_KEYS, CALL_ARGV)\n${source.body}`
}

/** `get`: ARGV[4] = key. Returns `{now, nextIn, raw|nil}`. */
export const GET: ScriptSource = { parts: PARTS, body: `
sweep()
local raw = live(ARGV[4])
local now, next_in = finish()
return {now, next_in, raw}
` }

/**
 * `list`: ARGV[4] = prefix, ARGV[5] = the key to start after ('' = from the
 * prefix; the caller passes only one under the prefix), ARGV[6] = the most
 * entries (0 = all). Returns `{now, nextIn, {key, raw, ...}, more}` in key
 * order (UTF-16 code units, see `ix`); `more` is 1 when a live entry follows.
 */
export const LIST: ScriptSource = { parts: PARTS, body: `
sweep()
-- Once per namespace: idx members written before they were transformed become ix(key).
if not redis.call('HGET', K_REV, 'ix') then
  for _, member in ipairs(redis.call('ZRANGEBYLEX', K_IDX, '-', '+')) do
    if string.find(member, '[\\238\\239]') then
      redis.call('ZREM', K_IDX, member)
      redis.call('ZADD', K_IDX, 0, ix(member))
    end
  end
  redis.call('HSET', K_REV, 'ix', '1')
end
local prefix, after, limit = ARGV[4], ARGV[5], tonumber(ARGV[6])
local lo, hi = '-', '+'
if prefix ~= '' then
  -- No UTF-8 string (nor ix of one) contains the byte 0xFF, so this bounds every key that starts with prefix.
  lo = '[' .. ix(prefix)
  hi = '[' .. ix(prefix) .. '\\255'
end
if after ~= '' then lo = '(' .. ix(after) end
local out, count, more = {}, 0, 0
local batch = 256
if limit > 0 then batch = limit + 1 end
while true do
  local members = redis.call('ZRANGEBYLEX', K_IDX, lo, hi, 'LIMIT', 0, batch)
  for _, member in ipairs(members) do
    local key = unix(member)
    local raw = live(key)
    if raw then
      if limit > 0 and count == limit then more = 1 break end
      out[#out + 1] = key
      out[#out + 1] = raw
      count = count + 1
    end
  end
  if more == 1 or #members < batch then break end
  lo = '(' .. members[#members]
end
local now, next_in = finish()
return {now, next_in, out, more}
` }

/**
 * `commit`: ARGV[4] = requestId ('' for none), ARGV[5] = how long answers are
 * kept for retries (ms), ARGV[6] = number of checks, then per check
 * `key, 'r'|'c', expected ('' = no live entry)`, then the number of ops, then
 * per op `'s'|'d'|'a', key, value json (a: the delta), ttl ms ('' = none), '=' .. owner ('' = none), '1' if fresh`.
 *
 * Returns `{'ok'|'dup', now, nextIn, answer}` where answer is `<revision>`
 * and per op: a set's created; `d1`|`d0` for a delete that did / did not
 * delete; `a<created>:<value>:<deadline|->:<owner as hex>` for an add.
 * Or `{'fail', now, nextIn, {key, raw|nil, ...}}` with the failed checks;
 * `{'bad', now, nextIn, {key, value json}}` for an add that cannot be made
 * exactly (the value is not an integer, or the sum leaves the safe range);
 * `{'exhausted', now, nextIn, revision}` when no revision is left. The last
 * two write nothing (but the expiries that came due).
 *
 * The new-life rule: a set keeps the entry's created only over a live entry
 * of the same owner (none and none count as the same), without fresh.
 */
export const COMMIT: ScriptSource = { parts: PARTS, body: `
local request = ARGV[4]
local dup = begin(request)
if dup then return reply('dup', dup) end

local i = 6
local failed = {}
-- A commit that may wait: the park arguments follow its ops.
local at = 6 + 3 * tonumber(ARGV[6]) + 2 + 6 * tonumber(ARGV[6 + 3 * tonumber(ARGV[6]) + 1])
local waits = ARGV[at] ~= nil and ARGV[at] ~= '0'
-- A waiter's take that comes back ends the turn it kept (handover.ts).
if waits then turn_back(ARGV[at + 2]) end
local checks = {}
for _ = 1, tonumber(ARGV[i]) do
  local key, kind, want = ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  i = i + 3
  if waits then checks[#checks + 1] = {key, kind, want} end
  local raw = live(key)
  if not holds(raw, kind, want) then
    failed[#failed + 1] = key
    failed[#failed + 1] = raw
  end
end
-- A kept take behind a waiter's kept turn waits though its checks hold, with nothing failed.
local behind = #failed == 0 and waits and ARGV[at + 1] == '1' and behind_turn(checks, tonumber(ARGV[at + 2]))
if #failed > 0 or behind then
  if waits then
    local ops = {}
    for o = 1, tonumber(ARGV[i + 1]) do
      local j = i + 2 + 6 * (o - 1)
      ops[o] = {ARGV[j], ARGV[j + 1], ARGV[j + 2], ARGV[j + 3], ARGV[j + 4], ARGV[j + 5]}
    end
    -- Other ways (CommitOptions.orElse): their count, then each as checks and ops are sent.
    local ways, j = {}, at + 6
    for w = 1, tonumber(ARGV[at + 5] or '0') do
      local way = {c = {}, o = {}}
      for c = 1, tonumber(ARGV[j]) do way.c[c] = {ARGV[j + 3 * c - 2], ARGV[j + 3 * c - 1], ARGV[j + 3 * c]} end
      j = j + 3 * tonumber(ARGV[j]) + 1
      for o = 1, tonumber(ARGV[j]) do
        local k = j + 6 * (o - 1)
        way.o[o] = {ARGV[k + 1], ARGV[k + 2], ARGV[k + 3], ARGV[k + 4], ARGV[k + 5], ARGV[k + 6]}
      end
      j = j + 6 * tonumber(ARGV[j]) + 1
      ways[w] = way
    end
    local parked, text = park(request, checks, ops, failed, ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4], ways)
    if text then return done(request, text) end
    if parked then return parked end
  end
  return reply('fail', failed)
end

-- Every key of the commit is brought up to date (expired if due) before the
-- commit takes its revision, so the expiries come first in revision order;
-- and every add is worked out, so a bad one refuses the commit before it
-- takes a revision.
local n = tonumber(ARGV[i + 1])
i = i + 2
local ops = {}
for o = 1, n do
  local op = {typ = ARGV[i], key = ARGV[i + 1], value = ARGV[i + 2], ttl = ARGV[i + 3], owner = ARGV[i + 4], fresh = ARGV[i + 5]}
  i = i + 6
  op.raw = live(op.key)
  if op.typ == 'a' then
    local bad = add_to(op)
    if bad then return reply('bad', bad) end
  end
  ops[o] = op
end

local rev = next_rev()
if not rev then return exhausted() end
local srev = fmt(rev)
local events = {}
local answer = {srev}
for o = 1, n do
  local event, part = apply(ops[o], srev)
  if event then events[#events + 1] = event end
  answer[#answer + 1] = part
end
-- The log first: XADD is the one write that can refuse (an id below the
-- stream's newest), and then nothing else has been written.
append(rev, events)
for o = 1, n do write(ops[o]) end

local text = table.concat(answer, ' ')
return done(request, text)
` }

/**
 * `add`: the commit of one add and no checks (a counter's increment), with
 * the effects and answers of {@link COMMIT} for that commit, through
 * the same parts; only its arguments are positional and it has no lists to
 * walk. ARGV[4] = requestId ('' for none), ARGV[5] = how long answers are
 * kept (ms), ARGV[6] = key, ARGV[7] = the delta.
 */
export const ADD: ScriptSource = { parts: PARTS, body: `
local request = ARGV[4]
local dup = begin(request)
if dup then return reply('dup', dup) end
local op = {typ = 'a', key = ARGV[6], value = ARGV[7]}
op.raw = live(op.key)
local bad = add_to(op)
if bad then return reply('bad', bad) end
local rev = next_rev()
if not rev then return exhausted() end
local srev = fmt(rev)
local event, part = put(op, srev)
append(rev, {event})
store(op)
local text = srev .. ' ' .. part
return done(request, text)
` }

/**
 * `lock`: the commit of one check and one set or delete of the same key (a
 * lock's take, renewal or release), with the effects and answers of
 * {@link COMMIT} for that commit, through the same parts; only its
 * arguments are positional and it has no lists to walk. ARGV[4] = requestId
 * ('' for none), ARGV[5] = how long answers are kept (ms), ARGV[6] = key,
 * ARGV[7] = 'r'|'c', ARGV[8] = expected ('' = no live entry), ARGV[9] =
 * 's'|'d', then a set's value json, ttl ms ('' = none), '=' .. owner ('' =
 * none), '1' if fresh.
 */
export const LOCK: ScriptSource = { parts: PARTS, body: `
local request = ARGV[4]
local dup = begin(request)
if dup then return reply('dup', dup) end
local key = ARGV[6]
local raw = live(key)
if not holds(raw, ARGV[7], ARGV[8]) then return reply('fail', {key, raw}) end
local op = {typ = ARGV[9], key = key, raw = raw, value = ARGV[10], ttl = ARGV[11], owner = ARGV[12], fresh = ARGV[13]}
local rev = next_rev()
if not rev then return exhausted() end
local srev = fmt(rev)
local event, part = apply(op, srev)
-- ({nil}, a delete of nothing, is an empty list: append logs the no-op entry)
append(rev, {event})
write(op)
return done(request, srev .. ' ' .. part)
` }

/** `expire`: expires what is due. Returns `{now, nextIn}`. */
export const EXPIRE: ScriptSource = { parts: PARTS, body: `
sweep()
local now, next_in = finish()
return {now, next_in}
` }

/**
 * `replay`: ARGV[4] = first stream id to return ('' for none), ARGV[5] = at most how many.
 * Returns `{now, nextIn, revision, entries, epoch}`: the store's revision and
 * the log from that id, read in one step so a reader can tell "nothing yet"
 * from "gone".
 */
export const REPLAY: ScriptSource = { parts: PARTS, body: `
sweep()
local entries = {}
if ARGV[4] ~= '' then entries = redis.call('XRANGE', K_LOG, ARGV[4], '+', 'COUNT', ARGV[5]) end
-- The epoch exists from the first time anyone asks where the store is, so it never changes under a live store.
local g = epoch()
local now, next_in = finish()
return {now, next_in, redis.call('HGET', K_REV, 'n') or '0', entries, g}
` }

/**
 * `unpark` (handover.ts's parked commits): ARGV[4] = the request id of a parked commit whose adapter stops
 * waiting; ARGV[5] = `last` at its deadline (one last try, as any commit),
 * '' for its caller's abort or its close (never applied). The expiries this
 * call makes hand over first. Returns `{'dup', now, nextIn, answer}` when it
 * was answered (meanwhile: the message was lost or crossed; or now, by its
 * last try); else `{'fail', now, nextIn, {key, raw, ...}}`, taken out of
 * park: at its deadline its failed checks now, at an abort or a close its
 * first try's (`CommitOptions.signal`). `{'fail', now, nextIn, {}}` when neither is known (its
 * answer's record is gone).
 */
export const UNPARK: ScriptSource = { parts: PARTS, body: `
sweep()
HOOK.handover()
local request = ARGV[4]
local id = redis.call('HGET', K_PARK, 'r:' .. request)
local raw = id and redis.call('HGET', K_PARK, id)
if raw then
  local p = cjson.decode(raw)
  p.id = id
  local failed = failures(p.c)
  local last = ARGV[5] == 'last'
  p.r = tonumber(p.r) or math.huge
  local way, w = nil, nil
  if last and #failed > 0 then way, w = other_way(p.x, p.r) end
  if way then
    grant(p, way, w)
  elseif last and #failed == 0 and not behind_turn(p.c, p.r) then
    grant(p)
  else
    -- Its wait ran out: its waiter keeps its turn till it parks again; one held back by an earlier turn is told so.
    if last then keep_turn(p, NOW + ${TURN_US}) end
    unpark(p)
    if last and #failed == 0 then return reply('behind', {}) end
    -- An abort or a close answers with its first try's failure, as the local store does (the contract).
    if not last then failed = p.f end
    return reply('fail', failed)
  end
end
local kept = redis.call('HGET', K_REQ, request)
if kept then return reply('dup', kept) end
return reply('fail', {})
` }

/** Every script, by the name the adapter runs it by. */
export const SCRIPTS = { get: GET, list: LIST, commit: COMMIT, add: ADD, lock: LOCK, expire: EXPIRE, replay: REPLAY, unpark: UNPARK } as const

/** A script's name. */
export type ScriptName = keyof typeof SCRIPTS

/** The lock script as `EVAL` runs it (for tools and tests). */
export const LOCK_SCRIPT = evalText(LOCK)
