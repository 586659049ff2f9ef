-- Storage: the boundary. How live jobs are kept is the business of the files 20-29
-- alone: pgq.jobs is cut into slots that are truncated once drained (S80,
-- 20_storage_slots.sql), a bulk dispatch is kept as chunks of pgq.loads (S85,
-- 21_storage_loads.sql), a reserve starts from its session's low-water marks (S77,
-- 22_storage_marks.sql), and a lease token names its job's slot (below). The rest of
-- pgq reads live jobs through pgq.live_jobs (pgq.live_job(uuid) for one, pgq._live_counted
-- to count them), writes rows of pgq.jobs itself, and calls only what this file defines:
--
--   pgq._store            new waiting jobs of a dispatch (rows, or a load when there
--                         are pgq._store_bulk() or more)
--   pgq._slot             the slot a new row of pgq.jobs goes to
--   pgq._pick_begin, pgq._pick, pgq._pick_done, pgq._pick_end, and around a lease sweep
--   pgq._sweep_from, pgq._pick_lower, pgq._pick_swept
--                         a reserve's walk of its queues, in their order (S30, S77)
--   pgq._pick_fair        pgq._pick for a fair queue: round-robin across its keys
--                         (S115, 23_storage_fair.sql)
--   pgq._fair_enter       the turns of keys whose jobs a transaction writes itself
--                         (a requeue of failed jobs), made at its commit (S121)
--   pgq._fair_rekey       a queue's live jobs keyed anew when its fair_by changes
--   pgq._take_rows, pgq._take_chunk
--                         reserve what was picked (S5, S14)
--   pgq._lease_base, pgq._lease_tokens, pgq._lease_call_range, pgq._token_slots,
--   pgq._token_slot       the lease token's layout
--   pgq._job_for_update   one job by uuid, locked, wherever it is kept
--   pgq._overlap_gen      the generation of pgq.overlap_locks new leases go to (S81)
--
-- sql/layers_test.go fails when a function outside 20-29 names anything else of them,
-- or reads pgq.loads, a slot's partition or the marks.

-- pgq._slot: the slot of pgq.jobs a new row goes to (pgq.job_slots, state current).
-- PL/pgSQL, not SQL: a SQL function that pins its search_path is planned on every call,
-- where PL/pgSQL keeps its plan for the session.
CREATE OR REPLACE FUNCTION pgq._slot() RETURNS smallint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT s.slot FROM pgq.job_slots s WHERE s.state = 'current');
END;
$$;

COMMENT ON FUNCTION pgq._slot() IS 'The slot of pgq.jobs that new jobs go to (pgq.job_slots, state current).';

-- Lease tokens (S15). A token names one reservation of one job, as a uuid whose text is
--   bbbbbbbb-bbbb-bbbb-bbbb-sddddddddddd
-- b: the first twelve bytes of the reserve call's base (random, or the call uuid the
--    worker chose, so that pgq.unreserve can find the call's jobs: pgq._lease_call_range);
-- s: the job's slot, one hex digit, so that complete, heartbeat and the other calls read
--    that slot only (a reserved job never changes slot);
-- d: the low 44 bits of the job's id (pgq._token_id_mask), unique within a call.
-- Built as text, which costs less than five bytea calls, and without a
-- gen_random_uuid() (and its getpid() system call) per job.

-- pgq._token_id_mask: the bits of a job's id a lease token carries: 2^44 - 1.
CREATE OR REPLACE FUNCTION pgq._token_id_mask() RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 17592186044415::bigint $$;

COMMENT ON FUNCTION pgq._token_id_mask() IS 'The bits of a job''s id a lease token carries: the low 44 (S15).';

-- pgq._lease_base: the base of a reserve call's lease tokens: the first twelve bytes of
-- p_call, or of a random uuid when the worker gives none.
CREATE OR REPLACE FUNCTION pgq._lease_base(p_call uuid) RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN left(coalesce(p_call, gen_random_uuid())::text, 24);
END;
$$;

COMMENT ON FUNCTION pgq._lease_base(uuid) IS 'The base of a reserve call''s lease tokens: the first twelve bytes of its call uuid, or random (S15).';

