/**
 * The tables of a zaris store in Postgres (schema version {@link SCHEMA_VERSION}),
 * under one schema (`zaris` unless the adapter is told otherwise; `@S` below
 * stands for it). Every namespace lives in the same tables, told apart by `ns`.
 *
 * - `revisions`  sequence: every commit and every expiry takes the next value, so a revision, and a
 *                lock's token, is unique in the whole schema (namespaces see gaps, as on etcd);
 *                never reused, and after a crash Postgres starts it past every value it handed out.
 * - `stores`     one row per namespace: the namespace's last revision, the revision up to which
 *                its events are gone (`compacted`), an epoch, the counters that say when to
 *                prune, and until when someone watches it (only then do its commits NOTIFY).
 *                Every write of a namespace locks this row first, so the namespace's
 *                revisions are taken, and become visible, in commit order.
 * - `entries`    the live entries (and expired ones not yet swept: every read treats an entry past
 *                its deadline as gone, unless a fence holds it). Keys are stored as UTF-16 (big
 *                endian) bytes, whose byte order is the contract's UTF-16 code unit order, and which
 *                can hold any key (text cannot hold U+0000). `UNIQUE (k, created)` names a life
 *                across the schema; it also makes `created` a key column, so a fence's
 *                `FOR KEY SHARE` lock lets renewals through but makes a steal, a delete or an expiry
 *                of that life wait for the fence's transaction.
 * - `events`     the change log that watches read: one row per put (`p`), delete (`d`) and expiry
 *                (`e`), in revision order, the most recent `history` kept per namespace. The first
 *                row of a commit carries the adapter's request id (`req`, unique per namespace: an
 *                attempt that runs after its own retry was applied cannot apply again); a commit
 *                that changed nothing logs an `n` row for it, and a retry's failure an `f` row with
 *                its answer. Watches read only `p`, `d` and `e`.
 * - `requests`   the answers of commits sent with a caller's request id (a zaris node's clients),
 *                kept `requestRetention` ms, so a commit sent again is answered, not applied twice.
 *
 * `entries` and `stores` churn (a row in and out per lock held, an update per
 * commit): they are vacuumed every thousand dead rows, whatever their size,
 * and keep room in their pages for updates that need no index change.
 *
 * They are also never smaller than {@link MIN_PAGES} pages: a table Postgres
 * sees as a page or two gets a sequential scan where the lock path's
 * prepared statements (lock-path.ts) look a key up, and that plan stays until
 * the next vacuum while the table fills with the dead rows every take and
 * release leave — each statement then reads them all (backend CPU of a take
 * + release 0.7-0.75x without it, bench/tools/postgres-parts.ts). From 16
 * pages on the planner takes the primary key's index. So the schema script
 * makes them that size (rows written and deleted before it commits) and
 * vacuum keeps their pages (`vacuum_truncate = false`); what they grow to
 * under load they keep too, as a table without truncation does.
 *
 * Values are JSON text (not jsonb, which reorders keys and cannot hold U+0000); owners and
 * request ids are UTF-8 bytes. TTLs run on Postgres's clock (`clock_timestamp()`).
 *
 * @module
 */

/** The schema this code writes; a store created by a newer zaris is refused. */
export const SCHEMA_VERSION = 3

/** The fewest pages `stores` and `entries` have (see the module's comment). */
const MIN_PAGES = 16
/** Rows of ~1 kB that fill {@link MIN_PAGES} pages of 8 kB (at `fillfactor` 50 for `stores`, 4 rows a page). */
const FILLER_ROWS = 80

