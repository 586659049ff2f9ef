-- The worker's pickup: pgq.reserve (leases S14, pickup checks S12 S23 S24, middleware, queue order S30) and napping (S31).

-- pgq._reported: a job as pgq.reserve reports it: to run (p_pickup NULL), or what
-- happened to it at pickup instead.
CREATE OR REPLACE FUNCTION pgq._reported(p_job pgq.jobs, p_pickup pgq.pickup, p_note text, p_middleware text DEFAULT NULL)
RETURNS pgq.reservation
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ROW(p_job.uuid, p_job.job, p_job.queue, p_job.payload, p_job.priority, p_job.attempts, p_job.tries,
               p_job.handler::text, p_job.timeout, p_job.lease_token, p_job.reserved_at, p_job.reserved_until,
               p_job.overlap_keys, p_job.created_at, p_pickup, p_note, p_middleware, NULL)::pgq.reservation;
$$;

COMMENT ON FUNCTION pgq._reported(pgq.jobs, pgq.pickup, text, text) IS 'A job as pgq.reserve returns it: to run, or with what happened at pickup.';

-- pgq.reserve: reserves up to max jobs for a worker, taking the queues in the order given
-- (S30) and, within a queue, by priority then FIFO, with FOR UPDATE SKIP LOCKED.
-- First sweeps expired leases of those queues back to waiting, recording each as
-- lease_expired (S14). Then applies the pickup checks to every reserved job, in order: a
-- debounced job whose token is stale is dropped (S24); a job whose attempts exceed its
-- tries (default_tries when it set none; 0 = unlimited) or whose deadline passed fails
-- before its handler runs (S12); middleware may turn it away (S26-S29); an
-- until-processing lock is released once the handler will run (S23: a turn-away keeps
-- it). Returns the jobs whose handler may run, each with a fresh lease_token and
-- attempts already counted (S5) (and overlap_expire_after: how long the worker must
-- renew its overlap leases, when each key it took has an expire_after, S34), and
-- (with pickup set, not to be run) the jobs
-- exhausted, debounced, turned away or failed by middleware in this call, so the worker
-- can log every outcome.
-- State change: waiting -> reserved; reserved (lease ended) -> waiting -> reserved;
-- waiting -> failed (exhausted) | deleted (debounced, dont_release) | waiting (turned away).
-- Call it on the worker's session connection: overlap locks belong to that session.
CREATE OR REPLACE FUNCTION pgq.reserve(
    worker        text,
    queues        text[],
    max           int,
    default_tries int DEFAULT 1,
    as_of         timestamptz DEFAULT NULL,
    call          uuid DEFAULT NULL
) RETURNS SETOF pgq.reservation
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
SET enable_nestloop = on  -- (so that the statement of the admitted can turn it off for itself only)
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now   timestamptz := coalesce(reserve.as_of, now());
    v_admit pgq.admission;
    v_mw    jsonb[];      -- the picked jobs for the set-based middleware path, in pick order: middleware,
    v_mw_tids tid[];      -- row, name, payload, uuid and lease token
    v_mw_jobs text[];
    v_mw_payloads jsonb[];
    v_mw_keys jsonb[];
    v_mw_uuids uuid[];
    v_mw_tokens uuid[];
    v_adm   pgq.admission[];
    v_rec   record;
    v_rep   pgq.reservation[];  -- the middleware path's jobs turned away or failed, and their positions
    v_rep_ord int[];
    v_done  int;
    v_seen  bigint[] := '{}';  -- turned away in this call: due again at once with release_after 0
    v_left  int := reserve.max;
    v_queue text;
    v_lease int;
    v_paused boolean;
    v_job   pgq.jobs;
    v_run   pgq.reservation;  -- a job of the one-by-one path, to run
    v_tries int;
    v_want  int;
    v_picked int;
    v_fast  int;
    v_ids   tid[];  -- the picked rows, locked by this transaction: their ctid cannot change
    v_slots smallint[];  -- the slot of each (S80): a ctid names a row within its slot only
    v_mws   boolean[];   -- whether each has middleware: the fast path and the middleware path run only for their jobs
    v_slot  smallint;    -- the slot of the rows this pass takes: the first picked, and those after it in the same slot
    v_whole boolean;     -- every picked row is in that slot
    v_busy  boolean;     -- this pass left jobs of this queue waiting: their rate-limit window was busy (S82)
    v_marks jsonb;        -- this session's low-water marks for these queues (22_storage_marks.sql)
    v_snap  pg_snapshot;  -- the snapshot they will hold for
    v_qm    jsonb;        -- the marks of v_queue: {"l": sweep mark, "p": {priority: [available_at, id]}}
    v_low   timestamptz;  -- the lease sweep starts here
    v_prio  int;
    v_at    timestamptz;
    v_id    bigint;
    v_load  pgq.loads;   -- the queue's first chunk of load jobs, locked (S85)
    v_before boolean[];  -- whether each picked row comes before it in the queue's order
    v_loads boolean;     -- whether to look for a chunk in this pass: the last look found one
    -- Lease tokens: one base per call, then the job's slot (one hex digit, S80: see
    -- pgq._token_slot) and the low 44 bits of its id (eleven hex digits). Unique per
    -- reservation without a gen_random_uuid() (and its getpid() system call) per job;
    -- built as text, which costs less than five bytea calls. The base is the first
    -- twelve bytes of call when the worker gives one (random), so that pgq.unreserve
    -- can find the jobs of a call whose answer was lost.
    v_token text := left(coalesce(reserve.call, gen_random_uuid())::text, 24);
