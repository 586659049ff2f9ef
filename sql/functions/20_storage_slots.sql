-- Storage: the slots of pgq.jobs (S80): where new jobs go, and truncating what a held xmin
-- keeps; the generations of pgq.overlap_locks (S81).
--
-- pgq.jobs is partitioned into four slots (migration 00018). New jobs go to the current
-- slot. With a transaction, snapshot or replication slot holding the xmin horizon back,
-- vacuum removes no dead row version, and the current slot grows with every job run;
-- once it holds the worker's slot size, pgq.rotate sends new jobs to an empty slot, and
-- the old one drains: its jobs run and end where they are, and no new job comes in. A
-- draining slot with no job left holds only dead versions, and TRUNCATE gives them all
-- back at once, whatever the horizon. So the table stays within about four slot sizes
-- for as long as the hold lasts.
--
-- TRUNCATE is not MVCC-safe: a snapshot taken before it sees the slot empty after it.
-- A slot is truncated only when no row of it is visible to a new snapshot, so what an
-- older one loses is the rows of jobs that have ended since it was taken (a REPEATABLE
-- READ report counting jobs, say), never a job that is still waiting or running.

-- pgq._slot_written_since: whether a row of slot p_slot was written by a transaction
-- that p_snap did not see. Every row of pgq.jobs carries the transaction that inserted
-- it, or that last made it waiting or reserved it (txid: column default, trigger,
-- reserve, heartbeat, the move of pgq._move_waiting). A row visible now that p_snap
-- did not see has a version chain none of whose versions p_snap saw; its first version
-- was inserted, and each later one written, by a transaction that p_snap did not see
-- either, so its txid is one of those. Through jobs_txid_idx: a few index entries,
-- however many dead versions the slot holds.
CREATE OR REPLACE FUNCTION pgq._slot_written_since(p_slot smallint, p_snap pg_snapshot) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off
AS $$
    SELECT EXISTS (
        SELECT FROM pgq.jobs j
        WHERE j.slot = p_slot
          AND (j.txid >= pg_snapshot_xmax(p_snap)
               OR j.txid = ANY (ARRAY(SELECT pg_snapshot_xip(p_snap)))))
        OR EXISTS (
        SELECT FROM pgq.loads l
        WHERE l.slot = p_slot
          AND (l.txid >= pg_snapshot_xmax(p_snap)
               OR l.txid = ANY (ARRAY(SELECT pg_snapshot_xip(p_snap)))));
$$;

COMMENT ON FUNCTION pgq._slot_written_since(smallint, pg_snapshot) IS
    'Whether slot p_slot of pgq.jobs or pgq.loads holds a row written by a transaction the snapshot did not see (through jobs_txid_idx, loads_txid_idx).';

