/**
 * The commit functions: `commit` for any commit, `commit1` (the same effects
 * and answers) for the commits most calls make — at most one check and one op:
 * a lock's take, renewal or release, a fenced or plain put or delete, a
 * counter's add — with scalar arguments and fewer statements.
 *
 * A commit in one call, one transaction. Every commit carries the adapter's
 * own request id (`p_mine`), which its first event row keeps under a unique
 * index; a caller's request id (`p_ext`, a zaris node's clients) is kept in
 * `requests` with the answer.
 * 1. With `p_snapshot`, checks that fail on entries live by their deadlines
 *    are answered from a snapshot, with no lock and nothing written (a
 *    contended acquire costs a read). The adapter sends it on a commit's
 *    first attempt when a check compares a revision, without a caller's id.
 * 2. The namespace's row is locked and the commit takes its revision.
 * 3. A caller's id answered before gets that answer. A retry (`p_retry`:
 *    the first attempt's answer was lost) finds the first attempt's events
 *    (answered from them) or its kept failure; when the log no longer
 *    reaches back to `p_since` (the revision the adapter knew before the first
 *    attempt) it cannot tell, and raises ZR003.
 * 4. Entries of the commit's keys past their deadlines are expired first,
 *    each with a revision of its own (then the commit takes a later one);
 *    one a fence holds is live until the fence's transaction ends.
 * 5. The checks. A retry's failure is logged (`f`, its answer as the value):
 *    a first attempt still under way that runs after it then fails on the
 *    unique id instead of applying. A caller's id keeps its failure too.
 * 6. The ops, each logged; an op that would end or take over a life a fence
 *    holds raises ZR001 (the adapter waits for the fence and tries again,
 *    since waiting here would hold every commit of the namespace); an add that
 *    cannot be made exactly raises ZR002. Either rolls everything back.
 * 7. The events (the first with `p_mine`; an `n` row when none), the
 *    caller's id's answer, pruning when due, NOTIFY.
 *
 * Both run with `enable_seqscan` off: the tables churn (every take inserts a
 * row, every release deletes one) faster than autovacuum keeps their
 * statistics, and a plan that scans a small table's dead rows costs more
 * than the rest of the call.
 *
 * Answers (JSON arrays; times are ms since the epoch on Postgres's clock):
 * `[0, now, revision, parts]` (per op: a set's created; 1 or 0 for a delete
 * that did or did not delete; `[created, value, owner, deadline]` for an
 * add), `[1, now, failed]` (per failed check `[index, entry | null]`, entry
 * `[value, revision, created, owner, deadline]`), `[3, now, kept]` (an answer
 * kept before: `[0, revision, parts]` or `[1, failed]`), `[4, now, revision,
 * events]` (a retry whose first attempt was applied: that revision's events,
 * `[type, key, value, created, owner, deadline]`, the adapter rebuilds the parts).
 *
 * @module
 */

/** Whether a check holds on row `e`: want `w` (null: no entry), by created `bc` or by revision. */
export const holds = (e: string, w: string, bc: string) =>
  `(CASE WHEN ${w} IS NULL THEN ${e}.k IS NULL WHEN ${e}.k IS NULL THEN false WHEN ${bc} THEN ${e}.created = ${w} ELSE ${e}.revision = ${w} END)`

/** A row as a failure answer shows it. */
export const shown = (e: string) =>
  `CASE WHEN ${e}.k IS NULL THEN NULL ELSE json_build_array(${e}.value, ${e}.revision, ${e}.created, ${e}.owner, extract(epoch FROM ${e}.expires_at) * 1000) END`

const FENCED = `RAISE EXCEPTION 'zaris: the entry is held by a fence' USING ERRCODE = 'ZR001', DETAIL = encode(v_k, 'hex')`
const NOT_SAFE = `RAISE EXCEPTION 'zaris: add over a value that is not a safe integer, or past them' USING ERRCODE = 'ZR002', DETAIL = i::text || ':' || e.value`

