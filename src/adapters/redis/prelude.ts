/**
 * The common start of every Lua script of the Redis adapter (see
 * `scripts.ts` for the layout it works on): keys, Redis's clock, revisions,
 * the log, expiry, and the next deadline for the caller's timer.
 *
 * @module
 */

/**
 * The state of one call: every script starts by setting these (`init`), so
 * a library of helpers loaded once (Redis Functions, `functions.ts`) never
 * carries one call's state into the next. Each pair: names, their values at
 * the start of a call (`keys` and `argv` are the call's KEYS and ARGV).
 * Every other top-level local of the scripts is a constant or a function
 * (test/redis/functions.test.ts checks the text).
 */
export const CALL_STATE: ReadonlyArray<readonly [names: string, values: string]> = [
  ['KEYS, ARGV', 'keys, argv'],
  ['K_REV, K_DATA, K_IDX, K_EXP, K_LOG, K_REQ, K_REQT, K_PARK, K_PKEY', 'keys[1], keys[2], keys[3], keys[4], keys[5], keys[6], keys[7], keys[8], keys[9]'],
  // ARGV[1..3]: the log's history, the sweep's limit, the minimum revision.
  ['HISTORY, SWEEP, MINREV', 'tonumber(argv[1]), tonumber(argv[2]), tonumber(argv[3])'],
  // Redis's clock, in microseconds.
  ['NOW', 'now_us()'],
  // next_rev's: the revision it gave last, whether the counter was read, and
  // what it learned then (see next_rev); epoch's cache.
  ['LAST_REV, FLOOR, LOST, OLDEST, EPOCH', 'nil, nil, nil, nil, nil'],
  // sweep's view of exp for finish (see exp_touched).
  ['EXP_HEAD, EXP_N, EXP_MORE, EXP_ADDED', 'nil, 0, true, nil'],
  // live's cache of the entries read (see live), kept up to date by every write.
  ['LIVE', '{}'],
  // The keys this call wrote, deleted or expired, for the parked commits they may let through (handover.ts).
  // (Nothing the handover calls runs it again: it needs no guard.) PARKS: whether the namespace may hold parked commits or kept
  // turns (rev's 'pq', read with the counter; nil: not read), so a call with none skips the handover's reads.
  ['CHANGED, PARKS', '{}, nil'],
]

