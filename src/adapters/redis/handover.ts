/**
 * The Redis store hands over (capability `handover`): the Lua side of parked
 * commits, after the scripts' other parts (prelude.ts).
 *
 * A commit sent with a wait (`CommitOptions.waitChange`) whose check fails
 * is kept in Redis (`park`), and every script that writes, deletes or
 * expires a key tries the parked commits that check it again before it
 * returns (`HOOK.handover`, run by `finish`): in `parkOrder`, then in the
 * order they parked; one whose checks hold is applied as a commit of its own
 * (a revision of its own, its events logged), and its answer is kept as any
 * commit's (under its request id, so a resend or an unpark finds it) and
 * published to its adapter's channel: one message wakes the waiter. So a
 * release hands a lock to the waiter whose take was parked, in the release's
 * own script: no client can take it between. Nothing here knows locks.
 *
 * Keys: `park` (hash) `<n>` -> a parked commit (cjson: `c` its checks
 * `{key, kind, want}`, `o` its ops as the commit script takes them, `k`
 * keepParked 1|0, `w` wakeOwner or '', `r` parkOrder or '', `q` n (the
 * order it parked in), `d` its deadline (µs, Redis's clock), `h` which
 * checks held on the first try (1|0), `f` the first try's failed checks,
 * `ch` its adapter's channel, `rq` its request id, `rt` how long its answer
 * is kept, `x` its other ways (`CommitOptions.orElse`: each `{c, o}`));
 * `s:<n>` -> what a retry reads of it, decoded for every change at a key it
 * checks (cjson: `c`, `h`, `k`, `w`, `r`, `q`, `d`, and `x` with each other
 * way's checks only: a fifth of the whole, whose decode was most of a
 * release's time with 15 waiters; the whole is read only to apply or answer
 * it, and a commit parked by an older script, without `s:`, is read
 * whole); `r:<request id>` -> n, so
 * a resend of a parked commit finds it. `pkey` (hash) checked key -> the
 * n of the commits parked on it, space-separated.
 *
 * Other ways: a try whose own checks fail applies the first other way whose
 * checks hold (on its first try too: then it does not park); answered and
 * judged on its own checks only; filed under every key any way checks.
 *
 * Answers: `<revision> <part>...` as a commit's (it went through), after
 * `@<w> ` when it went through its other way w (1-based); `F` and
 * the cjson of its failed checks `[key, raw|false, ...]`; `B` and the cjson
 * of an add it could not make (`{key, value}`); `X` when no revision is left.
 * A message is `<now µs> <length of the request id> <request id><answer>`.
 *
 * Turns (as src/adapters/kit/parked.ts keeps them): a kept, ordered commit
 * whose wait ran out keeps its waiter's turn for {@link TURN_US} µs, till its
 * next park comes (`t:<order>` in `park`: cjson `k` the keys it checks, `c`
 * the checks that held on its first try, `d` its end, µs; `tk:<key>` -> the
 * orders kept at key). A commit of a higher order at one of those keys is
 * not applied meanwhile, even where its checks hold: parked, or answered at
 * its deadline with nothing failed (`behind`). The turn ends when a commit
 * of its order comes, when one of its own checks fails (the place is gone)
 * or at its end (seen by the next script that looks, or by the next turn
 * kept: `tq` lists the kept orders oldest first, at most {@link MAX_TURNS}).
 *
 * A parked commit past its deadline is never applied by another's change
 * (its adapter unparks it at its own deadline; one that died never does):
 * it is answered with its failure when a change finds it failing. A
 * waiter's take checks its place in line, which expires soon after its
 * client dies: then it fails, and is answered and gone.
 *
 * @module
 */

/** How long a waiter whose wait ran out keeps its turn, in µs (kit/parked.ts's TURN_KEPT_MS). */
export const TURN_US = 1_000_000

/**
 * The most turns a namespace keeps at once (kit/parked.ts's MAX_TURNS): a
 * peer that parks short waits at keys nobody touches again would otherwise
 * leave a turn at each in the park hash for good.
 */
export const MAX_TURNS = 256