-- pgq._truncate_slot: truncates slot p_slot of pgq.jobs if it holds no job. p_snap is
-- the snapshot under which the caller found no row in it. Takes the slot's ACCESS
-- EXCLUSIVE lock within lock_timeout (pgq.rotate's 50 ms): every statement of a generic
-- plan on pgq.jobs locks all four slots, so the wait holds up the workers' calls for as
-- long as it lasts; under the lock no transaction can write the slot, and one that did
-- since p_snap shows in its txid (pgq._slot_written_since). The slot is truncated when
-- none did. Returns whether it was; false leaves no lock behind (the block's
-- subtransaction takes it with it). No dynamic SQL: the four partitions are named.
CREATE OR REPLACE FUNCTION pgq._truncate_slot(p_slot smallint, p_snap pg_snapshot) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    CASE p_slot
        WHEN 0 THEN LOCK TABLE pgq.jobs_0, pgq.loads_0 IN ACCESS EXCLUSIVE MODE;
        WHEN 1 THEN LOCK TABLE pgq.jobs_1, pgq.loads_1 IN ACCESS EXCLUSIVE MODE;
        WHEN 2 THEN LOCK TABLE pgq.jobs_2, pgq.loads_2 IN ACCESS EXCLUSIVE MODE;
        WHEN 3 THEN LOCK TABLE pgq.jobs_3, pgq.loads_3 IN ACCESS EXCLUSIVE MODE;
    END CASE;
    IF pgq._slot_written_since(p_slot, p_snap) THEN
        RAISE EXCEPTION 'pgq: slot % was written meanwhile', p_slot USING ERRCODE = 'PQ998';  -- caught below: it never leaves this function
    END IF;
    CASE p_slot
        WHEN 0 THEN TRUNCATE pgq.jobs_0, pgq.loads_0;
        WHEN 1 THEN TRUNCATE pgq.jobs_1, pgq.loads_1;
        WHEN 2 THEN TRUNCATE pgq.jobs_2, pgq.loads_2;
        WHEN 3 THEN TRUNCATE pgq.jobs_3, pgq.loads_3;
    END CASE;
    RETURN true;
EXCEPTION WHEN lock_not_available OR SQLSTATE 'PQ998' THEN
    RETURN false;
END;
$$;

COMMENT ON FUNCTION pgq._truncate_slot(smallint, pg_snapshot) IS
    'Truncates a slot of pgq.jobs and pgq.loads in which no row was visible to the snapshot, unless it cannot take the lock in time or the slot was written since; returns whether it did.';

-- pgq._move_waiting: moves up to p_max waiting jobs of slot p_from that no other
-- transaction holds (SKIP LOCKED: a reserve taking one now keeps it) to slot p_to, as
-- they were but for slot and txid: deleted and inserted again in this transaction,
-- never an UPDATE of slot (a concurrent FOR UPDATE of a row moved across partitions
-- fails with 40001 instead of skipping it). A reserve whose snapshot saw the old row
-- skips it (deleted), and finds the new one through its txid (S77). Returns how many.
CREATE OR REPLACE FUNCTION pgq._move_waiting(p_from smallint, p_to smallint, p_max int) RETURNS int
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_job pgq.jobs;
    v_load pgq.loads;
    v_moved int := 0;
BEGIN
    -- The chunks of bulk dispatches not reserved yet (S85) first, the same way.
    FOR v_load IN
        DELETE FROM pgq.loads l
        WHERE l.slot = p_from
          AND l.ctid = ANY (ARRAY(SELECT w.ctid FROM pgq.loads w WHERE w.slot = p_from FOR UPDATE SKIP LOCKED))
        RETURNING l.*
    LOOP
        v_load.slot := p_to;
        v_load.txid := pg_current_xact_id();
        INSERT INTO pgq.loads SELECT (v_load).*;
        v_moved := v_moved + v_load.n - v_load.next;
    END LOOP;
    FOR v_job IN
        DELETE FROM pgq.jobs j
        WHERE j.slot = p_from
          AND j.ctid = ANY (ARRAY(SELECT w.ctid FROM pgq.jobs w
                                  WHERE w.slot = p_from AND w.reserved_at IS NULL
                                  LIMIT p_max
                                  FOR UPDATE SKIP LOCKED))
        RETURNING j.*
    LOOP
        v_job.slot := p_to;
        v_job.txid := pg_current_xact_id();
        INSERT INTO pgq.jobs SELECT (v_job).*;
        v_moved := v_moved + 1;
    END LOOP;
    RETURN v_moved;
END;
$$;

COMMENT ON FUNCTION pgq._move_waiting(smallint, smallint, int) IS
    'Moves up to p_max waiting jobs no one holds from one slot of pgq.jobs to another (deleted and inserted again); returns how many.';

-- pgq.rotate: moves the slots of pgq.jobs on (S80); the worker calls it every second.
-- slot_bytes 0 leaves the slots where they are (a draining one is still truncated once
-- its jobs have ended) and does the rest.
-- One worker at a time does the work (the others return at once). In one call:
--   0. the generations of pgq.overlap_locks move on once the current one holds
--      slot_bytes / 64 of rows (S81, pgq._rotate_overlap_gens), and the places of
--      the named concurrency limits come back to the limits once no lease holds one
--      above (S99, pgq._shrink_places); neither among the lines returned;
--   1. the oldest draining slot in which no job is left is truncated, and is empty;
--   2. when the current slot holds slot_bytes or more (table, indexes and TOAST), an
--      empty slot becomes current, and the current one drains;
--   3. otherwise, when no slot is empty and the current one is full, the waiting jobs
--      of the oldest draining slot move to the current one, if it holds at most
--      pgq._slot_move_max() jobs: they are jobs that wait long (a delay, a backoff, a
--      paused queue), which would keep its dead rows for as long. A running job keeps
--      its slot until it ends. A slot holding more is a backlog the workers are
--      taking: it drains by itself;
--   4. the parked turns of fair queues' keys with no live job left end (S125,
--      pgq._fair_prune), not among the lines returned.
-- A draining slot that still holds a job, or whose lock was not free within 50 ms, is
-- looked at again 1, 2, 4, 8, then every 10 seconds later (pgq.job_slots.next_try).
-- A truncation holds its lock until the call commits; only the hand-over (two updates
-- of pgq.job_slots) comes after it. as_of stands in for now() (tests). Returns what it
-- did, a line each, for the worker's log; empty when nothing.
CREATE OR REPLACE FUNCTION pgq.rotate(slot_bytes bigint DEFAULT 67108864, as_of timestamptz DEFAULT NULL) RETURNS text[]
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '50ms'
AS $$
DECLARE
    v_now   timestamptz := coalesce(rotate.as_of, now());
    v_done  text[] := '{}';
    v_cur   pgq.job_slots;
    v_next  pgq.job_slots;
    v_slot  pgq.job_slots;
    v_bytes bigint;
    v_snap  pg_snapshot;
    v_moved int;
