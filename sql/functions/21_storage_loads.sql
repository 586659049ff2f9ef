-- Storage, internal: loads (S85), the jobs of a bulk dispatch kept as chunks of
-- pgq.loads until a reserve takes them. Only the files 20-29 know them: the rest of pgq
-- sees a chunk's jobs as live jobs like any other (29_storage.sql).
--
-- A dispatch of pgq._load_min() payloads or more, of plain jobs (no delay, unique or
-- debounce settings, middleware, batch or chain), writes one pgq.loads row per 1,024
-- jobs instead of a pgq.jobs row per job. Every job keeps what a row would give it: its
-- uuid (returned by the dispatch), its id and its place in the queue's order, its
-- frozen settings. A job leaves its chunk once, as a row of pgq.jobs: reserved by a
-- reserve (pgq._take_chunk), waiting for an operation on that one job
-- (pgq._load_split), or waiting for the pickup checks to fail it when its deadline
-- passed before a reserve came to it (pgq._pick). It never goes back.
--
-- A chunk's jobs have consecutive ids (pgq.jobs_id_seq steps by 1,024: one number per
-- chunk) and consecutive uuids (pgq._uuid7s counts up in their last 48 bits). Jobs
-- first_id .. first_id + next - 1 have left the chunk; next .. n - 1 are still in it.

-- pgq._load_min: the fewest payloads of a dispatch that make a load: the setting
-- pgq.load_min (ALTER DATABASE … SET pgq.load_min = 500, say; 0: never), 1,000 when it
-- is not set. A chunk pays for itself at about a reserve's size: a pass of a reserve
-- takes from one chunk, so chunks much smaller than a reserve cost it passes. Raises
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
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (left(p_first::text, 24) || lpad(to_hex(('x' || right(p_first::text, 12))::bit(48)::bigint + p_offset), 12, '0'))::uuid;
END;
$$;

COMMENT ON FUNCTION pgq._load_uuid(uuid, int) IS 'The uuid of the job p_offset places after the one whose uuid is p_first, in a chunk of pgq.loads.';

-- pgq._load_offset: how many places after p_first the job p_uuid is, if both are of one
-- dispatch (the same first twelve bytes); NULL otherwise.
CREATE OR REPLACE FUNCTION pgq._load_offset(p_first uuid, p_uuid uuid) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN CASE WHEN left(p_first::text, 24) = left(p_uuid::text, 24)
                THEN ('x' || right(p_uuid::text, 12))::bit(48)::bigint - ('x' || right(p_first::text, 12))::bit(48)::bigint END;
END;
$$;

COMMENT ON FUNCTION pgq._load_offset(uuid, uuid) IS 'How many places after p_first the job p_uuid is in a chunk of pgq.loads, NULL when they are not of one dispatch.';

