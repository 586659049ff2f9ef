-- name: JobReserve :many
-- Only the columns the worker reads: every column scanned costs the worker time per job.
SELECT uuid, job, queue, payload, attempts, handler, timeout, lease_token, reserved_at, reserved_until,
       overlap_keys, overlap_expire_after, pickup, pickup_note, pickup_middleware, traceparent, tracestate
FROM pgq.reserve(
    worker => @worker::text,
    queues => @queues::text[],
    max => @max::int,
    default_tries => @default_tries::int,
    as_of => sqlc.narg('as_of')::timestamptz,
    call => @call::uuid
);

-- name: JobUnreserve :one
-- The answer of reserve call @call was lost: give back, not counted, what it reserved.
SELECT pgq.unreserve(call => @call::uuid)::int AS given_back;

-- name: JobGiveBackMany :many
-- Attempts that infrastructure interrupted: back to wait, not counted (up to 3 per job).
SELECT * FROM pgq.give_back(uuids => @uuids::uuid[], tokens => @tokens::uuid[], reason => @reason::text, started => @started::boolean);

-- name: JobFailSetup :many
-- pgq's own setup of the attempt was refused for a reason of the job's: it fails for good (S92).
SELECT * FROM pgq.fail_setup(uuid => @uuid::uuid, token => @token::uuid, reason => @reason::text);

-- name: JobCompleteMany :many
-- The cast makes the uuids values rather than pointers: pgq.complete returns no NULL.
SELECT c.uuid::uuid AS completed FROM pgq.complete(uuids => @uuids::uuid[], tokens => @tokens::uuid[]) AS c(uuid);

-- name: JobFailMany :many
SELECT * FROM pgq.fail_many(
    uuids => @uuids::uuid[],
    tokens => @tokens::uuid[],
    exceptions => @exceptions::text[],
    timed_out => @timed_out::boolean[],
    default_tries => @default_tries::int,
    default_backoff => @default_backoff::int[],
    details => @details::text[],
    hints => @hints::text[]
);

-- name: JobRelease :many
SELECT * FROM pgq.release(
    uuid => @uuid::uuid,
    token => @token::uuid,
    delay => @delay::int,
    refund => @refund::boolean,
    reason => sqlc.narg('reason')::text
);

-- name: JobHeartbeatMany :many
-- The lease tokens still holding their jobs; their overlap leases are renewed too.
SELECT h.token::uuid AS held FROM pgq.heartbeat(uuids => @uuids::uuid[], tokens => @tokens::uuid[]) AS h(token);

-- name: JobRunSQL :exec
SELECT FROM pgq.run_sql_job(uuid => @uuid::uuid, token => @token::uuid);

-- name: JobRunSQLGrouped :exec
-- A job of a group, in its own savepoint (S109).
SELECT FROM pgq.run_sql_job(uuid => @uuid::uuid, token => @token::uuid, grouped => true);

-- name: JobGiveBackGroup :many
SELECT * FROM pgq.give_back_group(uuids => @uuids::uuid[], tokens => @tokens::uuid[], reason => @reason::text);

-- name: SessionSetJobTimeout :exec
-- A grouped job's timeout, for its own statement: the next one (S110).
SELECT set_config('statement_timeout', @milliseconds::text, true);

-- name: SessionSetGroupLimits :exec
-- For a group's transaction: SessionSetHandlerLimits less the statement_timeout, which
-- each job sets for its own statement.
SELECT set_config('lock_timeout', '0', true),
       set_config('client_connection_check_interval', '1000', true),
       set_config('idle_in_transaction_session_timeout', @idle_milliseconds::text, true);