/** Locks the namespace's row and takes a revision (the row is made on first use); answers a commit answered before. */
const LOCK = (n: string) => `
  UPDATE @S.stores SET revision = nextval('@S.revisions'), logged = logged + ${n} WHERE ns = p_ns RETURNING * INTO s;
  IF NOT FOUND THEN
    INSERT INTO @S.stores (ns, epoch) VALUES (p_ns, md5(random()::text || clock_timestamp()::text)) ON CONFLICT (ns) DO NOTHING;
    UPDATE @S.stores SET revision = nextval('@S.revisions'), logged = logged + ${n} WHERE ns = p_ns RETURNING * INTO s;
  END IF;
  v_rev := s.revision;
  IF p_ext IS NOT NULL THEN
    SELECT answer INTO v_kept FROM @S.requests WHERE ns = p_ns AND id = p_ext;
    IF FOUND THEN RETURN json_build_array(3, extract(epoch FROM clock_timestamp()) * 1000, v_kept); END IF;
  END IF;
  IF p_retry THEN
    SELECT revision, type, value INTO v_was, v_t, v_kept FROM @S.events WHERE ns = p_ns AND req = p_mine;
    IF FOUND AND v_t = 'f' THEN RETURN json_build_array(3, extract(epoch FROM clock_timestamp()) * 1000, v_kept); END IF;
    IF FOUND THEN
      RETURN json_build_array(4, extract(epoch FROM clock_timestamp()) * 1000, v_was, (
        SELECT json_agg(json_build_array(type, k, value, created, owner, extract(epoch FROM deadline) * 1000) ORDER BY seq)
        FROM @S.events WHERE ns = p_ns AND revision = v_was AND type IN ('p', 'd')));
    END IF;
    IF s.compacted > p_since THEN
      RAISE EXCEPTION 'zaris: the log no longer reaches back to the first attempt' USING ERRCODE = 'ZR003';
    END IF;
  END IF;
  v_now := clock_timestamp();`

/** The log row of the op's write (`w`, the rows it wrote), the first of the commit carrying the request id. */
const LOG = (type: string, cols: string) => `
    INSERT INTO @S.events (ns, revision, seq, type, k, value, created, owner, ttl, deadline, req)
      SELECT p_ns, v_rev, v_seq, '${type}', w.k, ${cols}, CASE WHEN v_seq = 0 THEN p_mine END FROM w;
    GET DIAGNOSTICS v_n = ROW_COUNT;`

/**
 * Applies op `i` (type v_t, key v_k; the row now there in `e`) at v_rev:
 * each write and its log row in one statement; sets v_part.
 */
export const APPLY = (v: string, ttl: string, own: string, fresh: string, delta: string) => `
  v_n := 0;
  IF v_t = 'd' THEN
    IF e.k IS NULL THEN
      v_part := to_json(0);
    ELSE
      -- Not a row a fence holds: a delete would wait for its transaction.
      WITH w AS (
        DELETE FROM @S.entries WHERE ns = p_ns AND k = v_k
          AND EXISTS (SELECT 1 FROM @S.entries WHERE ns = p_ns AND k = v_k FOR UPDATE SKIP LOCKED) RETURNING k
      )${LOG('d', 'NULL, NULL::bigint, NULL::bytea, NULL::double precision, NULL::timestamptz')}
      IF v_n = 0 THEN ${FENCED}; END IF;
      v_part := to_json(1);
    END IF;
  ELSIF v_t = 's' THEN
    IF e.k IS NULL THEN
      v_cr := v_rev;
      WITH w AS (
        INSERT INTO @S.entries (ns, k, value, revision, created, owner, ttl, expires_at)
          VALUES (p_ns, v_k, ${v}, v_rev, v_rev, ${own}, ${ttl}, v_now + ${ttl} * interval '1 millisecond') RETURNING k, expires_at
      )${LOG('p', `${v}, v_cr, ${own}, ${ttl}, w.expires_at`)}
    ELSE
      IF ${fresh} OR e.owner IS DISTINCT FROM ${own} THEN
        -- A new life: the old one's fence, if any, must have ended (the update would wait for it).
        PERFORM 1 FROM @S.entries WHERE ns = p_ns AND k = v_k FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN ${FENCED}; END IF;
        v_cr := v_rev;
      ELSE
        v_cr := e.created;
      END IF;
      WITH w AS (
        UPDATE @S.entries SET value = ${v}, revision = v_rev, created = v_cr, owner = ${own}, ttl = ${ttl},
          expires_at = v_now + ${ttl} * interval '1 millisecond' WHERE ns = p_ns AND k = v_k RETURNING k, expires_at
      )${LOG('p', `${v}, v_cr, ${own}, ${ttl}, w.expires_at`)}
    END IF;
    v_part := to_json(v_cr);
  ELSE
    IF e.k IS NULL THEN
      v_sum := ${delta};
      e.created := v_rev;
      WITH w AS (
        INSERT INTO @S.entries (ns, k, value, revision, created) VALUES (p_ns, v_k, v_sum::text, v_rev, v_rev) RETURNING k
      )${LOG('p', 'v_sum::text, v_rev, NULL::bytea, NULL::double precision, NULL::timestamptz')}
    ELSE
      IF e.value !~ '^-?[0-9]+$' THEN ${NOT_SAFE}; END IF;
      v_sum := e.value::numeric + ${delta};
      IF abs(v_sum) > 9007199254740991 THEN ${NOT_SAFE}; END IF;
      -- Only the value and the revision change: created, owner, ttl and deadline stay.
      WITH w AS (
        UPDATE @S.entries SET value = v_sum::text, revision = v_rev WHERE ns = p_ns AND k = v_k RETURNING k, created, owner, ttl, expires_at
      )${LOG('p', 'v_sum::text, w.created, w.owner, w.ttl, w.expires_at')}
    END IF;
    v_part := json_build_array(e.created, v_sum, e.owner, extract(epoch FROM e.expires_at) * 1000);
  END IF;
  v_seq := v_seq + v_n;`

