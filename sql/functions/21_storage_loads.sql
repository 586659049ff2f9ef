-- Storage: loads (S85): the jobs of a bulk dispatch kept as chunks of pgq.loads until a reserve
-- takes them (migration 00023, docs/design/loads.md).
--
-- A dispatch of pgq._load_min() payloads or more, of plain jobs (no delay, unique or
-- debounce settings, middleware, batch or chain), writes one pgq.loads row per 1,024
-- jobs instead of a pgq.jobs row per job. Every job keeps what a row would give it: its
-- uuid (returned by the dispatch), its id and its place in the queue's order, its
-- frozen settings. The jobs of a chunk are waiting jobs like any other: the views list
-- and count them, pgq.cancel and pgq.run_now act on them. A job leaves its chunk once,
-- as a row of pgq.jobs: reserved by pgq.reserve (pgq._load_take), or waiting
-- (pgq._load_job_to_row) for an operation on that one job. It never goes back.

-- pgq._load_min: the fewest payloads of a dispatch that make a load: the setting
-- pgq.load_min (ALTER DATABASE … SET pgq.load_min = 500, say; 0: never), 1,000 when it
-- is not set. A chunk pays for itself at about a reserve's size: each pass of a reserve
-- takes one chunk, and with a producer at 20,000 jobs/s in calls of 100 the worker fell
-- behind on chunks of 100 where it kept up on rows (bench/RESULTS.md, issue 19). Raises
-- 22023 for a setting that is not a whole number.
CREATE OR REPLACE FUNCTION pgq._load_min() RETURNS int
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_text text := nullif(current_setting('pgq.load_min', true), '');
BEGIN
    IF v_text !~ '^\s*[0-9]{1,9}\s*$' THEN
        RAISE EXCEPTION 'pgq: the setting pgq.load_min must be a whole number of payloads (0: no loads), got %', quote_literal(v_text)
            USING ERRCODE = '22023';
    END IF;
    RETURN coalesce(v_text::int, 1000);
END;
$$;

COMMENT ON FUNCTION pgq._load_min() IS 'The fewest payloads of a plain dispatch that are written as a load (setting pgq.load_min, 1,000 when not set; 0: never).';

-- pgq._load_chunk: the most jobs one pgq.loads row holds: the step of pgq.jobs_id_seq,
-- whose one number per chunk gives its jobs their ids.
CREATE OR REPLACE FUNCTION pgq._load_chunk() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 1024 $$;

COMMENT ON FUNCTION pgq._load_chunk() IS 'The most jobs one pgq.loads row holds: 1,024, the step of pgq.jobs_id_seq.';

-- pgq._load_uuid: the uuid p_offset jobs after p_first in a chunk: p_first with
-- p_offset added to its last 48 bits (pgq._uuid7s counts there, and never carries out).
CREATE OR REPLACE FUNCTION pgq._load_uuid(p_first uuid, p_offset int) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (left(p_first::text, 24) || lpad(to_hex(('x' || right(p_first::text, 12))::bit(48)::bigint + p_offset), 12, '0'))::uuid
$$;

COMMENT ON FUNCTION pgq._load_uuid(uuid, int) IS 'The uuid of the job p_offset places after the one whose uuid is p_first, in a chunk of pgq.loads.';

