-- Helpers shared by the state machine: the named constants, names and settings checks
-- (S4), keys, uuids, the record of operators' actions.
--
-- The files of sql/functions/ are numbered by layer, and a function calls only functions
-- of its own layer or a lower one (sql/layout_test.go checks it):
--   1x helpers     constants, checks, keys, uuids
--   2x storage     how live jobs are kept: slots, loads, marks, lease tokens (20-29 only
--                  know them; the rest reads pgq.live_jobs and calls their operations)
--   3x dispatch    unique and debounce tokens, middleware declarations and keys, dispatch
--   4x reserve and outcomes
--                  attempt outcomes, admission, pgq.reserve, complete and fail
--   5x workflows   chains, batches, schedules: told of a job's end by the trigger on
--                  pgq.job_ends, never called by the layers below
--   6x operations and admin
--                  definitions, run now, retry, retention, cancel, pause
--   7x views       the views for psql and the dashboard's
-- They are applied in file-name order after the migrations, on every migrate, in one
-- transaction (pgq.Migrate). A LANGUAGE sql body is checked when it is created, so what
-- it calls must come in an earlier file or earlier in its file. Every object here is
-- CREATE OR REPLACE: a change of signature or return type needs a DROP FUNCTION in a
-- migration first.
--
-- A helper that a protocol function (reserve, complete, heartbeat, dispatch) calls with
-- arguments known only when it runs is plpgsql, even when its body is one SELECT. Every
-- pgq function pins its search_path, so PostgreSQL never inlines a LANGUAGE sql one, and
-- PostgreSQL 15 parses and plans such a body again in every transaction that calls it,
-- where plpgsql keeps its plans for the session. Constants, whose calls the planner
-- folds, stay LANGUAGE sql.

-- pgq._default_retry_after: the lease in seconds of a queue with no pgq.queues row, and
-- the default of pgq.define_queue (S14). The column default of pgq.queues.retry_after
-- says 90 too: DDL does not call pgq's functions.
CREATE OR REPLACE FUNCTION pgq._default_retry_after() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 90 $$;

COMMENT ON FUNCTION pgq._default_retry_after() IS 'The lease in seconds of a queue with no pgq.queues row: 90 (S14).';

-- pgq._turn_away_slack: seconds added to a turn-away's wait past the moment its limit
-- resets (a rate-limit window ends, a circuit closes), so the job does not come back a
-- hair early and get turned away again (S28, S29).
CREATE OR REPLACE FUNCTION pgq._turn_away_slack() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 3 $$;

COMMENT ON FUNCTION pgq._turn_away_slack() IS 'Seconds past a limit''s reset that a turned-away job waits: 3 (S28, S29).';

-- pgq._max_give_backs: how many attempts of one job infrastructure may interrupt and
-- have given back (S35): a SQL handler's transaction that never committed, or an
-- attempt a worker could not finish because its connection or the server went away.
-- Past it an interruption counts as an attempt, so a handler that brings down its own
-- connection (or the server) cannot run forever.
CREATE OR REPLACE FUNCTION pgq._max_give_backs() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 3 $$;

COMMENT ON FUNCTION pgq._max_give_backs() IS 'How many interrupted attempts of one job are given back rather than counted: 3 (S35).';

-- pgq._sees_payloads: whether the current role may read job payloads: it is a member of
-- the payload reader role named in pgq.roles (S45). The views call it once per query.
CREATE OR REPLACE FUNCTION pgq._sees_payloads() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT pg_has_role(current_user, r.name, 'MEMBER')
                     FROM pgq.roles r WHERE r.kind = 'payload_reader' AND to_regrole(quote_ident(r.name)) IS NOT NULL), false);
$$;

COMMENT ON FUNCTION pgq._sees_payloads() IS 'Whether the current role may read job payloads (a member of the payload reader role, S45).';