/**
 * Logs an `n` row when nothing was, keeps the caller's id's answer, hands the
 * changed keys (`keys`) over to the commits parked on them, prunes when due,
 * notifies watchers, answers.
 */
const FINISH = (keys: string) => `
  IF v_seq = 0 THEN
    INSERT INTO @S.events (ns, revision, seq, type, k, req) VALUES (p_ns, v_rev, 0, 'n', '\\x', p_mine);
  END IF;
  IF p_ext IS NOT NULL THEN
    INSERT INTO @S.requests (ns, id, at, answer) VALUES (p_ns, p_ext, v_now, json_build_array(0, v_rev, v_parts));
  END IF;
  IF s.parked > 0 THEN v_hand := @S.hand_over(p_ns, ${keys}, v_now); END IF;
  IF v_fix OR v_hand > 0 THEN UPDATE @S.stores SET revision = greatest(v_rev, v_hand) WHERE ns = p_ns; END IF;
  IF s.logged > p_history + greatest(100, p_history / 10) OR v_now > s.pruned_at + p_retention * interval '100 microseconds' THEN
    PERFORM @S.prune(p_ns, p_history, p_retention, v_now);
  END IF;
  -- Only a watched namespace notifies (a follower marks it watched): NOTIFY serializes the commits of the whole database.
  IF s.watched > v_now THEN PERFORM pg_notify('zaris:@S', p_ns); END IF;
  RETURN json_build_array(0, extract(epoch FROM v_now) * 1000, v_rev, v_parts);`

/** A failed check after the lock: kept for a retry or a caller's id, expiries told, answered. */
const FAILED = `
    IF p_ext IS NOT NULL THEN
      INSERT INTO @S.requests (ns, id, at, answer) VALUES (p_ns, p_ext, v_now, json_build_array(1, v_failed));
    END IF;
    IF p_retry THEN
      INSERT INTO @S.events (ns, revision, seq, type, k, value, req) VALUES (p_ns, v_rev, 0, 'f', '\\x', json_build_array(1, v_failed)::text, p_mine);
    END IF;
    IF v_fix THEN
      UPDATE @S.stores SET revision = v_rev WHERE ns = p_ns;
      IF s.watched > v_now THEN PERFORM pg_notify('zaris:@S', p_ns); END IF;
    END IF;
    RETURN json_build_array(1, extract(epoch FROM v_now) * 1000, v_failed);`

/** After an expiry (`v_exp`): the commits parked on the expired keys are tried before this commit's checks (they were in line first). */
const HAND_EXPIRED = `
      IF s.parked > 0 THEN v_hand := @S.hand_over(p_ns, v_exp.keys, v_now); END IF;`

const DECLARE = `
DECLARE
  v_now timestamptz := clock_timestamp();
  s @S.stores; e @S.entries; c @S.entries;
  v_rev bigint; v_was bigint; v_kept json; v_failed json; v_due boolean; v_fix boolean := false; v_hand bigint := 0; v_exp record;
  v_t "char"; v_k bytea; v_cr bigint; v_sum numeric; v_part json; v_parts json[] := '{}';
  v_seq integer := 0; v_n integer;`

