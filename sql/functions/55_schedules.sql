-- Schedules (S60-S66): periodic jobs declared as rows, each tick dispatched exactly once
-- however many workers run.
--
-- Who does what. pgq.schedule() validates a definition here, in SQL, so that psql gets
-- 22023 with the reason at once: the cron expression's syntax (pgq._cron_problem, the
-- only cron code in SQL: it computes no times), the time zone, the job and its options.
-- Tick times are computed by the workers in Go, with github.com/robfig/cron/v3
-- (internal/schedule), in the schedule's time zone; a test runs a corpus of expressions
-- through both pgq._cron_problem and the Go parser and fails when they disagree.
--
-- A worker's round (worker/schedules.go), once a second or when a tick is due:
--   1. pgq.due_schedules(as_of): the schedules that are pending (next_run_at NULL: just
--      defined, changed or resumed) or due (next_run_at <= as_of);
--   2. for a pending one, pgq.plan_schedule(name, version, next_run_at) sets the first
--      tick after as_of, if the row is still pending under that version;
--   3. for a due one, the worker lists the due ticks from next_run_at to as_of (at most
--      pgq._schedule_max_catch_up(), the latest) and the next tick after as_of, and
--      pgq.fire_schedule(...) advances next_run_at if it still equals the tick the
--      worker started from (under the same version) and, in the same transaction,
--      dispatches the ticks that the catch_up policy keeps. Whoever loses the fence does
--      nothing, so each tick is dispatched once (S61).

-- pgq._schedule_grace: how late a tick may fire and still count as on time (S62). A tick
-- older than this when a worker first handles it was missed (the workers were down),
-- and catch_up decides whether it runs. It covers a worker's second between rounds, a
-- slow commit, a garbage collection pause, a short failover.
CREATE OR REPLACE FUNCTION pgq._schedule_grace() RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$ SELECT interval '30 seconds' $$;

COMMENT ON FUNCTION pgq._schedule_grace() IS 'How late a schedule''s tick may fire and still be on time, not missed: 30 s (S62).';

-- pgq._schedule_max_catch_up: the most ticks one firing dispatches (catch_up 'all'
-- after downtime, S62); the earlier missed ticks are skipped and counted. Go's
-- internal/schedule.MaxCatchUp is the same number (a test checks).
CREATE OR REPLACE FUNCTION pgq._schedule_max_catch_up() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$ SELECT 100 $$;

COMMENT ON FUNCTION pgq._schedule_max_catch_up() IS 'The most ticks one firing of a schedule dispatches; older missed ticks are skipped: 100 (S62).';

-- pgq._schedule_unique_for: how long the unique lock of a tick's job (schedule:tick,
-- S61) lasts at most. The fence on next_run_at is what makes a tick fire once; the lock
-- is a second guard while the job lives, and shows in pgq.locks.
CREATE OR REPLACE FUNCTION pgq._schedule_unique_for() RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$ SELECT interval '1 day' $$;

COMMENT ON FUNCTION pgq._schedule_unique_for() IS 'The unique_for of the job dispatched for a schedule''s tick: 1 day (S61).';

-- pgq._cron_number: a cron field's number as robfig/cron reads it (Go's strconv.Atoi:
-- an optional sign and decimal digits, within int64), or NULL when it is not one.
CREATE OR REPLACE FUNCTION pgq._cron_number(p_text text) RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT CASE WHEN p_text ~ '^[+-]?[0-9]+$'
                 AND p_text::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
                THEN p_text::numeric END;
$$;

COMMENT ON FUNCTION pgq._cron_number(text) IS 'A cron field''s number as robfig/cron reads it (optional sign, digits, within int64), or NULL.';