BEGIN
    IF rotate.slot_bytes IS NULL OR (rotate.slot_bytes <> 0 AND rotate.slot_bytes < 65536) THEN
        RAISE EXCEPTION 'pgq: rotate slot_bytes must be 0 or at least 65536, got %', rotate.slot_bytes USING ERRCODE = '22023';
    END IF;
    IF NOT pg_try_advisory_xact_lock(pgq._lock_id('rotate')) THEN
        RETURN v_done;
    END IF;
    -- Said nowhere: see pgq.overlap_gens. With slots left where they are, at the default's share.
    PERFORM pgq._rotate_overlap_gens(coalesce(nullif(rotate.slot_bytes, 0), 67108864) / 64, v_now);
    PERFORM pgq._shrink_places();

    <<steps>>
    BEGIN
    -- 1. The oldest draining slot in which no job is left is truncated.
    FOR v_slot IN
        SELECT * FROM pgq.job_slots s
        WHERE s.state = 'draining' AND (s.next_try IS NULL OR s.next_try <= v_now)
        ORDER BY s.since, s.slot
    LOOP
        v_snap := pg_current_snapshot();
        IF NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.slot = v_slot.slot)
           AND NOT EXISTS (SELECT FROM pgq.loads l WHERE l.slot = v_slot.slot) THEN
            v_bytes := pg_total_relation_size(v_slot.partition) + pg_total_relation_size(v_slot.loads);
            IF pgq._truncate_slot(v_slot.slot, v_snap) THEN
                UPDATE pgq.job_slots s SET state = 'empty', since = v_now, tries = 0, next_try = NULL WHERE s.slot = v_slot.slot;
                v_done := v_done || format('slot %s truncated: its jobs had ended; %s given back', v_slot.slot, pg_size_pretty(v_bytes));
                EXIT;
            END IF;
            -- Said once, at the sixth try (about half a minute): while it lasts, the slots
            -- are not bounded.
            IF v_slot.tries = 5 THEN
                v_done := v_done || format('slot %s has no job left but could not be truncated for %s: a transaction holds a lock on it '
                                           '(one that read pgq.jobs and stays open; see pg_locks for relation %s)',
                                           v_slot.slot, date_trunc('second', v_now - v_slot.since), v_slot.partition);
            END IF;
        END IF;
        -- A job is left in it, or its lock was not free in time (a long transaction that
        -- read pgq.jobs): not before 1, 2, 4, 8, then 10 seconds. Each look reads the slot
        -- whole, and each wait for the lock holds up the workers' calls.
        UPDATE pgq.job_slots s SET tries = s.tries + 1, next_try = v_now + make_interval(secs => least(2 ^ s.tries, 10))
        WHERE s.slot = v_slot.slot;
    END LOOP;

    -- 2. A full current slot hands over to an empty one; with slot_bytes 0, none does.
    EXIT steps WHEN rotate.slot_bytes = 0;
    SELECT * INTO v_cur FROM pgq.job_slots s WHERE s.state = 'current';
    v_bytes := pg_total_relation_size(v_cur.partition) + pg_total_relation_size(v_cur.loads);
    IF v_bytes < rotate.slot_bytes THEN
        EXIT steps;
    END IF;
    SELECT * INTO v_next FROM pgq.job_slots s WHERE s.state = 'empty' ORDER BY s.since, s.slot LIMIT 1;
    IF FOUND THEN
        UPDATE pgq.job_slots s SET state = 'draining', since = v_now, tries = 0, next_try = NULL WHERE s.slot = v_cur.slot;
        UPDATE pgq.job_slots s SET state = 'current', since = v_now WHERE s.slot = v_next.slot;
        v_done := v_done || format('slot %s holds %s: new jobs go to slot %s, and slot %s drains',
                                   v_cur.slot, pg_size_pretty(v_bytes), v_next.slot, v_cur.slot);
        EXIT steps;
    END IF;

    -- 3. No slot is empty: the few jobs waiting long in the oldest draining slot move on,
    -- and the next call truncates it (unless a job still runs there). Not in this call:
    -- the truncation would wait for its lock while holding the moved rows, for which an
    -- operation holding a lock on the slot may be waiting.
    IF cardinality(v_done) = 0 THEN
        SELECT * INTO v_slot FROM pgq.job_slots s WHERE s.state = 'draining' ORDER BY s.since, s.slot LIMIT 1;
        IF FOUND AND (SELECT count(*) FROM (SELECT FROM pgq.jobs j WHERE j.slot = v_slot.slot
                                            LIMIT pgq._slot_move_max() + 1) x)
                     + (SELECT coalesce(sum(l.n - l.next), 0) FROM pgq.loads l WHERE l.slot = v_slot.slot)
                     <= pgq._slot_move_max() THEN
            v_moved := pgq._move_waiting(v_slot.slot, v_cur.slot, pgq._slot_move_max());
            UPDATE pgq.job_slots s SET tries = 0, next_try = NULL WHERE s.slot = v_slot.slot;
            IF v_moved > 0 THEN
                v_done := v_done || format('no slot is empty: %s waiting jobs moved from slot %s to slot %s',
                                           v_moved, v_slot.slot, v_cur.slot);
            END IF;
        END IF;
    END IF;
    END steps;
    -- Last: the 'fair' locks it takes hold up the stores of their keys until this commits.
    PERFORM pgq._fair_prune();
    RETURN v_done;