-- name: SessionSetHandlerLimits :exec
-- For a SQL handler's transaction: its timeout (lock waits too: no lock_timeout of its
-- own), a check that ends the handler within a second when the worker's connection is
-- gone (a killed worker's handler must not run on beside its retry), and an idle limit
-- that ends the transaction of a frozen worker, so it cannot hold the job's row (S37).
SELECT set_config('statement_timeout', @milliseconds::text, true),
       set_config('lock_timeout', '0', true),
       set_config('client_connection_check_interval', '1000', true),
       set_config('idle_in_transaction_session_timeout', @idle_milliseconds::text, true);

-- name: SessionSetProtocolLimits :exec
-- For every connection the worker uses: its own bounds on the protocol calls, whatever
-- the role's or database's settings say (a role-level statement_timeout of 1 ms would
-- stall them: S35, S37).
SELECT set_config('statement_timeout', @statement_milliseconds::text, false),
       set_config('lock_timeout', @lock_milliseconds::text, false),
       set_config('idle_in_transaction_session_timeout', @idle_milliseconds::text, false);

-- name: ListenJobs :exec
LISTEN pgq_jobs;

-- name: SessionNap :one
-- The worker found no job: dispatches to its queues notify from now on. ok: the
-- dispatches under way have ended, reserve once more; false: call again later.
SELECT pgq.nap(queues => @queues::text[], wait => @wait::interval) AS ok;

-- name: SessionWake :exec
SELECT pgq.wake();

-- name: JobsVacuumAllowed :one
-- Whether this role may vacuum pgq.jobs: it owns the table, directly or through a role,
-- or (PostgreSQL 17 and later) holds MAINTAIN on it, which migrate grants the worker role.
SELECT (pg_has_role(relowner, 'USAGE')
    OR CASE WHEN current_setting('server_version_num')::int >= 170000
            THEN has_table_privilege('pgq.jobs', 'MAINTAIN') ELSE false END)::boolean AS allowed
FROM pg_catalog.pg_class WHERE oid = 'pgq.jobs'::regclass;

-- name: JobsDeadTuples :one
-- The dead rows of pgq.jobs's and pgq.loads's slots, from the statistics (about a second old; right
-- after a VACUUM, the rows it could not remove yet), and how many row versions have died
-- in all (updates and deletes: a count that only grows; a truncation keeps it).
SELECT coalesce(sum(s.n_dead_tup), 0)::bigint AS dead, coalesce(sum(s.n_tup_upd + s.n_tup_del), 0)::bigint AS died
FROM pg_catalog.pg_stat_user_tables s
WHERE s.relid IN (SELECT i.inhrelid FROM pg_catalog.pg_inherits i WHERE i.inhparent IN ('pgq.jobs'::regclass, 'pgq.loads'::regclass));

-- name: JobsVacuum :exec
-- SKIP_LOCKED: a vacuum already running (another worker's, autovacuum's) is enough.
-- INDEX_CLEANUP ON: the dead entries at the head of jobs_reserve_idx are the point; AUTO
-- may skip the indexes when few heap pages have dead rows. TRUNCATE false: truncating the
-- table's end takes an ACCESS EXCLUSIVE lock that would stall every reserve. PARALLEL 0:
-- the indexes of a busy queue pass the parallel-vacuum size threshold, and the worker
-- vacuums about once a second under load; starting background workers for each vacuum
-- (a process each) cost more than the parallel index pass saved on a table this size.
-- pgq.fair_turns too: a fair queue's reserves update a key's turn for each job they
-- take of it, and walk the turns by index; its dead rows are not counted above, since
-- they come with the jobs', and would only bring the vacuums of pgq.jobs sooner.
VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE false, PARALLEL 0) pgq.jobs, pgq.loads, pgq.fair_turns;

-- name: JobsVacuumShrink :exec
-- JobsVacuum, and then the empty pages at the table's end are given back to the
-- system (S79): after a held horizon, the whole of what the table grew meanwhile.
-- VACUUM takes the ACCESS EXCLUSIVE lock this needs only when no one holds a lock on
-- the table, and lets go of it as soon as someone waits for one.
VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE true, PARALLEL 0) pgq.jobs, pgq.loads, pgq.fair_turns;

-- name: JobsSize :one
-- The bytes of pgq.jobs's and pgq.loads's slots, without their indexes.
SELECT coalesce(sum(pg_catalog.pg_relation_size(i.inhrelid)), 0)::bigint AS bytes
FROM pg_catalog.pg_inherits i WHERE i.inhparent IN ('pgq.jobs'::regclass, 'pgq.loads'::regclass);

-- name: JobsRotate :one
-- Moves the slots of pgq.jobs on (S80); what it did, a line each.
SELECT pgq.rotate(slot_bytes => @slot_bytes::bigint)::text[] AS done;

-- name: JobCancelRequests :many
-- The lease tokens of this worker's jobs an operator asked to cancel (pgq.cancel).
SELECT c.token::uuid AS token FROM pgq.cancel_requests(worker => @worker::text) AS c(token);

-- name: JobCancelledMany :many
SELECT * FROM pgq.cancelled(uuids => @uuids::uuid[], tokens => @tokens::uuid[]);

-- name: WorkerSeen :exec
-- The worker's row of pgq.workers: what it serves, and that it is alive (S87).
SELECT pgq.worker_seen(worker => @worker::text, queues => @queues::text[], handlers => @handlers::text[],
                       version => sqlc.narg('version')::text, starting => @starting::boolean);

-- name: WorkerStopped :exec
SELECT pgq.worker_stopped(worker => @worker::text);

-- name: GroupSavepoint :exec
-- A grouped SQL job's own savepoint: its effects and completion go back to it when it
-- raises, and the group's other jobs keep theirs (S109).
SAVEPOINT pgq_job;

-- name: GroupReleaseSavepoint :exec
RELEASE SAVEPOINT pgq_job;

-- name: GroupRollbackSavepoint :exec
ROLLBACK TO SAVEPOINT pgq_job;