-- pgq._cron_every_problem: why the duration of "@every <duration>" is not valid, or
-- NULL (S60): Go's time.ParseDuration syntax with whole numbers, adding up to whole
-- seconds, at least 1 s.
CREATE OR REPLACE FUNCTION pgq._cron_every_problem(p_text text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_ns numeric;
BEGIN
    -- Go's time.ParseDuration reads a unit as every letter up to the next digit.
    IF p_text !~ '^([0-9]+[a-z]+)+$' THEN
        RETURN format('@every takes whole numbers with units, such as 30s or 1h30m, got %s', quote_literal(p_text));
    END IF;
    SELECT CASE WHEN bool_and(m[2] IN ('h', 'm', 's', 'ms', 'us', 'ns'))
                THEN sum(m[1]::numeric * CASE m[2] WHEN 'h' THEN 3600e9 WHEN 'm' THEN 60e9 WHEN 's' THEN 1e9
                                                   WHEN 'ms' THEN 1e6 WHEN 'us' THEN 1e3 ELSE 1 END) END
    INTO v_ns
    FROM regexp_matches(p_text, '([0-9]+)([a-z]+)', 'g') m;
    IF v_ns IS NULL THEN
        RETURN format('@every: unknown unit in %s: use h, m, s, ms, us or ns', quote_literal(p_text));
    END IF;
    IF v_ns > 9223372036854775807 THEN
        RETURN format('@every %s is longer than the longest duration (about 292 years)', p_text);
    END IF;
    IF v_ns < 1e9 OR v_ns % 1e9 <> 0 THEN
        RETURN format('@every needs whole seconds, at least 1s, got %s', p_text);
    END IF;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION pgq._cron_every_problem(text) IS
    'Why the duration of a cron @every is invalid (whole numbers with units, whole seconds, at least 1 s), or NULL (S60).';

-- pgq._cron_item: one item of a cron field's comma-separated list ("*", "5", "1-5",
-- "*/15", "MON-FRI/2"), field p_field counting from 1 for seconds: the values it
-- matches as bits (bit v for value v), whether robfig counts it as a star (a "*" or
-- "?" with no step over 1), or why it is not valid (then bits and star are NULL).
CREATE OR REPLACE FUNCTION pgq._cron_item(p_field int, p_item text, OUT problem text, OUT bits bigint, OUT star boolean)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c_field  constant text := (ARRAY['second', 'minute', 'hour', 'day of month', 'month', 'day of week'])[p_field];
    c_min    constant int := (ARRAY[0, 0, 0, 1, 1, 0])[p_field];
    c_max    constant int := (ARRAY[59, 59, 23, 31, 12, 6])[p_field];
    c_months constant text[] := ARRAY['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
    c_dows   constant text[] := ARRAY['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
    v_parts  text[] := string_to_array(p_item, '/');
    v_ends   text[];
    v_start  numeric;
    v_end    numeric;
    v_step   numeric;
BEGIN
    IF cardinality(v_parts) > 2 THEN
        problem := format('too many slashes in the %s field: %s', c_field, p_item);
        RETURN;
    END IF;
    v_ends := CASE WHEN v_parts[1] = '' THEN ARRAY[''] ELSE string_to_array(v_parts[1], '-') END;
    star := v_ends[1] IN ('*', '?');  -- what follows a * up to a / is ignored
    IF star THEN
        v_start := c_min;
        v_end := c_max;
    ELSE
        IF cardinality(v_ends) > 2 THEN
            problem := format('too many hyphens in the %s field: %s', c_field, p_item);
            RETURN;
        END IF;
        FOR j IN 1 .. cardinality(v_ends) LOOP
            v_step := coalesce(CASE p_field
                                   WHEN 5 THEN array_position(c_months, lower(v_ends[j]))
                                   WHEN 6 THEN array_position(c_dows, lower(v_ends[j])) - 1
                               END, pgq._cron_number(v_ends[j]));
            IF v_step IS NULL THEN
                problem := format('the %s field: %s is not a number%s', c_field, quote_literal(v_ends[j]),
                                  CASE p_field WHEN 5 THEN ' or a month name (JAN-DEC)' WHEN 6 THEN ' or a day name (SUN-SAT)' ELSE '' END);
                RETURN;
            ELSIF v_step < 0 THEN
                problem := format('the %s field: negative number %s', c_field, v_ends[j]);
                RETURN;
            END IF;
            v_start := CASE WHEN j = 1 THEN v_step ELSE v_start END;
            v_end := v_step;
        END LOOP;
    END IF;
    v_step := 1;
    IF cardinality(v_parts) = 2 THEN
        v_step := pgq._cron_number(v_parts[2]);
        IF v_step IS NULL THEN
            problem := format('the %s field: step %s is not a number', c_field, quote_literal(v_parts[2]));
        ELSIF v_step < 0 THEN
            problem := format('the %s field: negative step %s', c_field, v_parts[2]);
        END IF;
        IF cardinality(v_ends) = 1 THEN
            v_end := c_max;  -- "5/15": from 5 to the end of the field
        END IF;
        star := star AND v_step <= 1;
    END IF;
    problem := coalesce(problem,
        CASE WHEN v_start < c_min THEN format('the %s field: %s is below %s%s', c_field, v_start, c_min,
                                              CASE WHEN p_item <> v_start::text THEN ' in ' || p_item ELSE '' END)
             WHEN v_end > c_max THEN format('the %s field: %s is above %s%s', c_field, v_end, c_max,
                                            CASE WHEN p_item <> v_end::text THEN ' in ' || p_item ELSE '' END)
             WHEN v_start > v_end THEN format('the %s field: range %s starts after it ends', c_field, p_item)
             WHEN v_step = 0 THEN format('the %s field: step must be positive in %s', c_field, p_item)
        END);
    IF problem IS NOT NULL THEN
        star := NULL;
        RETURN;
    END IF;
    bits := 0;
    FOR v IN v_start::int .. v_end::int BY least(v_step, 64)::int LOOP
        bits := bits | (1::bigint << v);
    END LOOP;
END;
$$;

COMMENT ON FUNCTION pgq._cron_item(int, text) IS
    'One item of a cron field''s list: the values it matches as bits, whether it is a star as robfig/cron counts one, or why it is invalid (S60).';

-- pgq._cron_problem: why a cron expression is not valid, or NULL when it is (S60). The
-- syntax is robfig/cron's (github.com/robfig/cron/v3, with an optional seconds field and
-- descriptors), as the workers parse it, plus pgq's refusals (internal/schedule's doc
-- lists them): non-ASCII text, a TZ= prefix, @every with anything but whole numbers with
-- units adding up to whole seconds >= 1 s, a field that matches nothing, a day of month
-- that never falls in the months given. Its quirks are kept so that both agree: "?" is
-- "*" in any field, "*-5" is "*", empty list items ("1,,2") are dropped, a single value
-- with a step ("5/15") runs to the field's end. Computes no times.
CREATE OR REPLACE FUNCTION pgq._cron_problem(p_expr text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    c_field  constant text[] := ARRAY['second', 'minute', 'hour', 'day of month', 'month', 'day of week'];
    c_days   constant int[] := ARRAY[31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    v_text   text;
    v_fields text[];
    v_items  text[];
    v_item   text;
    v_bits   bigint[] := ARRAY[0, 0, 0, 0, 0, 0];
    v_star   boolean[] := ARRAY[false, false, false, false, false, false];
    v_parsed record;
BEGIN
    IF p_expr IS NULL OR p_expr = '' THEN
        RETURN 'the expression is empty';
    END IF;
    IF p_expr ~ '[^\x01-\x7f]' THEN
        RETURN 'only ASCII characters are allowed';
    END IF;
    IF starts_with(p_expr, 'TZ=') OR starts_with(p_expr, 'CRON_TZ=') THEN
        RETURN 'give the time zone as the schedule''s timezone, not in the expression';
    END IF;
    IF p_expr IN ('@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly') THEN
        RETURN NULL;
    ELSIF starts_with(p_expr, '@every ') THEN
        RETURN pgq._cron_every_problem(substr(p_expr, 8));
    ELSIF starts_with(p_expr, '@') THEN
        RETURN format('unknown macro %s: use @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>',
                      p_expr);
    END IF;

    -- Fields are separated by ASCII white space (Go's strings.Fields).
    v_text := btrim(translate(p_expr, chr(9) || chr(10) || chr(11) || chr(12) || chr(13), '     '), ' ');
    v_fields := CASE WHEN v_text = '' THEN '{}' ELSE regexp_split_to_array(v_text, ' +') END;
    IF cardinality(v_fields) NOT IN (5, 6) THEN
        RETURN format('expected 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first, found %s',
                      cardinality(v_fields));
    END IF;
    IF cardinality(v_fields) = 5 THEN
        v_fields := ARRAY['0'] || v_fields;
    END IF;
    FOR i IN 1 .. 6 LOOP
        v_items := ARRAY(SELECT x FROM unnest(string_to_array(v_fields[i], ',')) x WHERE x <> '');
        IF cardinality(v_items) = 0 THEN
            RETURN format('the %s field %s matches nothing', c_field[i], quote_literal(v_fields[i]));
        END IF;
        FOREACH v_item IN ARRAY v_items LOOP
            v_parsed := pgq._cron_item(i, v_item);
            IF v_parsed.problem IS NOT NULL THEN
                RETURN v_parsed.problem;
            END IF;
            v_bits[i] := v_bits[i] | v_parsed.bits;
            v_star[i] := v_star[i] OR v_parsed.star;
        END LOOP;
    END LOOP;

    -- robfig requires both day fields when either is a star, so a day of month with every
    -- day of week must fall in one of the months; otherwise either field will do.
    IF v_star[6] AND NOT v_star[4] AND NOT EXISTS (
        SELECT FROM generate_series(1, 12) m, generate_series(1, 31) d
        WHERE v_bits[5] & (1::bigint << m) <> 0 AND v_bits[4] & (1::bigint << d) <> 0 AND d <= c_days[m]
    ) THEN
        RETURN format('it never fires: day of month %s never falls in month %s', v_fields[4], v_fields[5]);
    END IF;
    RETURN NULL;
END;
$$;

COMMENT ON FUNCTION pgq._cron_problem(text) IS
    'Why a cron expression or macro is invalid, or NULL when it is valid: robfig/cron''s syntax with an optional seconds field, as the workers parse it (S60). Computes no times.';

-- pgq._timezone_problem: why a schedule's time zone is not usable, or NULL (S60). It
-- must be an IANA zone name as PostgreSQL lists it (pg_timezone_names), spelt exactly:
-- workers load it by that name with Go's time.LoadLocation, which is case-sensitive and
-- knows no abbreviations or offsets. localtime and posixrules name the server's own
-- files, not zones.
CREATE OR REPLACE FUNCTION pgq._timezone_problem(p_tz text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_name text;
BEGIN
    IF p_tz IS NULL OR p_tz = '' THEN
        RETURN 'the time zone is empty: give an IANA name such as UTC or Europe/Berlin';
    END IF;
    IF p_tz IN ('localtime', 'posixrules') THEN
        RETURN format('%s names a file of the server''s time zone database, not a zone: give an IANA name such as Europe/Berlin', p_tz);
    END IF;
    IF EXISTS (SELECT FROM pg_timezone_names z WHERE z.name = p_tz) THEN
        RETURN NULL;
    END IF;
    BEGIN
        PERFORM now() AT TIME ZONE p_tz;
    EXCEPTION WHEN invalid_parameter_value THEN
        RETURN format('unknown time zone %s (%s): give an IANA name such as Europe/Berlin', quote_literal(p_tz), SQLERRM);
    END;
    SELECT z.name INTO v_name FROM pg_timezone_names z WHERE lower(z.name) = lower(p_tz) ORDER BY z.name LIMIT 1;
    IF v_name IS NOT NULL THEN
        RETURN format('time zone names are case-sensitive: %s, not %s', quote_literal(v_name), quote_literal(p_tz));
    END IF;
    RETURN format('%s is an abbreviation or an offset, not a time zone: give an IANA name such as Europe/Berlin, whose daylight saving rules the schedule follows',
                  quote_literal(p_tz));
END;
$$;

COMMENT ON FUNCTION pgq._timezone_problem(text) IS
    'Why a schedule''s time zone is not an IANA zone name as pg_timezone_names spells it, or NULL (S60).';

-- pgq._schedule_tick_key: the unique key of a tick's job, scoped to the job name by
-- pgq.dispatch: schedule:tick, the tick in UTC to the second (2026-03-29T01:30:00Z).
CREATE OR REPLACE FUNCTION pgq._schedule_tick_key(p_schedule text, p_tick timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
    SELECT p_schedule || ':' || to_char(p_tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
$$;

COMMENT ON FUNCTION pgq._schedule_tick_key(text, timestamptz) IS 'The unique key of a schedule tick''s job: schedule:tick in UTC (S61).';

-- pgq._dispatch_scheduled: dispatches a schedule's job with its payload and options; a
-- tick's job is unique on schedule:tick (S61), a run now's is not unique. The options
-- are an admin's (pgq.schedule), so the ceilings of a producer's dispatch (S90) do not
-- apply, though a worker fires the tick. Raises what pgq.dispatch raises.
CREATE OR REPLACE FUNCTION pgq._dispatch_scheduled(p_entry pgq.schedule_entries, p_tick timestamptz) RETURNS uuid
LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
    SELECT u FROM pgq._dispatch(p_entry.job, ARRAY[p_entry.payload], queue => p_entry.queue, tries => p_entry.tries,
                                backoff => p_entry.backoff, max_exceptions => p_entry.max_exceptions,
                                timeout => p_entry.timeout, fail_on_timeout => p_entry.fail_on_timeout,
                                priority => p_entry.priority, retry_for => p_entry.retry_for, middleware => p_entry.middleware,
                                unique_key => CASE WHEN p_tick IS NOT NULL THEN pgq._schedule_tick_key(p_entry.name, p_tick) END,
                                unique_for => CASE WHEN p_tick IS NOT NULL THEN pgq._schedule_unique_for() END,
                                unique_until => CASE WHEN p_tick IS NOT NULL THEN 'processed' END,
                                p_ceilings => false) u;
$$;

COMMENT ON FUNCTION pgq._dispatch_scheduled(pgq.schedule_entries, timestamptz) IS
    'Dispatches a schedule''s job: unique on schedule:tick for a tick (S61), not unique for a run now (NULL tick).';

-- pgq.schedules: every schedule, its definition and its ticks. state is active, pending
-- (next_run_at not yet computed by a worker: just defined, changed or resumed) or
-- paused (next_run_at NULL too).
CREATE OR REPLACE VIEW pgq.schedules AS
SELECT e.name, e.cron, e.timezone, e.job, e.queue,
       (CASE WHEN (SELECT pgq._sees_payloads()) THEN e.payload END)::jsonb AS payload, e.catch_up, e.paused,
       CASE WHEN e.paused THEN 'paused' WHEN e.next_run_at IS NULL THEN 'pending' ELSE 'active' END AS state,
       e.next_run_at,
       e.last_tick, e.last_run_at, e.last_job_uuid, e.skipped_ticks, e.last_error, e.last_error_at,
       e.priority, e.tries, e.backoff, e.max_exceptions, e.timeout, e.fail_on_timeout, e.retry_for, e.middleware,
       e.version, e.created_at, e.updated_at
FROM pgq.schedule_entries e;

COMMENT ON VIEW pgq.schedules IS
    'Schedules (S60-S66): definition (payload NULL unless the reader may see payloads, S45), state (active, pending, paused), next_run_at, the last tick handled, the last run and its job, ticks skipped, the last dispatch error.';

-- pgq.schedule: creates or replaces a schedule (S60): job is dispatched with payload
-- and the options given at every tick of cron (5 fields, or 6 with seconds first, or a
-- macro: @yearly @annually @monthly @weekly @daily @midnight @hourly @every <duration>)
-- in timezone (an IANA name). catch_up says what happens to ticks missed while no
-- worker ran (S62): latest (one run for the most recent), none, all (at most
-- pgq._schedule_max_catch_up()). The whole definition is replaced. Changing cron or
-- timezone makes the schedule pending: a worker computes its next tick from now (S64);
-- pausing or unpausing it does too (S65); other changes apply from the next tick.
-- Raises 22023 naming what is wrong (expression, zone, catch_up, names, options, a
-- debounced job), writing nothing. Returns the schedule as a line of text (pgq.schedules
-- has its columns).
CREATE OR REPLACE FUNCTION pgq.schedule(
    name            text,
    cron            text,
    job             text,
    payload         jsonb DEFAULT '{}',
    timezone        text DEFAULT 'UTC',
    queue           text DEFAULT NULL,
    catch_up        text DEFAULT 'latest',
    paused          boolean DEFAULT false,
    priority        int DEFAULT 0,
    tries           int DEFAULT NULL,
    backoff         int[] DEFAULT NULL,
    max_exceptions  int DEFAULT NULL,
    timeout         int DEFAULT NULL,
    fail_on_timeout boolean DEFAULT NULL,
    retry_for       interval DEFAULT NULL,
    middleware      jsonb DEFAULT NULL
) RETURNS text
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_problem text;
    v_class   pgq.job_classes;
    v_row     pgq.schedules;
BEGIN
    PERFORM pgq._check_name('schedule', schedule.name);
    v_problem := pgq._cron_problem(schedule.cron);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: invalid cron expression % of schedule %: %', coalesce(quote_literal(schedule.cron), 'NULL'),
            schedule.name, v_problem
            USING ERRCODE = '22023',
                  HINT = 'Five fields (minute hour day-of-month month day-of-week), six with seconds first, or @hourly, @daily, @every 30s, ...';
    END IF;
    v_problem := pgq._timezone_problem(schedule.timezone);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: invalid time zone of schedule %: %', schedule.name, v_problem USING ERRCODE = '22023';
    END IF;
    IF schedule.catch_up IS NULL OR schedule.catch_up NOT IN ('latest', 'none', 'all') THEN
        RAISE EXCEPTION 'pgq: catch_up of schedule % must be latest, none or all, got %', schedule.name,
            coalesce(quote_literal(schedule.catch_up), 'NULL')
            USING ERRCODE = '22023';
    END IF;
    PERFORM pgq._check_name('job', schedule.job);
    IF schedule.queue IS NOT NULL THEN
        PERFORM pgq._check_name('queue', schedule.queue);
    END IF;
    IF schedule.payload IS NULL THEN
        RAISE EXCEPTION 'pgq: payload of schedule % must be JSON, got NULL', schedule.name USING ERRCODE = '22023';
    END IF;
    PERFORM pgq._check_settings(schedule.tries, schedule.backoff, schedule.max_exceptions, schedule.timeout, schedule.priority);
    IF schedule.retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: retry_for must be positive, got %', schedule.retry_for USING ERRCODE = '22023';
    END IF;
    PERFORM pgq._check_middleware(schedule.middleware);
    SELECT * INTO v_class FROM pgq.job_classes c WHERE c.name = schedule.job;
    IF v_class.debounce_for IS NOT NULL OR v_class.debounce_by IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: job % is debounced, and a schedule dispatches each tick once with a unique key: schedule a job that is not debounced',
            schedule.job
            USING ERRCODE = '22023';
    END IF;
    IF coalesce(schedule.middleware, v_class.middleware) IS NOT NULL THEN
        PERFORM pgq._check_middleware_keys(schedule.job, coalesce(schedule.middleware, v_class.middleware),
                                           ARRAY[schedule.payload]);
    END IF;

    INSERT INTO pgq.schedule_entries AS e
        (name, cron, timezone, job, payload, queue, catch_up, paused, priority, tries, backoff, max_exceptions,
         timeout, fail_on_timeout, retry_for, middleware)
    VALUES (schedule.name, schedule.cron, schedule.timezone, schedule.job, schedule.payload, schedule.queue,
            schedule.catch_up, coalesce(schedule.paused, false), schedule.priority, schedule.tries, schedule.backoff,
            schedule.max_exceptions, schedule.timeout, schedule.fail_on_timeout, schedule.retry_for, schedule.middleware)
    ON CONFLICT ON CONSTRAINT schedule_entries_pkey DO UPDATE
        SET cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, job = EXCLUDED.job, payload = EXCLUDED.payload,
            queue = EXCLUDED.queue, catch_up = EXCLUDED.catch_up, paused = EXCLUDED.paused,
            priority = EXCLUDED.priority, tries = EXCLUDED.tries, backoff = EXCLUDED.backoff,
            max_exceptions = EXCLUDED.max_exceptions, timeout = EXCLUDED.timeout,
            fail_on_timeout = EXCLUDED.fail_on_timeout, retry_for = EXCLUDED.retry_for,
            middleware = EXCLUDED.middleware, updated_at = now(),
            -- A new expression or zone, a pause or an unpause starts the ticks afresh from
            -- now (S64, S65), and fences off a worker's firing computed before.
            version = CASE WHEN (e.cron, e.timezone, e.paused) IS DISTINCT FROM (EXCLUDED.cron, EXCLUDED.timezone, EXCLUDED.paused)
                           THEN e.version + 1 ELSE e.version END,
            next_run_at = CASE WHEN (e.cron, e.timezone, e.paused) IS DISTINCT FROM (EXCLUDED.cron, EXCLUDED.timezone, EXCLUDED.paused)
                               THEN NULL ELSE e.next_run_at END;
    SELECT * INTO v_row FROM pgq.schedules s WHERE s.name = schedule.name;
    RETURN format('schedule %s: job %s at %s in %s%s, catch_up %s, %s', v_row.name, v_row.job, v_row.cron,
                  v_row.timezone, CASE WHEN v_row.queue IS NOT NULL THEN ', queue ' || v_row.queue ELSE '' END,
                  v_row.catch_up,
                  CASE v_row.state WHEN 'paused' THEN 'paused (pgq.resume_schedule starts it)'
                                   WHEN 'pending' THEN 'pending: a running worker computes its next tick within a second'
                                   ELSE format('next tick %s', v_row.next_run_at) END);
END;
$$;

COMMENT ON FUNCTION pgq.schedule(text, text, text, jsonb, text, text, text, boolean, int, int, int[], int, int, boolean, interval, jsonb) IS
    'Creates or replaces a schedule: job dispatched with payload and options at every tick of cron in timezone; catch_up latest, none or all (S60, S62, S64). Raises 22023 with the reason for a bad expression, zone or option. Returns the schedule as a line of text.';

-- pgq.unschedule: deletes a schedule; its jobs already dispatched stay. Returns false
-- when there was none.
CREATE OR REPLACE FUNCTION pgq.unschedule(name text) RETURNS boolean
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    WITH gone AS (DELETE FROM pgq.schedule_entries e WHERE e.name = unschedule.name RETURNING 1)
    SELECT EXISTS (SELECT FROM gone);
$$;

COMMENT ON FUNCTION pgq.unschedule(text) IS 'Deletes a schedule (jobs already dispatched stay); false when there was none.';

-- pgq.pause_schedule: the schedule stops firing; ticks that pass while it is paused
-- never fire, whatever its catch_up (S65). Returns whether it was running, NULL when
-- there is no such schedule. Recorded in pgq.actions.
CREATE OR REPLACE FUNCTION pgq.pause_schedule(name text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_was boolean;
BEGIN
    SELECT e.paused INTO v_was FROM pgq.schedule_entries e WHERE e.name = pause_schedule.name FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF NOT v_was THEN
        UPDATE pgq.schedule_entries e SET paused = true, next_run_at = NULL, version = e.version + 1, updated_at = now()
        WHERE e.name = pause_schedule.name;
    END IF;
    INSERT INTO pgq.actions (actor, action, schedule) VALUES (session_user, 'pause', pause_schedule.name);
    RETURN NOT v_was;
END;
$$;

COMMENT ON FUNCTION pgq.pause_schedule(text) IS
    'Stops a schedule: ticks that pass while paused never fire (S65). Returns whether it was running, NULL when there is no such schedule. Recorded in pgq.actions.';

-- pgq.resume_schedule: a paused schedule fires again from its first tick after now: it
-- becomes pending, and a worker computes that tick within a second (S65). Returns
-- whether it was paused, NULL when there is no such schedule. Recorded in pgq.actions.
CREATE OR REPLACE FUNCTION pgq.resume_schedule(name text) RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_was boolean;
BEGIN
    SELECT e.paused INTO v_was FROM pgq.schedule_entries e WHERE e.name = resume_schedule.name FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF v_was THEN
        UPDATE pgq.schedule_entries e
        SET paused = false, next_run_at = NULL, version = e.version + 1, updated_at = now()
        WHERE e.name = resume_schedule.name;
    END IF;
    INSERT INTO pgq.actions (actor, action, schedule) VALUES (session_user, 'resume', resume_schedule.name);
    RETURN v_was;
END;
$$;

COMMENT ON FUNCTION pgq.resume_schedule(text) IS
    'Lets a paused schedule fire again from its first tick after now (S65). Returns whether it was paused, NULL when there is no such schedule. Recorded in pgq.actions.';

-- pgq.run_schedule: dispatches the schedule's job now, once, with its payload and
-- options, paused or not; the regular ticks are not moved (S65). The job is not unique.
-- Recorded as the schedule's last run and in pgq.actions (run_now). Returns the job's
-- uuid; raises P0002 when there is no such schedule (S89), and what pgq.dispatch raises.
CREATE OR REPLACE FUNCTION pgq.run_schedule(name text) RETURNS uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_entry pgq.schedule_entries;
    v_uuid  uuid;
BEGIN
    SELECT * INTO v_entry FROM pgq.schedule_entries e WHERE e.name = run_schedule.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pgq: no schedule %', quote_literal(run_schedule.name)
            USING ERRCODE = 'P0002', HINT = 'SELECT name FROM pgq.schedules lists them.';
    END IF;
    v_uuid := pgq._dispatch_scheduled(v_entry, NULL);
    UPDATE pgq.schedule_entries e SET last_run_at = now(), last_job_uuid = v_uuid WHERE e.name = v_entry.name;
    INSERT INTO pgq.actions (actor, action, job_uuid, queue, schedule)
    SELECT session_user, 'run_now', v_uuid, j.queue, v_entry.name FROM pgq.jobs j WHERE j.uuid = v_uuid;
    RETURN v_uuid;
END;
$$;

COMMENT ON FUNCTION pgq.run_schedule(text) IS
    'Dispatches a schedule''s job now, once, without moving its ticks (S65); returns its uuid; P0002 when there is no such schedule (S89). Recorded in pgq.actions.';

-- pgq.due_schedules: worker protocol (S66). The schedules a worker has to handle as of
-- as_of (default now()): pending ones (next_run_at NULL: compute it, pgq.plan_schedule)
-- and due ones (next_run_at <= as_of: fire them, pgq.fire_schedule), plus those due
-- within the next horizon, so that the worker can wake up in time for them. Paused
-- schedules are left out.
CREATE OR REPLACE FUNCTION pgq.due_schedules(as_of timestamptz DEFAULT NULL, horizon interval DEFAULT interval '0')
RETURNS SETOF pgq.schedule_entries
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    SELECT e.* FROM pgq.schedule_entries e
    WHERE NOT e.paused
      AND (e.next_run_at IS NULL
           OR e.next_run_at <= coalesce(due_schedules.as_of, now()) + coalesce(due_schedules.horizon, interval '0'))
    ORDER BY e.next_run_at NULLS FIRST, e.name;
$$;

COMMENT ON FUNCTION pgq.due_schedules(timestamptz, interval) IS
    'Worker protocol (S66): the unpaused schedules pending (next_run_at NULL) or due by as_of + horizon.';

-- pgq.plan_schedule: worker protocol (S60, S64). Sets a pending schedule's first tick,
-- which the worker computed from as_of (and after last_tick), if the schedule is still
-- pending under that version: a definition changed meanwhile makes the call do
-- nothing. With next_run_at NULL and an error, records why the worker could not
-- compute it. Returns whether it set next_run_at. Raises 22023 for a tick not after
-- last_tick.
CREATE OR REPLACE FUNCTION pgq.plan_schedule(name text, version bigint, next_run_at timestamptz, error text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF plan_schedule.next_run_at IS NULL THEN
        UPDATE pgq.schedule_entries e SET last_error = plan_schedule.error, last_error_at = now()
        WHERE e.name = plan_schedule.name AND e.version = plan_schedule.version AND e.next_run_at IS NULL
          AND plan_schedule.error IS NOT NULL AND e.last_error IS DISTINCT FROM plan_schedule.error;
        RETURN false;
    END IF;
    IF EXISTS (SELECT FROM pgq.schedule_entries e WHERE e.name = plan_schedule.name
               AND e.next_run_at IS NULL AND plan_schedule.next_run_at <= e.last_tick) THEN
        RAISE EXCEPTION 'pgq: next_run_at % of schedule % is not after its last tick', plan_schedule.next_run_at, plan_schedule.name
            USING ERRCODE = '22023';
    END IF;
    UPDATE pgq.schedule_entries e SET next_run_at = plan_schedule.next_run_at, last_error = NULL, last_error_at = NULL
    WHERE e.name = plan_schedule.name AND e.version = plan_schedule.version AND e.next_run_at IS NULL AND NOT e.paused;
    RETURN FOUND;
END;
$$;

COMMENT ON FUNCTION pgq.plan_schedule(text, bigint, timestamptz, text) IS
    'Worker protocol (S60, S64): sets a pending schedule''s first tick if it is still pending under that version; with no tick, records the error. Returns whether it set it.';

-- pgq.fire_schedule: worker protocol (S61, S62). In one transaction: advances the
-- schedule's next_run_at from expected to next_run_at, if it still is expected under
-- version and the schedule is not paused (otherwise returns nothing: another worker
-- fired these ticks, or the definition changed), and dispatches one job per tick that
-- the catch_up policy keeps, unique on schedule:tick. ticks are the due ticks the worker
-- computed, ascending, from expected (itself a tick) to as_of (default now()): at most
-- pgq._schedule_max_catch_up(), the latest; skipped counts the earlier ones it left
-- out. A tick later than as_of - pgq._schedule_grace() is on time and always fires; of
-- the older ones (missed), catch_up 'all' fires them all, 'latest' the most recent
-- unless an on-time tick fires, 'none' none. Ticks at or before last_tick never fire
-- again. A dispatch refused with 22023 (the job class changed) is recorded as
-- last_error and the tick counts as handled. Returns the uuids of the jobs dispatched.
-- Raises 22023 for inconsistent ticks. State change: (nothing) -> waiting, per tick.
CREATE OR REPLACE FUNCTION pgq.fire_schedule(
    name        text,
    version     bigint,
    expected    timestamptz,
    ticks       timestamptz[],
    next_run_at timestamptz,
    skipped     bigint DEFAULT 0,
    as_of       timestamptz DEFAULT NULL
) RETURNS SETOF uuid
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_now      timestamptz := coalesce(fire_schedule.as_of, now());
    v_entry    pgq.schedule_entries;
    v_ticks    timestamptz[];
    v_fire     timestamptz[];
    v_tick     timestamptz;
    v_uuid     uuid;
    v_last     uuid;
    v_error    text;
BEGIN
    IF fire_schedule.ticks IS NULL OR array_position(fire_schedule.ticks, NULL) IS NOT NULL
       OR cardinality(fire_schedule.ticks) > pgq._schedule_max_catch_up() THEN
        RAISE EXCEPTION 'pgq: fire_schedule takes at most % ticks, none NULL, got %', pgq._schedule_max_catch_up(),
            coalesce(cardinality(fire_schedule.ticks)::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT FROM unnest(fire_schedule.ticks) WITH ORDINALITY t(tick, n)
               WHERE t.tick < fire_schedule.expected OR t.tick > v_now
                  OR (t.n > 1 AND t.tick <= fire_schedule.ticks[t.n - 1])) THEN
        RAISE EXCEPTION 'pgq: ticks of schedule % must ascend from % to %, got %', fire_schedule.name, fire_schedule.expected,
            v_now, fire_schedule.ticks
            USING ERRCODE = '22023';
    END IF;
    IF fire_schedule.next_run_at IS NULL OR fire_schedule.next_run_at <= v_now OR coalesce(fire_schedule.skipped, -1) < 0 THEN
        RAISE EXCEPTION 'pgq: next_run_at of schedule % must be after %, got %, and skipped >= 0, got %', fire_schedule.name,
            v_now, fire_schedule.next_run_at, fire_schedule.skipped
            USING ERRCODE = '22023';
    END IF;

    -- The fence: the losers of a race, and workers that computed under an older
    -- definition, update nothing.
    UPDATE pgq.schedule_entries e SET next_run_at = fire_schedule.next_run_at
    WHERE e.name = fire_schedule.name AND e.version = fire_schedule.version
      AND e.next_run_at = fire_schedule.expected AND NOT e.paused
    RETURNING e.* INTO v_entry;
    IF NOT FOUND THEN
        RETURN;
    END IF;

    v_ticks := ARRAY(SELECT t FROM unnest(fire_schedule.ticks) t WHERE v_entry.last_tick IS NULL OR t > v_entry.last_tick ORDER BY t);
    v_fire := ARRAY(SELECT t FROM unnest(v_ticks) t
                    WHERE v_entry.catch_up = 'all' OR t >= v_now - pgq._schedule_grace() ORDER BY t);
    IF v_entry.catch_up = 'latest' AND cardinality(v_fire) = 0 AND cardinality(v_ticks) > 0 THEN
        v_fire := ARRAY[v_ticks[cardinality(v_ticks)]];
    END IF;
    FOREACH v_tick IN ARRAY v_fire LOOP
        BEGIN
            v_uuid := pgq._dispatch_scheduled(v_entry, v_tick);
            IF v_uuid IS NOT NULL THEN
                v_last := v_uuid;
                RETURN NEXT v_uuid;
            END IF;
        EXCEPTION WHEN invalid_parameter_value THEN
            v_error := format('tick %s: %s', to_char(v_tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), SQLERRM);
        END;
    END LOOP;

    UPDATE pgq.schedule_entries e
    SET last_tick = CASE WHEN cardinality(v_ticks) > 0 THEN v_ticks[cardinality(v_ticks)] ELSE e.last_tick END,
        last_run_at = CASE WHEN v_last IS NOT NULL THEN v_now ELSE e.last_run_at END,
        last_job_uuid = coalesce(v_last, e.last_job_uuid),
        skipped_ticks = e.skipped_ticks + fire_schedule.skipped + cardinality(v_ticks) - cardinality(v_fire),
        last_error = CASE WHEN v_error IS NOT NULL THEN v_error WHEN v_last IS NOT NULL THEN NULL ELSE e.last_error END,
        last_error_at = CASE WHEN v_error IS NOT NULL THEN v_now WHEN v_last IS NOT NULL THEN NULL ELSE e.last_error_at END
    WHERE e.name = v_entry.name;
END;
$$;

COMMENT ON FUNCTION pgq.fire_schedule(text, bigint, timestamptz, timestamptz[], timestamptz, bigint, timestamptz) IS
    'Worker protocol (S61, S62): advances a schedule''s next_run_at if it still is the expected tick, and in the same transaction dispatches the due ticks its catch_up keeps, unique on schedule:tick. Returns the job uuids.';
