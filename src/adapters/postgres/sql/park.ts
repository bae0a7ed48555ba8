/**
 * The store's handover in Postgres (capability `handover`): a commit that may
 * wait parks as a row of `parked`, and every step that changes keys (a
 * commit, an expiry, another parked commit that goes through) tries the
 * parked commits that check one of them, in the same transaction, before its
 * caller is answered — so a release hands a lock straight to the first in
 * line, and the waiter learns it from one notification.
 *
 * - `park` is a waiting commit's first try: its ways (the commit itself, then
 *   its `orElse`) are judged in order and the first whose checks all hold is
 *   applied; else, with a wait, it parks (with which of its own checks held,
 *   for `keepParked`) and answers `[5, now, failed, due]`: `due`, the ms until
 *   the first deadline at a key any of its ways checks, lets its adapter
 *   expire that key when nobody writes (a permit's other slots included).
 * - `hand_over(keys)` tries the parked commits that check any of `keys`, in
 *   `parkOrder` (`ord`, none last), then in the order they parked (`seq`);
 *   each that goes through takes a revision of its own, and the keys it
 *   changed are judged in turn. A parked commit is answered when a way goes
 *   through; when a check that held on its first try fails (`keep`: a
 *   waiter's place in line is gone) or a failed key is owned by its
 *   `wakeOwner`; and, without `keep`, when any check's outcome turned. Past
 *   its deadline it is never tried: its adapter unparks it (`unpark`) and
 *   gives it one last try (`park` with no wait).
 * - An answer goes into `requests` under the parked commit's own id (`\xff`
 *   and its 8 bytes: no caller's id, UTF-8, starts so) and the caller's id,
 *   and out as a NOTIFY on the schema's channel, `<ns> <id> <now> [<answer>]`
 *   (the answer left out past 7 000 bytes: the adapter reads it).
 * - `stores.parked` counts a namespace's parked rows, so that a step with
 *   nothing parked pays nothing more, and the lock-shaped statements
 *   (lock-path.ts) step aside while anything is parked.
 *
 * A way is a `way` composite: its checks and ops as the commit function's
 * parallel arrays.
 *
 * @module
 */
import { APPLY, holds, shown } from './commit'

/** The key a parked commit's answer is kept under in `requests`. */
/** ms from `now` until the first deadline among the entries at `keys` (null: none has one). */
const DUE_IN = (keys: string, now: string) =>
  `(SELECT extract(epoch FROM min(expires_at) - ${now}) * 1000 FROM @S.entries WHERE ns = p_ns AND k = ANY (${keys}) AND expires_at IS NOT NULL)`
const ANSWER_ID = (id: string) => `'\\xff'::bytea || int8send(${id})`

/** The parked commits' table, the `way` type and the namespace's count of parked rows. */
export const PARK_TABLES = `
ALTER TABLE @S.stores ADD COLUMN IF NOT EXISTS parked integer NOT NULL DEFAULT 0;
DO $$ BEGIN
  IF to_regtype('@S.way') IS NULL THEN
    CREATE TYPE @S.way AS (
      ck bytea[], cc boolean[], cw bigint[],
      ot text, ok bytea[], ov text[], ottl double precision[], oown bytea[], ofresh boolean[], odelta bigint[]
    );
  END IF;
END $$;
CREATE TABLE IF NOT EXISTS @S.parked (
  ns text NOT NULL,
  id bigint NOT NULL,
  ext bytea,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  ord bigint,
  keys bytea[] NOT NULL,
  ways @S.way[] NOT NULL,
  held boolean[] NOT NULL,
  keep boolean NOT NULL,
  wake bytea,
  deadline timestamptz NOT NULL,
  PRIMARY KEY (ns, id)
);
CREATE INDEX IF NOT EXISTS parked_line ON @S.parked (ns, ord, seq);
`