-- Advisory lock key spaces. pgq's wake-up locks use the two-key form (int, int), whose
-- first key names the space and second the queue (hashtext of its name); they never
-- collide with one-key (bigint) locks. Overlap locks (pgq._overlap_lock_id) and the
-- retention lock use the one-key form, hashed from a 'pgq.' prefix.
--
-- pgq._lock_space: the first key of a two-key lock space: 'nap' (held shared by a
-- napping session, S31), 'dispatching' (held shared by a dispatching transaction) or
-- 'fair' (the second key is one of 256 a fair queue's key hashes to, pgq._fair_lock:
-- held shared by a transaction that stores jobs of that key, taken alone by a reserve
-- that ends the key's turn, S115) or 'fair_by' (held shared by a transaction that
-- stores jobs in the queue, pgq._fair_by, taken alone by a pgq.define_queue that
-- changes its fair_by, S114).
CREATE OR REPLACE FUNCTION pgq._lock_space(p_space text) RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE p_space
        WHEN 'nap' THEN 776776852              -- hashtext('pgq.nap')
        WHEN 'dispatching' THEN -1140850413    -- hashtext('pgq.dispatching')
        WHEN 'fair' THEN 1297339926            -- hashtext('pgq.fair')
        WHEN 'fair_by' THEN 2130150743         -- hashtext('pgq.fair_by')
    END;
$$;

COMMENT ON FUNCTION pgq._lock_space(text) IS 'First key of pgq''s two-key advisory lock spaces: nap, dispatching, fair, fair_by.';