/** The tables, sequence and indexes, created if absent. */
export const TABLES = `
CREATE SCHEMA IF NOT EXISTS @S;
CREATE TABLE IF NOT EXISTS @S.meta (version integer NOT NULL);
CREATE SEQUENCE IF NOT EXISTS @S.revisions MINVALUE 1 MAXVALUE 9007199254740991 NO CYCLE;
CREATE TABLE IF NOT EXISTS @S.stores (
  ns text PRIMARY KEY,
  epoch text NOT NULL,
  revision bigint NOT NULL DEFAULT 0,
  compacted bigint NOT NULL DEFAULT 0,
  logged bigint NOT NULL DEFAULT 0,
  pruned_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  watched timestamptz NOT NULL DEFAULT '-infinity'
) WITH (fillfactor = 50, vacuum_truncate = false, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
CREATE TABLE IF NOT EXISTS @S.entries (
  ns text NOT NULL,
  k bytea NOT NULL,
  value text NOT NULL,
  revision bigint NOT NULL,
  created bigint NOT NULL,
  owner bytea,
  ttl double precision,
  expires_at timestamptz,
  PRIMARY KEY (ns, k),
  UNIQUE (k, created)
) WITH (fillfactor = 70, vacuum_truncate = false, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 1000);
CREATE INDEX IF NOT EXISTS entries_due ON @S.entries (ns, expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS @S.events (
  ns text NOT NULL,
  revision bigint NOT NULL,
  seq integer NOT NULL,
  type "char" NOT NULL,
  k bytea NOT NULL,
  value text,
  created bigint,
  owner bytea,
  ttl double precision,
  deadline timestamptz,
  req bigint,
  PRIMARY KEY (ns, revision, seq)
);
-- Sized for index scans (see the module's comment): rows that never commit, in namespaces no zaris
-- client can name (they have a space), so the two tables start at ${MIN_PAGES} pages.
DO $$ BEGIN
  IF pg_relation_size('@S.stores') < ${MIN_PAGES} * current_setting('block_size')::integer THEN
    INSERT INTO @S.stores (ns, epoch) SELECT 'zaris filler ' || i, repeat(' ', 1000) FROM generate_series(1, ${FILLER_ROWS}) i ON CONFLICT DO NOTHING;
    DELETE FROM @S.stores WHERE ns LIKE 'zaris filler %';
  END IF;
  IF pg_relation_size('@S.entries') < ${MIN_PAGES} * current_setting('block_size')::integer THEN
    INSERT INTO @S.entries (ns, k, value, revision, created) SELECT 'zaris filler', int4send(i), repeat(' ', 1000), 0, 0 FROM generate_series(1, ${FILLER_ROWS}) i ON CONFLICT DO NOTHING;
    DELETE FROM @S.entries WHERE ns = 'zaris filler';
  END IF;
END $$;
CREATE UNIQUE INDEX IF NOT EXISTS events_req ON @S.events (ns, req) WHERE req IS NOT NULL;
CREATE TABLE IF NOT EXISTS @S.requests (
  ns text NOT NULL,
  id bytea NOT NULL,
  at timestamptz NOT NULL,
  answer json NOT NULL,
  PRIMARY KEY (ns, id)
);
`

/**
 * Expiry and pruning, run by a caller that holds the namespace's row.
 *
 * `expire_due` expires the entries of `p_keys` due at `p_now`, then up to
 * 500 more of the namespace, each with a revision of its own, logged as
 * `e` events. `FOR UPDATE SKIP LOCKED` passes over an entry a fence holds:
 * it stays live until the fence's transaction ends.
 *
 * `prune` drops the namespace's oldest events beyond the `p_history` most
 * recent (whole revisions; `compacted` says up to which revision), and the
 * request answers older than `p_retention` ms.
 *
 * `sweep` is the expiry a read or a watcher's timer runs: it answers how
 * many due entries stay (held by fences), or -1 when none was due.
 *
 * `watch` marks a namespace watched for a while and answers its revision.
 */