/** The handover's Lua (after PRELUDE, COMMIT_PARTS and CHECKED_PARTS). */
export const HANDOVER_PARTS = `
-- The orders whose turns are kept at key.
local function turn_orders(key)
  local out = {}
  local s = redis.call('HGET', K_PARK, 'tk:' .. key)
  if s then for o in string.gmatch(s, '%d+') do out[#out + 1] = o end end
  return out
end

-- Ends the turn of order (t: its record): the commits it held back at its keys are tried in this call.
local function end_turn(order, t)
  redis.call('HDEL', K_PARK, 't:' .. order)
  for _, key in ipairs(t.k) do
    local rest = {}
    for _, o in ipairs(turn_orders(key)) do
      if o ~= order then rest[#rest + 1] = o end
    end
    if #rest == 0 then redis.call('HDEL', K_PARK, 'tk:' .. key) else redis.call('HSET', K_PARK, 'tk:' .. key, table.concat(rest, ' ')) end
    CHANGED[key] = true
  end
end

-- The live turn of order (string), or nil; one past its end is ended here.
local function turn_of(order)
  local raw = redis.call('HGET', K_PARK, 't:' .. order)
  if not raw then return nil end
  local t = cjson.decode(raw)
  if tonumber(t.d) > NOW then return t end
  end_turn(order, t)
  return nil
end

-- Whether a live turn below order (a number, or nil: none) is kept at a key of checks.
local function behind_turn(checks, order)
  if not order or order == math.huge then return false end
  for _, c in ipairs(checks) do
    for _, o in ipairs(turn_orders(c[1])) do
      if tonumber(o) < order and turn_of(o) then return true end
    end
  end
  return false
end

-- A commit of order (string, '' for none) came: its waiter is back, its turn ends.
local function turn_back(order)
  if order == '' then return end
  local t = turn_of(order)
  if t then end_turn(order, t) end
end
-- The n of the commits parked on key.
local function park_ids(key)
  local out = {}
  local ids = redis.call('HGET', K_PKEY, key)
  if ids then for id in string.gmatch(ids, '%d+') do out[#out + 1] = id end end
  return out
end

-- The distinct keys parked commit p checks, its other ways' too.
local function park_keys(p)
  local keys, seen = {}, {}
  local function add(checks)
    for _, c in ipairs(checks) do
      if not seen[c[1]] then
        seen[c[1]] = true
        keys[#keys + 1] = c[1]
      end
    end
  end
  add(p.c)
  for _, way in ipairs(p.x or {}) do add(way.c) end
  return keys
end

-- Takes parked commit p out of park and of every key's list.
local function unpark(p)
  redis.call('HDEL', K_PARK, p.id, 's:' .. p.id, 'r:' .. p.rq)
  for _, key in ipairs(park_keys(p)) do
    local rest = {}
    for _, id in ipairs(park_ids(key)) do
      if id ~= p.id then rest[#rest + 1] = id end
    end
    if #rest == 0 then redis.call('HDEL', K_PKEY, key) else redis.call('HSET', K_PKEY, key, table.concat(rest, ' ')) end
  end
end

-- The failed checks of checks now, key and raw entry (or false) in turn.
local function failures(checks)
  local failed = {}
  for _, c in ipairs(checks) do
    local raw = live(c[1])
    if not holds(raw, c[2], c[3]) then
      failed[#failed + 1] = c[1]
      failed[#failed + 1] = raw
    end
  end
  return failed
end

-- Whether raw (an entry, or false) is owned by owner ('' for none wanted).
local function owned_by(raw, owner)
  if owner == '' or not raw then return false end
  local _, _, _, _, _, o = fields(raw)
  return o == owner
end

-- Answers parked commit p with answer: out of park, kept as its request's answer, sent to its adapter.
local function answer(p, text)
  unpark(p)
  record(p.rq, text, p.rt)
  redis.call('PUBLISH', p.ch, fmt(NOW) .. ' ' .. #p.rq .. ' ' .. p.rq .. text)
end

-- Applies list (ops as parked, their checks hold now) as a commit of its own:
-- its answer's text (B or X when it could not: nothing written).
local function apply_ops(list)
  local ops = {}
  for o, a in ipairs(list) do
    local op = {typ = a[1], key = a[2], value = a[3], ttl = a[4], owner = a[5], fresh = a[6]}
    op.raw = live(op.key)
    if op.typ == 'a' then
      local bad = add_to(op)
      if bad then return 'B' .. cjson.encode(bad) end
    end
    ops[o] = op
  end
  local rev = next_rev()
  if not rev then return 'X' end
  local srev = fmt(rev)
  local events, parts = {}, {srev}
  for o = 1, #ops do
    local event, part = apply(ops[o], srev)
    if event then events[#events + 1] = event end
    parts[#parts + 1] = part
  end
  append(rev, events)
  for o = 1, #ops do write(ops[o]) end
  return table.concat(parts, ' ')
end

-- The first of ways whose checks all hold now and that no earlier waiter's turn holds back (order: a
-- number or a string, '' or nil for none), and its number (nil if none).
local function other_way(ways, order)
  local o = tonumber(order) or math.huge
  for w, way in ipairs(ways or {}) do
    if #failures(way.c) == 0 and not behind_turn(way.c, o) then return way, w end
  end
  return nil
end

-- Applies p (its own checks hold now), or its other way w, and answers it.
local function grant(p, way, w)
  if not way then return answer(p, apply_ops(p.o)) end
  local text = apply_ops(way.o)
  if string.match(text, '^%d') then text = '@' .. w .. ' ' .. text end
  answer(p, text)
end

-- A kept, ordered commit p whose wait ran out keeps its waiter's turn till its next park, or till ends (µs).
local function keep_turn(p, ends)
  local order = tonumber(p.r)
  if p.k ~= 1 or not order or order == math.huge or ends <= NOW then return end
  local key = fmt(order)
  -- Kept already (a take past its deadline is looked at by every change): only its end may move on.
  local kept = turn_of(key)
  if kept then
    if ends > tonumber(kept.d) then
      kept.d = fmt(ends)
      redis.call('HSET', K_PARK, 't:' .. key, cjson.encode(kept))
    end
    return
  end
  local own = {}
  for i, c in ipairs(p.c) do
    if p.h[i] == 1 then own[#own + 1] = c end
  end
  -- The kept orders, oldest first ('tq'; some may have ended since): the ended at its front go, and
  -- past the cap the list is checked whole; a turn past it is not kept.
  local q = {}
  local s = redis.call('HGET', K_PARK, 'tq')
  if s then for o in string.gmatch(s, '%d+') do q[#q + 1] = o end end
  while q[1] and not turn_of(q[1]) do table.remove(q, 1) end
  if #q >= ${MAX_TURNS} then
    local live = {}
    for _, o in ipairs(q) do
      if turn_of(o) then live[#live + 1] = o end
    end
    q = live
  end
  if #q >= ${MAX_TURNS} then
    redis.call('HSET', K_PARK, 'tq', table.concat(q, ' '))
    return
  end
  q[#q + 1] = key
  redis.call('HSET', K_PARK, 'tq', table.concat(q, ' '))
  local keys = park_keys(p)
  redis.call('HSET', K_PARK, 't:' .. key, cjson.encode({k = keys, c = own, d = fmt(ends)}))
  for _, k in ipairs(keys) do
    local s = redis.call('HGET', K_PARK, 'tk:' .. k)
    redis.call('HSET', K_PARK, 'tk:' .. k, s and (s .. ' ' .. key) or key)
  end
end

-- Parked commit p whole (p may be what a retry reads of it: its 's:' record).
local function whole(p)
  if p.o then return p end
  local w = cjson.decode(redis.call('HGET', K_PARK, p.id))
  w.id, w.r = p.id, p.r
  return w
end

-- One more try of parked commit p (whole, or its 's:' record), in the step of a change at a key it checks.
-- Past its deadline it is never applied (its adapter unparks it, or died):
-- answered when it fails (a true failure), left for its adapter otherwise.
local function retry(p)
  local failed, lost, turned = {}, false, false
  for i, c in ipairs(p.c) do
    local raw = live(c[1])
    if not holds(raw, c[2], c[3]) then
      failed[#failed + 1] = c[1]
      failed[#failed + 1] = raw
      -- keepParked: answered when a check that held fails (a waiter's place gone), or a key is held by wakeOwner.
      if p.h[i] == 1 or owned_by(raw, p.w) then lost = true end
    elseif p.h[i] ~= 1 then
      -- A check that failed on its first try holds now. (A change that turned no check, such as the
      -- holder's renewal, leaves a commit without keepParked parked: as the local store.)
      turned = true
    end
  end
  local expired = tonumber(p.d) <= NOW
  -- Past its deadline, a waiter's take keeps its turn (till its adapter unparks it, and after): counted from
  -- the deadline, so a take whose adapter died holds nobody back past it however often it is looked at.
  if expired and not lost then keep_turn(p, tonumber(p.d) + ${TURN_US}) end
  if #failed == 0 then
    if not expired and not behind_turn(p.c, p.r) then grant(whole(p)) end
    return
  end
  local way, w = other_way(p.x, p.r)
  if way then
    if not expired then
      local full = whole(p)
      grant(full, full.x[w], w)
    end
    return
  end
  if lost or (p.k ~= 1 and (turned or p.woken)) or expired then answer(whole(p), 'F' .. cjson.encode(failed)) end
end

-- Marks p (without keepParked) woken if the change at key turned one of its checks there, judged when the change is
-- made: a commit handed over before p's try, in this call, may turn it back (as the local store judges it).
local function judge_at(p, key)
  if p.k == 1 then return end
  for i, c in ipairs(p.c) do
    if c[1] == key then
      if (holds(live(key), c[2], c[3]) and 1 or 0) ~= p.h[i] then p.woken = true end
    end
  end
end

local function by_turn(a, b)
  if a.r ~= b.r then return a.r < b.r end
  return a.q < b.q
end

-- Tries the parked commits on the keys this call changed, in their turn,
-- until none goes through (a commit that goes through changes keys too).
HOOK.handover = function()
  if next(CHANGED) == nil or PARKS == false then return end
  local found = false
  -- due stays sorted between tries: only commits newly found unsort it (a sort per try was most of a release's time
  -- with 15 waiters). queued: the commits in due by id (one found again is judged again, not read again).
  local due, queued, sorted = {}, {}, true
  while true do
    local changed = CHANGED
    CHANGED = {}
    for key in pairs(changed) do
      -- A turn whose place is gone ends (its waiter gave up): what it held back is tried in this call.
      for _, o in ipairs(turn_orders(key)) do
        found = true
        local t = turn_of(o)
        if t then
          for _, c in ipairs(t.c) do
            if c[1] == key and not holds(live(key), c[2], c[3]) then
              end_turn(o, t)
              break
            end
          end
        end
      end
      for _, id in ipairs(park_ids(key)) do
        found = true
        local p = queued[id]
        if not p then
          local raw = redis.call('HGET', K_PARK, 's:' .. id) or redis.call('HGET', K_PARK, id)
          if raw then
            p = cjson.decode(raw)
            p.id, p.r = id, tonumber(p.r) or math.huge
            queued[id] = p
            due[#due + 1] = p
            sorted = false
          end
        end
        if p then judge_at(p, key) end
      end
    end
    if #due > 0 then
      if not sorted then
        table.sort(due, by_turn)
        sorted = true
      end
      local p = table.remove(due, 1)
      queued[p.id] = nil
      retry(p)
    elseif next(CHANGED) == nil then
      break
    end
  end
  -- Nothing parked nor kept at all: the counter goes, so the next calls skip these reads (PARKS).
  if not found and redis.call('EXISTS', K_PARK, K_PKEY) == 0 then redis.call('HDEL', K_REV, 'pq') end
end

-- Parks a commit whose first try failed with failed: its checks, its ops
-- (each {typ, key, value, ttl, owner, fresh}), and ms, keep, order, wake
-- owner, channel and other ways. nil when it is not parked (a failing key is
-- held by the wake owner already): the caller answers the failure. The text
-- of its answer, when another way goes through now (its first try).
local function park(request, checks, ops, failed, ms, keep, order, wake, ch, ways)
  for j = 2, #failed, 2 do
    if owned_by(failed[j], wake) then return nil end
  end
  local way, w = other_way(ways, order)
  if way then
    local text = apply_ops(way.o)
    if string.match(text, '^%d') then text = '@' .. w .. ' ' .. text end
    return nil, text
  end
  -- A resend of a commit still parked is the same parked commit.
  if not redis.call('HGET', K_PARK, 'r:' .. request) then
    local held = {}
    for i, c in ipairs(checks) do held[i] = holds(live(c[1]), c[2], c[3]) and 1 or 0 end
    local id = fmt(redis.call('HINCRBY', K_REV, 'pq', 1))
    local p = {c = checks, o = ops, k = tonumber(keep), w = wake, r = order, q = tonumber(id), d = fmt(NOW + tonumber(ms) * 1000), h = held, ch = ch, rq = request, rt = ARGV[5], f = failed, x = ways}
    local s = {c = checks, h = held, k = p.k, w = wake, r = order, q = p.q, d = p.d}
    if #ways > 0 then
      s.x = {}
      for i, way in ipairs(ways) do s.x[i] = {c = way.c} end
    end
    redis.call('HSET', K_PARK, id, cjson.encode(p), 's:' .. id, cjson.encode(s), 'r:' .. request, id)
    for _, key in ipairs(park_keys(p)) do
      local ids = redis.call('HGET', K_PKEY, key)
      redis.call('HSET', K_PKEY, key, ids and (ids .. ' ' .. id) or id)
    end
  end
  return reply('parked', failed)
end
`