/** The common start of every script: the call's state and `init`, keys, clock, expiry, revisions. */
export const PRELUDE = `
${CALL_STATE.map(([names]) => `local ${names}`).join('\n')}
-- Late-bound helpers: the handover (handover.ts) is defined after the parts it uses, and finish calls it.
local HOOK = {}
local function now_us()
  local clock = redis.call('TIME')
  return tonumber(clock[1]) * 1000000 + tonumber(clock[2])
end
-- Sets every local of CALL_STATE for a call; every script runs it first.
local function init(keys, argv)
${CALL_STATE.map(([names, values]) => `  ${names} = ${values}`).join('\n')}
end

local function fmt(n) return string.format('%d', n) end

-- The store's epoch, created with its revision counter.
local function epoch()
  if not EPOCH then
    EPOCH = redis.call('HGET', K_REV, 'g')
    if not EPOCH then
      EPOCH = fmt(NOW)
      -- A store born now holds its idx members as ix(key) from the start (see the list script).
      redis.call('HSET', K_REV, 'g', EPOCH, 'ix', '1')
    end
  end
  return EPOCH
end

-- The next revision. It never falls below the newest revision in the log or
-- one a client has already seen (MINREV): if Redis lost the counter (a
-- restart without persistence, a failover to a stale replica), revisions and
-- fencing tokens still rise for every client that was connected. LOST is set
-- to the newest revision Redis still had when it had lost later ones.
-- OLDEST: no request record is older than this (rev's 'p', read with the
-- counter; nil: not known). PARKS: rev's 'pq' (the parked commits' counter,
-- there while any park or turn may be, handover.ts) is there, or the hash
-- was lost (then it cannot be told).
local MAXREV = 9007199254740991
-- Returns nil, having written nothing, when the store has no revision left.
local function next_rev()
  if not FLOOR then
    local head = redis.call('HMGET', K_REV, 'n', 'g', 'p', 'pq')
    local current = tonumber(head[1] or '0')
    OLDEST = tonumber(head[3])
    if PARKS == nil then PARKS = head[4] ~= false or not head[2] end
    local newest = current
    -- The counter and the log change in the same scripts: while the hash
    -- holds its epoch (it was not lost or evicted) and no client has seen
    -- past it, the counter is the newest revision and the log need not be read.
    if head[2] and MINREV <= current then
      EPOCH = head[2]
    else
      newest = 0
      local last = redis.call('XREVRANGE', K_LOG, '+', '-', 'COUNT', 1)
      if last[1] then newest = tonumber(string.match(last[1][1], '^(%d+)')) end
    end
    local floor = math.max(newest, MINREV)
    local rev = math.max(current, floor) + 1
    if rev > MAXREV then return nil end
    if current < floor and MINREV > newest and MINREV > current then LOST = newest end
    redis.call('HSET', K_REV, 'n', fmt(rev))
    FLOOR = rev
    LAST_REV = rev
    return rev
  end
  if LAST_REV >= MAXREV then return nil end
  local rev = redis.call('HINCRBY', K_REV, 'n', 1)
  LAST_REV = rev
  return rev
end

-- Appends the events of revision rev to the log: ids rev-0, rev-1, ..., the
-- epoch on each, the last one marked. A revision that found history lost
-- starts with the x entry that says so.
local function append(rev, events)
  local srev = fmt(rev)
  local g = epoch()
  local seq = 0
  if LOST then
    redis.call('XADD', K_LOG, srev .. '-0', 't', 'x', 'a', fmt(LOST), 'g', g)
    LOST = nil
    seq = 1
  end
  if #events == 0 then events = {{'t', 'n'}} end
  for e = 1, #events do
    local fields = events[e]
    fields[#fields + 1] = 'g'
    fields[#fields + 1] = g
    if e == #events then
      fields[#fields + 1] = 'z'
      fields[#fields + 1] = '1'
    end
    if e == #events and rev > HISTORY then
      -- The revision's last entry trims the log to the last HISTORY revisions in the same call.
      redis.call('XADD', K_LOG, 'MINID', '~', fmt(rev - HISTORY + 1) .. '-0', srev .. '-' .. seq, unpack(fields))
    else
      redis.call('XADD', K_LOG, srev .. '-' .. seq, unpack(fields))
    end
    seq = seq + 1
  end
end

local function parse(raw)
  local rev, created, deadline = string.match(raw, '^(%d+) (%d+) (%S+) ')
  return tonumber(rev), tonumber(created), tonumber(deadline)
end

-- Every field of a raw entry, as strings; owner is nil when the entry has none.
-- Serialized JSON never holds a raw newline, so the first one starts the owner.
local function fields(raw)
  local rev, created, deadline, ttl, rest = string.match(raw, '^(%d+) (%d+) (%S+) (%S+) (.*)$')
  local value, owner = string.match(rest, '^([^\\n]*)\\n(.*)$')
  if not value then value = rest end
  return rev, created, deadline, ttl, value, owner
end

-- A key as the idx zset holds it, so that ZRANGEBYLEX orders keys as the
-- contract does (UTF-16 code units, as JavaScript compares strings). In
-- UTF-8 byte order U+E000..U+FFFF (lead bytes EE, EF) sort below U+10000 and
-- up (F0..F4, surrogate pairs in UTF-16, which sort below U+E000 there), so
-- those two lead bytes are stored as F5 and F6, which no UTF-8 text holds.
local IX, UNIX = {['\\238'] = '\\245', ['\\239'] = '\\246'}, {['\\245'] = '\\238', ['\\246'] = '\\239'}
local function ix(key) return (string.gsub(key, '[\\238\\239]', IX)) end
local function unix(member) return (string.gsub(member, '[\\245\\246]', UNIX)) end

-- The earliest deadlines as sweep read them (key -> score, EXP_N of them;
-- EXP_MORE when exp held more), and the earliest one this script wrote:
-- enough for finish to know the next deadline without reading exp again,
-- unless the script touched every entry it read. nil: finish reads exp.
local function exp_touched(key)
  if EXP_HEAD and EXP_HEAD[key] then
    EXP_HEAD[key] = nil
    EXP_N = EXP_N - 1
  end
end

local function remove(key)
  redis.call('HDEL', K_DATA, key)
  -- (a key stored before idx members were transformed may still be there as itself)
  redis.call('ZREM', K_IDX, ix(key), key)
  redis.call('ZREM', K_EXP, key)
  exp_touched(key)
  LIVE[key] = false
  CHANGED[key] = true
end

-- Expires key; false (nothing written) when the store has no revision left for it.
local function expire(key)
  local rev = next_rev()
  if not rev then return false end
  append(rev, {{'t', 'e', 'k', key}})
  remove(key)
  return true
end

-- The raw entry at key if it is live; an entry past its deadline is expired
-- here (unless no revision is left to expire it with: then it stays).
-- Kept per script: a commit reads a key for its check and again for its op;
-- every write (store, remove) updates it, so the parked commits tried after
-- the writes (handover.ts) see what they left.
local function live(key)
  local known = LIVE[key]
  if known ~= nil then return known end
  local raw = redis.call('HGET', K_DATA, key)
  if raw then
    local _, _, deadline = parse(raw)
    if deadline and deadline <= NOW and expire(key) then raw = false end
  end
  LIVE[key] = raw
  return raw
end

-- Expires up to SWEEP due entries, earliest deadline first. When none is
-- due, the two earliest deadlines it read are kept for finish.
local function sweep()
  local head = redis.call('ZRANGE', K_EXP, 0, 1, 'WITHSCORES')
  if not head[2] or tonumber(head[2]) > NOW then
    EXP_HEAD, EXP_N, EXP_MORE = {}, 0, #head == 4
    for j = 1, #head, 2 do
      EXP_HEAD[head[j]] = tonumber(head[j + 1])
      EXP_N = EXP_N + 1
    end
    return
  end
  local due = redis.call('ZRANGEBYSCORE', K_EXP, '-inf', fmt(NOW), 'LIMIT', 0, SWEEP)
  for _, key in ipairs(due) do
    if redis.call('HEXISTS', K_DATA, key) == 1 then
      if not expire(key) then return end
    else
      redis.call('ZREM', K_EXP, key)
    end
  end
end

-- Returns Redis's time and the microseconds until the earliest deadline
-- (-1: none), for the caller's timer. (append trims the log.)
local function finish()
  -- Parked commits the writes of this call let through go first: their deadlines count below.
  if HOOK.handover then HOOK.handover() end
  local next_at = nil
  if EXP_HEAD and (EXP_N > 0 or not EXP_MORE) then
    -- What sweep read and this script left alone, or wrote: every other entry of exp is later.
    for _, score in pairs(EXP_HEAD) do
      if not next_at or score < next_at then next_at = score end
    end
    if EXP_ADDED and (not next_at or EXP_ADDED < next_at) then next_at = EXP_ADDED end
  else
    local first = redis.call('ZRANGE', K_EXP, 0, 0, 'WITHSCORES')
    if first[2] then next_at = tonumber(first[2]) end
  end
  local next_in = -1
  if next_at then
    next_in = next_at - NOW
    if next_in < 0 then next_in = 0 end
  end
  return fmt(NOW), fmt(next_in)
end
`