/** Checks (of way `way`, an expression of type `way`) as rows `x(k, bc, w, i)` joined to their entries `ce`. */
const CHECKS = (way: string) =>
  `unnest((${way}).ck, (${way}).cc, (${way}).cw) WITH ORDINALITY AS x(k, bc, w, i) LEFT JOIN @S.entries ce ON ce.ns = p_ns AND ce.k = x.k`

/** The first of `ways` (an expression of type `way[]`) whose checks all hold now, by number (null: none). */
const FIRST_WAY = (ways: string) => `(SELECT min(g.j) FROM generate_subscripts(${ways}, 1) AS g(j)
      WHERE NOT EXISTS (SELECT 1 FROM ${CHECKS(`${ways}[g.j]`)} WHERE NOT ${holds('ce', 'x.w', 'x.bc')}))`

/** Which checks of a way hold now, in order. */
const HELD = (way: string) => `(SELECT coalesce(array_agg(${holds('ce', 'x.w', 'x.bc')} ORDER BY x.i), '{}') FROM ${CHECKS(way)})`

/** A way's failed checks as a commit's failure answer shows them (null: none failed). */
const FAILURE = (way: string) =>
  `(SELECT json_agg(json_build_array(x.i, ${shown('ce')}) ORDER BY x.i) FILTER (WHERE NOT ${holds('ce', 'x.w', 'x.bc')}) FROM ${CHECKS(way)})`

/** Whether a failed check of a way (its checks held now: `held`) is at an entry owned by `wake`. */
const WOKEN = (way: string, held: string, wake: string) =>
  `(${wake} IS NOT NULL AND EXISTS (SELECT 1 FROM unnest((${way}).ck, ${held}) AS f(k, ok) JOIN @S.entries fe ON fe.ns = p_ns AND fe.k = f.k WHERE NOT f.ok AND fe.owner = ${wake}))`