-- pgq._load_dispatch: writes the jobs of one dispatch as chunks of pgq.loads: p_job
-- holds their frozen settings and slot, p_uuids the uuid of each payload, from one
-- pgq._uuid7s call (so a chunk's uuids count up from its first). One pass over the
-- payloads, each to the chunk of its position: the time is linear in their number (a
-- slice of the array per chunk would walk it from its start each time). The chunks
-- get their ids in payload order.
CREATE OR REPLACE FUNCTION pgq._load_dispatch(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO pgq.loads
        (first_id, first_uuid, n, job, queue, priority, handler, tries, backoff, max_exceptions, timeout,
         fail_on_timeout, retry_until, available_at, payloads, slot, traceparent, tracestate)
    SELECT nextval('pgq.jobs_id_seq'), p_uuids[c.first], c.n, p_job.job, p_job.queue, p_job.priority, p_job.handler,
           p_job.tries, p_job.backoff, p_job.max_exceptions, p_job.timeout, p_job.fail_on_timeout,
           p_job.retry_until, p_job.available_at, c.payloads, p_job.slot, p_job.traceparent, p_job.tracestate
    FROM (SELECT (u.n - 1) / pgq._load_chunk() AS chunk, min(u.n)::int AS first, count(*)::int AS n,
                 array_agg(u.payload ORDER BY u.n) AS payloads
          FROM unnest(p_payloads) WITH ORDINALITY u(payload, n)
          GROUP BY 1
          ORDER BY 1) c;  -- nextval in the outer query, which keeps this order
END;
$$;

COMMENT ON FUNCTION pgq._load_dispatch(pgq.jobs, jsonb[], uuid[]) IS 'Writes the jobs of one plain dispatch as chunks of pgq.loads, in time linear in their number (S85).';

-- pgq._load_rows: jobs p_from .. p_from + p_count - 1 of a chunk (counted from 1) as
-- rows of pgq.jobs in slot p_slot, as they were dispatched: reserved for p_worker at
-- p_now for p_lease seconds with their attempt counted and the lease tokens given (one
-- per job, in order); or, with p_worker NULL, waiting. Returns each row's ctid and id,
-- and the reservation of a reserved one, in order. The caller has taken them out of
-- the chunk.
CREATE OR REPLACE FUNCTION pgq._load_rows(
    p_load pgq.loads, p_from int, p_count int, p_slot smallint,
    p_now timestamptz, p_lease int, p_worker text, p_tokens uuid[]
) RETURNS TABLE (row_tid tid, row_id bigint, reserved pgq.reservation)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    -- pgq._load_uuid written out, with its chunk's part computed once: a function with
    -- a SET clause is never inlined, and a call per job would cost more than the rest.
    v_head text := left(p_load.first_uuid::text, 24);
    v_base bigint := ('x' || right(p_load.first_uuid::text, 12))::bit(48)::bigint;
    v_run  boolean := p_worker IS NOT NULL;
BEGIN
    RETURN QUERY
    WITH made AS (
        INSERT INTO pgq.jobs
            (id, uuid, job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout, fail_on_timeout,
             retry_until, available_at, created_at, attempts, reserved_at, reserved_until, reserved_by, lease_token,
             started_at, slot, traceparent, tracestate)
        SELECT p_load.first_id + p.i - 1, (v_head || lpad(to_hex(v_base + p.i - 1), 12, '0'))::uuid, p_load.job, p_load.queue,
               p.payload, p_load.priority, p_load.handler, p_load.tries, p_load.backoff, p_load.max_exceptions,
               p_load.timeout, p_load.fail_on_timeout, p_load.retry_until, p_load.available_at, p_load.created_at,
               CASE WHEN v_run THEN 1 ELSE 0 END, CASE WHEN v_run THEN p_now END,
               CASE WHEN v_run THEN p_now + make_interval(secs => p_lease) END, p_worker,
               CASE WHEN v_run THEN p_tokens[p.o] END, CASE WHEN v_run THEN p_now END, p_slot,
               p_load.traceparent, p_load.tracestate
        FROM (SELECT u.payload, u.o::int AS o, p_from - 1 + u.o::int AS i
              FROM unnest(p_load.payloads[p_from : p_from + p_count - 1]) WITH ORDINALITY u(payload, o)) p
        RETURNING pgq.jobs.ctid, pgq.jobs.id, pgq.jobs.uuid, pgq.jobs.job, pgq.jobs.queue, pgq.jobs.payload,
                  pgq.jobs.priority, pgq.jobs.attempts, pgq.jobs.tries, pgq.jobs.handler::text AS handler,
                  pgq.jobs.timeout, pgq.jobs.lease_token, pgq.jobs.reserved_at, pgq.jobs.reserved_until,
                  pgq.jobs.created_at, pgq.jobs.traceparent, pgq.jobs.tracestate
    )
    SELECT r.ctid, r.id,
           CASE WHEN v_run THEN ROW(r.uuid, r.job, r.queue, r.payload, r.priority, r.attempts, r.tries, r.handler, r.timeout,
                                     r.lease_token, r.reserved_at, r.reserved_until, NULL, r.created_at,
                                     NULL, NULL, NULL, NULL, r.traceparent, r.tracestate)::pgq.reservation END
    FROM made r
    ORDER BY r.id;
END;
$$;

COMMENT ON FUNCTION pgq._load_rows(pgq.loads, int, int, smallint, timestamptz, int, text, uuid[]) IS
    'Jobs of a chunk of pgq.loads as rows of pgq.jobs, as dispatched: reserved with the tokens given, or waiting; returns their ctids, ids and reservations in order (S85).';

-- pgq._load_chunk_of: the first_uuid of the chunk of pgq.loads that holds the job with
-- uuid p_uuid, through loads_uuid_idx (the chunk with the greatest first_uuid up to it,
-- if p_uuid is one of its jobs still in it); NULL when no chunk holds it (a row, or no
-- live job). SECURITY DEFINER: pgq.live_job calls it as the reader, and it tells no
-- more than pgq.live_jobs does.
CREATE OR REPLACE FUNCTION pgq._load_chunk_of(p_uuid uuid) RETURNS uuid
LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT c.first_uuid
            FROM (SELECT l.first_uuid, l.n, l.next FROM pgq.loads l WHERE l.first_uuid <= p_uuid ORDER BY l.first_uuid DESC LIMIT 1) c
            WHERE pgq._load_offset(c.first_uuid, p_uuid) BETWEEN c.next AND c.n - 1);
END;
$$;

COMMENT ON FUNCTION pgq._load_chunk_of(uuid) IS 'The first_uuid of the chunk of pgq.loads that holds the job with this uuid, NULL when none does (S85).';

-- pgq._load_split: the job with this uuid leaves its chunk of pgq.loads, if it is in
-- one, as a waiting row of pgq.jobs in the current slot, for an operation on that one
-- job. The chunk keeps the jobs before it, and those after it become a chunk of their
-- own, in the same place in the queue. Waits for the chunk's lock: a reserve taking the
-- chunk now has the job as a row once it commits. While this waits, other splits, a
-- take or a move of the chunk may change it, any number of times: it looks again,
-- under a new snapshot, until the chunk it holds holds the job or no chunk does.
-- Returns whether the job was in a chunk.
CREATE OR REPLACE FUNCTION pgq._load_split(p_uuid uuid) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_chunk uuid;
    v_load  pgq.loads;
    v_rest  pgq.loads;
    v_i     int;  -- the job's place in its chunk, from 1
BEGIN
    LOOP
        v_chunk := pgq._load_chunk_of(p_uuid);
        IF v_chunk IS NULL THEN
            RETURN false;
        END IF;
        SELECT * INTO v_load FROM pgq.loads l WHERE l.first_uuid = v_chunk FOR UPDATE;
        IF FOUND THEN
            v_i := pgq._load_offset(v_load.first_uuid, p_uuid) + 1;
            EXIT WHEN v_i BETWEEN v_load.next + 1 AND v_load.n;
        END IF;
    END LOOP;
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

COMMENT ON FUNCTION pgq._load_split(uuid) IS
    'Takes one job out of its chunk of pgq.loads as a waiting row of pgq.jobs, however often the chunk changes meanwhile; false when no chunk holds it (S85).';

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
-- would hold them: waiting, never attempted. pgq.live_jobs reads it beside pgq.jobs.
-- Two columns serve its readers' indexes, as no index serves a condition on a computed
-- uuid or id:
-- * chunk, the chunk's first_uuid: a lookup by uuid that also asks for
--   chunk = pgq._load_chunk_of(uuid) expands one chunk through loads_uuid_idx;
-- * sort_id, the id of the chunk's first waiting job: between it and the chunk's last
--   job no other job waits, so the queue's order is (queue, priority DESC,
--   available_at, sort_id, id), with sort_id = id for a row, and loads_queue_idx gives
--   chunks in it.
-- The uuid is pgq._load_uuid written out, with the chunk's part computed once. The
-- payloads are unnested (pgq._load_payloads), not subscripted: each subscript of the
-- stored array would read it whole.
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

-- pgq._load_unpacked: the chunk, held locked by this transaction, gives up its next
-- p_count jobs (deleted once it has none left); the caller makes them rows.
CREATE OR REPLACE FUNCTION pgq._load_unpacked(p_load pgq.loads, p_count int) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan  -- planned once per session, not per call
SET enable_seqscan = off  -- by the chunk's uuid, however stale the cached plan (S78)
AS $$
BEGIN
    IF p_load.next + p_count = p_load.n THEN
        DELETE FROM pgq.loads l WHERE l.slot = p_load.slot AND l.first_uuid = p_load.first_uuid;
    ELSE
        UPDATE pgq.loads l SET next = l.next + p_count WHERE l.slot = p_load.slot AND l.first_uuid = p_load.first_uuid;
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._load_unpacked(pgq.loads, int) IS 'A chunk of pgq.loads gives up its next jobs, which the caller makes rows (S85).';