/**
 * What the commit scripts share (after {@link PRELUDE}): the generic commit
 * and the short ones for a lone add and a lock (`scripts.ts`) do an add,
 * write an entry, and keep the request record the same way, so all have the
 * same effects.
 */
export const COMMIT_PARTS = `
-- A commit script's reply: its status, Redis's time, the microseconds to
-- the next deadline (finish runs last, after every write), and its body.
local function reply(status, body)
  local now, next_in = finish()
  return {status, now, next_in, body}
end

-- How every commit starts: the answer kept under request when this is a
-- resend (answered with it, not applied again; nothing else is done), or nil
-- once the expiries that came due are swept.
local function begin(request)
  if request ~= '' then
    local kept = redis.call('HGET', K_REQ, request)
    if kept then return kept end
  end
  sweep()
  return nil
end

-- The reply when no revision is left (nothing written but swept expiries).
local function exhausted()
  return reply('exhausted', redis.call('HGET', K_REV, 'n') or '0')
end

-- Works out an add (op.value is the delta) on op.raw, the live entry or
-- false: fills op.sum and the fields the add keeps. Returns the 'bad'
-- payload, having written nothing, when it cannot be made exactly.
local function add_to(op)
  local base, created, deadline, ttl, owner = 0, nil, '-', '-', nil
  if op.raw then
    local _, c, d, t, value, ow = fields(op.raw)
    if not string.match(value, '^-?%d+$') then return {op.key, value} end
    base, created, deadline, ttl, owner = tonumber(value), c, d, t, ow
  end
  local sum = base + tonumber(op.value)
  if sum > MAXREV or sum < -MAXREV then return {op.key, fmt(base)} end
  op.sum, op.created, op.deadline, op.ttl, op.kept = fmt(sum), created, deadline, ttl, owner
  return nil
end

-- A set or add at revision srev: sets op.entry and op.deadline, returns the
-- event and the op's part of the answer (a set's created; for an add
-- 'a<created>:<value>:<deadline|->:<owner as hex>').
local function put(op, srev)
  local created, deadline, ttl, value, owner
  if op.typ == 'a' then
    -- Only the value (and the revision) change: created, owner, deadline and ttl stay.
    created, deadline, ttl, value, owner = op.created or srev, op.deadline, op.ttl, op.sum, op.kept
  else
    created, deadline, ttl, value = srev, '-', '-', op.value
    if op.owner ~= '' then owner = string.sub(op.owner, 2) end
    if op.raw and op.fresh ~= '1' then
      local _, c, _, _, _, was = fields(op.raw)
      -- The new-life rule: only the same owner (none and none count as the same) keeps the life.
      if was == owner then created = c end
    end
    if op.ttl ~= '' then
      ttl = op.ttl
      deadline = fmt(NOW + math.ceil(tonumber(op.ttl) * 1000))
    end
  end
  op.deadline = deadline
  op.entry = srev .. ' ' .. created .. ' ' .. deadline .. ' ' .. ttl .. ' ' .. value
  local event = {'t', 'p', 'k', op.key, 'v', value, 'c', created}
  if owner then
    op.entry = op.entry .. '\\n' .. owner
    event[#event + 1] = 'o'
    event[#event + 1] = owner
  end
  if ttl ~= '-' then
    event[#event + 1] = 'l'
    event[#event + 1] = ttl
  end
  if op.typ ~= 'a' then return event, created end
  local hex = string.gsub(owner or '', '.', function(ch) return string.format('%02x', string.byte(ch)) end)
  return event, 'a' .. created .. ':' .. value .. ':' .. deadline .. ':' .. hex
end

-- Writes what put worked out: the entry, the key index, the deadline.
local function store(op)
  redis.call('HSET', K_DATA, op.key, op.entry)
  LIVE[op.key] = op.entry
  CHANGED[op.key] = true
  -- An add to a live entry keeps its deadline: idx and exp hold that key and deadline already.
  if op.typ == 'a' and op.raw then return end
  redis.call('ZADD', K_IDX, 0, ix(op.key))
  if op.deadline ~= '-' then
    redis.call('ZADD', K_EXP, op.deadline, op.key)
    exp_touched(op.key)
    local at = tonumber(op.deadline)
    if not EXP_ADDED or at < EXP_ADDED then EXP_ADDED = at end
  else
    redis.call('ZREM', K_EXP, op.key)
    exp_touched(op.key)
  end
end

-- Keeps the answer under request for retention_ms, and forgets the oldest
-- expired ones: not on every commit, but once the oldest record (OLDEST) is a
-- tenth of the retention past it, then all that are due (at most 100 a
-- commit, every commit until none is left), so a record is kept at most 1.1x
-- its retention and the store holds a bounded number.
local function record(request, text, retention_ms)
  if request == '' then return end
  redis.call('HSET', K_REQ, request, text)
  redis.call('ZADD', K_REQT, fmt(NOW), request)
  local due = NOW - tonumber(retention_ms) * 1000
  if OLDEST and OLDEST > due - tonumber(retention_ms) * 100 then return end
  local head = redis.call('ZRANGE', K_REQT, 0, 100, 'WITHSCORES')
  local old, oldest = {}, nil
  for j = 1, #head, 2 do
    local at = tonumber(head[j + 1])
    if at > due then oldest = at break end
    old[#old + 1] = head[j]
  end
  if #old > 0 then
    redis.call('HDEL', K_REQ, unpack(old))
    redis.call('ZREM', K_REQT, unpack(old))
  end
  -- 0 when all 101 read were due: more may be, so the next commit looks again.
  redis.call('HSET', K_REV, 'p', fmt(oldest or 0))
end

-- How every commit that wrote ends: the answer kept for ARGV[5] ms under the
-- request id, and the 'ok' reply.
local function done(request, text)
  record(request, text, ARGV[5])
  return reply('ok', text)
end
`

/**
 * What the scripts of checked commits share (after {@link COMMIT_PARTS}): the
 * generic commit and the short one for a lock's take, renewal or release
 * (`scripts.ts`) judge a check and apply a set or delete the same way. Kept
 * apart from COMMIT_PARTS because a script builds every helper it holds on
 * each call, and the lone add needs none of these.
 */
export const CHECKED_PARTS = `
-- Whether a check holds on raw, the live entry at its key or false: kind
-- 'r' compares the revision, 'c' the created; want '' means no live entry.
local function holds(raw, kind, want)
  if want == '' then return not raw end
  if not raw then return false end
  local rev, created = parse(raw)
  if kind == 'r' then return rev == tonumber(want) end
  return created == tonumber(want)
end

-- A set, delete or worked-out add at revision srev: returns its event (nil
-- for a delete of nothing) and its part of the answer.
local function apply(op, srev)
  if op.typ ~= 'd' then return put(op, srev) end
  if op.raw then return {'t', 'd', 'k', op.key}, 'd1' end
  return nil, 'd0'
end

-- Writes what apply worked out (after the log).
local function write(op)
  if op.typ ~= 'd' then return store(op) end
  if op.raw then remove(op.key) end
end
`