END;
$$;

COMMENT ON FUNCTION pgq.rotate(bigint, timestamptz) IS
    'Worker protocol: moves the slots of pgq.jobs on: a new current slot once the current one holds slot_bytes (0: never), a draining slot truncated once no job is left in it, the few waiting jobs of a slot moved when no slot is empty (S80); and the generations of pgq.overlap_locks (S81), the places of named concurrency limits (S99), the turns of fair queues'' keys with no live job (S125). Returns what it did.';

-- pgq._slot_move_max: at most this many jobs are moved out of a draining slot at once,
-- and only out of a slot holding no more.
CREATE OR REPLACE FUNCTION pgq._slot_move_max() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 10000 $$;

COMMENT ON FUNCTION pgq._slot_move_max() IS 'At most this many waiting jobs are moved out of a draining slot of pgq.jobs at once (pgq.rotate).';

-- The generations of pgq.overlap_locks (S81), the same idea for without_overlapping
-- leases: each lease is a row inserted by the reserve that takes it and deleted by its
-- attempt's outcome, so under a held horizon every version of a key's row stays, and
-- each new lease of the key steps over all of them. New leases go to the current
-- generation; once it holds p_bytes (pgq.rotate's slot size / 64: 1 MiB at the
-- worker's default), the oldest other generation in which no lease is live is
-- truncated and becomes current. A lease ends in the generation it was taken in, so an
-- old generation empties as the attempts of its leases end (a running job keeps its
-- lease where it is); one that holds the lease of a long job waits, and the third
-- generation takes its turn.

-- pgq._truncate_overlap_gen: truncates generation p_gen of pgq.overlap_locks if none of
-- its leases is live at p_now. Takes its ACCESS EXCLUSIVE lock within lock_timeout
-- (pgq.rotate's 50 ms); under it no transaction can write the generation, so what the
-- check reads is final. pgq._admit locks every generation before it reads which one is
-- current, so no reserve in flight can still be taking a lease in this one. Returns
-- true when it did, NULL when the lock was not free in time, false when a lease is
-- live; only true leaves the lock behind.
CREATE OR REPLACE FUNCTION pgq._truncate_overlap_gen(p_gen smallint, p_now timestamptz) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    CASE p_gen
        WHEN 0 THEN LOCK TABLE pgq.overlap_locks_0 IN ACCESS EXCLUSIVE MODE;
        WHEN 1 THEN LOCK TABLE pgq.overlap_locks_1 IN ACCESS EXCLUSIVE MODE;
        WHEN 2 THEN LOCK TABLE pgq.overlap_locks_2 IN ACCESS EXCLUSIVE MODE;
    END CASE;
    IF EXISTS (SELECT FROM pgq.overlap_locks o WHERE o.gen = p_gen AND o.expires_at > p_now) THEN
        RAISE EXCEPTION 'pgq: generation % holds a live lease', p_gen USING ERRCODE = 'PQ998';  -- caught below
    END IF;
    CASE p_gen
        WHEN 0 THEN TRUNCATE pgq.overlap_locks_0;
        WHEN 1 THEN TRUNCATE pgq.overlap_locks_1;
        WHEN 2 THEN TRUNCATE pgq.overlap_locks_2;
    END CASE;
    RETURN true;
EXCEPTION
    WHEN lock_not_available THEN
        RETURN NULL;
    WHEN SQLSTATE 'PQ998' THEN
        RETURN false;
END;
$$;

COMMENT ON FUNCTION pgq._truncate_overlap_gen(smallint, timestamptz) IS
    'Truncates a generation of pgq.overlap_locks in which no lease is live: true; NULL when its lock was not free in time, false when a lease is live (S81).';

-- pgq._rotate_overlap_gens: once the current generation of pgq.overlap_locks holds
-- p_bytes of rows (its table, without the index: an empty one has none), the oldest
-- other one with no live lease is truncated and becomes current (S81). Called by
-- pgq.rotate, under its lock. A generation whose lock was not free within 50 ms (a
-- transaction that read the leases and stays open: a psql session left idle after
-- SELECT * FROM pgq.locks) is asked again 1, 2, 4, 8, then every 10 seconds later, as a
-- slot of pgq.jobs is: while the lock is awaited, every statement on the leases waits
-- behind it. Returns the generation made current, or NULL. Not logged: under load it
-- turns every few seconds.
CREATE OR REPLACE FUNCTION pgq._rotate_overlap_gens(p_bytes bigint, p_now timestamptz) RETURNS smallint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_cur   pgq.overlap_gens;
    v_old   pgq.overlap_gens;
    v_done  boolean;
BEGIN
    SELECT * INTO v_cur FROM pgq.overlap_gens g WHERE g.state = 'current';
    IF pg_relation_size(v_cur.partition) < greatest(p_bytes, 1) THEN
        RETURN NULL;
    END IF;
    FOR v_old IN
        SELECT * FROM pgq.overlap_gens g
        WHERE g.state = 'old' AND (g.next_try IS NULL OR g.next_try <= p_now)
        ORDER BY g.since, g.gen
    LOOP
        -- Looked at before the lock is asked for: a long job's lease keeps its
        -- generation for as long as the job runs.
        CONTINUE WHEN EXISTS (SELECT FROM pgq.overlap_locks o WHERE o.gen = v_old.gen AND o.expires_at > p_now);
        v_done := pgq._truncate_overlap_gen(v_old.gen, p_now);
        IF v_done THEN
            UPDATE pgq.overlap_gens g SET state = 'old', since = p_now WHERE g.gen = v_cur.gen;
            UPDATE pgq.overlap_gens g SET state = 'current', since = p_now, tries = 0, next_try = NULL WHERE g.gen = v_old.gen;
            RETURN v_old.gen;
        ELSIF v_done IS NULL THEN
            UPDATE pgq.overlap_gens g SET tries = g.tries + 1, next_try = p_now + make_interval(secs => least(2 ^ g.tries, 10))
            WHERE g.gen = v_old.gen;
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION pgq._rotate_overlap_gens(bigint, timestamptz) IS
    'Moves the generations of pgq.overlap_locks on: once the current one holds p_bytes of rows, an old one with no live lease is truncated and made current (S81). Returns it, or NULL.';

CREATE OR REPLACE VIEW pgq.job_storage AS
SELECT s.slot, s.state, s.since, s.next_try, s.partition,
       pg_total_relation_size(s.partition) + pg_total_relation_size(s.loads) AS bytes,
       pg_stat_get_live_tuples(s.partition) AS live_rows,
       pg_stat_get_dead_tuples(s.partition) AS dead_rows
FROM pgq.job_slots s
ORDER BY s.slot;

COMMENT ON VIEW pgq.job_storage IS 'The slots of pgq.jobs: state, when a draining one is looked at again, size with indexes and with the slot''s part of pgq.loads (bytes), and the statistics'' live and dead row counts of pgq.jobs.';

-- pgq._shrink_places: brings the places of each named concurrency limit (S99) down to
-- the highest place a lease of its keys names, never below the limit: once the handlers
-- that started under a higher limit have ended, reserves look at the key's places
-- 1..limit only, and no longer count its handlers one reserve at a time. A lease that
-- has run out still counts while its job holds it: a late heartbeat may renew it, and
-- a SQL handler may still run under it. A limit whose row another transaction has locked
-- (pgq.define_concurrency changing it) is left for a later call. The leases are read
-- in a statement after the row's lock, so they include every lease a reserve took
-- under a higher limit: lowering a limit waits for the reserves that read it to
-- commit, and the places later reserves take are in 1..limit. Called by pgq.rotate,
-- under its lock.
CREATE OR REPLACE FUNCTION pgq._shrink_places() RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_name text;
BEGIN
    FOR v_name IN
        SELECT l.name FROM pgq.concurrency_limits l WHERE l.places > l."limit" ORDER BY l.name FOR UPDATE SKIP LOCKED
    LOOP
        -- A named limit's keys are '@' and its name, then ':' and the by values as a JSON
        -- array when it has by (S99); no name holds '['.
        UPDATE pgq.concurrency_limits l
        SET places = greatest(l."limit", (SELECT max(substring(o.key FROM '#([0-9]+)$')::int)
                                          FROM pgq.overlap_locks o
                                          WHERE (starts_with(o.key, '#@' || l.name || '#') OR starts_with(o.key, '#@' || l.name || ':['))
                                            AND (o.expires_at > now()
                                                 OR EXISTS (SELECT FROM pgq.jobs j  -- its job still holds it: it may be renewed
                                                            WHERE j.uuid = o.job_uuid AND j.lease_token = o.lease_token))))
        WHERE l.name = v_name;
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._shrink_places() IS
    'Brings the places of each named concurrency limit down to the highest place a lease of its keys names, never below the limit (S99).';