BEGIN
    IF reserve.max IS NULL OR reserve.max < 1 THEN
        RAISE EXCEPTION 'pgq: reserve max must be >= 1, got %', reserve.max USING ERRCODE = '22023';
    END IF;
    IF reserve.default_tries IS NULL OR reserve.default_tries < 0 THEN
        RAISE EXCEPTION 'pgq: default_tries must be >= 0, got %', reserve.default_tries USING ERRCODE = '22023';
    END IF;

    -- Where this session's last reserve left these queues, lowered to what was written
    -- since (S77). The sweep below starts at the lowest of their sweep marks.
    SELECT m.marks, m.snap INTO v_marks, v_snap FROM pgq._marks_since(reserve.queues) m;
    SELECT CASE WHEN bool_and(v_marks -> q ->> 'l' IS NOT NULL) THEN min((v_marks -> q ->> 'l')::timestamptz) END
    INTO v_low
    FROM unnest(reserve.queues) q;
    IF v_low IS NULL OR v_low > v_now THEN
        v_low := '-infinity';
    END IF;

    -- Expired leases come back to waiting (S14). SKIP LOCKED: two workers never sweep
    -- the same row, and a job being completed right now is left alone. A job with a SQL
    -- handler still here did not commit (its completion is in the handler's transaction),
    -- so its attempt is given back, up to pgq._max_give_backs() times (S35); a Go
    -- handler's outcome is unknown, and its attempt counts. Overlap leases are left to
    -- run out (S34): a cut-off worker cancels its handler only when it cannot renew them.
    -- The jobs come back below the marks: they are lowered to them. Looked for first:
    -- setting up the sweep's statement costs more than a probe of jobs_lease_idx, and
    -- most calls find no lease to sweep.
    IF EXISTS (SELECT FROM pgq.jobs j
               WHERE j.reserved_until < v_now
                 AND j.reserved_until >= v_low
                 AND j.queue = ANY (reserve.queues)) THEN
        FOR v_rec IN
        WITH expired AS (
            SELECT j.*, j.handler IS NOT NULL AND j.interruptions < pgq._max_give_backs() AS refund
            FROM pgq.jobs j
            WHERE j.reserved_until < v_now
              AND j.reserved_until >= v_low
              AND j.queue = ANY (reserve.queues)
            ORDER BY j.reserved_until
            LIMIT 1000
            FOR UPDATE SKIP LOCKED
        ), back AS (
            UPDATE pgq.jobs j
            SET reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL,
                started_at = NULL, overlap_keys = NULL, lease_expiries = j.lease_expiries + 1, wait_reason = 'lease_expired',
                attempts = j.attempts - e.refund::int, interruptions = j.interruptions + e.refund::int
            FROM expired e
            WHERE j.uuid = e.uuid
              AND j.uuid = ANY (ARRAY(SELECT x.uuid FROM expired x))  -- probes, whatever the plan (S78)
            RETURNING j.queue, j.priority, j.available_at, j.id
        ), recorded AS (
        INSERT INTO pgq.attempts
            (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at, finished_at, outcome, exception)
        SELECT e.uuid, e.job, e.queue, e.attempts, e.reserved_by, e.lease_token, e.reserved_at, e.started_at,
               e.reserved_until, 'lease_expired',
               format('lease ended at %s without a heartbeat from worker %s', e.reserved_until, e.reserved_by)
               || CASE WHEN e.refund THEN '; its SQL handler''s transaction did not commit: attempt given back' ELSE '' END
        FROM expired e
        )
        SELECT DISTINCT ON (b.queue, b.priority) b.queue, b.priority, b.available_at, b.id
        FROM back b
        ORDER BY b.queue, b.priority, b.available_at, b.id
        LOOP
            v_marks := pgq._marks_lower(v_marks, v_rec.queue, v_rec.priority, v_rec.available_at, v_rec.id);
        END LOOP;
    END IF;
    -- Every lease of these queues that ended before now, and was not left locked by
    -- another transaction (or beyond the 1000), has been swept: the next sweep starts at
    -- the first one left.
    SELECT coalesce(jsonb_object_agg(q.name, jsonb_set(coalesce(v_marks -> q.name, '{}'), '{l}', to_jsonb(coalesce(l.until, v_now)))), '{}')
    INTO v_marks
    FROM unnest(reserve.queues) q(name)
    LEFT JOIN (SELECT j.queue, min(j.reserved_until) AS until
               FROM pgq.jobs j
               WHERE j.reserved_until < v_now
                 AND j.reserved_until >= v_low
                 AND j.queue = ANY (reserve.queues)
               GROUP BY j.queue) l ON l.queue = q.name;

    FOREACH v_queue IN ARRAY reserve.queues LOOP
        EXIT WHEN v_left <= 0;
        SELECT q.retry_after, q.paused INTO v_lease, v_paused FROM pgq.queues q WHERE q.name = v_queue;
        CONTINUE WHEN v_paused;
        v_lease := coalesce(v_lease, pgq._default_retry_after());

        v_qm := v_marks -> v_queue;
        v_busy := false;
        v_loads := true;

        -- Exhausted jobs do not fill the batch: pick again until it is full or the
        -- queue has no more ready jobs.
        LOOP
            v_want := v_left;
            -- The queue's first chunk of jobs of a bulk dispatch that is ready now and that
            -- no other reserve holds (S85, 21_storage_loads.sql). Its jobs come in the queue's
            -- order as rows would: this pass takes the rows before it or, if none is, the
            -- chunk. There is no mark to start from: a dead version of pgq.loads stands for
            -- a thousand jobs. Once a look finds none, this call looks no more: a chunk
            -- committed meanwhile waits for the next call, as a row may.
            v_load := NULL;
            IF v_loads THEN
                SELECT * INTO v_load FROM pgq.loads l
                WHERE l.queue = v_queue AND l.available_at <= v_now
                ORDER BY l.priority DESC, l.available_at, l.first_id + l.next  -- loads_queue_idx
                LIMIT 1
                FOR UPDATE SKIP LOCKED;
                v_loads := v_load.first_id IS NOT NULL;
            END IF;
            -- Lock the next waiting jobs in order (SKIP LOCKED). The lock holds them for
            -- this transaction whatever happens below.
            IF v_qm -> 'p' IS NULL THEN
                -- The session's first pickup on this queue: from its front.
                SELECT coalesce(array_agg(x.ctid), '{}'), coalesce(array_agg(x.slot), '{}'), coalesce(array_agg(x.mw), '{}'),
                       coalesce(array_agg(x.before), '{}')
                INTO v_ids, v_slots, v_mws, v_before
                FROM (SELECT p.ctid, p.slot, p.middleware IS NOT NULL AS mw,
                             v_load.first_id IS NULL OR p.priority > v_load.priority
                             OR (p.priority = v_load.priority
                                 AND (p.available_at, p.id) < (v_load.available_at, v_load.first_id + v_load.next)) AS before
                      FROM pgq.jobs p
                      WHERE p.queue = v_queue
                        AND p.reserved_at IS NULL
                        AND p.available_at <= v_now
                        AND p.id <> ALL (v_seen)
                      ORDER BY p.priority DESC, p.available_at, p.id
                      LIMIT v_want
                      FOR UPDATE SKIP LOCKED) x;
            ELSE
                -- From the marks, one priority after the other (S77): the same order.
                v_ids := '{}';
                v_slots := '{}';
                v_mws := '{}';
                v_before := '{}';
                FOR v_prio, v_at, v_id IN
                    SELECT m.key::int, (m.value ->> 0)::timestamptz, (m.value ->> 1)::bigint
                    FROM jsonb_each(v_qm -> 'p') m
                    ORDER BY m.key::int DESC
                LOOP
                    EXIT WHEN v_load.priority > v_prio;  -- a lower priority's jobs come after the chunk
                    SELECT v_ids || coalesce(array_agg(x.ctid), '{}'), v_slots || coalesce(array_agg(x.slot), '{}'),
                           v_mws || coalesce(array_agg(x.mw), '{}'), v_before || coalesce(array_agg(x.before), '{}')
                    INTO v_ids, v_slots, v_mws, v_before
                    FROM (SELECT p.ctid, p.slot, p.middleware IS NOT NULL AS mw,
                                 v_load.first_id IS NULL OR v_prio > v_load.priority
                                 OR (p.available_at, p.id) < (v_load.available_at, v_load.first_id + v_load.next) AS before
                          FROM pgq.jobs p
                          WHERE p.queue = v_queue
                            AND p.priority = v_prio
                            AND p.reserved_at IS NULL
                            AND (p.available_at, p.id) >= (v_at, v_id)
                            AND p.available_at <= v_now
                            AND p.id <> ALL (v_seen)
                          ORDER BY p.available_at, p.id
                          LIMIT v_want - cardinality(v_ids)
                          FOR UPDATE SKIP LOCKED) x;
                    EXIT WHEN cardinality(v_ids) >= v_want;
                END LOOP;
            END IF;
            IF v_load.first_id IS NOT NULL THEN
                -- The picked rows after the chunk stay locked by this transaction, and the
                -- pass after the chunk's picks them again.
                v_picked := coalesce(array_position(v_before, false), cardinality(v_before) + 1) - 1;
                IF v_picked = 0 THEN
                    IF v_load.retry_until < v_now AND v_qm -> 'p' IS NOT NULL THEN
                        -- Its jobs become waiting rows, for the next pass to fail (S12):
                        -- the marks go down to them.
                        v_marks := pgq._marks_lower(jsonb_set(v_marks, ARRAY[v_queue], v_qm), v_queue,
                                                    v_load.priority, v_load.available_at, v_load.first_id + v_load.next);
                        v_qm := v_marks -> v_queue;
                    END IF;
                    RETURN QUERY SELECT * FROM pgq._load_take(v_load, v_want, v_now, v_lease, reserve.worker, v_token);
                    GET DIAGNOSTICS v_done = ROW_COUNT;
                    v_left := v_left - v_done;
                    EXIT WHEN v_left <= 0;
                    CONTINUE;
                END IF;
                v_ids := v_ids[1 : v_picked];
                v_slots := v_slots[1 : v_picked];
                v_mws := v_mws[1 : v_picked];
            END IF;
            EXIT WHEN cardinality(v_ids) = 0;
            -- This pass takes the picked rows up to the first one in another slot (S80),
            -- so that each statement below names rows of one slot, by ctid, and reads
            -- that slot only. The rest stay locked by this transaction, and the next
            -- pass picks them again, first: the batch keeps the pick order.
            v_slot := v_slots[1];
            v_whole := v_slot = ALL (v_slots);
            IF NOT v_whole THEN
                v_picked := (SELECT min(i) FROM generate_subscripts(v_slots, 1) i WHERE v_slots[i] <> v_slot) - 1;
                v_ids := v_ids[1 : v_picked];
                v_mws := v_mws[1 : v_picked];
            END IF;
            v_picked := cardinality(v_ids);

            -- Fast path, set-based: jobs no pickup check applies to (no cancel request,
            -- no debounce, no middleware, no until-processing lock, not exhausted) are
            -- reserved and go out in one statement. ctid = ANY ($1) is a TID scan: no
            -- index lookup, and the cached generic plan stays good (force_generic_plan
            -- above). The test is written out here, not called: a function per row
            -- would cost more than the rest of the statement. Not run for a batch whose
            -- jobs all have middleware: it would read each of them for nothing.
            v_fast := 0;
            IF false = ANY (v_mws) THEN
                -- Returned in pick order, not in the order the TID scan met the rows: the
                -- worker starts the jobs it reserved ahead in the order it got them (S84),
                -- and a row moved by an update would otherwise start after later jobs.
                RETURN QUERY
                WITH reserved AS (
                    UPDATE pgq.jobs j
                    SET attempts = j.attempts + 1,
                        reserved_at = v_now,
                        reserved_until = v_now + make_interval(secs => v_lease), txid = pg_current_xact_id(),
                        reserved_by = reserve.worker,
                        lease_token = (v_token || j.slot || lpad(to_hex(j.id & 17592186044415), 11, '0'))::uuid,
                        started_at = v_now
                    WHERE j.slot = v_slot
                      AND j.ctid = ANY (v_ids)
                      AND j.cancel_requested_at IS NULL
                      AND j.debounce_key IS NULL
                      AND j.middleware IS NULL
                      AND j.unique_until IS DISTINCT FROM 'processing'
                      AND (j.batch_id IS NULL
                           OR NOT EXISTS (SELECT FROM pgq.job_batches b WHERE b.id = j.batch_id AND b.cancelled_at IS NOT NULL))
                      AND CASE WHEN j.retry_until IS NOT NULL THEN v_now <= j.retry_until
                               ELSE coalesce(j.tries, reserve.default_tries) = 0
                                    OR j.attempts + 1 <= coalesce(j.tries, reserve.default_tries) END
                    RETURNING j.uuid, j.job, j.queue, j.payload, j.priority, j.attempts, j.tries, j.handler::text AS handler,
                              j.timeout, j.lease_token, j.reserved_at, j.reserved_until, j.overlap_keys, j.created_at,
                              j.available_at, j.id
                )
                SELECT r.uuid, r.job, r.queue, r.payload, r.priority, r.attempts, r.tries, r.handler, r.timeout,
                       r.lease_token, r.reserved_at, r.reserved_until, r.overlap_keys, r.created_at,
                       NULL::pgq.pickup, NULL::text, NULL::text, NULL::int
                FROM reserved r
                ORDER BY r.priority DESC, r.available_at, r.id;
                GET DIAGNOSTICS v_fast = ROW_COUNT;
            END IF;
            v_left := v_left - v_fast;
            v_done := v_fast;

            -- Middleware path, set-based (S26-S29, S67): jobs whose only pickup check is
            -- their middleware are admitted by one pgq._admit call for the whole batch,
            -- then reserved: those admitted in one statement, with their overlap keys;
            -- those turned away or failed one by one below, as before.
            IF v_done < v_picked AND true = ANY (v_mws) THEN
                -- (aggregates over a sorted subquery keep its order: one sort, not six)
                SELECT array_agg(j.ctid), array_agg(j.job), array_agg(j.payload), array_agg(j.middleware),
                       array_agg(j.middleware_keys), array_agg(j.uuid),
                       array_agg((v_token || j.slot || lpad(to_hex(j.id & 17592186044415), 11, '0'))::uuid)
                INTO v_mw_tids, v_mw_jobs, v_mw_payloads, v_mw, v_mw_keys, v_mw_uuids, v_mw_tokens
                FROM (SELECT j.ctid, j.job, j.payload, j.middleware, j.middleware_keys, j.uuid, j.id, j.slot
                      FROM pgq.jobs j
                      WHERE j.slot = v_slot
                        AND j.ctid = ANY (v_ids)
                        AND j.reserved_at IS NULL
                        AND j.middleware IS NOT NULL
                        AND j.cancel_requested_at IS NULL
                        AND j.debounce_key IS NULL
                        AND j.unique_until IS DISTINCT FROM 'processing'
                        AND CASE WHEN j.retry_until IS NOT NULL THEN v_now <= j.retry_until
                                 ELSE coalesce(j.tries, reserve.default_tries) = 0
                                      OR j.attempts + 1 <= coalesce(j.tries, reserve.default_tries) END
                      ORDER BY j.priority DESC, j.available_at, j.id) j;
                IF v_mw IS NOT NULL THEN
                    v_adm := ARRAY(SELECT a FROM pgq._admit(v_mw_jobs, v_mw_payloads, v_mw, v_mw_keys, v_mw_uuids, v_mw_tokens,
                                                            reserve.worker, v_now) a);
                    -- Left waiting, untouched (S82): their rate-limit window is busy. Not
                    -- for the one-by-one path either.
                    IF true = ANY (SELECT a.busy FROM unnest(v_adm) a) THEN
                        v_busy := true;
                        v_ids := ARRAY(
                            SELECT u.tid FROM unnest(v_ids) WITH ORDINALITY u(tid, n)
                            WHERE u.tid <> ALL (ARRAY(
                                SELECT a.tid
                                FROM unnest(v_mw_tids, v_adm) a(tid, ord, turned_by, note, delay, drop, held, error, held_expire_after, busy)
                                WHERE a.busy))
                            ORDER BY u.n);
                        v_picked := cardinality(v_ids);
                    END IF;
                    -- Turned away (S27-S29: the attempt is used, recorded, and an
                    -- until-processing lock kept, S23) or failed by its middleware: one
                    -- by one, kept aside so that the call returns the batch in pick order.
                    v_rep := '{}';
                    v_rep_ord := '{}';
                    FOR v_rec IN
                        UPDATE pgq.jobs j
                        SET attempts = j.attempts + 1,
                            reserved_at = v_now,
                            reserved_until = v_now + make_interval(secs => v_lease), txid = pg_current_xact_id(),
                            reserved_by = reserve.worker,
                            lease_token = v_mw_tokens[a.ord],
                            started_at = v_now
                        -- unnest expands the admission. The join goes from it to each job by TID:
                        -- with sequential scans, hash and merge joins off (S78) the only other way
                        -- into pgq.jobs is a whole index scan, which no statistics price below a
                        -- probe per admitted job. (A filter ctid = ANY (v_mw_tids) besides cost a
                        -- scan of the array per row: a quarter of the statement.)
                        FROM unnest(v_mw_tids, v_adm) a(tid, ord, turned_by, note, delay, drop, held, error, held_expire_after, busy)
                        WHERE j.slot = v_slot
                          AND j.ctid = a.tid
                          AND (a.turned_by IS NOT NULL OR a.error IS NOT NULL)
                          AND NOT a.busy
                        RETURNING j AS job, ROW(a.ord, a.turned_by, a.note, a.delay, a.drop, a.held, a.error, NULL, NULL)::pgq.admission AS adm
                    LOOP
                        v_job := v_rec.job;
                        v_admit := v_rec.adm;
                        v_rep_ord := v_rep_ord || v_admit.ord;
                        IF v_admit.error IS NOT NULL THEN
                            PERFORM pgq._record(v_job, 'failed', v_now, v_admit.error, p_final => true, p_started => false);
                            PERFORM pgq._bury(v_job, v_admit.error, v_now);
                            v_rep := v_rep || pgq._reported(v_job, 'failed', v_admit.error);
                            CONTINUE;
                        END IF;
                        PERFORM pgq._turn_away(v_job, v_admit.turned_by, v_admit.note, v_admit.delay, v_admit.drop, v_now);
                        v_seen := v_seen || v_job.id;
                        v_rep := v_rep || pgq._reported(v_job, 'turned_away', v_admit.note, v_admit.turned_by);
                    END LOOP;
                    -- The admitted, reserved in one statement with their overlap keys. The
                    -- rows are read by one TID scan of the batch and matched to their
                    -- admission in a hash: a probe per admitted job (a nested loop, as
                    -- above) cost 5 µs a job, a third of the statement. The settings hold
                    -- for the plan this statement caches on its first run, and go back
                    -- for the next statements (the SET clause above restores them at exit).
                    SET LOCAL enable_nestloop = off;
                    SET LOCAL enable_hashjoin = on;
                    RETURN QUERY
                    WITH admitted AS (
                        UPDATE pgq.jobs j
                        SET attempts = j.attempts + 1,
                            reserved_at = v_now,
                            reserved_until = v_now + make_interval(secs => v_lease), txid = pg_current_xact_id(),
                            reserved_by = reserve.worker,
                            lease_token = v_mw_tokens[a.ord],
                            started_at = v_now,
                            overlap_keys = CASE WHEN cardinality(a.held) > 0 THEN a.held END
                        FROM unnest(v_mw_tids, v_adm) a(tid, ord, turned_by, note, delay, drop, held, error, held_expire_after)
                        WHERE j.slot = v_slot
                          AND j.ctid = ANY (v_mw_tids) AND j.ctid = a.tid
                          AND a.turned_by IS NULL AND a.error IS NULL
                        RETURNING a.ord,
                                  ROW(j.uuid, j.job, j.queue, j.payload, j.priority, j.attempts, j.tries, j.handler::text,
                                      j.timeout, j.lease_token, j.reserved_at, j.reserved_until, j.overlap_keys,
                                      j.created_at, NULL, NULL, NULL, a.held_expire_after)::pgq.reservation AS r
                    ), reported AS (
                        SELECT x.ord, x.r FROM admitted x
                        UNION ALL
                        SELECT v_rep_ord[i], v_rep[i] FROM generate_subscripts(v_rep, 1) i
                    )
                    SELECT (x.r).* FROM reported x ORDER BY x.ord;
                    GET DIAGNOSTICS v_fast = ROW_COUNT;
                    SET LOCAL enable_nestloop = on;
                    SET LOCAL enable_hashjoin = off;
                    v_left := v_left - (v_fast - cardinality(v_rep));
                    v_done := v_done + v_fast;
                END IF;
            END IF;

            -- The others, one by one: reserved here, then checked. Not when the set-based
            -- paths took them all: setting the statement up costs 40 µs for no row.
            IF v_done < v_picked THEN
                FOR v_job IN
                    WITH reserved AS (
                        UPDATE pgq.jobs j
                        SET attempts = j.attempts + 1,
                            reserved_at = v_now,
                            reserved_until = v_now + make_interval(secs => v_lease), txid = pg_current_xact_id(),
                            reserved_by = reserve.worker,
                            lease_token = (v_token || j.slot || lpad(to_hex(j.id & 17592186044415), 11, '0'))::uuid,
                            started_at = v_now
                        WHERE j.slot = v_slot
                          AND j.ctid = ANY (v_ids)
                          AND j.reserved_at IS NULL
                        RETURNING j.*
                    )
                    SELECT * FROM reserved r ORDER BY r.priority DESC, r.available_at, r.id  -- in pick order, as above
                LOOP
                    -- An operator cancelled the job while its worker was gone (pgq.cancel).
                    IF v_job.cancel_requested_at IS NOT NULL THEN
                        PERFORM pgq._cancel(v_job, v_now, false);
                        RETURN NEXT pgq._reported(v_job, 'cancelled', 'cancelled by ' || v_job.cancel_requested_by);
                        CONTINUE;
                    END IF;
                    -- Its batch was cancelled (pgq.cancel_batch, or a failure without
                    -- allow_failures) after the job was left waiting: it ends before it runs (S74).
                    IF v_job.batch_id IS NOT NULL AND EXISTS (
                        SELECT FROM pgq.job_batches b WHERE b.id = v_job.batch_id AND b.cancelled_at IS NOT NULL
                    ) THEN
                        v_job.cancel_requested_by := format('the cancel of batch %s', v_job.batch_id);
                        PERFORM pgq._cancel(v_job, v_now, false);
                        RETURN NEXT pgq._reported(v_job, 'cancelled', 'cancelled by ' || v_job.cancel_requested_by);
                        CONTINUE;
                    END IF;
                    -- Pickup check S24: a debounced job whose token is no longer its key's
                    -- current one is deleted without running (first attempt and retries).
                    IF v_job.debounce_key IS NOT NULL AND NOT EXISTS (
                        SELECT FROM pgq.debounce_tokens d WHERE d.key = v_job.debounce_key AND d.token = v_job.debounce_token
                    ) THEN
                        PERFORM pgq._record(v_job, 'debounced', v_now, 'superseded by a newer dispatch of ' || v_job.debounce_key,
                                            p_started => false);
                        DELETE FROM pgq.jobs j WHERE j.uuid = v_job.uuid;
                        IF v_job.batch_id IS NOT NULL OR v_job.chain_id IS NOT NULL THEN  -- ended without running (S74)
                            PERFORM pgq._record_ends('cancelled', ARRAY[v_job.uuid], ARRAY[v_job.batch_id], ARRAY[v_job.chain_id],
                                                     ARRAY[v_job.chain_step], 'superseded by a newer dispatch of ' || v_job.debounce_key);
                        END IF;
                        -- No key in the event: keys come from payloads, and any role may LISTEN.
                        PERFORM pg_notify('pgq_events', json_build_object(
                            'event', 'job_debounced', 'uuid', v_job.uuid, 'job', v_job.job, 'queue', v_job.queue)::text);
                        RETURN NEXT pgq._reported(v_job, 'debounced', 'superseded by a newer dispatch of ' || v_job.debounce_key);
                        CONTINUE;
                    END IF;
                    -- Pickup check S12: already exhausted, fail before the handler runs (this
                    -- also releases an until-processing lock: S23, beyond Laravel).
                    v_tries := coalesce(v_job.tries, reserve.default_tries);
                    IF (v_job.retry_until IS NOT NULL AND v_now > v_job.retry_until)
                       OR (v_job.retry_until IS NULL AND v_tries > 0 AND v_job.attempts > v_tries) THEN
                        PERFORM pgq._record(v_job, 'exhausted', v_now, pgq._exhausted_message(v_job, v_now),
                                            p_final => true, p_started => false);
                        PERFORM pgq._bury(v_job, pgq._exhausted_message(v_job, v_now), v_now);
                        RETURN NEXT pgq._reported(v_job, 'exhausted', pgq._exhausted_message(v_job, v_now));
                        CONTINUE;
                    END IF;
                    -- Middleware, in order (S26-S29). A turn-away uses the attempt (S5), is
                    -- recorded (S19) and keeps an until-processing lock (S23).
                    IF v_job.middleware IS NOT NULL THEN
                        SELECT * INTO v_admit
                        FROM pgq._admit(ARRAY[v_job.job], ARRAY[v_job.payload], ARRAY[v_job.middleware], ARRAY[v_job.middleware_keys],
                                        ARRAY[v_job.uuid], ARRAY[v_job.lease_token], v_job.reserved_by, v_now);
                        IF v_admit.error IS NOT NULL THEN
                            PERFORM pgq._record(v_job, 'failed', v_now, v_admit.error, p_final => true, p_started => false);
                            PERFORM pgq._bury(v_job, v_admit.error, v_now);
                            RETURN NEXT pgq._reported(v_job, 'failed', v_admit.error);
                            CONTINUE;
                        END IF;
                        -- Its rate-limit window is busy (S82): waiting again, as it was.
                        IF v_admit.busy THEN
                            UPDATE pgq.jobs j
                            SET attempts = j.attempts - 1, reserved_at = NULL, reserved_until = NULL, reserved_by = NULL,
                                lease_token = NULL, started_at = NULL
                            WHERE j.uuid = v_job.uuid;
                            v_busy := true;
                            CONTINUE;
                        END IF;
                        IF v_admit.turned_by IS NOT NULL THEN
                            PERFORM pgq._turn_away(v_job, v_admit.turned_by, v_admit.note, v_admit.delay, v_admit.drop, v_now);
                            v_seen := v_seen || v_job.id;
                            RETURN NEXT pgq._reported(v_job, 'turned_away', v_admit.note, v_admit.turned_by);
                            CONTINUE;
                        END IF;
                        IF cardinality(v_admit.held) > 0 THEN
                            v_job.overlap_keys := v_admit.held;
                            UPDATE pgq.jobs j SET overlap_keys = v_admit.held WHERE j.uuid = v_job.uuid;
                        END IF;
                    END IF;
                    -- The handler will run: an until-processing lock goes now (S23,
                    -- owner-checked, so a retry's release leaves a newer copy's lock alone),
                    -- and the debounce burst is over.
                    IF v_job.unique_until = 'processing' THEN
                        PERFORM pgq._release_unique(v_job.unique_key, v_job.unique_token);
                    END IF;
                    IF v_job.debounce_key IS NOT NULL THEN
                        UPDATE pgq.debounce_tokens d SET burst_started_at = NULL
                        WHERE d.key = v_job.debounce_key AND d.token = v_job.debounce_token;
                    END IF;
                    v_left := v_left - 1;
                    v_run := pgq._reported(v_job, NULL, NULL);
                    IF v_job.middleware IS NOT NULL THEN
                        v_run.overlap_expire_after := v_admit.held_expire_after;  -- this job's admission, above
                    END IF;
                    RETURN NEXT v_run;
                END LOOP;
            END IF;
            -- A pass that left jobs waiting for a busy window ends this queue's turn: the
            -- next pass would walk past the same key's jobs again.
            EXIT WHEN v_busy OR (v_whole AND v_picked < v_want AND v_load.first_id IS NULL) OR v_left <= 0;
        END LOOP;

        -- The marks of this queue move up to its first waiting job of each priority,
        -- locked by another reserve or not: that reserve may roll back.
        IF v_qm -> 'p' IS NULL THEN
            -- The first time, by walking the queue.
            v_qm := jsonb_set(coalesce(v_qm, '{}'), '{p}', coalesce((
                SELECT jsonb_object_agg(f.priority, jsonb_build_array(f.available_at, f.id))
                FROM (SELECT DISTINCT ON (p.priority) p.priority, p.available_at, p.id
                      FROM pgq.jobs p
                      WHERE p.queue = v_queue AND p.reserved_at IS NULL
                      ORDER BY p.priority DESC, p.available_at, p.id) f), '{}'));
        ELSE
            -- A priority with no waiting job left is dropped: a new one comes back
            -- through pgq._marks_since.
            v_qm := jsonb_set(v_qm, '{p}', coalesce((
                SELECT jsonb_object_agg(m.key, jsonb_build_array(f.available_at, f.id))
                FROM jsonb_each(v_qm -> 'p') m
                CROSS JOIN LATERAL (
                    SELECT p.available_at, p.id
                    FROM pgq.jobs p
                    WHERE p.queue = v_queue
                      AND p.priority = m.key::int
                      AND p.reserved_at IS NULL
                      AND (p.available_at, p.id) >= ((m.value ->> 0)::timestamptz, (m.value ->> 1)::bigint)
                    ORDER BY p.available_at, p.id
                    LIMIT 1) f), '{}'));
        END IF;
        v_marks := jsonb_set(v_marks, ARRAY[v_queue], v_qm);
    END LOOP;
    PERFORM pgq._marks_keep(v_marks, v_snap);
END;
$$;

COMMENT ON FUNCTION pgq.reserve(text, text[], int, int, timestamptz, uuid) IS
    'Worker protocol: sweeps expired leases, reserves up to max jobs from the queues in order (SKIP LOCKED), applies the pickup checks (debounce, S12, middleware); returns runnable jobs with fresh lease tokens, and the others with pickup set.';

-- pgq.unreserve: gives back, not counted, every job still reserved by the reserve call
-- identified by call (pgq.reserve's call argument, a random uuid the worker chose), and
-- returns how many. A worker calls it when a reserve failed in a way that may have
-- committed (the connection or the server went away before the answer arrived): it
-- never learnt those jobs, so their handlers never ran (S35). Each is recorded as
-- interrupted. State change: reserved -> waiting.
CREATE OR REPLACE FUNCTION pgq.unreserve(call uuid, as_of timestamptz DEFAULT NULL) RETURNS int
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, however stale the cached plan (S78)
AS $$
DECLARE
    v_now   timestamptz := coalesce(unreserve.as_of, now());
    v_base  text := left(unreserve.call::text, 24);
    v_job   pgq.jobs;
    v_count int := 0;
BEGIN
    IF unreserve.call IS NULL THEN
        RAISE EXCEPTION 'pgq: unreserve needs the call uuid given to pgq.reserve' USING ERRCODE = '22023';
    END IF;
    FOR v_job IN
        SELECT * FROM pgq.jobs j
        WHERE j.reserved_until IS NOT NULL
          AND j.lease_token BETWEEN (v_base || '000000000000')::uuid AND (v_base || 'ffffffffffff')::uuid
        FOR UPDATE SKIP LOCKED
    LOOP
        PERFORM pgq._give_back(v_job, 'the answer of its reserve call was lost: the worker never ran it', v_now, false);
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END;
$$;

COMMENT ON FUNCTION pgq.unreserve(uuid, timestamptz) IS
    'Worker protocol: gives back, not counted, the jobs still reserved by a reserve call whose answer the worker lost (S35); returns how many.';

-- pgq.wake: the session stops napping: it releases the nap locks pgq.nap took (listed in
-- the session setting pgq.napping). Dispatches no longer notify for it.
CREATE OR REPLACE FUNCTION pgq.wake() RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    q text;
BEGIN
    FOREACH q IN ARRAY coalesce(nullif(current_setting('pgq.napping', true), ''), '{}')::text[] LOOP
        PERFORM pg_advisory_unlock_shared(pgq._lock_space('nap'), hashtext(q));
    END LOOP;
    PERFORM set_config('pgq.napping', '', false);
END;
$$;

COMMENT ON FUNCTION pgq.wake() IS
    'Worker protocol: the session stops napping (see pgq.nap); dispatches stop notifying for it.';

-- pgq.nap: a worker's session that found no job naps on queues: from now on every
-- dispatch to them sends a pgq_jobs NOTIFY on commit, until pgq.wake. Then it waits up
-- to wait for the dispatches already under way, which may have seen no napper, to end.
-- true: none is left, and the worker must reserve once more before it sleeps (their jobs
-- are visible now). false: one was still open after wait; the session naps anyway, and
-- the worker calls pgq.nap again later. Call it outside a transaction block, on the
-- worker's reserving session (the nap locks belong to the session); a second call
-- replaces the first. If the call fails, close the session: its nap locks may be left.
CREATE OR REPLACE FUNCTION pgq.nap(queues text[], wait interval DEFAULT '10 milliseconds') RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    q         text;
    v_ok      boolean := true;
    v_napping text[] := '{}';
    v_timeout text := current_setting('lock_timeout');
BEGIN
    IF queues IS NULL OR cardinality(queues) = 0 OR array_position(queues, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: nap needs at least one queue, got %', queues USING ERRCODE = '22023';
    END IF;
    IF wait IS NULL OR wait < interval '1 millisecond' THEN
        RAISE EXCEPTION 'pgq: nap wait must be at least 1 millisecond, got %', wait USING ERRCODE = '22023';
    END IF;
    PERFORM pgq.wake();
    PERFORM set_config('lock_timeout', ceil(extract(epoch FROM wait) * 1000)::bigint || 'ms', true);
    FOREACH q IN ARRAY queues LOOP
        BEGIN
            -- Waits only while a dispatch tests the lock, an instant.
            PERFORM pg_advisory_lock_shared(pgq._lock_space('nap'), hashtext(q));
            v_napping := array_append(v_napping, q);
        EXCEPTION WHEN lock_not_available THEN
            v_ok := false;
        END;
    END LOOP;
    -- Outside any block that can roll back: pgq.wake must find every lock taken.
    PERFORM set_config('pgq.napping', v_napping::text, false);
    IF v_ok THEN
        BEGIN
            FOREACH q IN ARRAY queues LOOP
                PERFORM pg_advisory_xact_lock(pgq._lock_space('dispatching'), hashtext(q));
            END LOOP;
        EXCEPTION WHEN lock_not_available THEN
            v_ok := false;
        END;
    END IF;
    PERFORM set_config('lock_timeout', v_timeout, true);
    RETURN v_ok;
END;
$$;

COMMENT ON FUNCTION pgq.nap(text[], interval) IS
    'Worker protocol: the session naps on queues (dispatches to them notify until pgq.wake) and waits up to wait for dispatches under way; true: reserve once more, then sleep.';