/** Any commit: checks and ops as parallel arrays (`p_ot` holds one letter per op: s, d or a). */
export const COMMIT = `
CREATE OR REPLACE FUNCTION @S.commit(
  p_ns text, p_ext bytea, p_mine bigint, p_snapshot boolean, p_retry boolean, p_since bigint,
  p_ck bytea[], p_cc boolean[], p_cw bigint[],
  p_ot text, p_ok bytea[], p_ov text[], p_ottl double precision[], p_oown bytea[], p_ofresh boolean[], p_odelta bigint[],
  p_retention integer, p_history integer
) RETURNS json LANGUAGE plpgsql SET enable_seqscan = off AS $$${DECLARE}
BEGIN
  IF p_snapshot AND cardinality(p_ck) > 0 THEN
    -- Deadlines are judged on the clock after the snapshot was taken: an entry live then was live in it.
    SELECT bool_or(ce.expires_at <= clock_timestamp()), json_agg(json_build_array(x.i, ${shown('ce')})) FILTER (WHERE NOT ${holds('ce', 'x.w', 'x.bc')})
      INTO v_due, v_failed
      FROM unnest(p_ck, p_cc, p_cw) WITH ORDINALITY AS x(k, bc, w, i) LEFT JOIN @S.entries ce ON ce.ns = p_ns AND ce.k = x.k;
    IF v_failed IS NOT NULL AND NOT coalesce(v_due, false) THEN RETURN json_build_array(1, extract(epoch FROM clock_timestamp()) * 1000, v_failed); END IF;
  END IF;
${LOCK('cardinality(p_ok)')}
  IF EXISTS (SELECT 1 FROM @S.entries WHERE ns = p_ns AND k = ANY (p_ck || p_ok) AND expires_at <= v_now) THEN
    v_exp := @S.expire_due(p_ns, v_now, p_ck || p_ok, true);
    IF v_exp.n > 0 THEN${HAND_EXPIRED}
      v_rev := nextval('@S.revisions');
      v_fix := true;
    END IF;
  END IF;
  IF cardinality(p_ck) > 0 THEN
    SELECT json_agg(json_build_array(x.i, ${shown('ce')})) FILTER (WHERE NOT ${holds('ce', 'x.w', 'x.bc')}) INTO v_failed
      FROM unnest(p_ck, p_cc, p_cw) WITH ORDINALITY AS x(k, bc, w, i) LEFT JOIN @S.entries ce ON ce.ns = p_ns AND ce.k = x.k;
    IF v_failed IS NOT NULL THEN${FAILED}
    END IF;
  END IF;
  FOR i IN 1 .. coalesce(cardinality(p_ok), 0) LOOP
    v_t := substr(p_ot, i, 1);
    v_k := p_ok[i];
    SELECT * INTO e FROM @S.entries WHERE ns = p_ns AND k = v_k;
${APPLY('p_ov[i]', 'p_ottl[i]', 'p_oown[i]', 'p_ofresh[i]', 'p_odelta[i]')}
    v_parts := v_parts || v_part;
  END LOOP;
${FINISH('p_ok')}
END $$;
`

/** At most one check (`p_ck` null for none) and exactly one op. */
export const COMMIT1 = `
CREATE OR REPLACE FUNCTION @S.commit1(
  p_ns text, p_ext bytea, p_mine bigint, p_snapshot boolean, p_retry boolean, p_since bigint,
  p_ck bytea, p_bc boolean, p_cw bigint,
  p_t "char", p_k bytea, p_v text, p_ttl double precision, p_own bytea, p_fresh boolean, p_delta bigint,
  p_retention integer, p_history integer
) RETURNS json LANGUAGE plpgsql SET enable_seqscan = off AS $$${DECLARE}
  i integer := 1;
BEGIN
  IF p_snapshot AND p_ck IS NOT NULL THEN
    SELECT * INTO c FROM @S.entries WHERE ns = p_ns AND k = p_ck;
    -- Deadlines are judged on the clock after the snapshot was taken: an entry live then was live in it.
    v_now := clock_timestamp();
    IF (c.expires_at IS NULL OR c.expires_at > v_now) AND NOT ${holds('c', 'p_cw', 'p_bc')} THEN
      RETURN json_build_array(1, extract(epoch FROM v_now) * 1000, json_build_array(json_build_array(1, ${shown('c')})));
    END IF;
  END IF;
${LOCK('1')}
  v_t := p_t;
  v_k := p_k;
  SELECT * INTO e FROM @S.entries WHERE ns = p_ns AND k = p_k;
  IF p_ck = p_k THEN c := e; ELSIF p_ck IS NOT NULL THEN SELECT * INTO c FROM @S.entries WHERE ns = p_ns AND k = p_ck; END IF;
  IF e.expires_at <= v_now OR c.expires_at <= v_now THEN
    v_exp := @S.expire_due(p_ns, v_now, CASE WHEN p_ck IS NULL THEN ARRAY[p_k] ELSE ARRAY[p_k, p_ck] END, true);
    IF v_exp.n > 0 THEN${HAND_EXPIRED}
      v_rev := nextval('@S.revisions');
      v_fix := true;
      SELECT * INTO e FROM @S.entries WHERE ns = p_ns AND k = p_k;
      IF p_ck = p_k THEN c := e; ELSIF p_ck IS NOT NULL THEN SELECT * INTO c FROM @S.entries WHERE ns = p_ns AND k = p_ck; END IF;
    END IF;
  END IF;
  IF p_ck IS NOT NULL AND NOT ${holds('c', 'p_cw', 'p_bc')} THEN
    v_failed := json_build_array(json_build_array(1, ${shown('c')}));${FAILED}
  END IF;
${APPLY('p_v', 'p_ttl', 'p_own', 'p_fresh', 'p_delta')}
  v_parts := ARRAY[v_part];
${FINISH('ARRAY[p_k]')}
END $$;
`