export const HOUSEKEEPING = `
DROP FUNCTION IF EXISTS @S.expire_due(text, timestamptz, bytea[]);
CREATE OR REPLACE FUNCTION @S.expire_due(p_ns text, p_now timestamptz, p_keys bytea[], p_more boolean, OUT last bigint, OUT n integer, OUT keys bytea[])
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE m integer; r bigint; g bytea[];
BEGIN
  last := 0; n := 0; keys := '{}';
  -- Pass 1: the given keys (all that are due); pass 2 (p_more): the namespace's earliest due, 500 at most.
  FOR pass IN 1 .. 2 LOOP
    CONTINUE WHEN pass = 1 AND p_keys IS NULL;
    CONTINUE WHEN pass = 2 AND NOT p_more;
    WITH due AS (
      SELECT k, expires_at FROM @S.entries WHERE ns = p_ns AND expires_at <= p_now AND (pass = 2 OR k = ANY (p_keys))
      ORDER BY expires_at, k LIMIT CASE WHEN pass = 2 THEN 500 END FOR UPDATE SKIP LOCKED
    ), gone AS (
      DELETE FROM @S.entries e USING due WHERE e.ns = p_ns AND e.k = due.k RETURNING e.k, e.expires_at
    ), logged AS (
      INSERT INTO @S.events (ns, revision, seq, type, k)
      SELECT p_ns, nextval('@S.revisions'), 0, 'e', g.k FROM (SELECT k FROM gone ORDER BY expires_at, k) g RETURNING revision, k
    ) SELECT count(*), coalesce(max(revision), 0), coalesce(array_agg(k), '{}') INTO m, r, g FROM logged;
    n := n + m; last := greatest(last, r); keys := keys || g;
  END LOOP;
END $$;

CREATE OR REPLACE FUNCTION @S.prune(p_ns text, p_history integer, p_retention integer, p_now timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE v_cut bigint; v_gone integer;
BEGIN
  SELECT revision INTO v_cut FROM @S.events WHERE ns = p_ns ORDER BY revision DESC, seq DESC OFFSET p_history LIMIT 1;
  IF v_cut IS NOT NULL THEN
    DELETE FROM @S.events WHERE ns = p_ns AND revision <= v_cut;
  END IF;
  DELETE FROM @S.requests WHERE ns = p_ns AND at < p_now - p_retention * interval '1 millisecond';
  -- Parked commits whose adapters never came back for them (their process died).
  DELETE FROM @S.parked WHERE ns = p_ns AND deadline < p_now - p_retention * interval '1 millisecond';
  GET DIAGNOSTICS v_gone = ROW_COUNT;
  IF v_gone > 0 THEN UPDATE @S.stores SET parked = parked - v_gone WHERE ns = p_ns; END IF;
  UPDATE @S.stores SET logged = least(logged, p_history), compacted = greatest(compacted, coalesce(v_cut, 0)), pruned_at = p_now
    WHERE ns = p_ns;
END $$;

CREATE OR REPLACE FUNCTION @S.lock_store(p_ns text) RETURNS @S.stores LANGUAGE plpgsql AS $$
DECLARE s @S.stores;
BEGIN
  SELECT * INTO s FROM @S.stores WHERE ns = p_ns FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO @S.stores (ns, epoch) VALUES (p_ns, md5(random()::text || clock_timestamp()::text)) ON CONFLICT (ns) DO NOTHING;
    SELECT * INTO s FROM @S.stores WHERE ns = p_ns FOR UPDATE;
  END IF;
  RETURN s;
END $$;

CREATE OR REPLACE FUNCTION @S.sweep(p_ns text, p_keys bytea[]) RETURNS integer LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE s @S.stores; x record; v_now timestamptz; v_left integer; v_hand bigint := 0;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM @S.entries WHERE ns = p_ns AND expires_at <= clock_timestamp()) THEN RETURN -1; END IF;
  s := @S.lock_store(p_ns);
  v_now := clock_timestamp();
  x := @S.expire_due(p_ns, v_now, p_keys, true);
  IF x.n > 0 THEN
    -- The expired keys go to the commits parked on them (park.ts), in this step.
    IF s.parked > 0 THEN v_hand := @S.hand_over(p_ns, x.keys, v_now); END IF;
    UPDATE @S.stores SET revision = greatest(revision, x.last, v_hand), logged = logged + x.n WHERE ns = p_ns;
    IF s.watched > v_now THEN PERFORM pg_notify('zaris:@S', p_ns); END IF;
  END IF;
  SELECT count(*) INTO v_left FROM @S.entries WHERE ns = p_ns AND expires_at <= v_now;
  RETURN v_left;
END $$;

-- A watcher marks the namespace watched for p_ms (its commits NOTIFY until then) and reads its
-- revision: every commit after it notifies.
CREATE OR REPLACE FUNCTION @S.watch(p_ns text, p_ms integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_rev bigint;
BEGIN
  PERFORM @S.lock_store(p_ns);
  UPDATE @S.stores SET watched = greatest(watched, clock_timestamp() + p_ms * interval '1 millisecond') WHERE ns = p_ns
    RETURNING revision INTO v_rev;
  RETURN v_rev;
END $$;
`