-- pgq._load_dispatch: writes the jobs of one dispatch as chunks of pgq.loads: p_job
-- holds their frozen settings and slot (pgq._dispatch), p_uuids the uuid of each
-- payload, from one pgq._uuid7s call (so a chunk's uuids count up from its first).
CREATE OR REPLACE FUNCTION pgq._load_dispatch(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_k int := pgq._load_chunk();
    v_n int := cardinality(p_payloads);
    v_from int := 1;
BEGIN
    WHILE v_from <= v_n LOOP
        INSERT INTO pgq.loads
            (first_id, first_uuid, n, job, queue, priority, handler, tries, backoff, max_exceptions, timeout,
             fail_on_timeout, retry_until, available_at, payloads, slot)
        VALUES (nextval('pgq.jobs_id_seq'), p_uuids[v_from], least(v_k, v_n - v_from + 1), p_job.job, p_job.queue,
                p_job.priority, p_job.handler, p_job.tries, p_job.backoff, p_job.max_exceptions, p_job.timeout,
                p_job.fail_on_timeout, p_job.retry_until, p_job.available_at,
                CASE WHEN v_n <= v_k THEN p_payloads ELSE p_payloads[v_from : v_from + v_k - 1] END, p_job.slot);
        v_from := v_from + v_k;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._load_dispatch(pgq.jobs, jsonb[], uuid[]) IS 'Writes the jobs of one plain dispatch as chunks of pgq.loads (S85).';

-- pgq._load_take: pgq.reserve's pickup of a chunk that it holds locked (FOR UPDATE):
-- its next p_want jobs become rows of pgq.jobs in the current slot, reserved for
-- p_worker with their attempt counted and lease tokens built as pgq.reserve builds them
-- (S5, S14), and the chunk gives them up (deleted once it has none left). No pickup
-- check applies to them (no cancel request, debounce, middleware, until-processing lock
-- or batch; a first attempt), except a deadline (S12): jobs whose retry_until has
-- passed become waiting rows instead, for the reserve's one-by-one path to fail. Returns
-- the reserved jobs in order.
CREATE OR REPLACE FUNCTION pgq._load_take(
    p_load pgq.loads, p_want int, p_now timestamptz, p_lease int, p_worker text, p_token text
) RETURNS SETOF pgq.reservation
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_k    int := least(p_want, p_load.n - p_load.next);
    v_late boolean := p_load.retry_until IS NOT NULL AND p_now > p_load.retry_until;
BEGIN
    IF p_load.next + v_k = p_load.n THEN
        DELETE FROM pgq.loads l WHERE l.slot = p_load.slot AND l.first_uuid = p_load.first_uuid;
    ELSE
        UPDATE pgq.loads l SET next = l.next + v_k WHERE l.slot = p_load.slot AND l.first_uuid = p_load.first_uuid;
    END IF;
    RETURN QUERY
    SELECT * FROM pgq._load_rows(p_load, p_load.next + 1, v_k, pgq._slot(), p_now, p_lease,
                                 CASE WHEN NOT v_late THEN p_worker END, p_token);
END;
$$;

COMMENT ON FUNCTION pgq._load_take(pgq.loads, int, timestamptz, int, text, text) IS
    'pgq.reserve''s pickup of a locked chunk of pgq.loads: its next jobs become reserved rows of pgq.jobs (waiting ones when their deadline passed); returns the reserved ones in order (S85).';

-- pgq._load_rows: jobs p_from .. p_from + p_count - 1 of a chunk as rows of pgq.jobs in
-- slot p_slot, as they were dispatched: reserved for p_worker at p_now, their attempt
-- counted and lease tokens built as pgq.reserve builds them, and returned in order; or,
-- with p_worker NULL, waiting, and none returned. The caller has taken them out of the
-- chunk.
CREATE OR REPLACE FUNCTION pgq._load_rows(
    p_load pgq.loads, p_from int, p_count int, p_slot smallint,
    p_now timestamptz, p_lease int, p_worker text, p_token text
) RETURNS SETOF pgq.reservation
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    -- pgq._load_uuid written out, its chunk's part computed once: a call per job cost
    -- 3.7 µs (a function with a SET clause is never inlined), a fifth of a reserve's
    -- time per job taken from a chunk.
    v_head text := left(p_load.first_uuid::text, 24);
    v_base bigint := ('x' || right(p_load.first_uuid::text, 12))::bit(48)::bigint;
BEGIN
    RETURN QUERY
    WITH made AS (
        INSERT INTO pgq.jobs
            (id, uuid, job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout, fail_on_timeout,
             retry_until, available_at, created_at, attempts, reserved_at, reserved_until, reserved_by, lease_token,
             started_at, slot)
        SELECT p_load.first_id + p.i - 1, (v_head || lpad(to_hex(v_base + p.i - 1), 12, '0'))::uuid, p_load.job, p_load.queue,
               p.payload, p_load.priority, p_load.handler, p_load.tries, p_load.backoff, p_load.max_exceptions,
               p_load.timeout, p_load.fail_on_timeout, p_load.retry_until, p_load.available_at, p_load.created_at,
               CASE WHEN p_worker IS NULL THEN 0 ELSE 1 END, CASE WHEN p_worker IS NOT NULL THEN p_now END,
               CASE WHEN p_worker IS NOT NULL THEN p_now + make_interval(secs => p_lease) END, p_worker,
               CASE WHEN p_worker IS NOT NULL
                    THEN (p_token || p_slot || lpad(to_hex((p_load.first_id + p.i - 1) & 17592186044415), 11, '0'))::uuid END,
               CASE WHEN p_worker IS NOT NULL THEN p_now END, p_slot
        FROM (SELECT u.payload, p_from - 1 + u.o::int AS i
              FROM unnest(p_load.payloads[p_from : p_from + p_count - 1]) WITH ORDINALITY u(payload, o)) p
        RETURNING pgq.jobs.uuid, pgq.jobs.job, pgq.jobs.queue, pgq.jobs.payload, pgq.jobs.priority, pgq.jobs.attempts,
                  pgq.jobs.tries, pgq.jobs.handler::text AS handler, pgq.jobs.timeout, pgq.jobs.lease_token,
                  pgq.jobs.reserved_at, pgq.jobs.reserved_until, pgq.jobs.created_at, pgq.jobs.id
    )
    SELECT r.uuid, r.job, r.queue, r.payload, r.priority, r.attempts, r.tries, r.handler, r.timeout,
           r.lease_token, r.reserved_at, r.reserved_until, NULL::text[], r.created_at,
           NULL::pgq.pickup, NULL::text, NULL::text, NULL::int
    FROM made r
    WHERE r.reserved_at IS NOT NULL
    ORDER BY r.id;
END;
$$;

COMMENT ON FUNCTION pgq._load_rows(pgq.loads, int, int, smallint, timestamptz, int, text, text) IS
    'Jobs of a chunk of pgq.loads as rows of pgq.jobs, as dispatched: reserved (returned in order), or waiting with no worker given (S85).';

-- pgq._load_chunk_of: the first_uuid of the chunk of pgq.loads whose jobs' uuids
-- include p_uuid (through loads_uuid_idx: the chunk with the greatest first_uuid up to
-- it, if p_uuid is one of its n), NULL when none does. The job may have become a row
-- already (its place is next or before). What a lookup of one job in a view that lists
-- chunk jobs filters on: WHERE uuid = $1 AND chunk IS NOT DISTINCT FROM
-- (SELECT pgq._load_chunk_of($1)) reads the chunks' rows and expands only that chunk
-- (NULL, for a row, expands none). SECURITY DEFINER: the reader role reads jobs through views, and
-- this tells it no more than they do.
CREATE OR REPLACE FUNCTION pgq._load_chunk_of(p_uuid uuid) RETURNS uuid
LANGUAGE sql STABLE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT c.first_uuid
    FROM (SELECT l.first_uuid, l.n FROM pgq.loads l WHERE l.first_uuid <= p_uuid ORDER BY l.first_uuid DESC LIMIT 1) c
    WHERE left(c.first_uuid::text, 24) = left(p_uuid::text, 24)
      AND ('x' || right(p_uuid::text, 12))::bit(48)::bigint - ('x' || right(c.first_uuid::text, 12))::bit(48)::bigint < c.n
$$;

COMMENT ON FUNCTION pgq._load_chunk_of(uuid) IS 'The first_uuid of the chunk of pgq.loads that holds (or held) the job with this uuid, NULL when none does (S85).';

-- pgq._load_job_to_row: the job with this uuid leaves its chunk of pgq.loads, if it is
-- in one, as a waiting row of pgq.jobs in the current slot, for an operation on that
-- one job (pgq.cancel, pgq.run_now). The chunk keeps the jobs before it, and those
-- after it become a chunk of their own, in the same place in the queue. Waits for the
-- chunk's lock: a reserve taking the chunk now has the job once it commits. Returns
-- whether the job was in a chunk.
CREATE OR REPLACE FUNCTION pgq._load_job_to_row(p_uuid uuid) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_load pgq.loads;
    v_rest pgq.loads;
    v_i    int;  -- the job's place in its chunk, 1-based
BEGIN
    -- Twice: a chunk taken, split or moved while this waited for its lock is looked for
    -- again under the second statement's snapshot.
    FOR t IN 1 .. 2 LOOP
        SELECT * INTO v_load FROM pgq.loads l WHERE l.first_uuid = pgq._load_chunk_of(p_uuid) FOR UPDATE;
        v_i := (('x' || right(p_uuid::text, 12))::bit(48)::bigint
                - ('x' || right(v_load.first_uuid::text, 12))::bit(48)::bigint)::int + 1;
        EXIT WHEN v_i <= v_load.n;  -- in the chunk, or a row already (v_i <= next)
        v_load := NULL;
    END LOOP;
    IF v_load.first_uuid IS NULL OR v_i <= v_load.next THEN
        RETURN false;
    END IF;
    PERFORM pgq._load_rows(v_load, v_i, 1, pgq._slot(), NULL, NULL, NULL, NULL);
    IF v_i < v_load.n THEN  -- the jobs after it: a chunk of their own, as they were
        v_rest := v_load;
        v_rest.first_id := v_load.first_id + v_i;
        v_rest.first_uuid := pgq._load_uuid(v_load.first_uuid, v_i);
        v_rest.n := v_load.n - v_i;
        v_rest.next := 0;
        v_rest.payloads := v_load.payloads[v_i + 1 : v_load.n];
        v_rest.txid := pg_current_xact_id();
        INSERT INTO pgq.loads SELECT (v_rest).*;
    END IF;
    IF v_i - 1 > v_load.next THEN
        UPDATE pgq.loads l SET n = v_i - 1 WHERE l.slot = v_load.slot AND l.first_uuid = v_load.first_uuid;
    ELSE
        DELETE FROM pgq.loads l WHERE l.slot = v_load.slot AND l.first_uuid = v_load.first_uuid;
    END IF;
    RETURN true;
END;
$$;

COMMENT ON FUNCTION pgq._load_job_to_row(uuid) IS
    'Takes one job out of its chunk of pgq.loads as a waiting row of pgq.jobs, for an operation on it; false when no chunk holds it (S85).';

-- pgq._load_payloads: payloads p_from .. p_to of a chunk, each with its place from 1
-- (o). unnest with what the planner needs: ROWS, as it takes an unnest of a column for
-- 10 rows, and then sorts every chunk job to give a page of pgq.ready; and its SET
-- clause keeps it from being inlined, which would drop that.
CREATE OR REPLACE FUNCTION pgq._load_payloads(p_payloads jsonb[], p_from int, p_to int)
RETURNS TABLE (payload jsonb, o bigint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE ROWS 1000
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM unnest(p_payloads[p_from : p_to]) WITH ORDINALITY $$;

COMMENT ON FUNCTION pgq._load_payloads(jsonb[], int, int) IS 'Payloads p_from .. p_to of a chunk of pgq.loads with their places from 1, for pgq.load_jobs (S85).';

-- pgq.load_jobs: the jobs still in chunks of pgq.loads, one row each, as pgq.jobs
-- would hold them: waiting, never attempted. The views that list or count waiting jobs
-- read it beside pgq.jobs. Two columns serve those views' indexes, as no index serves a
-- condition on a computed uuid or id:
-- * chunk, the chunk's first_uuid: a lookup by uuid that also asks for
--   chunk = pgq._load_chunk_of(uuid) expands one chunk through loads_uuid_idx (without
--   it, every chunk job: 0.4–0.8 s for a million jobs in chunks here);
-- * sort_id, the id of the chunk's first waiting job: between it and the chunk's last
--   job no other job waits, so the queue's order is (queue, priority DESC,
--   available_at, sort_id, id), with sort_id = id for a row, and loads_queue_idx gives
--   chunks in it (pgq.ready).
-- The uuid is pgq._load_uuid written out, with the chunk's part computed once: a call
-- per job made a lookup 3.4 s. The payloads are unnested (pgq._load_payloads), not
-- subscripted: each subscript of the stored array reads it whole (a payload filter
-- over a million chunk jobs took 3.3 s that way, 0.3 s this way).
CREATE OR REPLACE VIEW pgq.load_jobs AS
SELECT l.first_id + l.next + p.o - 1 AS id, (c.head || lpad(to_hex(c.base + l.next + p.o - 1), 12, '0'))::uuid AS uuid,
       l.job, l.queue, l.priority, l.handler, l.tries, l.backoff, l.max_exceptions, l.timeout, l.fail_on_timeout,
       l.retry_until, l.available_at, l.created_at, p.payload, l.slot, l.first_uuid AS chunk,
       l.first_id + l.next AS sort_id
FROM pgq.loads l
CROSS JOIN LATERAL (SELECT left(l.first_uuid::text, 24) AS head,
                           ('x' || right(l.first_uuid::text, 12))::bit(48)::bigint AS base) c
CROSS JOIN LATERAL pgq._load_payloads(l.payloads, l.next + 1, l.n) p(payload, o);

COMMENT ON VIEW pgq.load_jobs IS 'The jobs of bulk dispatches still in chunks of pgq.loads (S85), one row each: waiting, never attempted.';

-- pgq._live_counted: what the views that count live jobs per queue read: a row per job
-- of pgq.jobs and one per chunk of pgq.loads, n the jobs it stands for, with no
-- payload read.
CREATE OR REPLACE VIEW pgq._live_counted AS
SELECT j.queue, j.reserved_at, j.available_at, j.attempts, 1::bigint AS n
FROM pgq.jobs j
UNION ALL
SELECT l.queue, NULL::timestamptz, l.available_at, 0, (l.n - l.next)::bigint
FROM pgq.loads l;

COMMENT ON VIEW pgq._live_counted IS 'Live jobs for counting: a row per job of pgq.jobs (n 1), one per chunk of pgq.loads (n its jobs) (S85).';