-- pgq._lock_ids: one-key advisory lock ids in pgq's space: 'pgq.' || name, hashed, for
-- each name, in one call. The one definition of the ids.
CREATE OR REPLACE FUNCTION pgq._lock_ids(p_names text[]) RETURNS bigint[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN ARRAY(SELECT hashtextextended('pgq.' || u.name, 0) FROM unnest(p_names) WITH ORDINALITY u(name, n) ORDER BY u.n);
END;
$$;

COMMENT ON FUNCTION pgq._lock_ids(text[]) IS 'One-key advisory lock ids in pgq''s space, hashed from ''pgq.'' || name, one per name.';

-- pgq._lock_id: a one-key advisory lock id in pgq's space: 'pgq.' || p_name, hashed.
CREATE OR REPLACE FUNCTION pgq._lock_id(p_name text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (pgq._lock_ids(ARRAY[p_name]))[1];
END;
$$;

COMMENT ON FUNCTION pgq._lock_id(text) IS 'A one-key advisory lock id in pgq''s space, hashed from ''pgq.'' || name.';

-- pgq._uuid7s: p_count version 7 uuids (RFC 9562): Unix milliseconds in the first 48
-- bits, then the version and variant, the rest random; one call per dispatch, not one
-- per job (every pgq function pins its search_path, and a call costs a microsecond).
-- PostgreSQL 15 has no uuidv7(). One gen_random_uuid() per call gives the random bits;
-- the uuids of one call share them and count up in their last 48 bits (RFC 9562's
-- "monotonic random" method), so they are unique within the call and ordered by it.
-- A random draw per uuid (gen_random_uuid()'s OpenSSL path makes a getpid() system
-- call per call) would cost a large share of a bulk dispatch. These uuids identify
-- jobs; they are not secrets. A collision would fail its insert on the primary key,
-- not merge two jobs.
--
-- Per uuid this is one to_hex, one substr, one concatenation and the uuid's parse. The
-- counter starts with bit 48 set, so to_hex always gives 13 digits and the last 12 are
-- the group.
CREATE OR REPLACE FUNCTION pgq._uuid7s(p_count int) RETURNS uuid[]
LANGUAGE plpgsql VOLATILE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
-- Planned once: a custom plan (a statement's first five runs, and kept while it looks
-- cheaper than the generic one: for a count of 1, always) plans the SELECT every call.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_ms    text := lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0');
    v_rand  text := replace(gen_random_uuid()::text, '-', '');
    -- tttttttt-tttt-7rrr-8rrr- then a 48-bit random start that counts up
    v_head  text := substr(v_ms, 1, 8) || '-' || substr(v_ms, 9, 4) || '-7' || substr(v_rand, 1, 3)
                    || '-8' || substr(v_rand, 4, 3) || '-';
    -- 47 random bits, so that the count never carries out of the last group: a chunk of
    -- a bulk dispatch finds its jobs' uuids by adding to its first one's.
    v_start bigint := ('x' || substr(v_rand, 20, 12))::bit(48)::bigint & 140737488355327 | 281474976710656;  -- & (2^47 - 1) | 2^48
BEGIN
    IF p_count = 1 THEN  -- a single dispatch: an expression costs less than the statement
        RETURN ARRAY[(v_head || substr(to_hex(v_start + 1), 2, 12))::uuid];
    END IF;
    RETURN ARRAY(SELECT (v_head || substr(to_hex(v_start + i), 2, 12))::uuid
                 FROM generate_series(1, p_count) i ORDER BY i);
END;
$$;

COMMENT ON FUNCTION pgq._uuid7s(int) IS 'Version 7 uuids, as many as asked: milliseconds first, then random bits (job uuids, time-ordered).';

-- pgq._check_name: queue and job names are 1-100 characters of letters, digits and
-- _ . : - / (S4). Raises 22023.
CREATE OR REPLACE FUNCTION pgq._check_name(p_kind text, p_name text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9_][A-Za-z0-9_.:/\\-]{0,99}$' THEN
        RAISE EXCEPTION 'pgq: invalid % name %: use 1-100 letters, digits, _ . : / - (starting with a letter, digit or _)',
            p_kind, coalesce(quote_literal(p_name), 'NULL')
            USING ERRCODE = '22023';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._check_name(text, text) IS 'Raises 22023 unless a queue, job or limit name is 1-100 letters, digits, _ . : / - (S4).';

-- pgq._max_timeout: the longest job timeout, in seconds, that a SQL handler's
-- transaction can run under: statement_timeout is an int of milliseconds, at most
-- 2,147,483,647 (S92). A longer one could only fail each attempt's setup.
CREATE OR REPLACE FUNCTION pgq._max_timeout() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 2147483 $$;

COMMENT ON FUNCTION pgq._max_timeout() IS 'The longest job timeout in seconds: 2147483, the longest statement_timeout PostgreSQL can set (S92).';

-- pgq._check_settings: the shared guard of define_job and dispatch (S4, S92). Raises
-- 22023 naming the bad value; returns nothing.
CREATE OR REPLACE FUNCTION pgq._check_settings(
    p_tries int, p_backoff int[], p_max_exceptions int, p_timeout int, p_priority int DEFAULT 0
) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_tries < 0 THEN
        RAISE EXCEPTION 'pgq: tries must be >= 0 (0 means unlimited), got %', p_tries
            USING ERRCODE = '22023';
    END IF;
    IF p_backoff IS NOT NULL THEN
        IF cardinality(p_backoff) = 0 THEN
            RAISE EXCEPTION 'pgq: backoff must have at least one entry, got %', p_backoff
                USING ERRCODE = '22023';
        END IF;
        IF array_position(p_backoff, NULL) IS NOT NULL OR EXISTS (SELECT 1 FROM unnest(p_backoff) b WHERE b < 0) THEN
            RAISE EXCEPTION 'pgq: backoff entries must be seconds >= 0, got %', p_backoff
                USING ERRCODE = '22023';
        END IF;
    END IF;
    IF p_max_exceptions < 1 THEN
        RAISE EXCEPTION 'pgq: max_exceptions must be >= 1, got %', p_max_exceptions
            USING ERRCODE = '22023';
    END IF;
    IF p_timeout < 0 THEN
        RAISE EXCEPTION 'pgq: timeout must be seconds >= 0, got %', p_timeout
            USING ERRCODE = '22023';
    END IF;
    IF p_timeout > pgq._max_timeout() THEN
        RAISE EXCEPTION 'pgq: timeout must be at most % seconds, the longest statement_timeout PostgreSQL can set, got %',
            pgq._max_timeout(), p_timeout
            USING ERRCODE = '22023';
    END IF;
    IF p_priority IS NULL THEN
        RAISE EXCEPTION 'pgq: priority must not be NULL' USING ERRCODE = '22023';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._check_settings(int, int[], int, int, int) IS 'Raises 22023 for bad tries, backoff, max_exceptions, timeout (negative, or longer than PostgreSQL can set) or priority (S4, S92).';

-- pgq._ceiling: the database's ceiling p_name on what a dispatch may choose (S91): the
-- setting pgq.<p_name> as ALTER DATABASE … SET made it, or the default when it is not
-- set: max_tries 25 (0: unlimited), max_retry_for 1 day, min_backoff 0 seconds,
-- max_timeout 3600 seconds. It is read from the database's own entry in
-- pg_db_role_setting, never from the session: any session may SET a pgq.* setting, and
-- any role may ALTER ROLE itself SET one, so current_setting would let a producer lift
-- its own ceiling.
CREATE OR REPLACE FUNCTION pgq._ceiling(p_name text) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_prefix text := 'pgq.' || p_name || '=';
    v_value  text;
BEGIN
    SELECT substr(e.entry, length(v_prefix) + 1) INTO v_value
    FROM pg_db_role_setting d, unnest(d.setconfig) e(entry)
    WHERE d.setdatabase = (SELECT b.oid FROM pg_database b WHERE b.datname = current_database())
      AND d.setrole = 0
      AND starts_with(e.entry, v_prefix);
    RETURN coalesce(v_value, CASE p_name WHEN 'max_tries' THEN '25' WHEN 'max_retry_for' THEN '1 day'
                                         WHEN 'min_backoff' THEN '0' WHEN 'max_timeout' THEN '3600' END);
END;
$$;

COMMENT ON FUNCTION pgq._ceiling(text) IS 'The database''s ceiling on a dispatch''s options (max_tries, max_retry_for, min_backoff, max_timeout): its ALTER DATABASE setting pgq.<name>, never the session''s, or the default (S91).';

-- pgq._ceiling_int: pgq._ceiling of a whole number (max_tries, min_backoff,
-- max_timeout). Raises 22023 naming the setting when it is not one.
CREATE OR REPLACE FUNCTION pgq._ceiling_int(p_name text) RETURNS int
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_text text := pgq._ceiling(p_name);
BEGIN
    IF v_text !~ '^\s*[0-9]{1,9}\s*$' THEN
        RAISE EXCEPTION 'pgq: the setting pgq.% of database % must be a whole number >= 0, got %',
            p_name, current_database(), quote_literal(v_text)
            USING ERRCODE = '22023', HINT = format('ALTER DATABASE %I SET pgq.%s = …', current_database(), p_name);
    END IF;
    RETURN v_text::int;
END;
$$;

COMMENT ON FUNCTION pgq._ceiling_int(text) IS 'pgq._ceiling as a whole number; 22023 naming the setting when it is not one (S91).';

-- pgq._ceiling_interval: pgq._ceiling of an interval (max_retry_for). Raises 22023
-- naming the setting when it is not a positive interval.
CREATE OR REPLACE FUNCTION pgq._ceiling_interval(p_name text) RETURNS interval
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_text  text := pgq._ceiling(p_name);
    v_value interval;
BEGIN
    BEGIN
        v_value := v_text::interval;
    EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow OR interval_field_overflow THEN
        v_value := NULL;
    END;
    IF v_value IS NULL OR v_value <= interval '0' THEN
        RAISE EXCEPTION 'pgq: the setting pgq.% of database % must be a positive interval, got %',
            p_name, current_database(), quote_literal(v_text)
            USING ERRCODE = '22023', HINT = format('ALTER DATABASE %I SET pgq.%s = ''1 day''', current_database(), p_name);
    END IF;
    RETURN v_value;
END;
$$;

COMMENT ON FUNCTION pgq._ceiling_interval(text) IS 'pgq._ceiling as a positive interval; 22023 naming the setting when it is not one (S91).';

-- pgq._check_unique_debounce: the guard of the unique and debounce settings (S25: they
-- exclude each other). Raises 22023.
CREATE OR REPLACE FUNCTION pgq._check_unique_debounce(
    p_unique boolean, p_debounce boolean, p_unique_for interval, p_unique_until text,
    p_debounce_for interval, p_debounce_max_wait interval
) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_unique AND p_debounce THEN
        RAISE EXCEPTION 'pgq: a job cannot be both unique and debounced: give unique_* or debounce_* settings, not both'
            USING ERRCODE = '22023';
    END IF;
    IF p_unique_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: unique_for must be positive, got %', p_unique_for USING ERRCODE = '22023';
    END IF;
    IF p_unique_until NOT IN ('processed', 'processing') THEN
        RAISE EXCEPTION 'pgq: unique_until must be processed or processing, got %', quote_literal(p_unique_until)
            USING ERRCODE = '22023';
    END IF;
    IF p_debounce_for < interval '0' THEN
        RAISE EXCEPTION 'pgq: debounce_for must not be negative, got %', p_debounce_for USING ERRCODE = '22023';
    END IF;
    IF p_debounce_max_wait <= interval '0' THEN
        RAISE EXCEPTION 'pgq: debounce_max_wait must be positive, got %', p_debounce_max_wait USING ERRCODE = '22023';
    END IF;
END;
$$;

COMMENT ON FUNCTION pgq._check_unique_debounce(boolean, boolean, interval, text, interval, interval) IS 'Raises 22023 for bad unique or debounce settings, or both at once (S25).';

-- pgq._max_key_bytes: the longest key (unique, debounce, overlap, circuit or rate-limit
-- key, job name prefix included) a dispatch may produce (S38). Keys are primary keys of
-- small tables; a key past a B-tree row's size would fail the insert of whichever job
-- reported it, and with it every other report of the same batch.
CREATE OR REPLACE FUNCTION pgq._max_key_bytes() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT 1000 $$;

COMMENT ON FUNCTION pgq._max_key_bytes() IS 'The longest key a dispatch may produce, in bytes: 1000 (S38).';

-- pgq._keys_or_null: keys scoped to the job name, one per element of the arrays (which
-- have one length): job:explicit-key, or job:[values of the payload fields named by the
-- jsonb array by], or the job name alone; NULL where the payload lacks a field of by.
-- Never raises: pgq.reserve computes keys with it. This is the one definition of the key
-- format, set-based so that a batch costs one call: a function with a pinned search_path
-- is never inlined, and a call per job costs more than the rest of a reserve.
CREATE OR REPLACE FUNCTION pgq._keys_or_null(p_jobs text[], p_explicits text[], p_bys jsonb[], p_payloads jsonb[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
-- Planned once, as pgq._uuid7s: with custom plans each call of a few keys plans its
-- SELECT again.
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN (SELECT coalesce(array_agg(
        CASE
            WHEN u.explicit IS NOT NULL THEN u.job || ':' || u.explicit
            WHEN u.by IS NULL THEN u.job
            -- one field, the common case, without the subqueries (the same text: a
            -- jsonb array prints as [v] or [v1, v2])
            WHEN jsonb_array_length(u.by) = 1
            THEN CASE WHEN u.payload ? (u.by ->> 0) THEN u.job || ':' || jsonb_build_array(u.payload -> (u.by ->> 0))::text END
            WHEN u.payload ?& ARRAY(SELECT jsonb_array_elements_text(u.by))
            THEN u.job || ':' || (SELECT jsonb_agg(u.payload -> f ORDER BY n)
                                  FROM jsonb_array_elements_text(u.by) WITH ORDINALITY AS b(f, n))::text
        END ORDER BY u.n), '{}')
    FROM unnest(p_jobs, p_explicits, p_bys, p_payloads) WITH ORDINALITY AS u(job, explicit, by, payload, n));
END;
$$;

COMMENT ON FUNCTION pgq._keys_or_null(text[], text[], jsonb[], jsonb[]) IS 'Keys scoped to the job name (explicit, or from payload fields), one per element, NULL where a field is missing; never raises.';

-- pgq._key_or_null: pgq._keys_or_null for one key (p_by as text[]).
CREATE OR REPLACE FUNCTION pgq._key_or_null(p_job text, p_explicit text, p_by text[], p_payload jsonb) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT (pgq._keys_or_null(ARRAY[p_job], ARRAY[p_explicit], ARRAY[to_jsonb(p_by)], ARRAY[p_payload]))[1];
$$;

COMMENT ON FUNCTION pgq._key_or_null(text, text, text[], jsonb) IS 'A key scoped to the job name (explicit, or from payload fields), NULL when a field is missing; never raises.';

-- pgq._key: pgq._key_or_null for dispatch: raises 22023 when the payload lacks a field
-- of p_by, or when the key is longer than pgq._max_key_bytes() (S38).
CREATE OR REPLACE FUNCTION pgq._key(p_job text, p_explicit text, p_by text[], p_payload jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_key text := pgq._key_or_null(p_job, p_explicit, p_by, p_payload);
BEGIN
    IF v_key IS NULL THEN
        RAISE EXCEPTION 'pgq: payload of % lacks field % needed for its key (by %)', p_job,
            (SELECT string_agg(quote_literal(f), ', ') FROM unnest(p_by) f WHERE NOT p_payload ? f), p_by
            USING ERRCODE = '22023';
    END IF;
    IF octet_length(v_key) > pgq._max_key_bytes() THEN
        RAISE EXCEPTION 'pgq: key of % is % bytes, longer than the % allowed: %...', p_job, octet_length(v_key),
            pgq._max_key_bytes(), left(v_key, 60)
            USING ERRCODE = '22023', HINT = 'Key jobs by an id, not by a large payload field.';
    END IF;
    RETURN v_key;
END;
$$;

COMMENT ON FUNCTION pgq._key(text, text, text[], jsonb) IS 'A key scoped to the job name for dispatch: raises 22023 when a field is missing or the key exceeds pgq._max_key_bytes() (S38).';

-- pgq._texts: a jsonb array of strings as text[] (NULL for NULL).
CREATE OR REPLACE FUNCTION pgq._texts(p jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN p IS NOT NULL THEN ARRAY(SELECT jsonb_array_elements_text(p)) END;
$$;

COMMENT ON FUNCTION pgq._texts(jsonb) IS 'A jsonb array of strings as text[].';

-- pgq._handler_proc: resolves a SQL handler name to its function taking one jsonb
-- argument, or NULL when there is none.
CREATE OR REPLACE FUNCTION pgq._handler_proc(p_handler text) RETURNS regprocedure
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT to_regprocedure(p_handler || '(jsonb)');
$$;

COMMENT ON FUNCTION pgq._handler_proc(text) IS 'Resolves a SQL handler name to its function taking one jsonb argument; NULL when there is none.';

-- pgq._record_action: records an operator's action with the role that took it (the
-- login role: a SECURITY DEFINER function's current_user would be pgq's owner).
CREATE OR REPLACE FUNCTION pgq._record_action(p_action text, p_job uuid, p_queue text, p_detail text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO pgq.actions (actor, action, job_uuid, queue, detail)
    VALUES (session_user, p_action, p_job, p_queue, p_detail);
END;
$$;

COMMENT ON FUNCTION pgq._record_action(text, uuid, text, text) IS 'Records an operator''s action in pgq.actions, with the login role that took it.';

-- pgq._proc_search_path: the search_path a function pins itself (ALTER FUNCTION … SET
-- search_path, or SET in its CREATE), NULL when it pins none (S86).
CREATE OR REPLACE FUNCTION pgq._proc_search_path(p_proc regprocedure) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT substr(c, length('search_path=') + 1)
    FROM pg_proc p, unnest(p.proconfig) c
    WHERE p.oid = p_proc AND c LIKE 'search\_path=%'
    LIMIT 1;
$$;

COMMENT ON FUNCTION pgq._proc_search_path(regprocedure) IS 'The search_path a function pins itself; NULL when it pins none (S86).';

-- pgq._handler_path_hint: what to do about a table or function a SQL handler did not
-- find (42P01, 42883; p_message is the error's message): the search_path it ran with,
-- and how to name the object with its schema or pin a search_path on the handler (S86).
CREATE OR REPLACE FUNCTION pgq._handler_path_hint(p_proc regprocedure, p_pinned text, p_message text) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN pgq._proc_search_path(p_proc) IS NOT NULL THEN
            format('%s runs with its own search_path = %s: add the schema there, or name %s with its schema',
                   p_proc, pgq._proc_search_path(p_proc), coalesce(o.name, 'it'))
        ELSE
            format('handlers run with search_path = %s: name %s with its schema (%s.%s), or pin a search_path on the handler: ALTER FUNCTION %s SET search_path = %s',
                   coalesce('pg_catalog, ' || p_pinned || ', pg_temp', 'pg_catalog, pg_temp'), coalesce(o.name, 'the table or function'),
                   quote_ident(n.nspname), coalesce(o.name, 'name'), p_proc, coalesce(p_pinned, quote_ident(n.nspname)))
        END
    FROM pg_proc p
    JOIN pg_namespace n ON n.oid = p.pronamespace
    LEFT JOIN LATERAL (SELECT (regexp_match(p_message, '^(?:relation|function) "?([^"(]+)'))[1] AS name) o ON true
    WHERE p.oid = p_proc;
$$;

COMMENT ON FUNCTION pgq._handler_path_hint(regprocedure, text, text) IS 'The HINT of a handler''s "does not exist" error (42P01, 42883): its search_path and how to fix the name (S86).';

-- pgq._edit_distance: the Levenshtein distance between two short names, for "did you
-- mean" suggestions. Names are at most 200 characters (pgq._check_name).
CREATE OR REPLACE FUNCTION pgq._edit_distance(a text, b text) RETURNS int
LANGUAGE plpgsql IMMUTABLE STRICT
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_prev int[];
    v_cur  int[];
    i int;
    j int;
BEGIN
    v_prev := ARRAY(SELECT generate_series(0, length(b)));
    FOR i IN 1 .. length(a) LOOP
        v_cur := ARRAY[i];
        FOR j IN 1 .. length(b) LOOP
            v_cur := v_cur || least(v_prev[j + 1] + 1, v_cur[j] + 1,
                                    v_prev[j] + CASE WHEN substr(a, i, 1) = substr(b, j, 1) THEN 0 ELSE 1 END);
        END LOOP;
        v_prev := v_cur;
    END LOOP;
    RETURN v_prev[length(b) + 1];
END;
$$;

COMMENT ON FUNCTION pgq._edit_distance(text, text) IS 'The Levenshtein distance between two short names, for "did you mean" suggestions.';

-- pgq._worker_ttl: how long a worker counts as live after it last wrote its row of
-- pgq.workers (S87). Workers write it every few seconds (worker/registry.go).
CREATE OR REPLACE FUNCTION pgq._worker_ttl() RETURNS interval
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT interval '1 minute' $$;

COMMENT ON FUNCTION pgq._worker_ttl() IS 'How long a worker counts as live after it last wrote its row of pgq.workers (S87).';

-- pgq._live_workers: the workers seen within pgq._worker_ttl().
CREATE OR REPLACE FUNCTION pgq._live_workers() RETURNS SETOF pgq.workers
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT * FROM pgq.workers w WHERE w.seen_at > now() - pgq._worker_ttl();
$$;

COMMENT ON FUNCTION pgq._live_workers() IS 'The workers of pgq.workers seen within pgq._worker_ttl() (S87).';