/** The functions: applying a way, answering a parked commit, the handover, park and unpark. */
export const PARK_FUNCTIONS = `
-- Applies a way's ops at p_rev (its checks hold), as the commit function does; answers the parts.
CREATE OR REPLACE FUNCTION @S.apply_way(p_ns text, p_rev bigint, p_now timestamptz, p_mine bigint, p_w @S.way) RETURNS json
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  e @S.entries; v_rev bigint := p_rev; v_now timestamptz := p_now;
  v_t "char"; v_k bytea; v_cr bigint; v_sum numeric; v_part json; v_parts json[] := '{}'; v_seq integer := 0; v_n integer;
  v_ov text[] := p_w.ov; v_ottl double precision[] := p_w.ottl; v_oown bytea[] := p_w.oown; v_ofresh boolean[] := p_w.ofresh; v_odelta bigint[] := p_w.odelta;
BEGIN
  FOR i IN 1 .. coalesce(cardinality(p_w.ok), 0) LOOP
    v_t := substr(p_w.ot, i, 1);
    v_k := p_w.ok[i];
    SELECT * INTO e FROM @S.entries WHERE ns = p_ns AND k = v_k;
${APPLY('v_ov[i]', 'v_ottl[i]', 'v_oown[i]', 'v_ofresh[i]', 'v_odelta[i]')}
    v_parts := v_parts || v_part;
  END LOOP;
  IF v_seq = 0 THEN
    INSERT INTO @S.events (ns, revision, seq, type, k, req) VALUES (p_ns, v_rev, 0, 'n', '\\x', p_mine);
  END IF;
  RETURN array_to_json(v_parts);
END $$;

-- apply_way inside a subtransaction: a fence on one of its keys (ZR001) or an add that cannot be
-- made (ZR002) leaves the parked commit parked (its last try tells its caller) instead of failing the step.
CREATE OR REPLACE FUNCTION @S.try_apply(p_ns text, p_rev bigint, p_now timestamptz, p_mine bigint, p_w @S.way) RETURNS json
LANGUAGE plpgsql AS $$
BEGIN
  RETURN @S.apply_way(p_ns, p_rev, p_now, p_mine, p_w);
EXCEPTION WHEN SQLSTATE 'ZR001' OR SQLSTATE 'ZR002' THEN
  RETURN NULL;
END $$;

-- Answers a parked commit: out of park, its answer kept and sent.
CREATE OR REPLACE FUNCTION @S.answer_parked(p_ns text, p_id bigint, p_ext bytea, p_answer json, p_now timestamptz) RETURNS void LANGUAGE plpgsql AS $$
DECLARE v_text text;
BEGIN
  DELETE FROM @S.parked WHERE ns = p_ns AND id = p_id;
  UPDATE @S.stores SET parked = parked - 1 WHERE ns = p_ns;
  INSERT INTO @S.requests (ns, id, at, answer) VALUES (p_ns, ${ANSWER_ID('p_id')}, p_now, p_answer) ON CONFLICT DO NOTHING;
  IF p_ext IS NOT NULL THEN
    INSERT INTO @S.requests (ns, id, at, answer) VALUES (p_ns, p_ext, p_now, p_answer) ON CONFLICT DO NOTHING;
  END IF;
  v_text := p_ns || ' ' || p_id || ' ' || (extract(epoch FROM p_now) * 1000)::text;
  IF octet_length(p_answer::text) < 7000 THEN v_text := v_text || ' ' || p_answer::text; END IF;
  PERFORM pg_notify('zaris:@S', v_text);
END $$;

-- Tries the commits parked on p_keys (the caller holds the namespace's row); answers the last revision taken (0: none).
-- One query finds the first parked commit (in line order) that is due an answer now; it is answered, and the
-- query runs again over every key changed so far (a commit before it in line may now go through), until none is.
CREATE OR REPLACE FUNCTION @S.hand_over(p_ns text, p_keys bytea[], p_now timestamptz) RETURNS bigint
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  r record; w @S.way; v_exp record; v_todo bytea[] := p_keys; v_due bytea[]; v_last bigint := 0; v_rev bigint;
  v_parts json; v_answer json; v_logged integer := 0;
BEGIN
  LOOP
    -- Entries past their deadlines at the keys of the commits to judge go first, each a change of its own.
    SELECT array_agg(DISTINCT e.k) INTO v_due FROM @S.entries e
      WHERE e.ns = p_ns AND e.expires_at <= p_now
        AND e.k IN (SELECT unnest(p.keys) FROM @S.parked p WHERE p.ns = p_ns AND p.keys && v_todo AND p.deadline > p_now);
    IF v_due IS NOT NULL THEN
      v_exp := @S.expire_due(p_ns, p_now, v_due, false);
      v_last := greatest(v_last, v_exp.last);
      v_todo := v_todo || v_exp.keys;
      v_logged := v_logged + v_exp.n;
    END IF;
    SELECT p.id, p.ext, p.ways, t.way INTO r
      FROM @S.parked p
      CROSS JOIN LATERAL (SELECT ${FIRST_WAY('p.ways')} AS way, ${HELD('p.ways[1]')} AS held) t
      WHERE p.ns = p_ns AND p.keys && v_todo AND p.deadline > p_now
        AND (t.way IS NOT NULL
          OR (p.keep AND EXISTS (SELECT 1 FROM unnest(p.held, t.held) AS h(was, is_) WHERE h.was AND NOT h.is_))
          OR (NOT p.keep AND t.held IS DISTINCT FROM p.held)
          OR ${WOKEN('p.ways[1]', 't.held', 'p.wake')})
      ORDER BY p.ord NULLS LAST, p.seq LIMIT 1;
    EXIT WHEN NOT FOUND;
    v_answer := NULL;
    IF r.way IS NOT NULL THEN
      w := r.ways[r.way];
      v_rev := nextval('@S.revisions');
      v_parts := @S.try_apply(p_ns, v_rev, p_now, r.id, w);
      IF v_parts IS NOT NULL THEN
        v_answer := json_build_array(0, v_rev, v_parts, r.way - 1);
        v_last := v_rev;
        v_todo := v_todo || w.ok;
        v_logged := v_logged + greatest(1, cardinality(w.ok));
      END IF;
    END IF;
    IF v_answer IS NULL THEN
      -- Its failure (or a way it could not apply now: a fence, an add past the safe integers; its last try tells).
      w := r.ways[1];
      v_answer := json_build_array(1, ${FAILURE('w')});
    END IF;
    PERFORM @S.answer_parked(p_ns, r.id, r.ext, v_answer, p_now);
  END LOOP;
  IF v_logged > 0 THEN UPDATE @S.stores SET logged = logged + v_logged WHERE ns = p_ns; END IF;
  RETURN v_last;
END $$;

-- A commit that may wait: its first try (ways in order), then, failing, its park (p_ms > 0).
-- Answers [3, now, kept] (applied: [0, revision, parts, way]; or [1, failed]), [1, now, failed], or [5, now, failed, due]
-- (parked; due: ms until the first deadline at a key any of its ways checks, or null).
CREATE OR REPLACE FUNCTION @S.park(
  p_ns text, p_ext bytea, p_mine bigint, p_ways json, p_ms integer, p_keep boolean, p_order bigint, p_wake bytea,
  p_retention integer, p_history integer
) RETURNS json LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  s @S.stores; v_exp record; w @S.way; v_now timestamptz; v_rev bigint; v_kept json; v_ways @S.way[]; v_keys bytea[]; v_all bytea[];
  v_held boolean[]; v_failed json; v_parts json; v_hand bigint := 0; v_fix boolean := false; v_way integer;
BEGIN
  v_ways := ARRAY(SELECT json_populate_record(NULL::@S.way, j) FROM json_array_elements(p_ways) WITH ORDINALITY AS t(j, i) ORDER BY i);
  v_keys := ARRAY(SELECT DISTINCT c FROM unnest(v_ways) u, unnest(u.ck) c);
  v_all := v_keys || ARRAY(SELECT o FROM unnest(v_ways) u, unnest(u.ok) o);
  s := @S.lock_store(p_ns);
  v_now := clock_timestamp();
  -- Asked before (a retry of a call whose answer was lost, or that call running after its retry): what became of it.
  SELECT answer INTO v_kept FROM @S.requests WHERE ns = p_ns AND id = ${ANSWER_ID('p_mine')};
  IF FOUND THEN RETURN json_build_array(3, extract(epoch FROM v_now) * 1000, v_kept); END IF;
  IF p_ext IS NOT NULL THEN
    SELECT answer INTO v_kept FROM @S.requests WHERE ns = p_ns AND id = p_ext;
    IF FOUND THEN RETURN json_build_array(3, extract(epoch FROM v_now) * 1000, v_kept); END IF;
  END IF;
  IF EXISTS (SELECT 1 FROM @S.parked WHERE ns = p_ns AND id = p_mine) THEN
    w := v_ways[1];
    RETURN json_build_array(5, extract(epoch FROM v_now) * 1000, ${FAILURE('w')}, ${DUE_IN('v_keys', 'v_now')});
  END IF;
  -- Entries past their deadlines at its keys go first; what was parked on them before it is tried first.
  IF EXISTS (SELECT 1 FROM @S.entries WHERE ns = p_ns AND k = ANY (v_all) AND expires_at <= v_now) THEN
    v_exp := @S.expire_due(p_ns, v_now, v_all, true);
    IF v_exp.n > 0 THEN
      v_fix := true;
      v_hand := v_exp.last;
      UPDATE @S.stores SET logged = logged + v_exp.n WHERE ns = p_ns;
      IF s.parked > 0 THEN v_hand := greatest(v_hand, @S.hand_over(p_ns, v_exp.keys, v_now)); END IF;
    END IF;
  END IF;
  v_way := ${FIRST_WAY('v_ways')};
  IF v_way IS NOT NULL THEN
    w := v_ways[v_way];
    v_rev := nextval('@S.revisions');
    v_parts := @S.apply_way(p_ns, v_rev, v_now, p_mine, w);
    v_kept := json_build_array(0, v_rev, v_parts, v_way - 1);
    INSERT INTO @S.requests (ns, id, at, answer) VALUES (p_ns, ${ANSWER_ID('p_mine')}, v_now, v_kept);
    IF p_ext IS NOT NULL THEN INSERT INTO @S.requests (ns, id, at, answer) VALUES (p_ns, p_ext, v_now, v_kept); END IF;
    IF s.parked > 0 THEN v_hand := greatest(v_hand, @S.hand_over(p_ns, w.ok, v_now)); END IF;
    UPDATE @S.stores SET revision = greatest(revision, v_rev, v_hand), logged = logged + greatest(1, cardinality(w.ok)) WHERE ns = p_ns;
    IF s.watched > v_now THEN PERFORM pg_notify('zaris:@S', p_ns); END IF;
    RETURN json_build_array(3, extract(epoch FROM v_now) * 1000, v_kept);
  END IF;
  w := v_ways[1];
  v_held := ${HELD('w')};
  v_failed := ${FAILURE('w')};
  IF v_fix THEN
    UPDATE @S.stores SET revision = greatest(revision, v_hand) WHERE ns = p_ns;
    IF s.watched > v_now THEN PERFORM pg_notify('zaris:@S', p_ns); END IF;
  END IF;
  -- Not parked: no wait, or a failed key already owned by its wakeOwner (it joins that one instead).
  IF p_ms <= 0 OR ${WOKEN('w', 'v_held', 'p_wake')} THEN
    IF p_ext IS NOT NULL THEN
      INSERT INTO @S.requests (ns, id, at, answer) VALUES (p_ns, p_ext, v_now, json_build_array(1, v_failed));
    END IF;
    RETURN json_build_array(1, extract(epoch FROM v_now) * 1000, v_failed);
  END IF;
  INSERT INTO @S.parked (ns, id, ext, ord, keys, ways, held, keep, wake, deadline)
    VALUES (p_ns, p_mine, p_ext, p_order, v_keys, v_ways, v_held, p_keep, p_wake, v_now + p_ms * interval '1 millisecond');
  UPDATE @S.stores SET parked = parked + 1 WHERE ns = p_ns;
  RETURN json_build_array(5, extract(epoch FROM v_now) * 1000, v_failed, ${DUE_IN('v_keys', 'v_now')});
END $$;

-- Takes a parked commit out of park: its answer if it was answered ([3, now, kept]), else null (it never will be).
CREATE OR REPLACE FUNCTION @S.unpark(p_ns text, p_mine bigint) RETURNS json LANGUAGE plpgsql AS $$
DECLARE s @S.stores; v_kept json;
BEGIN
  s := @S.lock_store(p_ns);
  SELECT answer INTO v_kept FROM @S.requests WHERE ns = p_ns AND id = ${ANSWER_ID('p_mine')};
  IF FOUND THEN RETURN json_build_array(3, extract(epoch FROM clock_timestamp()) * 1000, v_kept); END IF;
  DELETE FROM @S.parked WHERE ns = p_ns AND id = p_mine;
  IF FOUND THEN UPDATE @S.stores SET parked = parked - 1 WHERE ns = p_ns; END IF;
  RETURN NULL;
END $$;

-- Expires what is due at p_keys (and more of the namespace), then answers the ms until the next deadline among p_keys.
CREATE OR REPLACE FUNCTION @S.due_in(p_ns text, p_keys bytea[]) RETURNS double precision LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
  PERFORM @S.sweep(p_ns, p_keys);
  RETURN ${DUE_IN('p_keys', 'clock_timestamp()')};
END $$;
`