-- pgq._lease_tokens: the lease tokens of jobs (p_slots[i], p_ids[i]) reserved by the
-- call whose base is p_base, in order. One call per batch: a function per job costs
-- more than the rest of a reserve.
CREATE OR REPLACE FUNCTION pgq._lease_tokens(p_base text, p_slots smallint[], p_ids bigint[]) RETURNS uuid[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN ARRAY(SELECT (p_base || u.slot || lpad(to_hex(u.id & pgq._token_id_mask()), 11, '0'))::uuid
                 FROM unnest(p_slots, p_ids) WITH ORDINALITY u(slot, id, n)
                 ORDER BY u.n);
END;
$$;

COMMENT ON FUNCTION pgq._lease_tokens(text, smallint[], bigint[]) IS 'The lease tokens of jobs (slot, id) reserved by the call whose base is given, in order (S15).';

-- pgq._lease_call_range: the lease tokens of the reserve call p_call lie between lo and
-- hi (they share its base).
CREATE OR REPLACE FUNCTION pgq._lease_call_range(p_call uuid, OUT lo uuid, OUT hi uuid)
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT (left(p_call::text, 24) || '000000000000')::uuid, (left(p_call::text, 24) || 'ffffffffffff')::uuid $$;

COMMENT ON FUNCTION pgq._lease_call_range(uuid) IS 'The range of the lease tokens of one reserve call (pgq.unreserve, S35).';

-- pgq._token_slots: the slots these lease tokens name, each once, in order, as four
-- elements (NULL past the last; no slot for a token pgq did not issue). A statement
-- that compares slot with the four prunes the other partitions when it runs, under a
-- generic plan too: slot = ANY (array) does not. Expressions only, no statement: it is
-- called for every completion and every SQL job's start.
CREATE OR REPLACE FUNCTION pgq._token_slots(p_tokens uuid[]) RETURNS smallint[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_seen boolean[] := '{f,f,f,f}';  -- by slot + 1
    v_out  smallint[] := '{}';
    v_slot int;
    t      uuid;
BEGIN
    FOREACH t IN ARRAY coalesce(p_tokens, '{}') LOOP
        v_slot := get_byte(uuid_send(t), 10) >> 4;
        IF v_slot <= 3 THEN
            v_seen[v_slot + 1] := true;
        END IF;
    END LOOP;
    FOR i IN 1 .. 4 LOOP
        IF v_seen[i] THEN
            v_out := v_out || (i - 1)::smallint;
        END IF;
    END LOOP;
    RETURN v_out || '{NULL,NULL,NULL,NULL}'::smallint[];
END;
$$;

COMMENT ON FUNCTION pgq._token_slots(uuid[]) IS 'The slots of pgq.jobs these lease tokens name, distinct, padded with NULLs to at least four elements.';

-- pgq._token_slot: the slot one lease token names, NULL for a token pgq did not issue.
-- IMMUTABLE, so that a statement planned for its token reads, and locks, that one slot.
CREATE OR REPLACE FUNCTION pgq._token_slot(p_token uuid) RETURNS smallint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (pgq._token_slots(ARRAY[p_token]))[1];
END;
$$;

COMMENT ON FUNCTION pgq._token_slot(uuid) IS 'The slot of pgq.jobs a lease token names; NULL for a token pgq did not issue.';

-- pgq._overlap_gen: the generation of pgq.overlap_locks new leases go to (S81).
CREATE OR REPLACE FUNCTION pgq._overlap_gen() RETURNS smallint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT g.gen FROM pgq.overlap_gens g WHERE g.state = 'current');  -- plan kept (see pgq.dispatch)
END;
$$;

COMMENT ON FUNCTION pgq._overlap_gen() IS 'The generation of pgq.overlap_locks that new leases go to (pgq.overlap_gens, state current).';

-- pgq._store: new waiting jobs, one per payload, with the uuids given, the middleware
-- keys of each (p_keys, NULL for none) and the rest of p_job's fields as their frozen
-- settings (S1). Many plain jobs (pgq._load_min() payloads or more; available now; no
-- unique, debounce or middleware setting; no batch or chain) are kept as a load (S85),
-- the others as rows of pgq.jobs in the current slot. The trace context of p_job
-- (S105) goes with every job, once per chunk of a load. In a fair queue (S114) every job
-- is a row with its key (fair_key: the payload's fair_by field as text, '' when it has
-- none), and its key has a turn (pgq._fair_enter). id, slot and txid are the storage's;
-- the counters start at zero.
CREATE OR REPLACE FUNCTION pgq._store(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[], p_keys jsonb[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_fair_by text := pgq._fair_by(p_job.queue);
BEGIN
    p_job.slot := pgq._slot();
    IF v_fair_by IS NOT NULL THEN
        IF EXISTS (SELECT FROM unnest(p_payloads) p WHERE octet_length(p ->> v_fair_by) > 1000) THEN
            RAISE EXCEPTION 'pgq: the fair key of queue % (payload field %) is at most 1000 bytes', p_job.queue, v_fair_by
                USING ERRCODE = '22023';
        END IF;
        PERFORM pgq._fair_enter(p_job.queue, ARRAY(SELECT coalesce(p ->> v_fair_by, '') FROM unnest(p_payloads) p));
    ELSIF pgq._load_min() BETWEEN 1 AND cardinality(p_payloads)
       AND p_job.available_at <= now() AND p_job.middleware IS NULL
       AND p_job.unique_key IS NULL AND p_job.debounce_key IS NULL
       AND p_job.batch_id IS NULL AND p_job.chain_id IS NULL THEN
        PERFORM pgq._load_dispatch(p_job, p_payloads, p_uuids);
        RETURN;
    END IF;
    INSERT INTO pgq.jobs
        (uuid, job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout,
         fail_on_timeout, retry_until, available_at, unique_key, unique_token, unique_until,
         debounce_key, debounce_token, middleware, middleware_keys, batch_id, chain_id, chain_step, slot,
         traceparent, tracestate, fair_key)
    SELECT p.uuid, p_job.job, p_job.queue, p.payload, p_job.priority, p_job.handler, p_job.tries, p_job.backoff,
           p_job.max_exceptions, p_job.timeout, p_job.fail_on_timeout, p_job.retry_until, p_job.available_at,
           p_job.unique_key, p_job.unique_token, p_job.unique_until, p_job.debounce_key, p_job.debounce_token,
           p_job.middleware, p_keys[p.n], p_job.batch_id, p_job.chain_id, p_job.chain_step, p_job.slot,
           p_job.traceparent, p_job.tracestate,
           CASE WHEN v_fair_by IS NOT NULL THEN coalesce(p.payload ->> v_fair_by, '') END
    FROM unnest(p_payloads, p_uuids) WITH ORDINALITY AS p(payload, uuid, n)
    ORDER BY p.n;
END;
$$;

COMMENT ON FUNCTION pgq._store(pgq.jobs, jsonb[], uuid[], jsonb[]) IS
    'Writes new waiting jobs of a dispatch, one per payload, with the settings of a template job: as a load when many and plain (S85), else as rows.';

-- pgq._fair_by: the fair_by of queue p_queue (NULL: not fair), for a transaction about
-- to store jobs in it, which holds the queue's 'fair_by' lock shared from here until
-- it ends: a pgq.define_queue that changes fair_by takes it alone, so it keys anew the
-- jobs of every transaction that read the old value, once they are visible (S114).
-- The lock first, the read in a statement after it: at READ COMMITTED that statement
-- sees a change committed while this one waited.
CREATE OR REPLACE FUNCTION pgq._fair_by(p_queue text) RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(pgq._lock_space('fair_by'), hashtext(p_queue));
    RETURN (SELECT q.fair_by FROM pgq.queues q WHERE q.name = p_queue);
END;
$$;

COMMENT ON FUNCTION pgq._fair_by(text) IS 'A queue''s fair_by, read under its ''fair_by'' lock held shared until the transaction ends (S114).';

-- pgq._fair_enter: every key of p_keys has a turn in the fair queue p_queue when the
-- jobs written with them by this transaction become visible: each key's 'fair' lock is
-- taken shared until the transaction ends (see 23_storage_fair.sql), and a key with no
-- turn gets one at commit (pgq._fair_entered), at the queue's floor then, so it
-- waits at most one round (S115). The transaction holds no new turn before it commits,
-- so two that store jobs of the same new keys in any order never wait for each other
-- in a cycle (S121). At READ COMMITTED a key whose turn this statement sees keeps it
-- while the lock is held; at REPEATABLE READ or SERIALIZABLE the snapshot may be older
-- than a turn's end, so every key is entered. The locks in order (pgq._fair_lock).
CREATE OR REPLACE FUNCTION pgq._fair_enter(p_queue text, p_keys text[]) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_keys    text[] := ARRAY(SELECT DISTINCT k FROM unnest(p_keys) k ORDER BY k);
    v_new     jsonb;
    v_pending text := current_setting('pgq.fair_entering', true);
    v_any_iso boolean := current_setting('transaction_isolation') <> 'read committed';  -- every key is entered
    v_key     text;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(pgq._lock_space('fair'), l.id)
    FROM (SELECT DISTINCT pgq._fair_lock(p_queue, k) AS id FROM unnest(v_keys) k) l
    ORDER BY l.id;
    -- A probe of the primary key per key: as one query over the keys, the plan can
    -- read every turn of the queue (a hashed subplan, or a scan by queue alone when the
    -- table has no statistics), so a dispatch would cost more the more keys there are.
    FOREACH v_key IN ARRAY v_keys LOOP
        IF v_any_iso OR NOT EXISTS (SELECT FROM pgq.fair_turns t WHERE t.queue = p_queue AND t.key = v_key) THEN
            v_new := coalesce(v_new, '[]') || jsonb_build_array(jsonb_build_array(p_queue, v_key));
        END IF;
    END LOOP;
    IF v_new IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('pgq.fair_entering', (coalesce(nullif(v_pending, ''), '[]')::jsonb || v_new)::text, true);
    IF coalesce(v_pending, '') = '' THEN
        INSERT INTO pgq.fair_entries DEFAULT VALUES ON CONFLICT DO NOTHING;
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._fair_enter(text, text[]) IS
    'Storage: keys of a fair queue whose jobs this transaction writes get a turn (at the queue''s floor) at its commit if they have none (S115, S121).';

-- pgq._fair_entered: the deferred trigger of pgq.fair_entries, at the commit of a
-- transaction that stored jobs of keys with no turn (pgq._fair_enter): makes their
-- turns, at the queue's floor (pgq._fair_floor), in one statement in (queue, key)
-- order, so that two transactions committing the same new turns wait for each other in
-- that order only. The keys' 'fair' locks are still held: no reserve ends a turn meanwhile.
-- SECURITY DEFINER: it runs at commit, as the session's role, outside the function
-- that stored the jobs.
CREATE OR REPLACE FUNCTION pgq._fair_entered() RETURNS trigger
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_pending text := current_setting('pgq.fair_entering', true);
BEGIN
    IF coalesce(v_pending, '') <> '' THEN
        PERFORM set_config('pgq.fair_entering', '', true);
        INSERT INTO pgq.fair_turns (queue, key, pass)
        SELECT e.queue, e.key, coalesce(pgq._fair_floor(e.queue), 0)
        FROM (SELECT DISTINCT x ->> 0 AS queue, x ->> 1 AS key FROM jsonb_array_elements(v_pending::jsonb) x) e
        ORDER BY e.queue, e.key
        ON CONFLICT ON CONSTRAINT fair_turns_pkey DO NOTHING;
    END IF;
    DELETE FROM pgq.fair_entries e WHERE e.txid = NEW.txid;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION pgq._fair_entered() IS
    'Trigger, at commit: the turns of the keys of fair queues that the transaction stored jobs of and that had none, made in (queue, key) order (S121).';

-- A constraint trigger cannot be replaced in place: it is made anew on every migrate.
DROP TRIGGER IF EXISTS fair_entries_commit ON pgq.fair_entries;
CREATE CONSTRAINT TRIGGER fair_entries_commit AFTER INSERT ON pgq.fair_entries
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION pgq._fair_entered();

-- pgq._fair_rekey: the live jobs of p_queue get their keys by p_fair_by (the payload's
-- field as text, '' when it has none; NULL for every job when p_fair_by is NULL), and
-- the queue's turns start anew, one for each key with live jobs (S114). Jobs still in
-- the chunks of a bulk dispatch keep none: a fair queue's pick takes them when no turn
-- has a ready job (pgq._pick_fair).
CREATE OR REPLACE FUNCTION pgq._fair_rekey(p_queue text, p_fair_by text) RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    UPDATE pgq.jobs j
    SET fair_key = CASE WHEN p_fair_by IS NOT NULL THEN coalesce(j.payload ->> p_fair_by, '') END
    WHERE j.queue = p_queue
      AND j.fair_key IS DISTINCT FROM CASE WHEN p_fair_by IS NOT NULL THEN coalesce(j.payload ->> p_fair_by, '') END;
    -- In key order, as a reserve's settle locks them: the two never wait in a cycle.
    PERFORM FROM pgq.fair_turns t WHERE t.queue = p_queue ORDER BY t.key FOR UPDATE;
    DELETE FROM pgq.fair_turns t WHERE t.queue = p_queue;
    IF p_fair_by IS NOT NULL THEN
        PERFORM pgq._fair_enter(p_queue, ARRAY(SELECT DISTINCT j.fair_key FROM pgq.jobs j WHERE j.queue = p_queue));
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._fair_rekey(text, text) IS
    'Storage: a queue''s live jobs keyed anew by its new fair_by, and its turns made anew (S114).';

-- pgq._store_bulk: the fewest payloads of one pgq._store call of plain jobs that it
-- keeps together, as a load (S85); 0: never.
CREATE OR REPLACE FUNCTION pgq._store_bulk() RETURNS int
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN pgq._load_min();
END;
$$;

COMMENT ON FUNCTION pgq._store_bulk() IS 'The fewest payloads of plain jobs that pgq._store keeps together as a load (S85); 0: never.';

-- pgq.live_jobs: every live job, waiting or running, one row each, however it is kept:
-- a row of pgq.jobs or a job of a bulk dispatch still in its chunk (S85). state is
-- ready, scheduled (waiting a dispatch delay), retrying (waiting after an attempt) or
-- running. payload shows only to a payload reader (S45). Rows of one queue list in its
-- order with ORDER BY queue, priority DESC, available_at, sort_id, id: sort_id is a
-- row's id, and for a job still in a chunk the id of the chunk's first waiting job.
-- Each branch is in that order, so that a query asking for it merges them through the
-- queue's indexes and, of the jobs still in chunks, expands only the chunks it reads. Look one job up with pgq.live_job(uuid), which reads only the chunk that may
-- hold it; a filter on uuid here expands every chunk.
CREATE OR REPLACE VIEW pgq.live_jobs AS
(SELECT j.uuid, j.id, j.job, j.queue, j.priority,
       CASE WHEN j.reserved_at IS NOT NULL THEN 'running'
            WHEN j.available_at <= now() THEN 'ready'
            WHEN j.attempts = 0 THEN 'scheduled'
            ELSE 'retrying' END AS state,
       CASE WHEN (SELECT pgq._sees_payloads()) THEN j.payload END AS payload,
       j.handler, j.tries, j.backoff, j.max_exceptions, j.timeout, j.fail_on_timeout, j.retry_until,
       j.unique_key, j.unique_until, j.debounce_key, j.middleware,
       j.attempts, j.exceptions, j.lease_expiries, j.interruptions, j.turn_aways,
       j.last_exception_attempt, j.last_exception, j.wait_reason, j.available_at, j.created_at,
       j.reserved_by, j.reserved_at, j.started_at, j.reserved_until,
       j.cancel_requested_at, j.cancel_requested_by, j.batch_id, j.chain_id, j.chain_step,
       j.id AS sort_id, NULL::uuid AS chunk
 FROM pgq.jobs j
 ORDER BY j.queue, j.priority DESC, j.available_at, j.id)
UNION ALL
(SELECT l.uuid, l.id, l.job, l.queue, l.priority,
       CASE WHEN l.available_at <= now() THEN 'ready' ELSE 'scheduled' END,
       CASE WHEN (SELECT pgq._sees_payloads()) THEN l.payload END,
       l.handler, l.tries, l.backoff, l.max_exceptions, l.timeout, l.fail_on_timeout, l.retry_until,
       NULL, NULL, NULL, NULL,
       0, 0, 0, 0, '{}',
       NULL, NULL, 'dispatched', l.available_at, l.created_at,
       NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL,
       l.sort_id, l.chunk
 FROM pgq.load_jobs l
 ORDER BY l.queue, l.priority DESC, l.available_at, l.sort_id, l.id);

COMMENT ON VIEW pgq.live_jobs IS
    'Every live job (waiting or running) with its frozen settings, counters and state, however it is kept; payload for payload readers only. One job: pgq.live_job(uuid).';

-- pgq.live_job: the live job with this uuid, as pgq.live_jobs shows it; no row when there
-- is none. Reads one chunk at most.
CREATE OR REPLACE FUNCTION pgq.live_job(uuid uuid) RETURNS SETOF pgq.live_jobs
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT * FROM pgq.live_jobs l
    WHERE l.uuid = live_job.uuid AND l.chunk IS NOT DISTINCT FROM (SELECT pgq._load_chunk_of(live_job.uuid));
$$;

COMMENT ON FUNCTION pgq.live_job(uuid) IS 'The live job with this uuid as pgq.live_jobs shows it (no row when there is none), reading one chunk at most.';

-- pgq._live_counted: what the views that count live jobs per queue read: a row per row
-- of pgq.jobs and one per chunk of pgq.loads, n the jobs it stands for, with no payload
-- read.
CREATE OR REPLACE VIEW pgq._live_counted AS
SELECT j.queue, j.reserved_at, j.available_at, j.attempts, 1::bigint AS n, j.job, j.handler
FROM pgq.jobs j
UNION ALL
SELECT l.queue, NULL::timestamptz, l.available_at, 0, (l.n - l.next)::bigint, l.job, l.handler
FROM pgq.loads l;

COMMENT ON VIEW pgq._live_counted IS 'Live jobs for counting per queue: a row per row of pgq.jobs (n 1), one per chunk of pgq.loads (n its jobs) (S85).';

-- pgq._job_for_update: the live job with this uuid, locked (FOR UPDATE) for an operation
-- on that one job (pgq.cancel, pgq.run_now), or NULL when no live job has it. A job of
-- a bulk dispatch still in its chunk comes out of it first, as a waiting row
-- (pgq._load_split). A row that pgq.rotate moved to another slot while this waited for
-- it is looked for again where it went (S80).
CREATE OR REPLACE FUNCTION pgq._job_for_update(p_uuid uuid) RETURNS pgq.jobs
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_job pgq.jobs;
BEGIN
    PERFORM pgq._load_split(p_uuid);
    LOOP
        SELECT * INTO v_job FROM pgq.jobs j WHERE j.uuid = p_uuid FOR UPDATE;
        IF FOUND THEN
            RETURN v_job;
        END IF;
        -- Gone while this waited for its lock: moved (a new row in another slot, found
        -- by the next statement's snapshot) or ended.
        IF NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = p_uuid) THEN
            RETURN NULL;
        END IF;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._job_for_update(uuid) IS 'The live job with this uuid, locked for an operation on it, out of its chunk if it was in one (S80, S85); NULL when there is none.';

-- pgq._held_job: what a SQL handler's start needs of the job this lease token holds
-- (all NULL when it holds none), read from the token's slot alone by a plan cached per
-- slot. The handler's transaction then locks that one partition, so pgq.rotate may
-- truncate the others while it runs (S80); the same statement on pgq.jobs would lock
-- every partition under a cached plan, or be planned at every call, which costs more
-- than the rest of a short SQL job.
CREATE OR REPLACE FUNCTION pgq._held_job(p_uuid uuid, p_token uuid,
    OUT id bigint, OUT job text, OUT handler regprocedure, OUT payload jsonb,
    OUT reserved_by text, OUT attempts int, OUT overlap_keys text[])
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
-- By key only (S78): a plan made while a bulk dispatch's first chunks fill an empty
-- slot would scan its partition for every job after.
SET enable_seqscan = off
AS $$
BEGIN
    CASE (pgq._token_slots(ARRAY[p_token]))[1]  -- (one call: each sets and restores the search_path)
        WHEN 0 THEN SELECT j.id, j.job, j.handler, j.payload, j.reserved_by, j.attempts, j.overlap_keys INTO id, job, handler, payload, reserved_by, attempts, overlap_keys
                    FROM pgq.jobs_0 j WHERE j.uuid = p_uuid AND j.lease_token = p_token;
        WHEN 1 THEN SELECT j.id, j.job, j.handler, j.payload, j.reserved_by, j.attempts, j.overlap_keys INTO id, job, handler, payload, reserved_by, attempts, overlap_keys
                    FROM pgq.jobs_1 j WHERE j.uuid = p_uuid AND j.lease_token = p_token;
        WHEN 2 THEN SELECT j.id, j.job, j.handler, j.payload, j.reserved_by, j.attempts, j.overlap_keys INTO id, job, handler, payload, reserved_by, attempts, overlap_keys
                    FROM pgq.jobs_2 j WHERE j.uuid = p_uuid AND j.lease_token = p_token;
        WHEN 3 THEN SELECT j.id, j.job, j.handler, j.payload, j.reserved_by, j.attempts, j.overlap_keys INTO id, job, handler, payload, reserved_by, attempts, overlap_keys
                    FROM pgq.jobs_3 j WHERE j.uuid = p_uuid AND j.lease_token = p_token;
        ELSE NULL;  -- a token pgq did not issue
    END CASE;
END;
$$;

COMMENT ON FUNCTION pgq._held_job(uuid, uuid) IS 'The fields of the job a lease token holds that a SQL handler''s start needs, from the token''s slot only (S80); NULLs when it holds none.';

-- pgq._pick_rows: the next waiting rows of p_queue in the slots p_slots (pgq._pick),
-- locked with SKIP LOCKED, in the queue's order, at most p_want, none of p_skip: from
-- the marks p_marks (S77), one priority after the other, or from the queue's front when
-- there are none; with their slots and ids, whether each comes before the chunk p_load
-- in the queue's order (all do when there is none), and whether each is plain
-- (pgq._pick).
CREATE OR REPLACE FUNCTION pgq._pick_rows(
    p_marks jsonb, p_slots smallint[], p_queue text, p_want int, p_now timestamptz, p_skip bigint[], p_load pgq.loads,
    OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT before boolean[], OUT plain boolean[]
)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
SET plan_cache_mode = force_generic_plan  -- planned once per session, not per call
AS $$
DECLARE
    v_prio int;
    v_at   timestamptz;
    v_id   bigint;
BEGIN
    tids := '{}';
    slots := '{}';
    ids := '{}';
    before := '{}';
    plain := '{}';
    IF p_marks IS NULL THEN
        SELECT coalesce(array_agg(x.ctid), '{}'), coalesce(array_agg(x.slot), '{}'), coalesce(array_agg(x.id), '{}'),
               coalesce(array_agg(x.first), '{}'), coalesce(array_agg(x.plain), '{}')
        INTO tids, slots, ids, before, plain
        FROM (SELECT p.ctid, p.slot, p.id,
                     p_load.first_id IS NULL OR p.priority > p_load.priority
                     OR (p.priority = p_load.priority
                         AND (p.available_at, p.id) < (p_load.available_at, p_load.first_id + p_load.next)) AS first,
                     p.middleware IS NULL AND p.attempts = 0 AND p.cancel_requested_at IS NULL AND p.batch_id IS NULL
                     AND p.debounce_key IS NULL AND p.unique_until IS DISTINCT FROM 'processing'
                     AND (p.retry_until IS NULL OR p.retry_until >= p_now) AS plain
              FROM pgq.jobs p
              WHERE p.queue = p_queue AND p.reserved_at IS NULL AND p.available_at <= p_now AND p.id <> ALL (p_skip)
                AND p.slot IN (p_slots[1], p_slots[2], p_slots[3], p_slots[4])
              ORDER BY p.priority DESC, p.available_at, p.id
              LIMIT p_want
              FOR UPDATE SKIP LOCKED) x;
        RETURN;
    END IF;
    FOR i IN 0 .. jsonb_array_length(p_marks) - 1 LOOP
        v_prio := (p_marks -> i ->> 0)::int;
        v_at := (p_marks -> i ->> 1)::timestamptz;
        v_id := (p_marks -> i ->> 2)::bigint;
        EXIT WHEN p_load.priority > v_prio;  -- a lower priority's rows come after the chunk
        SELECT tids || coalesce(array_agg(x.ctid), '{}'), slots || coalesce(array_agg(x.slot), '{}'),
               ids || coalesce(array_agg(x.id), '{}'), before || coalesce(array_agg(x.first), '{}'),
               _pick_rows.plain || coalesce(array_agg(x.plain), '{}')
        INTO tids, slots, ids, before, plain
        FROM (SELECT p.ctid, p.slot, p.id,
                     p_load.first_id IS NULL OR v_prio > p_load.priority
                     OR (p.available_at, p.id) < (p_load.available_at, p_load.first_id + p_load.next) AS first,
                     p.middleware IS NULL AND p.attempts = 0 AND p.cancel_requested_at IS NULL AND p.batch_id IS NULL
                     AND p.debounce_key IS NULL AND p.unique_until IS DISTINCT FROM 'processing'
                     AND (p.retry_until IS NULL OR p.retry_until >= p_now) AS plain
              FROM pgq.jobs p
              WHERE p.queue = p_queue AND p.priority = v_prio AND p.reserved_at IS NULL
                AND (p.available_at, p.id) >= (v_at, v_id) AND p.available_at <= p_now AND p.id <> ALL (p_skip)
                AND p.slot IN (p_slots[1], p_slots[2], p_slots[3], p_slots[4])
              ORDER BY p.available_at, p.id
              LIMIT p_want - cardinality(tids)
              FOR UPDATE SKIP LOCKED) x;
        EXIT WHEN cardinality(tids) >= p_want;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._pick_rows(jsonb, smallint[], text, int, timestamptz, bigint[], pgq.loads) IS
    'Reserve: the next waiting rows of a queue, locked (SKIP LOCKED), in its order, from the session''s marks (S30, S77).';

-- pgq._pick: the next waiting jobs of p_queue, available at p_now, in the queue's order
-- (S30: priority, then available_at, then id; rows and chunks merged), locked for this
-- transaction with SKIP LOCKED (a job another reserve holds is passed over), at most
-- p_want, none of the ids in p_skip. Either
-- * rows: in one slot (slot, tids, ids; a ctid names a row within its slot), up to the
--   first picked row of another slot, which stays locked and comes first in the next
--   pick; and whether each is plain: a job as a chunk keeps them, on its first attempt,
--   within its deadline, with no middleware, no batch, no debounce, no unique lock held
--   until processing and no cancel request, to which no pickup check applies; or
-- * chunk: the queue's next jobs are the next jobs of this chunk of a bulk dispatch
--   (rows empty), for pgq._take_chunk. A chunk whose deadline (retry_until) has passed
--   comes back instead as its next jobs made waiting rows, for the pickup checks to
--   fail (S12).
-- last: the queue has no ready job beyond these.
CREATE OR REPLACE FUNCTION pgq._pick(p_cursor jsonb, p_queue text, p_want int, p_now timestamptz, p_skip bigint[])
RETURNS pgq.picked
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
SET plan_cache_mode = force_generic_plan  -- planned once per session, not per call
AS $$
DECLARE
    v_slots smallint[] := pgq._pick_slots(p_cursor);
    v_load pgq.loads;
    v_rows record;
    v_n    int;
    v_out  pgq.picked;
BEGIN
    -- The queue's first chunk that is ready and that no other reserve holds.
    SELECT * INTO v_load FROM pgq.loads l
    WHERE l.queue = p_queue AND l.available_at <= p_now AND l.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
    ORDER BY l.priority DESC, l.available_at, l.first_id + l.next  -- loads_queue_idx
    LIMIT 1
    FOR UPDATE SKIP LOCKED;
    v_rows := pgq._pick_rows(p_cursor -> 'queues' -> p_queue -> 'p', v_slots, p_queue, p_want, p_now, p_skip, v_load);
    v_out.last := v_load.first_id IS NULL AND cardinality(v_rows.tids) < p_want;
    -- Rows after the chunk stay locked, and are picked again after it.
    v_n := coalesce(array_position(v_rows.before, false), cardinality(v_rows.before) + 1) - 1;
    IF v_n = 0 AND v_load.first_id IS NOT NULL THEN
        IF v_load.retry_until IS NULL OR v_load.retry_until >= p_now THEN
            v_out.chunk := v_load;
            RETURN v_out;
        END IF;
        v_n := least(p_want, v_load.n - v_load.next);
        PERFORM pgq._load_unpacked(v_load, v_n);
        v_out.slot := pgq._slot();
        SELECT array_agg(r.row_tid ORDER BY r.row_id), array_agg(r.row_id ORDER BY r.row_id) INTO v_out.tids, v_out.ids
        FROM pgq._load_rows(v_load, v_load.next + 1, v_n, v_out.slot, NULL, NULL, NULL, NULL) r;
        RETURN v_out;
    END IF;
    -- One slot: up to the first row of another (or of the chunk). Most often all are
    -- of one slot, which an expression tells at less cost than the statement.
    IF cardinality(array_remove(v_rows.slots, v_rows.slots[1])) > 0 THEN
        v_n := least(v_n, coalesce((SELECT min(i) - 1 FROM generate_subscripts(v_rows.slots, 1) i
                                    WHERE v_rows.slots[i] <> v_rows.slots[1]), v_n));
    END IF;
    IF v_n < cardinality(v_rows.tids) THEN
        v_out.last := false;
    END IF;
    v_out.slot := v_rows.slots[1];
    v_out.tids := v_rows.tids[1 : v_n];
    v_out.ids := v_rows.ids[1 : v_n];
    v_out.plain := v_rows.plain[1 : v_n];
    RETURN v_out;
END;
$$;

COMMENT ON FUNCTION pgq._pick(jsonb, text, int, timestamptz, bigint[]) IS
    'Reserve: the next waiting jobs of a queue in its order, locked (SKIP LOCKED): rows of one slot, or the chunk of a bulk dispatch whose jobs come next (S30, S77, S85).';

-- pgq._still_waiting: whether the row at p_tid of slot p_slot, picked and locked by
-- this transaction, is still a waiting job: not ended meanwhile by another job of the
-- same reserve (a member failed for good cancels its batch's waiting members, S74).
CREATE OR REPLACE FUNCTION pgq._still_waiting(p_slot smallint, p_tid tid) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN EXISTS (SELECT FROM pgq.jobs j WHERE j.slot = p_slot AND j.ctid = p_tid AND j.reserved_at IS NULL);
END;
$$;

COMMENT ON FUNCTION pgq._still_waiting(smallint, tid) IS
    'Reserve: whether a row it picked is still a waiting job, not ended by another job of the same reserve (S74).';

-- pgq._pick_fair: pgq._pick for a fair queue (S114-S117): the next ready jobs of p_queue
-- at the highest priority that has one, round-robin across its keys (pgq._fair_rows),
-- locked with SKIP LOCKED, at most p_want, none of p_skip, as rows of one slot in the
-- order to take them; the turns advance by what it returns, at the reserve's end
-- (pgq._fair_taken, pgq._fair_settle from pgq._pick_end). The rows of the walk after
-- the first of another slot stay locked, kept in the transaction's setting
-- pgq.fair_rest until pgq._pick_done: the queue's next pick returns them, in order,
-- without walking the turns again. When no turn gives a job at any priority (every
-- ready one held by other reserves, or jobs that no turn holds: a chunk or a job stored
-- before the queue was made fair), the queue is picked in its plain order (pgq._pick),
-- from the marks.
CREATE OR REPLACE FUNCTION pgq._pick_fair(p_cursor jsonb, p_queue text, p_want int, p_now timestamptz, p_skip bigint[])
RETURNS pgq.picked
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_rest  text[] := nullif(current_setting('pgq.fair_rest', true), '')::text[];  -- queue, then the arrays as text
    v_slots smallint[] := pgq._pick_slots(p_cursor);
    v_prio  int := 2147483647;
    v_rows  record;
    v_tids  tid[];      -- the rows in the order to take them: by tag, then as walked
    v_rslot smallint[];
    v_ids   bigint[];
    v_plain boolean[];
    v_keys  text[];
    v_idle  text[];
    v_n     int;
    v_out   pgq.picked;
BEGIN
    IF v_rest[1] = p_queue THEN
        -- Those still waiting: an earlier pick's job can have ended some (S74).
        SELECT array_agg(r.tid ORDER BY r.n), array_agg(r.slot ORDER BY r.n), array_agg(r.id ORDER BY r.n),
               array_agg(r.plain ORDER BY r.n), array_agg(r.key ORDER BY r.n)
        INTO v_tids, v_rslot, v_ids, v_plain, v_keys
        FROM unnest(v_rest[2]::tid[], v_rest[3]::smallint[], v_rest[4]::bigint[], v_rest[5]::boolean[], v_rest[6]::text[])
             WITH ORDINALITY r(tid, slot, id, plain, key, n)
        WHERE (SELECT true FROM pgq.jobs j WHERE j.slot = r.slot AND j.ctid = r.tid AND j.reserved_at IS NULL);  -- a TID probe a row
        IF v_tids IS NULL THEN
            PERFORM set_config('pgq.fair_rest', '', true);
            RETURN pgq._pick_fair(p_cursor, p_queue, p_want, p_now, p_skip);
        END IF;
    ELSE
        LOOP
            -- The next priority, below the last, that has a ready keyed job.
            SELECT p.priority INTO v_prio FROM pgq.jobs p
            WHERE p.queue = p_queue AND p.reserved_at IS NULL AND p.available_at <= p_now AND p.priority < v_prio
              AND p.fair_key IS NOT NULL AND p.id <> ALL (p_skip) AND p.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
            ORDER BY p.priority DESC, p.available_at, p.id  -- jobs_reserve_idx
            LIMIT 1;
            IF NOT FOUND THEN
                RETURN pgq._pick(p_cursor, p_queue, p_want, p_now, p_skip);
            END IF;
            v_rows := pgq._fair_rows(v_slots, p_queue, v_prio, p_want, p_now, p_skip);
            EXIT WHEN cardinality(v_rows.tids) > 0;
            PERFORM pgq._fair_taken(p_queue, '{}', v_rows.idle);
        END LOOP;
        SELECT array_agg(v_rows.tids[i] ORDER BY v_rows.tags[i], i), array_agg(v_rows.slots[i] ORDER BY v_rows.tags[i], i),
               array_agg(v_rows.ids[i] ORDER BY v_rows.tags[i], i), array_agg(v_rows.plain[i] ORDER BY v_rows.tags[i], i),
               array_agg(v_rows.keys[i] ORDER BY v_rows.tags[i], i)
        INTO v_tids, v_rslot, v_ids, v_plain, v_keys
        FROM generate_subscripts(v_rows.tags, 1) i;
        v_idle := v_rows.idle;
    END IF;
    -- One slot: up to the first row of another; the rest for the next pick.
    v_n := least(p_want, coalesce((SELECT min(i) - 1 FROM generate_subscripts(v_rslot, 1) i WHERE v_rslot[i] <> v_rslot[1]),
                                  cardinality(v_tids)));
    PERFORM pgq._fair_taken(p_queue, v_keys[1 : v_n], coalesce(v_idle, '{}'));
    PERFORM set_config('pgq.fair_rest', CASE WHEN v_n < cardinality(v_tids) THEN
        ARRAY[p_queue, v_tids[v_n + 1 :]::text, v_rslot[v_n + 1 :]::text, v_ids[v_n + 1 :]::text,
              v_plain[v_n + 1 :]::text, v_keys[v_n + 1 :]::text]::text ELSE '' END, true);
    v_out.slot := v_rslot[1];
    v_out.tids := v_tids[1 : v_n];
    v_out.ids := v_ids[1 : v_n];
    v_out.plain := v_plain[1 : v_n];
    v_out.last := false;  -- a lower priority may have ready jobs: the next pick tells
    RETURN v_out;
END;
$$;

COMMENT ON FUNCTION pgq._pick_fair(jsonb, text, int, timestamptz, bigint[]) IS
    'Reserve: pgq._pick for a fair queue: the next ready jobs round-robin across its keys by pass and weight, locked (SKIP LOCKED), rows of one slot in the order to take them (S114-S117).';

-- pgq._take_chunk: reserves the next p_want jobs (or as many as are left) of a chunk
-- that pgq._pick returned, for p_worker at p_now, for p_lease seconds: they become rows
-- of pgq.jobs in the current slot, their attempt counted (S5) and lease tokens built on
-- p_base (S14, S15). No pickup check applies to them: a chunk holds plain jobs on their
-- first attempt, and pgq._pick gave a late chunk's jobs back as rows. Returns them in
-- order.
CREATE OR REPLACE FUNCTION pgq._take_chunk(p_chunk pgq.loads, p_want int, p_now timestamptz, p_lease int,
                                           p_worker text, p_base text)
RETURNS SETOF pgq.reservation
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_k    int := least(p_want, p_chunk.n - p_chunk.next);
    v_slot smallint := pgq._slot();
BEGIN
    PERFORM pgq._load_unpacked(p_chunk, v_k);
    RETURN QUERY
    SELECT (r.reserved).*
    FROM pgq._load_rows(p_chunk, p_chunk.next + 1, v_k, v_slot, p_now, p_lease, p_worker,
                        pgq._lease_tokens(p_base, array_fill(v_slot, ARRAY[v_k]),
                                          ARRAY(SELECT p_chunk.first_id + p_chunk.next + i FROM generate_series(0, v_k - 1) i))) r;
END;
$$;

COMMENT ON FUNCTION pgq._take_chunk(pgq.loads, int, timestamptz, int, text, text) IS
    'Reserve: the next jobs of a picked chunk of a bulk dispatch become reserved rows (S5, S14, S85); returns them in order.';

-- pgq._take_rows: reserves rows that pgq._pick returned (NULL tids: left out), for
-- p_worker at p_now, for p_lease seconds: the attempt counted (S5), the lease token and
-- the overlap keys given for each (p_held: a text[] as text, or NULL), txid stamped
-- (S77). Returns each with its place in p_tids and the largest expire_after of its
-- overlap leases (p_expire, S34), in order.
CREATE OR REPLACE FUNCTION pgq._take_rows(
    p_slot smallint, p_tids tid[], p_tokens uuid[], p_held text[], p_expire int[],
    p_now timestamptz, p_lease int, p_worker text
) RETURNS TABLE (place int, reserved pgq.reservation)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
-- By TID only (S78): a plan cached while the table was small would read the whole of
-- jobs_reserve_idx, whose predicate the rows match, by a bitmap or index scan.
SET enable_seqscan = off SET enable_mergejoin = off SET enable_bitmapscan = off SET enable_indexscan = off
-- The rows are read by one TID scan and matched to their tokens in a hash: a probe per
-- row (a nested loop) costs more than the rest of the statement.
SET enable_nestloop = off SET enable_hashjoin = on
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    WITH taken AS (
        UPDATE pgq.jobs j
        SET attempts = j.attempts + 1,
            reserved_at = p_now,
            reserved_until = p_now + make_interval(secs => p_lease),
            reserved_by = p_worker,
            lease_token = t.token,
            started_at = p_now,
            overlap_keys = t.held::text[],
            waits_on = NULL,  -- no longer waits for a place (S99), however it got one
            txid = pg_current_xact_id()
        FROM unnest(p_tids, p_tokens, p_held, p_expire) WITH ORDINALITY t(tid, token, held, expire, ord)
        WHERE j.slot = p_slot
          AND j.ctid = ANY (p_tids)
          AND j.ctid = t.tid
          AND j.reserved_at IS NULL
        RETURNING t.ord::int AS ord,
                  ROW(j.uuid, j.job, j.queue, j.payload, j.priority, j.attempts, j.tries, j.handler::text, j.timeout,
                      j.lease_token, j.reserved_at, j.reserved_until, j.overlap_keys, j.created_at,
                      NULL, NULL, NULL, t.expire, j.traceparent, j.tracestate)::pgq.reservation AS r
    )
    SELECT x.ord, x.r FROM taken x ORDER BY x.ord;
END;
$$;

COMMENT ON FUNCTION pgq._take_rows(smallint, tid[], uuid[], text[], int[], timestamptz, int, text) IS
    'Reserve: picked rows of pgq.jobs become reserved, with the lease tokens and overlap keys given (S5, S14, S77); returns them with their places, in order.';

-- pgq._pick_slots: the slots a reserve's statements read (pgq._pick_begin).
CREATE OR REPLACE FUNCTION pgq._pick_slots(p_cursor jsonb) RETURNS smallint[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (p_cursor ->> 'slots')::smallint[];
END;
$$;

COMMENT ON FUNCTION pgq._pick_slots(jsonb) IS 'The slots of pgq.jobs that may hold jobs, as the reserve''s cursor read them (S80).';

-- pgq._pick_lower: the cursor with the mark of (queue, priority) lowered to (at, id), or
-- set when the queue has marks but none for that priority. A queue without marks
-- (walked from its front at its next pick) is left so. The marks of a queue are an
-- array of [priority, available_at, id], highest priority first.
CREATE OR REPLACE FUNCTION pgq._pick_lower(p_cursor jsonb, p_queue text, p_priority int, p_at timestamptz, p_id bigint)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_p    jsonb := p_cursor -> 'queues' -> p_queue -> 'p';
    v_mark jsonb := jsonb_build_array(p_priority, p_at, p_id);
BEGIN
    IF v_p IS NULL THEN
        RETURN p_cursor;
    END IF;
    FOR i IN 0 .. jsonb_array_length(v_p) - 1 LOOP
        IF (v_p -> i ->> 0)::int = p_priority THEN
            IF (p_at, p_id) >= ((v_p -> i ->> 1)::timestamptz, (v_p -> i ->> 2)::bigint) THEN
                RETURN p_cursor;
            END IF;
            RETURN jsonb_set(p_cursor, ARRAY['queues', p_queue, 'p', i::text], v_mark);
        ELSIF (v_p -> i ->> 0)::int < p_priority THEN
            RETURN jsonb_set(p_cursor, ARRAY['queues', p_queue, 'p'], jsonb_insert(v_p, ARRAY[i::text], v_mark));
        END IF;
    END LOOP;
    RETURN jsonb_set(p_cursor, ARRAY['queues', p_queue, 'p'], v_p || jsonb_build_array(v_mark));
END;
$$;

COMMENT ON FUNCTION pgq._pick_lower(jsonb, text, int, timestamptz, bigint) IS
    'Reserve''s cursor with the mark of (queue, priority) lowered to (at, id): such a job became waiting below it (S77).';

-- pgq._pick_begin: the cursor of a reserve on these queues: the session's marks for
-- them (the others are dropped: the rows written to them from now on will not be
-- looked at), lowered to every row written since the session's last reserve by a
-- transaction its snapshot did not see, with this call's snapshot. No marks on a
-- session's first call. One statement: the rest are expressions, which cost far less
-- than a statement each. No sequential scan: the rows are few and jobs_txid_idx finds
-- them, whatever the statistics say (none, on a server without autovacuum); a generic
-- plan, so that no reserve pays for planning. The same rows bring back the parked turns
-- of fair queues' keys they were written waiting for, and a queue without marks has
-- its parked turns checked at the reserve's end (pgq._fair_back, S125).
CREATE OR REPLACE FUNCTION pgq._pick_begin(p_queues text[]) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    v_state  jsonb := nullif(current_setting('pgq.reserve_marks', true), '')::jsonb;  -- the marks kept
    v_snap   pg_snapshot := pg_current_snapshot();
    v_queues jsonb := '{}';
    v_cursor jsonb;
    v_slots  smallint[];
    v_xmax   xid8;
    v_xip    xid8[];
    v_new    jsonb := '{}';   -- the queues without marks
    v_back   jsonb := '[]';   -- parked turns back: [queue, key, ready at], or [queue, NULL]
    q        text;
    r        record;
BEGIN
    -- The slots that may hold jobs, read after the snapshot above: a slot that becomes
    -- current later holds only rows written by transactions that snapshot did not see,
    -- which the next reserve finds (below). Every statement of the reserve on pgq.jobs
    -- and pgq.loads names them, so that the empty slots' partitions are pruned when it
    -- starts, not set up for nothing: as slot IN (s[1], .., s[4]), the four slots, since
    -- a partition is pruned at a statement's start by a list of values, not an array.
    v_slots := ARRAY(SELECT s.slot FROM pgq.job_slots s WHERE s.state <> 'empty' ORDER BY s.slot);
    IF v_state ->> 'layout' IS DISTINCT FROM '2' THEN
        v_state := NULL;  -- kept by the functions of an earlier release: walk from the fronts
    END IF;
    -- A queue without marks gets an empty entry, kept with this call's snapshot: its
    -- parked turns are checked at this reserve's end, and the next reserve looks from
    -- here (S125).
    FOREACH q IN ARRAY p_queues LOOP
        IF v_state -> 'queues' ? q THEN
            v_queues := v_queues || jsonb_build_object(q, v_state -> 'queues' -> q);
        ELSE
            v_new := v_new || jsonb_build_object(q, '{}'::jsonb);
            v_back := v_back || jsonb_build_array(jsonb_build_array(q, NULL));
        END IF;
    END LOOP;
    -- The snapshot as its xmax and its in-progress list, comma-separated (its text form
    -- is xmin:xmax:xip).
    v_cursor := jsonb_build_object('layout', 2, 'slots', v_slots::text, 'queues', v_queues || v_new,
                                   'since', jsonb_build_object('xmax', pg_snapshot_xmax(v_snap)::text,
                                                               'xip', split_part(v_snap::text, ':', 3)));
    IF v_queues = '{}' THEN
        RETURN CASE WHEN v_back = '[]' THEN v_cursor ELSE pgq._fair_back(v_cursor, v_back) END;
    END IF;
    v_xmax := (v_state #>> '{since,xmax}')::xid8;
    v_xip := coalesce(string_to_array(nullif(v_state #>> '{since,xip}', ''), ',')::xid8[], '{}');
    -- Materialized: both aggregates read the rows found through jobs_txid_idx, never
    -- another index of pgq.jobs (jobs_lease_idx would walk every lease, dead or alive).
    FOR r IN
        WITH written AS MATERIALIZED (
            SELECT j.queue, j.priority, j.available_at, j.id, j.reserved_at, j.reserved_until, j.fair_key
            FROM pgq.jobs j
            WHERE (j.txid >= v_xmax OR j.txid = ANY (v_xip))
              AND j.queue = ANY (p_queues)
              AND j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
        )
        (SELECT DISTINCT ON (w.queue, w.priority) w.queue, w.priority, w.available_at, w.id, NULL::timestamptz AS until,
                NULL::text AS key
         FROM written w
         WHERE w.reserved_at IS NULL
         ORDER BY w.queue, w.priority, w.available_at, w.id)
        UNION ALL
        SELECT w.queue, NULL, NULL, NULL, min(w.reserved_until), NULL
        FROM written w
        WHERE w.reserved_until IS NOT NULL
        GROUP BY w.queue
        UNION ALL
        SELECT w.queue, NULL, min(w.available_at), NULL, NULL, w.fair_key
        FROM written w
        WHERE w.reserved_at IS NULL AND w.fair_key IS NOT NULL
        GROUP BY w.queue, w.fair_key
    LOOP
        IF r.key IS NOT NULL THEN
            v_back := v_back || jsonb_build_array(jsonb_build_array(r.queue, r.key, r.available_at));
        ELSIF r.until IS NULL THEN
            v_cursor := pgq._pick_lower(v_cursor, r.queue, r.priority, r.available_at, r.id);
        ELSIF (v_cursor -> 'queues' -> r.queue ->> 'l')::timestamptz > r.until THEN
            v_cursor := jsonb_set(v_cursor, ARRAY['queues', r.queue, 'l'], to_jsonb(r.until));
        END IF;
    END LOOP;
    RETURN CASE WHEN v_back = '[]' THEN v_cursor ELSE pgq._fair_back(v_cursor, v_back) END;  -- no call when none comes back
END;
$$;

COMMENT ON FUNCTION pgq._pick_begin(text[]) IS
    'Reserve''s cursor: this session''s marks for these queues, lowered to the rows written since its last reserve by transactions it did not see, with this call''s snapshot (S77).';

-- pgq._sweep_from: where the lease sweep of a reserve on these queues starts: the
-- earliest time below which the session's last reserve swept every expired lease of
-- each queue; -infinity when one of them has none (or one in the future, p_now being a
-- test's clock).
CREATE OR REPLACE FUNCTION pgq._sweep_from(p_cursor jsonb, p_queues text[], p_now timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_low timestamptz := 'infinity';
    q     text;
BEGIN
    FOREACH q IN ARRAY p_queues LOOP
        v_low := least(v_low, coalesce((p_cursor -> 'queues' -> q ->> 'l')::timestamptz, '-infinity'));
    END LOOP;
    RETURN CASE WHEN v_low > p_now THEN '-infinity' ELSE v_low END;
END;
$$;

COMMENT ON FUNCTION pgq._sweep_from(jsonb, text[], timestamptz) IS
    'Where a reserve''s lease sweep starts: below it, the session''s last reserve swept every expired lease of these queues (S77).';

-- pgq._pick_swept: the cursor after a sweep from p_low at p_now: every lease of these
-- queues that ended before p_now, and was not left locked by another transaction (or
-- beyond the sweep's limit), came back; the next sweep starts at the first one left.
-- p_low NULL: the sweep found no lease that ended since p_low, so none is left.
CREATE OR REPLACE FUNCTION pgq._pick_swept(p_cursor jsonb, p_queues text[], p_low timestamptz, p_now timestamptz) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
DECLARE
    v_slots smallint[] := pgq._pick_slots(p_cursor);
    v_left  jsonb := '{}';  -- per queue, the first expired lease left
    q       text;
BEGIN
    IF p_low IS NOT NULL THEN
        SELECT coalesce(jsonb_object_agg(l.queue, l.until), '{}') INTO v_left
        FROM (SELECT j.queue, min(j.reserved_until) AS until
              FROM pgq.jobs j
              WHERE j.reserved_until < p_now
                AND j.reserved_until >= p_low
                AND j.queue = ANY (p_queues)
                AND j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
              GROUP BY j.queue) l;
    END IF;
    FOREACH q IN ARRAY p_queues LOOP
        p_cursor := jsonb_set(p_cursor, ARRAY['queues', q],
                              jsonb_set(coalesce(p_cursor -> 'queues' -> q, '{}'), '{l}', coalesce(v_left -> q, to_jsonb(p_now))));
    END LOOP;
    RETURN p_cursor;
END;
$$;

COMMENT ON FUNCTION pgq._pick_swept(jsonb, text[], timestamptz, timestamptz) IS
    'Reserve''s cursor after its lease sweep: the next sweep of each queue starts at the first expired lease left (S77).';

-- pgq._pick_done: the cursor once a reserve is done with a queue: its marks move up to
-- its first waiting job of each priority, locked by another reserve or not (that
-- reserve may roll back). The first time, by walking the queue; then from the marks,
-- one probe per priority, and a priority with no waiting job left is dropped (a new one
-- comes back through pgq._pick_begin).
CREATE OR REPLACE FUNCTION pgq._pick_done(p_cursor jsonb, p_queue text) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only (S78)
AS $$
DECLARE
    v_qm  jsonb := coalesce(p_cursor -> 'queues' -> p_queue, '{}');
    v_p   jsonb := v_qm -> 'p';
    v_slots smallint[] := pgq._pick_slots(p_cursor);
    v_new jsonb := '[]';
    v_at  timestamptz;
    v_id  bigint;
BEGIN
    PERFORM set_config('pgq.fair_rest', '', true);  -- the rows a fair pick kept, left locked (pgq._pick_fair)
    IF v_p IS NULL THEN
        SELECT coalesce(jsonb_agg(jsonb_build_array(f.priority, f.available_at, f.id) ORDER BY f.priority DESC), '[]')
        INTO v_new
        FROM (SELECT DISTINCT ON (p.priority) p.priority, p.available_at, p.id
              FROM pgq.jobs p
              WHERE p.queue = p_queue AND p.reserved_at IS NULL AND p.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
              ORDER BY p.priority DESC, p.available_at, p.id) f;
    ELSE
        FOR i IN 0 .. jsonb_array_length(v_p) - 1 LOOP
            SELECT p.available_at, p.id INTO v_at, v_id
            FROM pgq.jobs p
            WHERE p.queue = p_queue
              AND p.priority = (v_p -> i ->> 0)::int
              AND p.reserved_at IS NULL
              AND p.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
              AND (p.available_at, p.id) >= ((v_p -> i ->> 1)::timestamptz, (v_p -> i ->> 2)::bigint)
            ORDER BY p.available_at, p.id
            LIMIT 1;
            IF FOUND THEN
                v_new := v_new || jsonb_build_array(jsonb_build_array(v_p -> i -> 0, v_at, v_id));
            END IF;
        END LOOP;
    END IF;
    RETURN jsonb_set(p_cursor, ARRAY['queues', p_queue], jsonb_set(v_qm, '{p}', v_new));
END;
$$;

COMMENT ON FUNCTION pgq._pick_done(jsonb, text) IS
    'Reserve''s cursor once a queue is done: its marks move up to its first waiting job of each priority (S77).';

-- pgq._pick_end: keeps the cursor's marks for the session's next reserve, with the
-- snapshot they hold for, and returns them. The transaction's own id is added to the
-- in-progress list: its rows written after this call (a reserve inside a longer
-- transaction) are looked at next time. The turns of the fair queues it picked from
-- are settled first (pgq._fair_settle, S115). A function with a result, so that the
-- reserve calls it in an expression rather than a statement.
CREATE OR REPLACE FUNCTION pgq._pick_end(p_cursor jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_own     xid8;
    v_pending text := current_setting('pgq.fair_pending', true);
    v_back    text := current_setting('pgq.fair_back', true);
BEGIN
    IF v_pending <> '' OR v_back <> '' THEN
        PERFORM pgq._fair_settle(coalesce(nullif(v_pending, ''), '[]')::jsonb, coalesce(nullif(v_back, ''), '[]')::jsonb);
        PERFORM set_config('pgq.fair_pending', '', true), set_config('pgq.fair_back', '', true);
    END IF;
    v_own := pg_current_xact_id_if_assigned();
    IF v_own IS NOT NULL THEN
        p_cursor := jsonb_set(p_cursor, '{since,xip}', to_jsonb(concat_ws(',', nullif(p_cursor #>> '{since,xip}', ''), v_own::text)));
    END IF;
    RETURN set_config('pgq.reserve_marks', p_cursor::text, false)::jsonb;
END;
$$;

COMMENT ON FUNCTION pgq._pick_end(jsonb) IS
    'Reserve''s cursor: keeps its marks in the session (setting pgq.reserve_marks) with the snapshot they hold for (S77).';
