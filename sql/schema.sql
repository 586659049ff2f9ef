--
-- PostgreSQL database dump
--



SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: pgq; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA pgq;


--
-- Name: SCHEMA pgq; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON SCHEMA pgq IS 'pgq job queue: tables, views and the functions that are its state machine';


--
-- Name: admission; Type: TYPE; Schema: pgq; Owner: -
--

CREATE TYPE pgq.admission AS (
	ord integer,
	turned_by text,
	note text,
	delay integer,
	drop boolean,
	held text[],
	error text,
	held_expire_after integer,
	busy boolean
);


--
-- Name: TYPE admission; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TYPE pgq.admission IS 'What pgq._admit decided for one job of a reserve batch: admitted (with the overlap keys leased, and the largest of their expire_after when each has one), turned away, failed, or left waiting (busy: its rate-limit window is locked by another transaction).';


--
-- Name: check_finding; Type: TYPE; Schema: pgq; Owner: -
--

CREATE TYPE pgq.check_finding AS (
	object text,
	rule text,
	detail text,
	fix text,
	queue text
);


--
-- Name: TYPE check_finding; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TYPE pgq.check_finding IS 'A row of pgq.check: one problem (object, rule, detail, fix).';


SET default_tablespace = '';

--
-- Name: loads; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.loads (
    first_id bigint NOT NULL,
    first_uuid uuid NOT NULL,
    n integer NOT NULL,
    next integer DEFAULT 0 NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    priority integer NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean NOT NULL,
    retry_until timestamp with time zone,
    available_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    payloads jsonb[] NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    slot smallint NOT NULL,
    traceparent text,
    tracestate text,
    CONSTRAINT loads_check CHECK ((next < n)),
    CONSTRAINT loads_check1 CHECK ((cardinality(payloads) >= n)),
    CONSTRAINT loads_n_check CHECK (((n >= 1) AND (n <= 1024)))
)
PARTITION BY LIST (slot);
ALTER TABLE ONLY pgq.loads ALTER COLUMN payloads SET STORAGE EXTERNAL;


--
-- Name: TABLE loads; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.loads IS 'Jobs of bulk dispatches not yet reserved, a row per chunk of up to 1,024 (docs/design/storage.md): read pgq.live_jobs for the jobs.';


--
-- Name: COLUMN loads.first_id; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.loads.first_id IS 'The id of the chunk''s first job; job i (1-based) has id first_id + i - 1.';


--
-- Name: COLUMN loads.first_uuid; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.loads.first_uuid IS 'The uuid of the chunk''s first job; job i has it with i - 1 added to its last 48 bits.';


--
-- Name: COLUMN loads.next; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.loads.next IS 'How many of the chunk''s first jobs have become rows of pgq.jobs; the chunk holds jobs next + 1 .. n.';


--
-- Name: COLUMN loads.payloads; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.loads.payloads IS 'Job i''s payload is payloads[i]; elements past n are no longer the chunk''s.';


--
-- Name: COLUMN loads.txid; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.loads.txid IS 'The transaction that wrote the chunk: what the truncation of a slot looks for (pgq._slot_written_since).';


--
-- Name: COLUMN loads.slot; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.loads.slot IS 'The slot of pgq.job_slots the chunk lives in.';


--
-- Name: COLUMN loads.traceparent; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.loads.traceparent IS 'The W3C traceparent of the dispatch, shared by every job of the chunk (S105).';


--
-- Name: COLUMN loads.tracestate; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.loads.tracestate IS 'The W3C tracestate of the dispatch, shared by every job of the chunk (S105).';


--
-- Name: picked; Type: TYPE; Schema: pgq; Owner: -
--

CREATE TYPE pgq.picked AS (
	slot smallint,
	tids tid[],
	ids bigint[],
	chunk pgq.loads,
	last boolean,
	plain boolean[]
);


--
-- Name: TYPE picked; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TYPE pgq.picked IS 'What pgq._pick locked of a queue: rows of one slot (their ctids and ids, in queue order, and whether each is plain), or the chunk of a bulk dispatch whose jobs come next; last: no ready job beyond.';


--
-- Name: pickup; Type: TYPE; Schema: pgq; Owner: -
--

CREATE TYPE pgq.pickup AS ENUM (
    'turned_away',
    'exhausted',
    'debounced',
    'failed',
    'cancelled'
);


--
-- Name: TYPE pickup; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TYPE pgq.pickup IS 'What pgq.reserve did with a job it will not hand over: turned away by middleware, exhausted (S12), debounced (S24), or failed because its middleware could not be evaluated.';


--
-- Name: reservation; Type: TYPE; Schema: pgq; Owner: -
--

CREATE TYPE pgq.reservation AS (
	uuid uuid,
	job text,
	queue text,
	payload jsonb,
	priority integer,
	attempts integer,
	tries integer,
	handler text,
	timeout integer,
	lease_token uuid,
	reserved_at timestamp with time zone,
	reserved_until timestamp with time zone,
	overlap_keys text[],
	dispatched_at timestamp with time zone,
	pickup pgq.pickup,
	pickup_note text,
	pickup_middleware text,
	overlap_expire_after integer,
	traceparent text,
	tracestate text
);


--
-- Name: TYPE reservation; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TYPE pgq.reservation IS 'A row of pgq.reserve: a job to run (pickup NULL) with its lease and, when each overlap key it took has an expire_after, the largest (overlap_expire_after, seconds); or a job reserve handled at pickup (pickup says how, pickup_note why).';


--
-- Name: jobs; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.jobs (
    id bigint NOT NULL,
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    payload jsonb NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean DEFAULT false NOT NULL,
    retry_until timestamp with time zone,
    unique_key text,
    unique_token uuid,
    unique_until text,
    debounce_key text,
    debounce_token uuid,
    middleware jsonb,
    attempts integer DEFAULT 0 NOT NULL,
    exceptions integer DEFAULT 0 NOT NULL,
    lease_expiries integer DEFAULT 0 NOT NULL,
    last_exception text,
    last_exception_attempt integer,
    turn_aways jsonb DEFAULT '{}'::jsonb NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    wait_reason text DEFAULT 'dispatched'::text NOT NULL,
    reserved_at timestamp with time zone,
    reserved_until timestamp with time zone,
    reserved_by text,
    lease_token uuid,
    started_at timestamp with time zone,
    overlap_keys text[],
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    interruptions integer DEFAULT 0 NOT NULL,
    cancel_requested_at timestamp with time zone,
    cancel_requested_by text,
    batch_id uuid,
    chain_id uuid,
    chain_step integer,
    middleware_keys jsonb,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    slot smallint NOT NULL,
    waits_on text,
    traceparent text,
    tracestate text,
    fair_key text,
    CONSTRAINT jobs_wait_reason_check CHECK ((wait_reason = ANY (ARRAY['dispatched'::text, 'backoff'::text, 'released'::text, 'turned_away'::text, 'lease_expired'::text, 'run_now'::text, 'retried'::text, 'interrupted'::text])))
)
PARTITION BY LIST (slot);
ALTER TABLE ONLY pgq.jobs ALTER COLUMN fair_key SET (n_distinct=-0.01);


--
-- Name: TABLE jobs; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.jobs IS 'Live jobs: waiting (reserved_at IS NULL) or reserved by a worker under a lease. Partitioned by slot (pgq.job_slots).';


--
-- Name: COLUMN jobs.id; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.id IS 'Dispatch order: the FIFO tie-break of jobs_reserve_idx. Not indexed on its own; uuid is the key.';


--
-- Name: COLUMN jobs.uuid; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.uuid IS 'The job''s identity. pgq.dispatch_many gives each job a time-ordered (version 7) uuid, so new entries land at the right edge of the indexes keyed by it.';


--
-- Name: COLUMN jobs.unique_token; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.unique_token IS 'Owner token of this job''s unique lock: every release deletes the lock only if it still matches (S22).';


--
-- Name: COLUMN jobs.debounce_token; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.debounce_token IS 'This dispatch''s debounce token: the job runs only while it is the key''s current token (S24).';


--
-- Name: COLUMN jobs.turn_aways; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.turn_aways IS 'Turn-aways so far by middleware name, e.g. {"without_overlapping": 2}; the S12 failure text reports them.';


--
-- Name: COLUMN jobs.wait_reason; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.wait_reason IS 'Why a waiting job waits: dispatched (delay), backoff (after an exception), released (manual or shutdown), turned_away (middleware), lease_expired, run_now, retried (from failed_jobs), interrupted (given back after infrastructure interrupted it).';


--
-- Name: COLUMN jobs.lease_token; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.lease_token IS 'Fresh on every reservation, and names the job''s slot; complete, fail, release and heartbeat must present it (S15).';


--
-- Name: COLUMN jobs.overlap_keys; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.overlap_keys IS 'Overlap keys whose advisory locks the reserving worker''s session holds for this attempt.';


--
-- Name: COLUMN jobs.interruptions; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.interruptions IS 'Attempts of this job that infrastructure interrupted and that were given back, not counted (S35); at most 3.';


--
-- Name: COLUMN jobs.cancel_requested_at; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.cancel_requested_at IS 'Set by pgq.cancel on a running job: its worker cancels the handler, or the next pickup cancels the job.';


--
-- Name: COLUMN jobs.batch_id; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.batch_id IS 'The batch the job belongs to (pgq.dispatch_batch), or NULL.';


--
-- Name: COLUMN jobs.chain_id; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.chain_id IS 'The chain the job is a step of (pgq.dispatch_chain), or NULL; chain_step is its 1-based step. chain_step 0: the job is a callback (pgq.callbacks) of the batch or chain of this id.';


--
-- Name: COLUMN jobs.middleware_keys; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.middleware_keys IS 'The key of each middleware (a JSON array of strings, by position), computed at dispatch; NULL when not computed yet (reserve computes it).';


--
-- Name: COLUMN jobs.txid; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.txid IS 'The top-level transaction that last made the job waiting or set its lease: what reserve''s low-water marks (pgq._marks_since) and the truncation of a slot (pgq._slot_written_since) look for.';


--
-- Name: COLUMN jobs.slot; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.slot IS 'The partition the job lives in (pgq.job_slots): the current slot when it was dispatched, or when pgq.rotate moved it.';


--
-- Name: COLUMN jobs.waits_on; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.waits_on IS 'The concurrency_limited key this waiting job found full (S99): the end of a job holding that key makes it ready.';


--
-- Name: COLUMN jobs.traceparent; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.traceparent IS 'The W3C traceparent of the dispatch (S105), NULL when it had none.';


--
-- Name: COLUMN jobs.tracestate; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.tracestate IS 'The W3C tracestate of the dispatch (S105), NULL when it had none.';


--
-- Name: COLUMN jobs.fair_key; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.jobs.fair_key IS 'The job''s key in a fair queue (S114): its payload''s fair_by field as text, '''' when it has none; NULL in other queues.';


--
-- Name: reserve_batch; Type: TYPE; Schema: pgq; Owner: -
--

CREATE TYPE pgq.reserve_batch AS (
	slot smallint,
	tids tid[],
	tokens uuid[],
	held text[],
	expire integer[],
	admit pgq.jobs[],
	admit_ords integer[],
	reports pgq.reservation[],
	report_places integer[],
	turned bigint[],
	busy boolean
);


--
-- Name: TYPE reserve_batch; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TYPE pgq.reserve_batch IS 'Picked rows on their way through pgq.reserve''s stages: per row (in pick order) its ctid (NULL once it will not run), lease token, overlap keys and their expire_after; the jobs still to admit; the reports of jobs that will not run, with their places in the pick; the ids turned away; whether a rate-limit window was busy.';


--
-- Name: _admission(pgq.reserve_batch, timestamp with time zone, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._admission(p_batch pgq.reserve_batch, p_now timestamp with time zone, p_worker text) RETURNS pgq.reserve_batch
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    -- Local arrays: a plpgsql variable keeps an array expanded, so that reading or
    -- setting its n-th element does not walk the elements before it.
    v_admit  pgq.jobs[];
    v_places int[];
    v_tids   tid[];
    v_held   text[];
    v_expire int[];
    v_jobs   text[];                    -- the jobs' fields admission reads, one pass over them
    v_payloads jsonb[];
    v_mw     jsonb[];
    v_keys   jsonb[];
    v_uuids  uuid[];
    v_tokens uuid[];
    v_over   boolean[];                 -- per job: pgq._handing_over has work (S23, a debounce burst)
    v_adm    pgq.admission[];
    v_a      pgq.admission;
    v_job    pgq.jobs;
    v_cascade boolean := false;         -- a batch member failed for good: others may have ended with it
BEGIN
    IF cardinality(p_batch.admit) = 0 THEN
        RETURN p_batch;
    END IF;
    v_admit := p_batch.admit;
    v_places := p_batch.admit_ords;
    v_tids := p_batch.tids;
    v_held := p_batch.held;
    v_expire := p_batch.expire;
    SELECT array_agg(u.job), array_agg(u.payload), array_agg(u.middleware), array_agg(u.middleware_keys),
           array_agg(u.uuid), array_agg(u.lease_token),
           array_agg(u.unique_until = 'processing' OR u.debounce_key IS NOT NULL)
    INTO v_jobs, v_payloads, v_mw, v_keys, v_uuids, v_tokens, v_over
    FROM (SELECT * FROM unnest(v_admit) WITH ORDINALITY ORDER BY ordinality) u;  -- aggregates keep this order
    v_adm := ARRAY(SELECT a FROM pgq._admit(v_jobs, v_payloads, v_mw, v_keys, v_uuids, v_tokens, p_worker, p_now) a
                   ORDER BY a.ord);
    FOR i IN 1 .. cardinality(v_adm) LOOP
        v_a := v_adm[i];
        IF v_cascade AND NOT pgq._still_waiting(p_batch.slot, v_tids[v_places[i]]) THEN
            PERFORM pgq._release_overlap(ARRAY[v_uuids[i]], v_a.held);
            v_tids[v_places[i]] := NULL;
            CONTINUE;
        END IF;
        IF v_a.turned_by IS NULL AND v_a.error IS NULL AND v_a.busy IS NOT TRUE THEN  -- admitted
            IF v_over[i] THEN
                PERFORM pgq._handing_over(v_admit[i]);
            END IF;
            v_held[v_places[i]] := CASE WHEN cardinality(v_a.held) > 0 THEN v_a.held::text END;
            v_expire[v_places[i]] := v_a.held_expire_after;
            CONTINUE;
        END IF;
        v_job := v_admit[i];
        IF v_a.busy THEN
            p_batch.busy := true;
        ELSIF v_a.error IS NOT NULL THEN
            PERFORM pgq._record(v_job, 'failed', p_now, v_a.error, p_final => true, p_started => false);
            PERFORM pgq._bury(v_job, v_a.error, p_now);
            p_batch.reports := p_batch.reports || pgq._reported(v_job, 'failed', v_a.error);
            p_batch.report_places := p_batch.report_places || v_places[i];
            v_cascade := v_cascade OR v_job.batch_id IS NOT NULL;
        ELSIF v_a.turned_by = 'concurrency_limited' THEN
            p_batch.turned := p_batch.turned || v_job.id;  -- waits, below
        ELSE
            PERFORM pgq._turn_away(v_job, v_a.turned_by, v_a.note, v_a.delay, v_a.drop, p_now);
            p_batch.reports := p_batch.reports || pgq._reported(v_job, 'turned_away', v_a.note, v_a.turned_by);
            p_batch.report_places := p_batch.report_places || v_places[i];
            p_batch.turned := p_batch.turned || v_job.id;
        END IF;
        v_tids[v_places[i]] := NULL;
    END LOOP;
    FOR i IN 1 .. CASE WHEN v_cascade THEN cardinality(v_adm) ELSE 0 END LOOP  -- admitted before the failure ended them
        IF v_tids[v_places[i]] IS NOT NULL AND NOT pgq._still_waiting(p_batch.slot, v_tids[v_places[i]]) THEN
            PERFORM pgq._release_overlap(ARRAY[v_uuids[i]], v_adm[i].held);
            v_tids[v_places[i]] := NULL;
            v_held[v_places[i]] := NULL;
        END IF;
    END LOOP;
    PERFORM pgq._wait_for_places(p_batch.slot, v_adm, v_uuids, p_now);
    p_batch.tids := v_tids;
    p_batch.held := v_held;
    p_batch.expire := v_expire;
    p_batch.admit := '{}';
    RETURN p_batch;
END;
$$;


--
-- Name: FUNCTION _admission(p_batch pgq.reserve_batch, p_now timestamp with time zone, p_worker text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._admission(p_batch pgq.reserve_batch, p_now timestamp with time zone, p_worker text) IS 'Reserve stage 4: the batch''s jobs with middleware are admitted, turned away (S27-S29), failed, or left waiting for a busy window (S82); returns the batch.';


--
-- Name: _admit(text[], jsonb[], jsonb[], jsonb[], uuid[], uuid[], text, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._admit(p_jobs text[], p_payloads jsonb[], p_middleware jsonb[], p_keys jsonb[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone) RETURNS SETOF pgq.admission
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_hashjoin TO 'on'
    SET enable_mergejoin TO 'on'
    AS $$
DECLARE
    v_n     int := coalesce(cardinality(p_jobs), 0);
    v_steps int;
    v_alive boolean[] := array_fill(true, ARRAY[v_n]);     -- per job: not turned away or failed yet
    v_held  text[] := array_fill(NULL::text, ARRAY[v_n]);  -- per job: overlap keys leased so far (a text[] as text)
    v_exp   int[] := array_fill(NULL::int, ARRAY[v_n]);    -- per job: the largest expire_after of its leases so far, -1 once one has none
    v_out   pgq.admission[] := pgq._admit_unbounded(p_middleware);  -- the jobs turned away, failed or left waiting
    v_dec   pgq.admission[];            -- decided at this position
    v_ord   int[];                      -- this position's middleware of each job still in: place, name, settings, key
    v_name  text[];
    v_cfg   jsonb[];
    v_key   text[];
    v_missing boolean;                  -- a key of this position was not stored at dispatch
    v_ov    record;                     -- the leases without_overlapping or concurrency_limited won:
    v_w_ord int[]; v_w_key text[]; v_w_exp int[];  -- place, key, expire_after
    v_kind  text;
    v_max   int := (pgq._middleware_bounds()).entries;
BEGIN
    FOR i IN 1 .. cardinality(v_out) LOOP
        v_alive[v_out[i].ord] := false;
    END LOOP;
    SELECT max(jsonb_array_length(m)) INTO v_steps FROM unnest(p_middleware) m
    WHERE jsonb_array_length(m) <= v_max;
    FOR v_pos IN 0 .. coalesce(v_steps, 0) - 1 LOOP
        -- (aggregates over a sorted subquery keep its order: one sort instead of five)
        SELECT array_agg(s.ord), array_agg(s.name), array_agg(s.cfg), array_agg(s.key), bool_or(s.key IS NULL)
        INTO v_ord, v_name, v_cfg, v_key, v_missing
        FROM (SELECT j.ord::int, m.key AS name, m.value AS cfg,
                     CASE WHEN m.key = 'concurrency_limited' AND jsonb_typeof(m.value -> 'limit') = 'string'
                               AND NOT starts_with(j.keys ->> v_pos, '@') THEN NULL  -- stored by an earlier release
                          ELSE j.keys ->> v_pos END AS key
              FROM unnest(p_middleware, p_keys) WITH ORDINALITY AS j(middleware, keys, ord),
                   jsonb_each(j.middleware -> v_pos) m
              WHERE v_alive[j.ord]
              ORDER BY j.ord) s;
        EXIT WHEN v_ord IS NULL;
        v_dec := '{}';
        IF v_missing THEN
            SELECT m.keys, m.failed INTO v_key, v_dec
            FROM pgq._admit_missing_keys(v_ord, v_name, v_cfg, v_key, p_jobs, p_payloads) m;
        END IF;
        -- The kinds that lease keys: without_overlapping, and concurrency_limited's places.
        FOREACH v_kind IN ARRAY ARRAY['without_overlapping', 'concurrency_limited'] LOOP
            CONTINUE WHEN v_kind <> ALL (v_name);
            IF v_kind = 'without_overlapping' THEN
                v_ov := pgq._admit_overlap(v_ord, v_name, v_cfg, v_key, p_uuids, p_tokens, p_worker, p_now);
            ELSE
                v_ov := pgq._admit_concurrency(v_ord, v_name, v_cfg, v_key, p_uuids, p_tokens, p_worker, p_now);
            END IF;
            v_dec := v_dec || v_ov.turned;
            -- O(1) element assignments in local arrays (a record's array field is walked).
            v_w_ord := v_ov.won_ord;
            v_w_key := v_ov.won_key;
            v_w_exp := v_ov.won_exp;
            FOR i IN 1 .. coalesce(cardinality(v_w_ord), 0) LOOP
                v_held[v_w_ord[i]] := CASE WHEN v_held[v_w_ord[i]] IS NULL THEN ARRAY[v_w_key[i]]
                                           ELSE v_held[v_w_ord[i]]::text[] || v_w_key[i] END::text;
                v_exp[v_w_ord[i]] := CASE WHEN v_w_exp[i] < 0 OR v_exp[v_w_ord[i]] < 0 THEN -1
                                          ELSE greatest(v_exp[v_w_ord[i]], v_w_exp[i]) END;
            END LOOP;
        END LOOP;
        IF 'rate_limited' = ANY (v_name) THEN
            v_dec := v_dec || pgq._admit_rate(v_ord, v_name, v_cfg, v_key, p_now);
        END IF;
        IF 'throttles_exceptions' = ANY (v_name) THEN
            v_dec := v_dec || pgq._admit_circuit(v_ord, v_name, v_key, p_now);
        END IF;
        IF cardinality(v_dec) > 0 THEN
            v_out := v_out || v_dec;
            FOR i IN 1 .. cardinality(v_dec) LOOP
                v_alive[v_dec[i].ord] := false;
            END LOOP;
        END IF;
    END LOOP;
    -- Jobs turned away, failed or left waiting give back the leases earlier ones took,
    -- as an end does (a place given back wakes a job waiting for one, S99).
    IF EXISTS (SELECT FROM unnest(v_out) d WHERE v_held[d.ord] IS NOT NULL) THEN
        PERFORM pgq._release_overlap(ARRAY(SELECT p_uuids[d.ord] FROM unnest(v_out) d WHERE v_held[d.ord] IS NOT NULL),
                                     ARRAY(SELECT DISTINCT k FROM unnest(v_out) d, unnest(v_held[d.ord]::text[]) k
                                           WHERE v_held[d.ord] IS NOT NULL));
    END IF;
    -- unnest, not a subscript per row: v_held[a.ord] and v_exp[a.ord] would read the
    -- arrays from their start for each job.
    RETURN QUERY
    SELECT coalesce(d.ord, a.ord::int), d.turned_by, d.note, d.delay, coalesce(d.drop, false),
           CASE WHEN d.ord IS NULL THEN coalesce(a.held::text[], '{}') ELSE coalesce(d.held, '{}') END, d.error,
           CASE WHEN d.ord IS NULL AND a.expire_after >= 0 THEN a.expire_after END, coalesce(d.busy, false)
    FROM unnest(v_held, v_exp) WITH ORDINALITY a(held, expire_after, ord)
    LEFT JOIN unnest(v_out) d ON d.ord = a.ord
    ORDER BY a.ord;
END;
$$;


--
-- Name: FUNCTION _admit(p_jobs text[], p_payloads jsonb[], p_middleware jsonb[], p_keys jsonb[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._admit(p_jobs text[], p_payloads jsonb[], p_middleware jsonb[], p_keys jsonb[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone) IS 'Runs the middleware of a reserve batch set-based, with no subtransaction; returns per job what turned it away, or the overlap keys leased to it, or that it is left waiting (S26-S29, S34, S67, S82).';


--
-- Name: _admit_circuit(integer[], text[], text[], timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._admit_circuit(p_ord integer[], p_name text[], p_key text[], p_now timestamp with time zone) RETURNS pgq.admission[]
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_hashjoin TO 'on'
    SET enable_mergejoin TO 'on'
    AS $$
BEGIN
    RETURN ARRAY(
        SELECT ROW(s.ord, s.name,
                   format('turned away by throttles_exceptions (circuit %s open: %s exceptions within %ss), released for %ss',
                          c.key, c.failures, c.decay,
                          ceil(extract(epoch FROM c.window_start + make_interval(secs => c.decay) - p_now))::int + pgq._turn_away_slack()),
                   ceil(extract(epoch FROM c.window_start + make_interval(secs => c.decay) - p_now))::int + pgq._turn_away_slack(),
                   false, NULL, NULL, NULL, NULL)::pgq.admission
        FROM unnest(p_ord, p_name, p_key) s(ord, name, key)
        JOIN pgq.circuits c ON c.key = s.key
        WHERE s.name = 'throttles_exceptions'
          AND c.failures >= c.max_exceptions
          AND c.window_start + make_interval(secs => c.decay) > p_now);
END;
$$;


--
-- Name: FUNCTION _admit_circuit(p_ord integer[], p_name text[], p_key text[], p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._admit_circuit(p_ord integer[], p_name text[], p_key text[], p_now timestamp with time zone) IS 'Admission: throttles_exceptions for one middleware position of a batch: the jobs whose circuit is open, turned away (S29).';


--
-- Name: _admit_concurrency(integer[], text[], jsonb[], text[], uuid[], uuid[], text, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._admit_concurrency(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone, OUT turned pgq.admission[], OUT won_ord integer[], OUT won_key text[], OUT won_exp integer[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_hashjoin TO 'on'
    SET enable_mergejoin TO 'on'
    AS $$
DECLARE
    v_ord   int[];                      -- the jobs to admit: place, key, limit
    v_key   text[];
    v_lim   int[];
    v_k_key text[];                     -- per key: the key, its limit and places, where its places start in v_p_*,
    v_k_lim int[]; v_k_places int[];    -- the next of them to offer, and how many more handlers it may start
    v_k_at  int[]; v_k_next int[]; v_k_room int[];
    v_p_name text[];                    -- every place of the batch's keys (per key, 1..limit in offer order,
    v_p_id  bigint[]; v_p_live boolean[];  -- then those above): name, lock id, leased
    v_h_name text[];                    -- the places a live lease holds: name, the lease's end
    v_h_end timestamptz[];
    v_l_key int[]; v_l_at int[];        -- the places locked in a round: key (index), place (index)
    v_o_ord int[];                      -- the jobs offered a place, and the place
    v_place text[];
    v_spin  int := floor(random() * 1000)::int;
    v_ov    record;
BEGIN
    SELECT k.ords, k.keys, k.lims, k.k_key, k.k_lim, k.k_places, k.busy
    INTO v_ord, v_key, v_lim, v_k_key, v_k_lim, v_k_places, turned
    FROM pgq._admit_concurrency_keys(p_ord, p_name, p_cfg, p_key) k;
    IF v_ord IS NULL THEN
        RETURN;
    END IF;
    -- Each key's places, those of a key together, then which a live lease holds, by one
    -- index scan of their names (a join with the leases gets planned as a scan of every
    -- generation); then each key's room.
    v_k_at := ARRAY(SELECT 1 + (sum(k.places) OVER (ORDER BY k.n) - k.places)::int
                    FROM unnest(v_k_places) WITH ORDINALITY k(places, n) ORDER BY k.n);
    v_k_next := v_k_at;
    v_p_name := ARRAY(SELECT '#' || k.key || '#' || CASE WHEN i < k.lim THEN 1 + (i + v_spin) % k.lim ELSE i + 1 END
                      FROM unnest(v_k_key, v_k_lim, v_k_places) WITH ORDINALITY k(key, lim, places, n),
                           generate_series(0, k.places - 1) i
                      ORDER BY k.n, i);
    v_p_id := pgq._overlap_lock_ids(v_p_name);
    SELECT array_agg(o.key), array_agg(o.expires_at) INTO v_h_name, v_h_end
    FROM pgq.overlap_locks o
    WHERE o.key = ANY (v_p_name) AND o.expires_at > p_now;
    SELECT array_agg(h.name IS NOT NULL ORDER BY p.n) INTO v_p_live
    FROM unnest(v_p_name) WITH ORDINALITY p(name, n) LEFT JOIN unnest(v_h_name) h(name) ON h.name = p.name;
    v_k_room := pgq._concurrency_room(v_k_lim, v_k_places, v_k_at, v_p_name, v_p_id, v_p_live, v_h_name);
    LOOP
        -- Per key, its free places from the next not yet offered, locked without waiting
        -- until as many are locked as it has jobs without one and room: the LIMIT stops
        -- the locking there (the lateral scan evaluates its filter row by row).
        SELECT array_agg(k.n ORDER BY k.n, c.i), array_agg(c.i ORDER BY k.n, c.i) INTO v_l_key, v_l_at
        FROM (SELECT n, count(*) FILTER (WHERE j.ord <> ALL (coalesce(won_ord, '{}'))) AS jobs, count(*) AS all_jobs
              FROM unnest(v_key, v_ord) j(key, ord), array_position(v_k_key, j.key) n
              GROUP BY n) k
        CROSS JOIN LATERAL (
            SELECT i FROM generate_series(v_k_next[k.n], v_k_at[k.n] + v_k_lim[k.n] - 1) i
            WHERE NOT v_p_live[i] AND pg_try_advisory_xact_lock(v_p_id[i])
            LIMIT greatest(least(k.jobs, v_k_room[k.n] - (k.all_jobs - k.jobs)), 0)) c;
        EXIT WHEN v_l_key IS NULL;
        -- The next round offers each key the places after its last one locked here.
        FOR i IN 1 .. cardinality(v_l_key) LOOP
            v_k_next[v_l_key[i]] := v_l_at[i] + 1;
        END LOOP;
        WITH jobs AS (
            SELECT j.ord, array_position(v_k_key, j.key) AS k, row_number() OVER (PARTITION BY j.key ORDER BY j.ord) AS n
            FROM unnest(v_ord, v_key) j(ord, key)
            WHERE j.ord <> ALL (coalesce(won_ord, '{}'))
        ), places AS (
            SELECT l.k, l.at, row_number() OVER (PARTITION BY l.k ORDER BY l.at) AS n
            FROM unnest(v_l_key, v_l_at) l(k, at)
        )
        SELECT array_agg(j.ord ORDER BY j.ord), array_agg(v_p_name[p.at] ORDER BY j.ord) INTO v_o_ord, v_place
        FROM jobs j JOIN places p ON p.k = j.k AND p.n = j.n;
        v_ov := pgq._admit_overlap(v_o_ord, array_fill('without_overlapping'::text, ARRAY[cardinality(v_o_ord)]),
                                   array_fill('{}'::jsonb, ARRAY[cardinality(v_o_ord)]), v_place, p_uuids, p_tokens, p_worker, p_now);
        won_ord := won_ord || v_ov.won_ord;
        won_key := won_key || v_ov.won_key;
        won_exp := won_exp || v_ov.won_exp;
        EXIT WHEN cardinality(won_ord) = cardinality(v_ord);
    END LOOP;
    -- A job left waiting is ready again when a job of its key ends, or when the first of
    -- its key's leases could run out: one held before this call, or else one it took.
    turned := turned || ARRAY(
        SELECT ROW(j.ord, 'concurrency_limited', format('waits for a place of concurrency_limited key %s (limit %s)', j.key, j.lim),
                   greatest(1, ceil(extract(epoch FROM coalesce(
                       (SELECT min(h.e) FROM unnest(v_h_name, v_h_end) h(name, e)
                        WHERE h.name = ANY (v_p_name[v_k_at[k.n] : v_k_at[k.n] + v_k_places[k.n] - 1])),
                       pgq._overlap_until(p_now, p_now, NULL)) - p_now)))::int,
                   false, ARRAY[j.key], NULL, NULL, NULL)::pgq.admission
        FROM unnest(v_ord, v_key, v_lim) j(ord, key, lim), array_position(v_k_key, j.key) k(n)
        WHERE j.ord <> ALL (coalesce(won_ord, '{}')));
    -- Checked again at the reserve's end (pgq._concurrency_waits).
    PERFORM pgq._concurrency_waiting(v_k_key, v_k_lim, v_k_places,
                                     ARRAY(SELECT p_uuids[j.ord] FROM unnest(v_ord) j(ord) WHERE j.ord <> ALL (coalesce(won_ord, '{}'))),
                                     ARRAY(SELECT j.key FROM unnest(v_ord, v_key) j(ord, key) WHERE j.ord <> ALL (coalesce(won_ord, '{}'))));
END;
$$;


--
-- Name: FUNCTION _admit_concurrency(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone, OUT turned pgq.admission[], OUT won_ord integer[], OUT won_key text[], OUT won_exp integer[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._admit_concurrency(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone, OUT turned pgq.admission[], OUT won_ord integer[], OUT won_key text[], OUT won_exp integer[]) IS 'Admission: concurrency_limited for one middleware position of a batch: the places won (as overlap leases), the jobs left to wait, uncounted, and those left untouched while another transaction counts their key (S99).';


--
-- Name: _admit_concurrency_keys(integer[], text[], jsonb[], text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._admit_concurrency_keys(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], OUT ords integer[], OUT keys text[], OUT lims integer[], OUT k_key text[], OUT k_lim integer[], OUT k_places integer[], OUT busy pgq.admission[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_hashjoin TO 'on'
    SET enable_mergejoin TO 'on'
    AS $$
DECLARE
    v_named  text[];                    -- the batch's named limits, and whether this transaction holds their lock
    v_ours   boolean[];
    v_places int[];                     -- per job: its key's places, and whether its limit's lock is another's
    v_busy   boolean[];
    v_k_ours boolean[];                 -- per key: this transaction may admit its jobs
BEGIN
    SELECT array_agg(DISTINCT s.cfg ->> 'limit') INTO v_named
    FROM unnest(p_name, p_cfg, p_key) s(name, cfg, key)
    WHERE s.name = 'concurrency_limited' AND s.key IS NOT NULL AND jsonb_typeof(s.cfg -> 'limit') = 'string';
    v_ours := ARRAY(SELECT pg_try_advisory_xact_lock_shared(l.id)
                    FROM unnest(pgq._concurrency_lock_ids('limit', v_named)) WITH ORDINALITY l(id, n) ORDER BY l.n);
    -- The limits, in a statement after their locks: it sees a lowering that committed.
    SELECT array_agg(j.ord), array_agg(j.key), array_agg(j.lim), array_agg(j.places), array_agg(j.busy)
    INTO ords, keys, lims, v_places, v_busy
    FROM (SELECT s.ord, s.key, coalesce(n.lim, l."limit") AS lim, coalesce(n.lim, l.places) AS places,
                 coalesce(NOT v_ours[array_position(v_named, s.cfg ->> 'limit')], false) AS busy
          FROM unnest(p_ord, p_name, p_cfg, p_key) s(ord, name, cfg, key)
          CROSS JOIN LATERAL (SELECT CASE jsonb_typeof(s.cfg -> 'limit') WHEN 'number' THEN (s.cfg ->> 'limit')::int END AS lim) n
          LEFT JOIN LATERAL (SELECT l."limit", l.places FROM pgq.concurrency_limits l
                             WHERE n.lim IS NULL AND l.name = s.cfg ->> 'limit') l ON true
          WHERE s.name = 'concurrency_limited' AND s.key IS NOT NULL
          ORDER BY s.ord) j
    WHERE j.lim IS NOT NULL OR j.busy;
    IF ords IS NULL THEN
        RETURN;
    END IF;
    -- Each key's lock is tried only while its places exceed its limit.
    SELECT array_agg(k.key), array_agg(k.lim), array_agg(k.places),
           array_agg(CASE WHEN k.places > k.lim THEN pg_try_advisory_xact_lock((pgq._concurrency_lock_ids('key', ARRAY[k.key]))[1])
                          ELSE true END)
    INTO k_key, k_lim, k_places, v_k_ours
    FROM (SELECT DISTINCT ON (j.key) j.key, j.lim, j.places
          FROM unnest(ords, keys, lims, v_places, v_busy) j(ord, key, lim, places, busy)
          WHERE NOT j.busy
          ORDER BY j.key, j.ord) k;
    IF true = ALL (v_k_ours) AND false = ALL (v_busy) THEN
        busy := '{}';
        RETURN;
    END IF;
    busy := ARRAY(
        SELECT ROW(j.ord, 'concurrency_limited',
                   format('concurrency_limited key %s: another transaction holds its limit or key; left waiting', j.key),
                   NULL, false, NULL, NULL, NULL, true)::pgq.admission
        FROM unnest(ords, keys, v_busy) j(ord, key, busy)
        LEFT JOIN unnest(k_key, v_k_ours) k(key, ours) ON k.key = j.key
        WHERE j.busy OR NOT k.ours);
    SELECT array_agg(j.ord), array_agg(j.key), array_agg(j.lim) INTO ords, keys, lims
    FROM (SELECT j.ord, j.key, j.lim
          FROM unnest(ords, keys, lims, v_busy) j(ord, key, lim, busy)
          JOIN unnest(k_key, v_k_ours) k(key, ours) ON k.key = j.key AND k.ours
          WHERE NOT j.busy
          ORDER BY j.ord) j;
    SELECT array_agg(k.key), array_agg(k.lim), array_agg(k.places) INTO k_key, k_lim, k_places
    FROM (SELECT * FROM unnest(k_key, k_lim, k_places, v_k_ours) WITH ORDINALITY k(key, lim, places, ours, n)
          WHERE k.ours ORDER BY k.n) k;
END;
$$;


--
-- Name: FUNCTION _admit_concurrency_keys(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], OUT ords integer[], OUT keys text[], OUT lims integer[], OUT k_key text[], OUT k_lim integer[], OUT k_places integer[], OUT busy pgq.admission[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._admit_concurrency_keys(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], OUT ords integer[], OUT keys text[], OUT lims integer[], OUT k_key text[], OUT k_lim integer[], OUT k_places integer[], OUT busy pgq.admission[]) IS 'Admission: the jobs of one middleware position under concurrency_limited and their keys'' limits and places, read under the locks that keep them exact; the jobs left waiting when another transaction holds those (S99).';


--
-- Name: _admit_missing_keys(integer[], text[], jsonb[], text[], text[], jsonb[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._admit_missing_keys(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_jobs text[], p_payloads jsonb[], OUT keys text[], OUT failed pgq.admission[]) RETURNS record
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    SELECT array_agg(coalesce(s.key, c.key) ORDER BY s.n) INTO keys
    FROM unnest(p_key) WITH ORDINALITY s(key, n)
    JOIN unnest(pgq._middleware_keys(ARRAY(SELECT p_jobs[o] FROM unnest(p_ord) WITH ORDINALITY u(o, n) ORDER BY u.n),
                                     p_name, p_cfg,
                                     ARRAY(SELECT p_payloads[o] FROM unnest(p_ord) WITH ORDINALITY u(o, n) ORDER BY u.n)))
         WITH ORDINALITY c(key, n) ON c.n = s.n;
    failed := ARRAY(
        SELECT ROW(s.ord, NULL, NULL, NULL, false, NULL,
                   format('middleware could not be evaluated: %s has no key for this payload (by %s)', s.name, s.cfg -> 'by'),
                   NULL, NULL)::pgq.admission
        FROM unnest(p_ord, p_name, p_cfg, keys) s(ord, name, cfg, key)
        WHERE s.key IS NULL);
END;
$$;


--
-- Name: FUNCTION _admit_missing_keys(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_jobs text[], p_payloads jsonb[], OUT keys text[], OUT failed pgq.admission[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._admit_missing_keys(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_jobs text[], p_payloads jsonb[], OUT keys text[], OUT failed pgq.admission[]) IS 'The middleware keys of one position of a reserve batch that dispatch did not store, computed; the jobs that have none, failed.';


--
-- Name: _admit_overlap(integer[], text[], jsonb[], text[], uuid[], uuid[], text, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._admit_overlap(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone, OUT turned pgq.admission[], OUT won_ord integer[], OUT won_key text[], OUT won_exp integer[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_hashjoin TO 'on'
    SET enable_mergejoin TO 'on'
    AS $$
DECLARE
    v_f_ord   int[];                    -- the first job at each overlap key: place, key, expire_after
    v_f_key   text[];
    v_f_exp   int[];
    v_gen     smallint;                 -- the current generation of pgq.overlap_locks (S81)
    v_t_ord   int[];                    -- the first jobs at the keys no live lease holds, whose advisory lock this call got
    v_t_key   text[];
    v_t_exp   int[];
    v_live    boolean;                  -- a live lease holds one of those keys
    v_won     boolean[];                -- per place: took its lease
    v_until   timestamptz := pgq._overlap_until(p_now, p_now, NULL);  -- a new lease's end without expire_after
BEGIN
    -- The first job at each key, in key order by bytes (any fixed order does, and
    -- strcoll costs more than memcmp).
    SELECT array_agg(f.ord), array_agg(f.key), array_agg(f.expire_after)
    INTO v_f_ord, v_f_key, v_f_exp
    FROM (SELECT DISTINCT ON (s.key COLLATE "C") s.ord, s.key, (s.cfg ->> 'expire_after')::int AS expire_after
          FROM unnest(p_ord, p_name, p_cfg, p_key) s(ord, name, cfg, key)
          WHERE s.name = 'without_overlapping' AND s.key IS NOT NULL
          ORDER BY s.key COLLATE "C", s.ord) f;
    -- The lock on every generation (ROW SHARE: only a truncation waits for it) keeps
    -- the current one current until this transaction ends (S81).
    LOCK TABLE pgq.overlap_locks IN ROW SHARE MODE;
    v_gen := pgq._overlap_gen();
    -- A key is taken when a live lease holds it, in whichever generation. Each other key
    -- is tried behind its advisory lock, without waiting: a key whose lock another
    -- transaction holds (a SQL handler still running after its lease ran out, another
    -- reserve taking it now) is taken too. So a reserve never waits for another over a
    -- key, and two cannot deadlock on keys they meet in different orders. Whether any
    -- key has a live lease is asked first, in one scan: most often none has. (Planned
    -- per call: for a batch of unknown size the per-key probe's generic plan hashes
    -- every lease of every generation.)
    v_live := EXISTS (SELECT FROM pgq.overlap_locks o WHERE o.key = ANY (v_f_key) AND o.expires_at > p_now);
    SELECT array_agg(f.ord), array_agg(f.key), array_agg(f.expire_after)
    INTO v_t_ord, v_t_key, v_t_exp
    FROM unnest(v_f_ord, v_f_key, v_f_exp, pgq._overlap_lock_ids(v_f_key)) f(ord, key, expire_after, lock_id)
    WHERE CASE WHEN v_live AND EXISTS (SELECT FROM pgq.overlap_locks o WHERE o.key = f.key AND o.expires_at > p_now)
               THEN false ELSE pg_try_advisory_xact_lock(f.lock_id) END;
    -- The keys tried go to the current generation, or take over its expired lease (a
    -- lease a late heartbeat renewed stays its job's). When the generation has no row
    -- at any of them, a plain insert, cheaper than the upsert: asked after the advisory
    -- locks, so that under READ COMMITTED it sees every row committed at those keys (a
    -- later one could only come from a holder of a key's lock). An older snapshot
    -- (REPEATABLE READ) takes the upsert, which knows conflicts.
    IF v_t_key IS NOT NULL
       AND current_setting('transaction_isolation') = 'read committed'
       AND NOT EXISTS (SELECT FROM pgq.overlap_locks o WHERE o.gen = v_gen AND o.key = ANY (v_t_key)) THEN
        INSERT INTO pgq.overlap_locks (key, job_uuid, lease_token, worker, since, expires_at, expire_after, gen)
        SELECT f.key, p_uuids[f.ord], p_tokens[f.ord], p_worker, p_now,
               CASE WHEN f.expire_after IS NULL THEN v_until ELSE pgq._overlap_until(p_now, p_now, f.expire_after) END,
               f.expire_after, v_gen
        FROM unnest(v_t_ord, v_t_key, v_t_exp) f(ord, key, expire_after);  -- in key order already
        won_ord := v_t_ord;
        won_key := v_t_key;
        won_exp := ARRAY(SELECT coalesce(e, -1) FROM unnest(v_t_exp) WITH ORDINALITY x(e, n) ORDER BY x.n);
    ELSE
        WITH taken AS (
            INSERT INTO pgq.overlap_locks AS o (key, job_uuid, lease_token, worker, since, expires_at, expire_after, gen)
            SELECT f.key, p_uuids[f.ord], p_tokens[f.ord], p_worker, p_now,
                   CASE WHEN f.expire_after IS NULL THEN v_until ELSE pgq._overlap_until(p_now, p_now, f.expire_after) END,
                   f.expire_after, v_gen
            FROM unnest(v_t_ord, v_t_key, v_t_exp) f(ord, key, expire_after)
            ORDER BY f.key
            ON CONFLICT (key, gen) DO UPDATE
                SET job_uuid = EXCLUDED.job_uuid, lease_token = EXCLUDED.lease_token, worker = EXCLUDED.worker,
                    since = EXCLUDED.since, expires_at = EXCLUDED.expires_at, expire_after = EXCLUDED.expire_after
                WHERE o.expires_at <= p_now
            RETURNING o.key
        )
        SELECT array_agg(f.ord), array_agg(f.key), array_agg(coalesce(f.expire_after, -1))
        INTO won_ord, won_key, won_exp
        FROM taken t
        JOIN unnest(v_t_ord, v_t_key, v_t_exp) f(ord, key, expire_after) ON f.key = t.key;
    END IF;
    -- Element assignments: O(1) each, where a join of arrays gets a nested loop.
    v_won := array_fill(false, ARRAY[coalesce((SELECT max(o) FROM unnest(p_ord) o), 0)]);
    FOR i IN 1 .. coalesce(cardinality(won_ord), 0) LOOP
        v_won[won_ord[i]] := true;
    END LOOP;
    turned := ARRAY(
        SELECT ROW(s.ord, s.name,
                   format('turned away by without_overlapping (key %s), %s', s.key,
                          CASE WHEN coalesce((s.cfg ->> 'dont_release')::boolean, false) THEN 'deleted (dont_release)'
                               ELSE format('released for %ss', coalesce((s.cfg ->> 'release_after')::int, 0)) END),
                   coalesce((s.cfg ->> 'release_after')::int, 0),
                   coalesce((s.cfg ->> 'dont_release')::boolean, false), NULL, NULL, NULL, NULL)::pgq.admission
        FROM unnest(p_ord, p_name, p_cfg, p_key) s(ord, name, cfg, key)
        WHERE s.name = 'without_overlapping' AND s.key IS NOT NULL AND NOT v_won[s.ord]);END;
$$;


--
-- Name: FUNCTION _admit_overlap(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone, OUT turned pgq.admission[], OUT won_ord integer[], OUT won_key text[], OUT won_exp integer[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._admit_overlap(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone, OUT turned pgq.admission[], OUT won_ord integer[], OUT won_key text[], OUT won_exp integer[]) IS 'Admission: without_overlapping for one middleware position of a batch: the leases won and the jobs turned away (S26, S34, S81).';


--
-- Name: _admit_rate(integer[], text[], jsonb[], text[], timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._admit_rate(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_now timestamp with time zone) RETURNS pgq.admission[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_hashjoin TO 'on'
    SET enable_mergejoin TO 'on'
    AS $$
DECLARE
    v_dec     pgq.admission[] := '{}';
    v_w_limit text[];                   -- the rate-limit windows of this position, in (limit, key) order,
    v_w_key   text[];
    v_w_id    bigint[];                 -- their advisory locks,
    v_w_ours  boolean[];                -- and whether this transaction holds each (else: busy)
BEGIN
    SELECT array_agg(w.limit_name ORDER BY w.limit_name, w.key), array_agg(w.key ORDER BY w.limit_name, w.key)
    INTO v_w_limit, v_w_key
    FROM (SELECT DISTINCT l.name AS limit_name, s.key
          FROM unnest(p_name, p_cfg, p_key) s(name, cfg, key)
          JOIN pgq.rate_limits l ON l.name = s.cfg ->> 'limit'
          WHERE s.name = 'rate_limited' AND s.key IS NOT NULL) w;
    v_w_id := pgq._window_lock_ids(v_w_limit, v_w_key);
    v_w_ours := '{}';
    IF current_setting('pgq.windows_locked', true) IS DISTINCT FROM 'on' THEN
        FOR i IN 1 .. coalesce(cardinality(v_w_id), 0) LOOP
            PERFORM pg_advisory_xact_lock(v_w_id[i]);
            v_w_ours[i] := true;
        END LOOP;
        IF v_w_id IS NOT NULL THEN
            PERFORM set_config('pgq.windows_locked', 'on', true);
        END IF;
    ELSE
        FOR i IN 1 .. coalesce(cardinality(v_w_id), 0) LOOP
            v_w_ours[i] := pg_try_advisory_xact_lock(v_w_id[i]);
        END LOOP;
    END IF;
    INSERT INTO pgq.rate_limit_windows AS w (limit_name, key, window_start, hits)
    SELECT o.limit_name, o.key, p_now, 0
    FROM unnest(v_w_limit, v_w_key, v_w_ours) o(limit_name, key, ours)
    WHERE o.ours
    ORDER BY 1, 2
    -- (locks an existing row without writing it, which waits for no one now: a
    -- REPEATABLE READ caller whose snapshot misses a later count fails here)
    ON CONFLICT (limit_name, key) DO UPDATE SET hits = w.hits WHERE false;
    IF false = ANY (v_w_ours) THEN
        v_dec := ARRAY(
            SELECT ROW(s.ord, s.name,
                       format('rate limit %s, key %s: its window is locked by another reserve; left waiting',
                              b.limit_name, b.key),
                       NULL, false, NULL, NULL, NULL, true)::pgq.admission
            FROM unnest(p_ord, p_name, p_cfg, p_key) s(ord, name, cfg, key)
            JOIN unnest(v_w_limit, v_w_key, v_w_ours) b(limit_name, key, ours)
              ON NOT b.ours AND b.limit_name = s.cfg ->> 'limit' AND b.key = s.key
            WHERE s.name = 'rate_limited');
    END IF;
    -- Only the windows locked above: this statement's snapshot may see a limit that the
    -- first one did not (defined since), whose windows this transaction does not hold.
    WITH hit AS (
        SELECT s.ord, l.name AS limit_name, s.key, l.max, l.per,
               row_number() OVER (PARTITION BY l.name, s.key ORDER BY s.ord) AS n
        FROM unnest(p_ord, p_name, p_cfg, p_key) s(ord, name, cfg, key)
        JOIN unnest(v_w_limit, v_w_key, v_w_ours) o(limit_name, key, ours)
          ON o.ours AND o.limit_name = s.cfg ->> 'limit' AND o.key = s.key
        JOIN pgq.rate_limits l ON l.name = o.limit_name
        WHERE s.name = 'rate_limited'
    ), budget AS (
        -- the window as this call leaves it: reset when it has ended
        SELECT h.limit_name, h.key, h.max, h.per, count(*) AS wanted,
               w.window_start + h.per <= p_now AS reset,
               CASE WHEN w.window_start + h.per <= p_now THEN p_now ELSE w.window_start END AS window_start,
               CASE WHEN w.window_start + h.per <= p_now THEN 0 ELSE w.hits END AS used
        FROM hit h
        JOIN pgq.rate_limit_windows w ON w.limit_name = h.limit_name AND w.key = h.key
        GROUP BY h.limit_name, h.key, h.max, h.per, w.window_start, w.hits
    ), counted AS (
        UPDATE pgq.rate_limit_windows w
        SET window_start = b.window_start,
            hits = b.used + least(b.wanted, greatest(b.max - b.used, 0))
        FROM budget b
        WHERE w.limit_name = b.limit_name AND w.key = b.key
          AND (b.reset OR b.max > b.used)
    )
    SELECT v_dec || coalesce(array_agg(ROW(h.ord, 'rate_limited',
               format('turned away by rate_limited (limit %s, key %s: %s per %s used), released for %ss',
                      h.limit_name, h.key, b.used + least(b.wanted, greatest(b.max - b.used, 0)), h.per,
                      ceil(extract(epoch FROM b.window_start + h.per - p_now))::int + pgq._turn_away_slack()),
               ceil(extract(epoch FROM b.window_start + h.per - p_now))::int + pgq._turn_away_slack(),
               false, NULL, NULL, NULL, NULL)::pgq.admission), '{}')
    INTO v_dec
    FROM hit h
    JOIN budget b ON b.limit_name = h.limit_name AND b.key = h.key
    WHERE h.n > b.max - b.used;
    RETURN v_dec;
END;
$$;


--
-- Name: FUNCTION _admit_rate(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._admit_rate(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_now timestamp with time zone) IS 'Admission: rate_limited for one middleware position of a batch: the jobs turned away, or left waiting when their window is busy (S28, S82).';


--
-- Name: _admit_unbounded(jsonb[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._admit_unbounded(p_middleware jsonb[]) RETURNS pgq.admission[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_max int := (pgq._middleware_bounds()).entries;
BEGIN
    RETURN (SELECT coalesce(array_agg(ROW(u.ord, NULL, NULL, NULL, false, NULL,
                                          format('middleware could not be evaluated: %s entries, more than the %s a job may carry',
                                                 jsonb_array_length(u.m), v_max),
                                          NULL, NULL)::pgq.admission), '{}')
            FROM unnest(p_middleware) WITH ORDINALITY u(m, ord)
            WHERE jsonb_array_length(u.m) > v_max);  -- plan kept (see pgq.dispatch)
END;
$$;


--
-- Name: FUNCTION _admit_unbounded(p_middleware jsonb[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._admit_unbounded(p_middleware jsonb[]) IS 'The jobs of a reserve batch whose middleware is past the bound of a dispatch, failed (S98).';


--
-- Name: _as_reserved(pgq.jobs[], integer[], uuid[], timestamp with time zone, integer, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._as_reserved(p_jobs pgq.jobs[], p_places integer[], p_tokens uuid[], p_now timestamp with time zone, p_lease integer, p_worker text) RETURNS pgq.jobs[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_until timestamptz := p_now + make_interval(secs => p_lease);
    v_out   pgq.jobs[] := '{}';
    v_job   pgq.jobs;
    i       int := 0;
BEGIN
    FOREACH v_job IN ARRAY coalesce(p_jobs, '{}') LOOP
        i := i + 1;
        v_job.attempts := v_job.attempts + 1;
        v_job.reserved_at := p_now;
        v_job.reserved_until := v_until;
        v_job.reserved_by := p_worker;
        v_job.lease_token := p_tokens[p_places[i]];
        v_job.started_at := p_now;
        v_out := v_out || v_job;
    END LOOP;
    RETURN v_out;
END;
$$;


--
-- Name: FUNCTION _as_reserved(p_jobs pgq.jobs[], p_places integer[], p_tokens uuid[], p_now timestamp with time zone, p_lease integer, p_worker text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._as_reserved(p_jobs pgq.jobs[], p_places integer[], p_tokens uuid[], p_now timestamp with time zone, p_lease integer, p_worker text) IS 'Picked jobs as their reservation makes them (attempt counted, leased), for the reserve''s stages to record.';


SET default_table_access_method = heap;

--
-- Name: job_batches; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.job_batches (
    id uuid NOT NULL,
    name text,
    total_jobs integer DEFAULT 0 NOT NULL,
    options jsonb NOT NULL,
    failed_job_ids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    cancelled_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    then_at timestamp with time zone,
    catch_at timestamp with time zone,
    finally_at timestamp with time zone,
    dispatched_by text
);


--
-- Name: TABLE job_batches; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.job_batches IS 'Batches (pgq.dispatch_batch): options (then_job, catch_job, finally_job, allow_failures, queue), failed job uuids, when it was cancelled and finished, when each callback was dispatched. Counters are in pgq.batch_counts; read pgq.batches.';


--
-- Name: COLUMN job_batches.total_jobs; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_batches.total_jobs IS 'Members dispatched into the batch: jobs, and chains (a chain counts once).';


--
-- Name: COLUMN job_batches.finished_at; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_batches.finished_at IS 'When every member had finished (succeeded, failed for good or cancelled); cleared when pgq.retry_failed brings one back.';


--
-- Name: COLUMN job_batches.dispatched_by; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_batches.dispatched_by IS 'The login role that dispatched the batch: it, the roles that are members of it and the batch''s running jobs may add to it (S93). NULL for a batch dispatched before it was recorded.';


--
-- Name: _batch_add(pgq.job_batches, jsonb, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._batch_add(p_batch pgq.job_batches, p_entries jsonb, p_traceparent text DEFAULT NULL::text, p_tracestate text DEFAULT NULL::text) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_queue   text := p_batch.options ->> 'queue';
    v_plain   jsonb;
    v_members uuid[];
    v_chain   pgq.job_chains;
    v_failed  pgq.job_chains[] := '{}';
    v_entry   jsonb;
BEGIN
    SELECT coalesce(jsonb_agg(e ORDER BY n), '[]') INTO v_plain
    FROM jsonb_array_elements(p_entries) WITH ORDINALITY AS x(e, n) WHERE NOT e ? 'chain';
    IF jsonb_array_length(v_plain) > 0 THEN
        -- a dropped unique duplicate is no member: it never existed (S21)
        v_members := ARRAY(SELECT u FROM unnest(pgq._dispatch_entries(v_plain, v_queue, p_batch.id, NULL, NULL,
                                                                     p_traceparent => p_traceparent,
                                                                     p_tracestate => p_tracestate)) u
                           WHERE u IS NOT NULL);
    ELSE
        v_members := '{}';
    END IF;
    FOR v_entry IN SELECT e FROM jsonb_array_elements(p_entries) e WHERE e ? 'chain' LOOP
        v_chain := pgq._chain_start((pgq._uuid7s(1))[1], v_entry -> 'chain', v_entry ->> 'on_failure',
                                    coalesce(v_entry ->> 'queue', v_queue), p_batch.id, p_traceparent, p_tracestate);
        v_members := v_members || v_chain.id;
        IF v_chain.state = 'failed' THEN
            v_failed := v_failed || v_chain;
        END IF;
    END LOOP;

    -- Count the members: every shard first, in order (a chain that failed at once below
    -- may cancel the batch, which takes them all), then the batch row.
    PERFORM FROM pgq.batch_counts c WHERE c.batch_id = p_batch.id ORDER BY c.shard FOR UPDATE;
    UPDATE pgq.batch_counts c SET pending = c.pending + d.n
    FROM (SELECT pgq._batch_shard(m) AS shard, count(*)::int AS n FROM unnest(v_members) m GROUP BY 1) d
    WHERE c.batch_id = p_batch.id AND c.shard = d.shard;
    UPDATE pgq.job_batches b SET total_jobs = b.total_jobs + cardinality(v_members) WHERE b.id = p_batch.id;

    FOREACH v_chain IN ARRAY v_failed LOOP
        PERFORM pgq._batch_members_ended(p_batch.id, ARRAY[v_chain.id], 'failed', NULL, pgq._dropped_message(v_chain, 1));
    END LOOP;
    RETURN cardinality(v_members);
END;
$$;


--
-- Name: FUNCTION _batch_add(p_batch pgq.job_batches, p_entries jsonb, p_traceparent text, p_tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._batch_add(p_batch pgq.job_batches, p_entries jsonb, p_traceparent text, p_tracestate text) IS 'Dispatches entries into a batch and counts them in its shards (S73); returns how many members it added.';


--
-- Name: _batch_callback(pgq.job_batches, text, jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._batch_callback(p_batch pgq.job_batches, p_kind text, p_extra jsonb DEFAULT '{}'::jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_job    text := p_batch.options ->> (p_kind || '_job');
    v_counts record;
BEGIN
    IF v_job IS NULL THEN
        RETURN;
    END IF;
    SELECT coalesce(sum(c.pending), 0) AS pending, coalesce(sum(c.failed), 0) AS failed INTO v_counts
    FROM pgq.batch_counts c WHERE c.batch_id = p_batch.id;
    PERFORM pgq._dispatch_callback(p_kind, v_job,
        jsonb_build_object('batch_id', p_batch.id, 'name', p_batch.name, 'total_jobs', p_batch.total_jobs,
                           'pending_jobs', v_counts.pending + v_counts.failed, 'failed_jobs', v_counts.failed,
                           'failed_job_ids', to_jsonb(p_batch.failed_job_ids),
                           'cancelled', p_batch.cancelled_at IS NOT NULL) || p_extra,
        p_batch.options ->> 'queue', p_batch.id, NULL);
END;
$$;


--
-- Name: FUNCTION _batch_callback(p_batch pgq.job_batches, p_kind text, p_extra jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._batch_callback(p_batch pgq.job_batches, p_kind text, p_extra jsonb) IS 'Queues a batch callback (then, catch, finally) with the batch''s id, name and figures.';


--
-- Name: _batch_cancel_waiting(uuid, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._batch_cancel_waiting(p_batch uuid, p_reason text) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_n int;
BEGIN
    WITH gone AS (
        DELETE FROM pgq.jobs j
        WHERE j.uuid = ANY (ARRAY(SELECT w.uuid FROM pgq.jobs w
                                  WHERE w.batch_id = p_batch AND w.reserved_at IS NULL
                                  FOR UPDATE SKIP LOCKED))
        RETURNING j.*
    ), recorded AS (
        INSERT INTO pgq.attempts (job_uuid, job, queue, attempt, finished_at, outcome, exception)
        SELECT g.uuid, g.job, g.queue, g.attempts, now(), 'cancelled', p_reason FROM gone g
    ), unique_gone AS (
        DELETE FROM pgq.unique_locks u USING gone g
        WHERE g.unique_key IS NOT NULL AND u.key = g.unique_key AND u.owner = g.unique_token
    ), debounce_gone AS (
        DELETE FROM pgq.debounce_tokens d USING gone g
        WHERE g.debounce_key IS NOT NULL AND d.key = g.debounce_key AND d.token = g.debounce_token
    ), ended AS (
        INSERT INTO pgq.job_ends (job_uuid, outcome, exception, batch_id, chain_id, chain_step)
        SELECT g.uuid, 'cancelled', p_reason, g.batch_id, g.chain_id, g.chain_step FROM gone g ORDER BY g.id
    )
    SELECT count(*) INTO v_n FROM gone;
    RETURN v_n;
END;
$$;


--
-- Name: FUNCTION _batch_cancel_waiting(p_batch uuid, p_reason text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._batch_cancel_waiting(p_batch uuid, p_reason text) IS 'Cancels a batch''s waiting jobs not held by another transaction; their ends in pgq.job_ends count them as cancelled (S74, S97).';


--
-- Name: _batch_members_ended(uuid, uuid[], text, uuid, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._batch_members_ended(p_batch uuid, p_members uuid[], p_outcome text, p_job uuid DEFAULT NULL::uuid, p_exception text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_zero  boolean;
    v_first boolean;
    v_batch pgq.job_batches;
BEGIN
    IF p_outcome = 'succeeded' THEN
        PERFORM FROM pgq.batch_counts c
        WHERE c.batch_id = p_batch AND c.shard IN (SELECT DISTINCT pgq._batch_shard(m) FROM unnest(p_members) m)
        ORDER BY c.shard FOR UPDATE;
    ELSE
        PERFORM FROM pgq.batch_counts c WHERE c.batch_id = p_batch ORDER BY c.shard FOR UPDATE;
    END IF;
    WITH d AS (
        SELECT pgq._batch_shard(m) AS shard, count(*)::int AS n FROM unnest(p_members) m GROUP BY 1
    ), counted AS (
        UPDATE pgq.batch_counts c
        SET pending = c.pending - d.n,
            failed = c.failed + CASE WHEN p_outcome = 'failed' THEN d.n ELSE 0 END,
            cancelled = c.cancelled + CASE WHEN p_outcome = 'cancelled' THEN d.n ELSE 0 END
        FROM d
        WHERE c.batch_id = p_batch AND c.shard = d.shard
        RETURNING c.pending
    )
    SELECT coalesce(bool_or(pending = 0), false) INTO v_zero FROM counted;

    IF p_outcome = 'failed' THEN
        SELECT * INTO v_batch FROM pgq.job_batches b WHERE b.id = p_batch FOR UPDATE;
        v_first := v_batch.catch_at IS NULL;
        UPDATE pgq.job_batches b
        SET failed_job_ids = CASE WHEN p_job IS NULL OR p_job = ANY (b.failed_job_ids) THEN b.failed_job_ids
                                  ELSE b.failed_job_ids || p_job END,
            catch_at = coalesce(b.catch_at, now())
        WHERE b.id = p_batch
        RETURNING * INTO v_batch;
        IF v_first THEN
            PERFORM pgq._batch_callback(v_batch, 'catch',
                                        jsonb_build_object('failed_job', p_job, 'exception', p_exception));
            IF NOT coalesce((v_batch.options ->> 'allow_failures')::boolean, false) AND v_batch.cancelled_at IS NULL THEN
                UPDATE pgq.job_batches b SET cancelled_at = now() WHERE b.id = p_batch;
                PERFORM pgq._batch_cancel_waiting(p_batch,
                    format('cancelled: batch %s failed at job %s and does not allow failures', p_batch, p_job));
                v_zero := true;  -- settle sums the shards: it finds out
            END IF;
        END IF;
    END IF;
    IF v_zero THEN
        PERFORM pgq._batch_settle(p_batch);
    END IF;
END;
$$;


--
-- Name: FUNCTION _batch_members_ended(p_batch uuid, p_members uuid[], p_outcome text, p_job uuid, p_exception text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._batch_members_ended(p_batch uuid, p_members uuid[], p_outcome text, p_job uuid, p_exception text) IS 'Counts ended members of a batch in their shards; the first failure queues catch_job and, without allow_failures, cancels the batch (S75); settles the batch when a shard reached 0 (S76).';


--
-- Name: _batch_settle(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._batch_settle(p_batch uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_batch  pgq.job_batches;
    v_counts record;
BEGIN
    SELECT * INTO v_batch FROM pgq.job_batches b WHERE b.id = p_batch FOR UPDATE;
    SELECT coalesce(sum(c.pending), 0) AS pending, coalesce(sum(c.failed), 0) AS failed,
           coalesce(sum(c.cancelled), 0) AS cancelled
    INTO v_counts
    FROM pgq.batch_counts c WHERE c.batch_id = p_batch;
    IF v_counts.pending > 0 THEN
        RETURN;
    END IF;
    UPDATE pgq.job_batches b SET finished_at = coalesce(b.finished_at, now()) WHERE b.id = p_batch;
    IF v_batch.then_at IS NULL AND v_counts.failed = 0 AND v_counts.cancelled = 0 AND v_batch.cancelled_at IS NULL THEN
        UPDATE pgq.job_batches b SET then_at = now() WHERE b.id = p_batch;
        PERFORM pgq._batch_callback(v_batch, 'then');
    END IF;
    IF v_batch.finally_at IS NULL THEN
        UPDATE pgq.job_batches b SET finally_at = now() WHERE b.id = p_batch;
        PERFORM pgq._batch_callback(v_batch, 'finally');
    END IF;
END;
$$;


--
-- Name: FUNCTION _batch_settle(p_batch uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._batch_settle(p_batch uuid) IS 'Finds whether a batch has ended, under its row''s lock, and queues then_job and finally_job once each (S73, S75).';


--
-- Name: _batch_shard(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._batch_shard(p_member uuid) RETURNS smallint
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (hashtext(p_member::text) & 15)::smallint;
END;
$$;


--
-- Name: FUNCTION _batch_shard(p_member uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._batch_shard(p_member uuid) IS 'The pgq.batch_counts shard (0-15) a batch member counts in: its id hashed.';


--
-- Name: _batches_prune(interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._batches_prune(p_older_than interval) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_count bigint;
    v_n     bigint;
BEGIN
    WITH gone AS (
        DELETE FROM pgq.job_chains c
        WHERE c.state <> 'running' AND c.finished_at < now() - p_older_than
          AND NOT EXISTS (SELECT FROM pgq.failed_jobs f WHERE f.chain_id = c.id)
        RETURNING c.id
    ), ends AS (
        DELETE FROM pgq.job_ends e WHERE e.chain_id IN (SELECT g.id FROM gone g)
    )
    SELECT count(*) INTO v_count FROM gone;
    WITH gone AS (
        DELETE FROM pgq.job_batches b
        WHERE b.finished_at < now() - p_older_than
          AND NOT EXISTS (SELECT FROM pgq.batch_counts c WHERE c.batch_id = b.id AND c.pending > 0)
          AND NOT EXISTS (SELECT FROM pgq.failed_jobs f WHERE f.batch_id = b.id)
        RETURNING b.id
    ), ends AS (
        -- its callbacks' ends carry its id as chain_id (S97)
        DELETE FROM pgq.job_ends e WHERE e.batch_id IN (SELECT g.id FROM gone g) OR e.chain_id IN (SELECT g.id FROM gone g)
    )
    SELECT count(*) INTO v_n FROM gone;
    RETURN v_count + v_n;
END;
$$;


--
-- Name: FUNCTION _batches_prune(p_older_than interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._batches_prune(p_older_than interval) IS 'Retention: deletes batches and chains that ended more than older_than ago and have no failed job left to retry.';


--
-- Name: _bury(pgq.jobs, text, timestamp with time zone, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._bury(p_job pgq.jobs, p_exception text, p_now timestamp with time zone, p_detail text DEFAULT NULL::text, p_hint text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    DELETE FROM pgq.jobs j WHERE j.uuid = p_job.uuid;
    PERFORM pgq._release_owned(ARRAY[p_job.unique_key], ARRAY[p_job.unique_token],  -- S21: released when it fails for good
                               ARRAY[p_job.debounce_key], ARRAY[p_job.debounce_token]);
    INSERT INTO pgq.failed_jobs
        (uuid, queue, payload, exception, failed_at, job, attempts, priority, handler, tries, backoff,
         max_exceptions, timeout, fail_on_timeout, retry_until, unique_key, unique_token, unique_until,
         debounce_key, debounce_token, middleware, dispatched_at, batch_id, chain_id, chain_step,
         exception_detail, exception_hint)
    VALUES (p_job.uuid, p_job.queue, p_job.payload, p_exception, p_now, p_job.job, p_job.attempts,
            p_job.priority, p_job.handler, p_job.tries, p_job.backoff, p_job.max_exceptions, p_job.timeout,
            p_job.fail_on_timeout, p_job.retry_until, p_job.unique_key, p_job.unique_token, p_job.unique_until,
            p_job.debounce_key, p_job.debounce_token, p_job.middleware, p_job.created_at,
            p_job.batch_id, p_job.chain_id, p_job.chain_step, nullif(p_detail, ''), nullif(p_hint, ''))
    ON CONFLICT (uuid) DO UPDATE
        SET queue = EXCLUDED.queue, payload = EXCLUDED.payload, exception = EXCLUDED.exception,
            failed_at = EXCLUDED.failed_at, attempts = EXCLUDED.attempts,
            exception_detail = EXCLUDED.exception_detail, exception_hint = EXCLUDED.exception_hint;
    IF p_job.batch_id IS NOT NULL OR p_job.chain_id IS NOT NULL THEN
        -- its chain stops and on_failure is queued; its batch counts a failure (S71, S75)
        PERFORM pgq._record_ends('failed', ARRAY[p_job.uuid], ARRAY[p_job.batch_id], ARRAY[p_job.chain_id],
                                 ARRAY[p_job.chain_step], p_exception);
    END IF;
    PERFORM pg_notify('pgq_events', json_build_object(
        'event', 'job_failed', 'uuid', p_job.uuid, 'job', p_job.job, 'queue', p_job.queue)::text);
END;
$$;


--
-- Name: FUNCTION _bury(p_job pgq.jobs, p_exception text, p_now timestamp with time zone, p_detail text, p_hint text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._bury(p_job pgq.jobs, p_exception text, p_now timestamp with time zone, p_detail text, p_hint text) IS 'Fails a job for good: pgq.failed_jobs row (with the exception''s DETAIL and HINT, S88), locks released, job_failed event (S17).';


--
-- Name: attempts; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.attempts (
    id bigint NOT NULL,
    job_uuid uuid NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    attempt integer NOT NULL,
    worker text,
    lease_token uuid,
    reserved_at timestamp with time zone,
    started_at timestamp with time zone,
    finished_at timestamp with time zone NOT NULL,
    outcome text NOT NULL,
    middleware text,
    exception text,
    delay integer,
    final boolean DEFAULT false NOT NULL,
    rejected_calls text[],
    exception_detail text,
    exception_hint text,
    CONSTRAINT attempts_outcome_check CHECK ((outcome = ANY (ARRAY['succeeded'::text, 'failed'::text, 'released'::text, 'turned_away'::text, 'timed_out'::text, 'lease_expired'::text, 'debounced'::text, 'exhausted'::text, 'interrupted'::text, 'cancelled'::text])))
);


--
-- Name: TABLE attempts; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.attempts IS 'Attempt history (S19): one row per pickup of a job. Append-only; pruned by pgq.prune.';


--
-- Name: COLUMN attempts.started_at; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.attempts.started_at IS 'When the handler started; NULL when it never ran.';


--
-- Name: COLUMN attempts.delay; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.attempts.delay IS 'Seconds the job was sent back to wait after this attempt (backoff or release); NULL when it did not go back.';


--
-- Name: COLUMN attempts.final; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.attempts.final IS 'True when this attempt ended the job for good (it went to pgq.failed_jobs).';


--
-- Name: COLUMN attempts.rejected_calls; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.attempts.rejected_calls IS 'Calls made with this attempt''s lease token after the lease was lost (S15 fencing).';


--
-- Name: COLUMN attempts.exception_detail; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.attempts.exception_detail IS 'The DETAIL of the attempt''s exception, when it had one (S88).';


--
-- Name: COLUMN attempts.exception_hint; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.attempts.exception_hint IS 'The HINT of the attempt''s exception, when it had one (S88).';


--
-- Name: _cancel(pgq.jobs, timestamp with time zone, boolean); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._cancel(p_job pgq.jobs, p_now timestamp with time zone, p_started boolean) RETURNS pgq.attempts
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    DELETE FROM pgq.jobs j WHERE j.uuid = p_job.uuid;
    PERFORM pgq._release_owned(ARRAY[p_job.unique_key], ARRAY[p_job.unique_token],
                               ARRAY[p_job.debounce_key], ARRAY[p_job.debounce_token]);
    PERFORM pgq._release_overlap(ARRAY[p_job.uuid], p_job.overlap_keys);
    IF p_job.batch_id IS NOT NULL OR p_job.chain_id IS NOT NULL THEN  -- its chain stops; its batch counts it (S74)
        PERFORM pgq._record_ends('cancelled', ARRAY[p_job.uuid], ARRAY[p_job.batch_id], ARRAY[p_job.chain_id],
                                 ARRAY[p_job.chain_step], 'cancelled by ' || coalesce(p_job.cancel_requested_by, session_user));
    END IF;
    RETURN pgq._record(p_job, 'cancelled', p_now,
                       'cancelled by ' || coalesce(p_job.cancel_requested_by, session_user), p_started => p_started);
END;
$$;


--
-- Name: FUNCTION _cancel(p_job pgq.jobs, p_now timestamp with time zone, p_started boolean); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._cancel(p_job pgq.jobs, p_now timestamp with time zone, p_started boolean) IS 'Ends a job as cancelled: deleted with its locks, the attempt recorded as cancelled; not a failure.';


--
-- Name: _ceiling(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._ceiling(p_name text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _ceiling(p_name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._ceiling(p_name text) IS 'The database''s ceiling on a dispatch''s options (max_tries, max_retry_for, min_backoff, max_timeout): its ALTER DATABASE setting pgq.<name>, never the session''s, or the default (S91).';


--
-- Name: _ceiling_int(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._ceiling_int(p_name text) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;


--
-- Name: FUNCTION _ceiling_int(p_name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._ceiling_int(p_name text) IS 'pgq._ceiling as a whole number; 22023 naming the setting when it is not one (S91).';


--
-- Name: _ceiling_interval(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._ceiling_interval(p_name text) RETURNS interval
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _ceiling_interval(p_name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._ceiling_interval(p_name text) IS 'pgq._ceiling as a positive interval; 22023 naming the setting when it is not one (S91).';


--
-- Name: job_chains; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.job_chains (
    id uuid NOT NULL,
    batch_id uuid,
    steps jsonb NOT NULL,
    on_failure text,
    queue text,
    step integer DEFAULT 1 NOT NULL,
    job_uuid uuid,
    state text DEFAULT 'running'::text NOT NULL,
    exception text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    job_uuids uuid[] DEFAULT '{}'::uuid[] NOT NULL,
    traceparent text,
    tracestate text,
    CONSTRAINT job_chains_state_check CHECK ((state = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text, 'cancelled'::text])))
);


--
-- Name: TABLE job_chains; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.job_chains IS 'Chains (pgq.dispatch_chain): the steps, the step now queued and its job, the state; exception says why a failed or cancelled chain stopped.';


--
-- Name: COLUMN job_chains.job_uuids; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_chains.job_uuids IS 'Each step''s job uuid in step order, once queued; NULL for a step dropped as a duplicate (S97).';


--
-- Name: COLUMN job_chains.traceparent; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_chains.traceparent IS 'The W3C traceparent of the chain''s dispatch, which each step carries (S107).';


--
-- Name: COLUMN job_chains.tracestate; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_chains.tracestate IS 'The W3C tracestate of the chain''s dispatch, which each step carries (S107).';


--
-- Name: _chain_dispatch_step(pgq.job_chains, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._chain_dispatch_step(p_chain pgq.job_chains, p_step integer) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_uuid uuid;
BEGIN
    v_uuid := (pgq._dispatch_entries(jsonb_build_array(p_chain.steps -> (p_step - 1)), p_chain.queue,
                                     p_chain.batch_id, p_chain.id, p_step, p_ceilings => p_step = 1,
                                     p_traceparent => p_chain.traceparent, p_tracestate => p_chain.tracestate))[1];
    UPDATE pgq.job_chains c
    SET step = p_step, job_uuid = v_uuid,
        job_uuids = (c.job_uuids || array_fill(NULL::uuid, ARRAY[greatest(p_step - 1 - cardinality(c.job_uuids), 0)]))[1:p_step - 1]
                    || v_uuid
    WHERE c.id = p_chain.id;
    RETURN v_uuid;
END;
$$;


--
-- Name: FUNCTION _chain_dispatch_step(p_chain pgq.job_chains, p_step integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._chain_dispatch_step(p_chain pgq.job_chains, p_step integer) IS 'Queues one step of a chain; NULL when it was dropped as a unique duplicate.';


--
-- Name: _chain_start(uuid, jsonb, text, text, uuid, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._chain_start(p_id uuid, p_steps jsonb, p_on_failure text, p_queue text, p_batch uuid, p_traceparent text DEFAULT NULL::text, p_tracestate text DEFAULT NULL::text) RETURNS pgq.job_chains
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_chain pgq.job_chains;
    v_uuid  uuid;
BEGIN
    -- Steps after the first are queued later, inside other jobs' completions. Queue them
    -- now on trial and roll the trial back (PQ999 below), so that a step pgq.dispatch
    -- would refuse (a bad option, a timeout of 0, a missing key) is refused here, by the
    -- caller, with nothing written.
    IF jsonb_array_length(p_steps) > 1 THEN
        BEGIN
            PERFORM pgq._dispatch_entries(p_steps - 0, p_queue, NULL, NULL, NULL);
            RAISE EXCEPTION 'pgq: trial dispatch of a chain''s steps' USING ERRCODE = 'PQ999';
        EXCEPTION WHEN SQLSTATE 'PQ999' THEN
            NULL;  -- every step can be queued
        END;
    END IF;
    -- Every step carries the trace context of the chain's dispatch (S107): a later one is
    -- queued in a worker's transaction.
    INSERT INTO pgq.job_chains (id, batch_id, steps, on_failure, queue, traceparent, tracestate)
    SELECT p_id, p_batch, p_steps, p_on_failure, p_queue, t.traceparent, t.tracestate
    FROM pgq._trace_context(p_traceparent, p_tracestate) t
    RETURNING * INTO v_chain;
    v_uuid := pgq._chain_dispatch_step(v_chain, 1);
    IF v_uuid IS NULL THEN
        PERFORM pgq._chain_stop(v_chain, 'failed', NULL, pgq._dropped_message(v_chain, 1));
        v_chain.state := 'failed';
    END IF;
    v_chain.job_uuid := v_uuid;
    RETURN v_chain;
END;
$$;


--
-- Name: FUNCTION _chain_start(p_id uuid, p_steps jsonb, p_on_failure text, p_queue text, p_batch uuid, p_traceparent text, p_tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._chain_start(p_id uuid, p_steps jsonb, p_on_failure text, p_queue text, p_batch uuid, p_traceparent text, p_tracestate text) IS 'Writes a chain and queues its first step (S70); the chain fails at once when that step is a dropped duplicate (S72).';


--
-- Name: _chain_stop(pgq.job_chains, text, uuid, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._chain_stop(p_chain pgq.job_chains, p_state text, p_job uuid, p_exception text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    UPDATE pgq.job_chains c SET state = p_state, exception = p_exception, finished_at = now()
    WHERE c.id = p_chain.id;
    IF p_state = 'failed' AND p_chain.on_failure IS NOT NULL THEN
        PERFORM pgq._dispatch_callback('on_failure', p_chain.on_failure,
            jsonb_build_object('chain_id', p_chain.id, 'batch_id', p_chain.batch_id, 'step', p_chain.step,
                               'job', p_chain.steps -> (p_chain.step - 1) ->> 'job', 'job_uuid', p_job,
                               'exception', p_exception),
            p_chain.queue, NULL, p_chain.id);
    END IF;
END;
$$;


--
-- Name: FUNCTION _chain_stop(p_chain pgq.job_chains, p_state text, p_job uuid, p_exception text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._chain_stop(p_chain pgq.job_chains, p_state text, p_job uuid, p_exception text) IS 'Ends a chain as failed (dispatching on_failure) or cancelled (S71, S72, S74).';


--
-- Name: _check_ceilings(integer, integer[], integer, interval, integer, interval, integer, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_ceilings(p_tries integer, p_backoff integer[], p_timeout integer, p_retry_for interval, p_max_tries integer, p_max_retry_for interval, p_min_backoff integer, p_max_timeout integer) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_max_tries < 0 THEN
        RAISE EXCEPTION 'pgq: max_tries must be >= 0 (0 allows unlimited tries), got %', p_max_tries USING ERRCODE = '22023';
    END IF;
    IF p_max_retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: max_retry_for must be positive, got %', p_max_retry_for USING ERRCODE = '22023';
    END IF;
    IF p_min_backoff < 0 THEN
        RAISE EXCEPTION 'pgq: min_backoff must be seconds >= 0, got %', p_min_backoff USING ERRCODE = '22023';
    END IF;
    IF p_max_timeout NOT BETWEEN 1 AND pgq._max_timeout() THEN
        RAISE EXCEPTION 'pgq: max_timeout must be seconds from 1 to %, got %', pgq._max_timeout(), p_max_timeout
            USING ERRCODE = '22023';
    END IF;
    IF p_max_tries > 0 AND p_tries NOT BETWEEN 1 AND p_max_tries THEN
        RAISE EXCEPTION 'pgq: tries % is beyond the class''s own max_tries %', p_tries, p_max_tries USING ERRCODE = '22023';
    END IF;
    IF p_retry_for > p_max_retry_for THEN
        RAISE EXCEPTION 'pgq: retry_for % is beyond the class''s own max_retry_for %', p_retry_for, p_max_retry_for
            USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT FROM unnest(p_backoff) b WHERE b < p_min_backoff) THEN
        RAISE EXCEPTION 'pgq: backoff % is below the class''s own min_backoff %', p_backoff, p_min_backoff
            USING ERRCODE = '22023';
    END IF;
    IF p_timeout = 0 AND p_max_timeout IS NOT NULL OR p_timeout > p_max_timeout THEN
        RAISE EXCEPTION 'pgq: timeout % is beyond the class''s own max_timeout %',
            CASE WHEN p_timeout = 0 THEN '0 (none)' ELSE p_timeout::text END, p_max_timeout
            USING ERRCODE = '22023';
    END IF;
END;
$$;


--
-- Name: FUNCTION _check_ceilings(p_tries integer, p_backoff integer[], p_timeout integer, p_retry_for interval, p_max_tries integer, p_max_retry_for interval, p_min_backoff integer, p_max_timeout integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_ceilings(p_tries integer, p_backoff integer[], p_timeout integer, p_retry_for interval, p_max_tries integer, p_max_retry_for interval, p_min_backoff integer, p_max_timeout integer) IS 'Raises 22023 for a bad ceiling of a job class, or class settings beyond their own ceilings (S90).';


--
-- Name: _check_classes(integer, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_classes(worker_timeout integer, worker_tries integer) RETURNS SETOF pgq.check_finding
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH classes AS (
        SELECT c.*, coalesce(c.timeout, worker_timeout) AS eff_timeout,
               coalesce(c.tries, worker_tries) AS eff_tries,
               coalesce(c.backoff, '{0}') AS eff_backoff,
               coalesce(q.retry_after, pgq._default_retry_after()) AS retry_after,
               pgq._middleware(c.middleware, 'without_overlapping') AS overlap
        FROM pgq.job_classes c
        LEFT JOIN pgq.queues q ON q.name = c.queue
    )
    SELECT 'job ' || c.name AS object, 'timeout_zero' AS rule,
           'timeout 0 disables the handler timeout for this job' AS detail,
           format('pgq.define_job(%L, timeout => N) with N below retry_after %s', c.name, c.retry_after) AS fix, c.queue
    FROM classes c WHERE c.timeout = 0
    UNION ALL
    SELECT 'job ' || c.name, 'timeout_reaches_retry_after',
           format('timeout %s >= retry_after %s of queue %s: the lease can end while the handler still runs',
                  c.eff_timeout, c.retry_after, c.queue),
           format('lower the timeout below %s, or raise the queue''s retry_after above %s', c.retry_after, c.eff_timeout), c.queue
    FROM classes c WHERE c.eff_timeout >= c.retry_after AND c.eff_timeout > 0
    UNION ALL
    SELECT 'job ' || c.name, 'unique_for_shorter_than_retries',
           CASE WHEN c.eff_tries = 0 THEN format('unique_for %s with unlimited tries: the lock expires while the job can still retry', c.unique_for)
                ELSE format('unique_for %s < backoffs + tries × timeout = %s s: the lock can expire during a backoff and let a second copy in',
                            c.unique_for, pgq._retry_window(c.eff_tries, c.eff_backoff, c.eff_timeout)) END,
           format('raise unique_for above %s s plus a realistic queue wait',
                  coalesce(pgq._retry_window(c.eff_tries, c.eff_backoff, c.eff_timeout)::text, 'the retry_for window')),
           c.queue
    FROM classes c
    WHERE c.unique_for IS NOT NULL
      AND (CASE WHEN c.eff_tries = 0 THEN c.retry_for IS NULL OR c.unique_for < c.retry_for
                ELSE extract(epoch FROM c.unique_for) < pgq._retry_window(c.eff_tries, c.eff_backoff, c.eff_timeout) END)
    UNION ALL
    SELECT 'job ' || c.name, 'backoff_past_retry_for',
           format('backoffs of %s retries add up to %s s, past retry_for %s: the last attempt is picked up after the deadline and fails with MaxAttemptsExceeded instead of its own exception',
                  c.eff_tries - 1, pgq._retry_window(c.eff_tries, c.eff_backoff, 0), c.retry_for),
           'shorten the backoffs or lengthen retry_for', c.queue
    FROM classes c
    WHERE c.retry_for IS NOT NULL AND c.eff_tries > 1
      AND pgq._retry_window(c.eff_tries, c.eff_backoff, 0) > extract(epoch FROM c.retry_for)
    UNION ALL
    SELECT 'job ' || c.name, 'expire_after_outside_timeout_retry_after',
           format('without_overlapping expire_after %s is not between timeout %s and retry_after %s',
                  c.overlap ->> 'expire_after', c.eff_timeout, c.retry_after),
           format('set expire_after above %s (the lock must outlive the handler) and below %s (a killed worker''s lock must be gone before its job comes back)',
                  c.eff_timeout, c.retry_after),
           c.queue
    FROM classes c
    WHERE c.overlap ? 'expire_after'
      AND NOT ((c.overlap ->> 'expire_after')::int > c.eff_timeout AND (c.overlap ->> 'expire_after')::int < c.retry_after)
    UNION ALL
    SELECT 'job ' || c.name, 'backoff_longer_than_tries',
           format('backoff has %s entries but tries %s allows only %s retries: the last %s are never used',
                  cardinality(c.backoff), c.eff_tries, c.eff_tries - 1, cardinality(c.backoff) - (c.eff_tries - 1)),
           'trim the backoff or raise tries', c.queue
    FROM classes c
    WHERE c.backoff IS NOT NULL AND c.eff_tries > 0 AND cardinality(c.backoff) > c.eff_tries - 1 AND cardinality(c.backoff) > 1
    UNION ALL
    SELECT 'job ' || c.name, 'uneven_backoff_behind_release_middleware',
           format('backoff %s is not flat, and release-based middleware (%s) moves the backoff index: the first real failure can wait %s s',
                  c.backoff, (SELECT string_agg(k, ', ') FROM jsonb_array_elements(c.middleware) m, jsonb_object_keys(m) k
                              WHERE k IN ('without_overlapping', 'rate_limited')),
                  (SELECT max(b) FROM unnest(c.backoff) b)),
           'use a flat backoff (one value) for jobs behind without_overlapping or rate_limited', c.queue
    FROM classes c
    WHERE cardinality(c.backoff) > 1
      AND (SELECT count(DISTINCT b) FROM unnest(c.backoff) b) > 1
      AND EXISTS (SELECT FROM jsonb_array_elements(c.middleware) m
                  WHERE m ? 'rate_limited' OR (m ? 'without_overlapping' AND NOT coalesce((m -> 'without_overlapping' ->> 'dont_release')::boolean, false)))
    UNION ALL
    SELECT 'job ' || c.name, 'handler_without_search_path',
           format('handler %s pins no search_path, and none was pinned for it when the class was defined: it runs with search_path pg_catalog, pg_temp, so a table or function it names without its schema is not found',
                  c.handler),
           format('ALTER FUNCTION %s SET search_path = %s, or define the class again from a session whose search_path has the schemas it uses',
                  c.handler, (SELECT quote_ident(n.nspname) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = c.handler)),
           c.queue
    FROM classes c
    WHERE c.handler IS NOT NULL AND EXISTS (SELECT FROM pg_proc p WHERE p.oid = c.handler)
      AND pgq._proc_search_path(c.handler) IS NULL
      AND NOT EXISTS (SELECT FROM pgq.handler_search_paths h WHERE h.handler = c.handler);
$$;


--
-- Name: FUNCTION _check_classes(worker_timeout integer, worker_tries integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_classes(worker_timeout integer, worker_tries integer) IS 'pgq.check''s findings about the job classes, given the worker''s --timeout and --tries (S16, S86).';


--
-- Name: _check_concurrency(jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_concurrency(p_cfg jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF jsonb_typeof(p_cfg -> 'limit') = 'number' AND (p_cfg ->> 'limit')::numeric BETWEEN 1 AND 1000
       AND (p_cfg ->> 'limit')::numeric % 1 = 0 THEN
        RETURN;
    END IF;
    IF jsonb_typeof(p_cfg -> 'limit') = 'string' THEN
        IF NOT EXISTS (SELECT FROM pgq.concurrency_limits l WHERE l.name = p_cfg ->> 'limit') THEN
            RAISE EXCEPTION 'pgq: concurrency_limited names limit %, which is not defined (pgq.define_concurrency)',
                quote_literal(p_cfg ->> 'limit') USING ERRCODE = '22023';
        END IF;
        IF p_cfg ? 'key' THEN
            RAISE EXCEPTION 'pgq: concurrency_limited with a named limit takes "by", not "key": the limit''s name is its key'
                USING ERRCODE = '22023';
        END IF;
        RETURN;
    END IF;
    RAISE EXCEPTION 'pgq: concurrency_limited "limit" must be a whole number from 1 to 1000 or the name of a pgq.define_concurrency limit, got %',
        coalesce(left((p_cfg -> 'limit')::text, 100), 'nothing') USING ERRCODE = '22023';
END;
$$;


--
-- Name: FUNCTION _check_concurrency(p_cfg jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_concurrency(p_cfg jsonb) IS 'Raises 22023 unless a concurrency_limited "limit" is 1-1000 handlers or a defined limit''s name (S99).';


--
-- Name: _check_dispatch_limits(integer, integer, jsonb[], interval, timestamp with time zone, interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_dispatch_limits(p_timeout integer, p_priority integer, p_payloads jsonb[], p_delay interval, p_retry_until timestamp with time zone, p_retry_for interval) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_payloads IS NULL OR array_position(p_payloads, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: payload must be JSON, got NULL' USING ERRCODE = '22023';
    END IF;
    IF p_timeout = 0 THEN
        RAISE EXCEPTION 'pgq: a dispatch cannot set timeout 0 (no timeout): declare it on the job class (pgq.define_job)'
            USING ERRCODE = '22023';
    END IF;
    IF p_priority NOT BETWEEN -100 AND 100 THEN
        RAISE EXCEPTION 'pgq: priority must be between -100 and 100, got %', p_priority USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT FROM unnest(p_payloads) p WHERE pg_column_size(p) > 8388608) THEN
        RAISE EXCEPTION 'pgq: a payload is at most 8 MiB, got one of % bytes',
            (SELECT max(pg_column_size(p)) FROM unnest(p_payloads) p) USING ERRCODE = '22023';
    END IF;
    IF p_delay < interval '0' THEN
        RAISE EXCEPTION 'pgq: delay must not be negative, got %', p_delay USING ERRCODE = '22023';
    END IF;
    IF p_retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: retry_for must be positive, got %', p_retry_for USING ERRCODE = '22023';
    END IF;
    IF p_retry_until IS NOT NULL AND p_retry_for IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: give retry_until or retry_for, not both' USING ERRCODE = '22023';
    END IF;
END;
$$;


--
-- Name: FUNCTION _check_dispatch_limits(p_timeout integer, p_priority integer, p_payloads jsonb[], p_delay interval, p_retry_until timestamp with time zone, p_retry_for interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_dispatch_limits(p_timeout integer, p_priority integer, p_payloads jsonb[], p_delay interval, p_retry_until timestamp with time zone, p_retry_for interval) IS 'Raises 22023 for what a dispatch may not choose: no payload, timeout 0, a priority outside -100..100, a payload over 8 MiB, a negative delay, a retry_for not positive or with retry_until (S43).';


--
-- Name: _check_entries(text, jsonb, boolean); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_entries(p_what text, p_entries jsonb, p_chains boolean) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_entry jsonb;
    v_bad   text;
    v_n     int := 0;
BEGIN
    IF jsonb_typeof(p_entries) IS DISTINCT FROM 'array' OR jsonb_array_length(p_entries) = 0 THEN
        RAISE EXCEPTION 'pgq: % must be a non-empty JSON array, got %', p_what, left(coalesce(p_entries::text, 'NULL'), 200)
            USING ERRCODE = '22023';
    END IF;
    FOR v_entry IN SELECT e FROM jsonb_array_elements(p_entries) e LOOP
        v_n := v_n + 1;
        IF p_chains AND jsonb_typeof(v_entry) = 'object' AND v_entry ? 'chain' THEN
            SELECT string_agg(k, ', ') INTO v_bad FROM jsonb_object_keys(v_entry) k WHERE k NOT IN ('chain', 'on_failure', 'queue');
            IF v_bad IS NOT NULL THEN
                RAISE EXCEPTION 'pgq: % entry % is a chain and cannot have %', p_what, v_n, v_bad USING ERRCODE = '22023';
            END IF;
            PERFORM pgq._check_entries(format('%s entry %s: chain', p_what, v_n), v_entry -> 'chain', false);
            CONTINUE;
        END IF;
        IF jsonb_typeof(v_entry) IS DISTINCT FROM 'object' OR jsonb_typeof(v_entry -> 'job') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION 'pgq: % entry % needs a "job" name, got %', p_what, v_n, left(v_entry::text, 200)
                USING ERRCODE = '22023';
        END IF;
        SELECT string_agg(k, ', ') INTO v_bad FROM jsonb_object_keys(v_entry) k
        WHERE k NOT IN ('job', 'payload', 'queue', 'delay', 'tries', 'backoff', 'retry_until', 'max_exceptions',
                        'timeout', 'fail_on_timeout', 'priority', 'unique_key', 'unique_for', 'unique_until',
                        'debounce_key', 'debounce_for', 'debounce_max_wait', 'middleware', 'retry_for');
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION 'pgq: % entry % (%) has unknown keys: %', p_what, v_n, v_entry ->> 'job', v_bad
                USING ERRCODE = '22023';
        END IF;
        PERFORM pgq._check_name('job', v_entry ->> 'job');
    END LOOP;
END;
$$;


--
-- Name: FUNCTION _check_entries(p_what text, p_entries jsonb, p_chains boolean); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_entries(p_what text, p_entries jsonb, p_chains boolean) IS 'Raises 22023 unless every entry is {"job", "payload", dispatch options} (or, in a batch, {"chain": [...]}).';


--
-- Name: _check_live(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_live() RETURNS SETOF pgq.check_finding
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH live AS (
        SELECT * FROM pgq._live_workers()
    ), waiting AS (
        SELECT j.queue, sum(j.n) AS n FROM pgq._live_counted j WHERE j.reserved_at IS NULL GROUP BY j.queue
    ), nameless AS (
        -- jobs with no SQL handler, by name and queue
        SELECT j.job, j.queue, sum(j.n) AS n
        FROM pgq._live_counted j
        WHERE j.reserved_at IS NULL AND j.handler IS NULL
        GROUP BY j.job, j.queue
    )
    SELECT 'queue ' || w.queue AS object, 'queue_unserved' AS rule,
           format('%s in queue %s, and no live worker serves it (none of the workers seen in the last %s s lists it)',
                  CASE WHEN w.n = 1 THEN '1 job waits' ELSE w.n || ' jobs wait' END, w.queue, extract(epoch FROM pgq._worker_ttl())::int),
           format('start a worker for it (pgq-worker work --queue %s), or dispatch to a queue a worker serves', w.queue),
           w.queue
    FROM waiting w
    WHERE NOT EXISTS (SELECT FROM live l WHERE w.queue = ANY (l.queues))
    UNION ALL
    SELECT 'job ' || x.job, 'job_unhandled',
           format('%s in queue %s, but no job class defines %s and no live worker has a handler for it: a worker that takes one fails it with "no handler"',
                  CASE WHEN x.n = 1 THEN '1 job named ' || x.job || ' waits' ELSE x.n || ' jobs named ' || x.job || ' wait' END,
                  x.queue, x.job),
           format('define it (pgq.define_job(%L, handler => ''schema.function'')), run a worker that registers a Go handler for it, or cancel the jobs if the name is a typo', x.job),
           x.queue
    FROM nameless x
    WHERE NOT EXISTS (SELECT FROM pgq.job_classes c WHERE c.name = x.job)
      AND NOT EXISTS (SELECT FROM live l WHERE x.job = ANY (l.handlers))
    UNION ALL
    SELECT st.kind || ' ' || st.id || coalesce(' (' || st.name || ')', ''), st.kind || '_stalled',
           format('job %s (%s) has been ready in queue %s for %s s, longer than its retry_after of %s s, and no job of the %s ran since%s',
                  st.job_uuid, st.job, st.queue, floor(extract(epoch FROM now() - st.waiting_since)), st.retry_after, st.kind,
                  CASE WHEN st.paused THEN ': the queue is paused' ELSE '' END),
           CASE WHEN st.paused THEN format('resume the queue: pgq.resume_queue(%L)', st.queue)
                ELSE format('run a worker on queue %s (pgq-worker work --queue %s), or look for a middleware turning its jobs away', st.queue, st.queue) END,
           st.queue
    FROM pgq.stalled st;
$$;


--
-- Name: FUNCTION _check_live(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_live() IS 'pgq.check''s findings about what waits now: unserved queues, unhandled job names (S87) and stalled chains and batches (S95).';


--
-- Name: _check_middleware(jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_middleware(p_middleware jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_mw   jsonb;
    v_name text;
    v_cfg  jsonb;
    v_bad  text;
BEGIN
    IF p_middleware IS NULL THEN
        RETURN;
    END IF;
    IF jsonb_typeof(p_middleware) <> 'array' THEN
        RAISE EXCEPTION 'pgq: middleware must be a JSON array, got %', left(p_middleware::text, 200) USING ERRCODE = '22023';
    END IF;
    IF jsonb_array_length(p_middleware) > (pgq._middleware_bounds()).entries THEN
        RAISE EXCEPTION 'pgq: a job may carry at most % middleware entries, got %',
            (pgq._middleware_bounds()).entries, jsonb_array_length(p_middleware) USING ERRCODE = '22023';
    END IF;
    FOR v_mw IN SELECT m FROM jsonb_array_elements(p_middleware) m LOOP
        IF jsonb_typeof(v_mw) <> 'object' OR (SELECT count(*) FROM jsonb_object_keys(v_mw)) <> 1 THEN
            RAISE EXCEPTION 'pgq: each middleware must be an object with one key, got %', v_mw USING ERRCODE = '22023';
        END IF;
        SELECT k, v_mw -> k INTO v_name, v_cfg FROM jsonb_object_keys(v_mw) k;
        IF jsonb_typeof(v_cfg) <> 'object' THEN
            RAISE EXCEPTION 'pgq: settings of % must be an object, got %', v_name, v_cfg USING ERRCODE = '22023';
        END IF;
        SELECT string_agg(k, ', ') INTO v_bad FROM jsonb_object_keys(v_cfg) k
        WHERE k <> ALL (CASE v_name
            WHEN 'without_overlapping' THEN ARRAY['key', 'by', 'release_after', 'expire_after', 'dont_release', 'shared']
            WHEN 'rate_limited' THEN ARRAY['limit', 'by']
            WHEN 'throttles_exceptions' THEN ARRAY['max_exceptions', 'decay', 'backoff', 'key', 'by', 'when']
            WHEN 'concurrency_limited' THEN ARRAY['limit', 'key', 'by']
            ELSE NULL END);
        IF v_name NOT IN ('without_overlapping', 'rate_limited', 'throttles_exceptions', 'concurrency_limited') THEN
            RAISE EXCEPTION 'pgq: unknown middleware %: use without_overlapping, rate_limited, throttles_exceptions or concurrency_limited',
                quote_literal(v_name) USING ERRCODE = '22023';
        END IF;
        IF v_bad IS NOT NULL THEN
            RAISE EXCEPTION 'pgq: unknown setting(s) % of %', v_bad, v_name USING ERRCODE = '22023';
        END IF;
        IF v_cfg ? 'by' AND (jsonb_typeof(v_cfg -> 'by') <> 'array' OR jsonb_array_length(v_cfg -> 'by') = 0
                             OR jsonb_array_length(v_cfg -> 'by') > (pgq._middleware_bounds()).by_fields) THEN
            RAISE EXCEPTION 'pgq: % "by" must be an array of 1 to % payload field names, got %',
                v_name, (pgq._middleware_bounds()).by_fields, left((v_cfg -> 'by')::text, 200) USING ERRCODE = '22023';
        END IF;
        IF EXISTS (SELECT FROM jsonb_each(v_cfg) e
                   WHERE e.key IN ('release_after', 'expire_after', 'max_exceptions', 'decay', 'backoff')
                     AND (jsonb_typeof(e.value) <> 'number' OR (e.value)::numeric < 0 OR (e.value)::numeric % 1 <> 0
                          OR (e.value)::numeric > 2147483647
                          OR (e.key IN ('expire_after', 'max_exceptions', 'decay') AND (e.value)::numeric < 1))) THEN
            RAISE EXCEPTION 'pgq: % has a bad number in %: release_after and backoff are whole seconds >= 0, expire_after, decay and max_exceptions whole numbers >= 1',
                v_name, v_cfg USING ERRCODE = '22023';
        END IF;
        IF v_cfg ? 'key' AND jsonb_typeof(v_cfg -> 'key') <> 'string' THEN
            RAISE EXCEPTION 'pgq: % "key" must be a string, got %', v_name, v_cfg -> 'key' USING ERRCODE = '22023';
        END IF;
        IF v_cfg ? 'by' AND EXISTS (SELECT FROM jsonb_array_elements(v_cfg -> 'by') f WHERE jsonb_typeof(f) <> 'string') THEN
            RAISE EXCEPTION 'pgq: % "by" must name payload fields as strings, got %', v_name, v_cfg -> 'by' USING ERRCODE = '22023';
        END IF;
        IF v_name = 'rate_limited' AND NOT EXISTS (SELECT FROM pgq.rate_limits l WHERE l.name = v_cfg ->> 'limit') THEN
            RAISE EXCEPTION 'pgq: rate_limited names limit %, which is not defined (pgq.define_limit)',
                coalesce(quote_literal(v_cfg ->> 'limit'), 'NULL') USING ERRCODE = '22023';
        END IF;
        IF v_name = 'concurrency_limited' THEN
            PERFORM pgq._check_concurrency(v_cfg);
        END IF;
        IF v_name = 'throttles_exceptions' AND v_cfg ? 'when' THEN
            PERFORM pgq._check_regex(v_cfg -> 'when');
        END IF;
    END LOOP;
    -- Two concurrency_limited entries that count one key (one named limit, or the
    -- class's own, by the same key or fields) would each find the other's place taken,
    -- and their job would wait for ever (S99).
    SELECT string_agg(c.entry::text, ' and ') INTO v_bad
    FROM (SELECT m -> 'concurrency_limited' AS entry,
                 count(*) OVER (PARTITION BY CASE jsonb_typeof(m #> '{concurrency_limited,limit}')
                                                  WHEN 'string' THEN m #>> '{concurrency_limited,limit}' END,
                                             m #> '{concurrency_limited,key}', m #> '{concurrency_limited,by}') AS n
          FROM jsonb_array_elements(p_middleware) m
          WHERE m ? 'concurrency_limited') c
    WHERE c.n > 1;
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: concurrency_limited entries % count the same key: give one entry for it', v_bad
            USING ERRCODE = '22023';
    END IF;
END;
$$;


--
-- Name: FUNCTION _check_middleware(p_middleware jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_middleware(p_middleware jsonb) IS 'Raises 22023 naming the bad entry of a middleware declaration (S26-S29).';


--
-- Name: _check_middleware_keys(text, jsonb, jsonb[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_middleware_keys(p_job text, p_middleware jsonb, p_payloads jsonb[]) RETURNS jsonb[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    v_names    text[];
    v_cfgs     jsonb[];
    v_payloads jsonb[];
    v_keys     text[];
    v_max      int := pgq._max_key_bytes();
    v_m        int := jsonb_array_length(p_middleware);
    v_over     int;                   -- the first payload whose keys take too many bytes, and their bytes
    v_bytes    bigint;
BEGIN
    -- payload-major: element (p - 1) * v_m + m is middleware m of payload p
    SELECT array_agg(m.key ORDER BY p.n, mw.n), array_agg(m.value ORDER BY p.n, mw.n), array_agg(p.payload ORDER BY p.n, mw.n)
    INTO v_names, v_cfgs, v_payloads
    FROM jsonb_array_elements(p_middleware) WITH ORDINALITY mw(m, n), jsonb_each(mw.m) m,
         unnest(p_payloads) WITH ORDINALITY p(payload, n);
    IF v_names IS NULL THEN
        RETURN array_fill(NULL::jsonb, ARRAY[coalesce(cardinality(p_payloads), 0)]);
    END IF;
    v_keys := pgq._middleware_keys(array_fill(p_job, ARRAY[cardinality(v_names)]), v_names, v_cfgs, v_payloads);
    PERFORM pgq._key(CASE WHEN v_names[i] = 'rate_limited' OR jsonb_typeof(v_cfgs[i] -> 'limit') = 'string'
                          THEN v_cfgs[i] ->> 'limit' ELSE p_job END, NULL,
                     pgq._texts(v_cfgs[i] -> 'by'), v_payloads[i])
    FROM generate_subscripts(v_keys, 1) i
    WHERE v_keys[i] IS NULL
    ORDER BY (i - 1) % v_m, i;
    PERFORM pgq._key(p_job, v_keys[i], NULL, v_payloads[i])
    FROM generate_subscripts(v_keys, 1) i
    WHERE octet_length(v_keys[i]) > v_max
    ORDER BY (i - 1) % v_m, i;
    SELECT (i - 1) / v_m + 1, sum(octet_length(v_keys[i])) INTO v_over, v_bytes
    FROM generate_subscripts(v_keys, 1) i
    GROUP BY (i - 1) / v_m
    HAVING sum(octet_length(v_keys[i])) > (pgq._middleware_bounds()).key_bytes
    ORDER BY 1
    LIMIT 1;
    IF v_over IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: the middleware keys of % (payload %) take % bytes, more than the % a job may carry',
            p_job, v_over, v_bytes, (pgq._middleware_bounds()).key_bytes
            USING ERRCODE = '22023', HINT = 'Key jobs by an id, not by a large payload field.';
    END IF;
    RETURN ARRAY(SELECT to_jsonb(v_keys[(p - 1) * v_m + 1 : p * v_m]) FROM generate_series(1, cardinality(p_payloads)) p ORDER BY p);
END;
$$;


--
-- Name: FUNCTION _check_middleware_keys(p_job text, p_middleware jsonb, p_payloads jsonb[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_middleware_keys(p_job text, p_middleware jsonb, p_payloads jsonb[]) IS 'Raises 22023 when a middleware key of a dispatch cannot be computed or is too long (S38); returns the keys, a JSON array per payload.';


--
-- Name: _check_name(text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_name(p_kind text, p_name text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
BEGIN
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9_][A-Za-z0-9_.:/\\-]{0,99}$' THEN
        RAISE EXCEPTION 'pgq: invalid % name %: use 1-100 letters, digits, _ . : / - (starting with a letter, digit or _)',
            p_kind, coalesce(quote_literal(p_name), 'NULL')
            USING ERRCODE = '22023';
    END IF;
END;
$_$;


--
-- Name: FUNCTION _check_name(p_kind text, p_name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_name(p_kind text, p_name text) IS 'Raises 22023 unless a queue, job or limit name is 1-100 letters, digits, _ . : / - (S4).';


--
-- Name: _check_regex(jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_regex(p_when jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF jsonb_typeof(p_when) <> 'string' OR length(p_when #>> '{}') > 512 THEN
        RAISE EXCEPTION 'pgq: throttles_exceptions "when" must be a regular expression of at most 512 characters, got %', left(p_when::text, 80)
            USING ERRCODE = '22023';
    END IF;
    IF (p_when #>> '{}') ~ '(^|[^\\])(\\\\)*\\[1-9]' THEN
        RAISE EXCEPTION 'pgq: throttles_exceptions "when" % uses a back-reference, which can take exponential time: match without it', p_when
            USING ERRCODE = '22023';
    END IF;
    PERFORM '' ~ (p_when #>> '{}');
EXCEPTION WHEN invalid_regular_expression THEN
    RAISE EXCEPTION 'pgq: throttles_exceptions "when" is not a valid regular expression: %', p_when #>> '{}'
        USING ERRCODE = '22023';
END;
$$;


--
-- Name: FUNCTION _check_regex(p_when jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_regex(p_when jsonb) IS 'Raises 22023 unless a throttles_exceptions "when" is a valid regular expression of at most 512 characters without back-references (S38).';


--
-- Name: _check_settings(integer, integer[], integer, integer, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_settings(p_tries integer, p_backoff integer[], p_max_exceptions integer, p_timeout integer, p_priority integer DEFAULT 0) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _check_settings(p_tries integer, p_backoff integer[], p_max_exceptions integer, p_timeout integer, p_priority integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_settings(p_tries integer, p_backoff integer[], p_max_exceptions integer, p_timeout integer, p_priority integer) IS 'Raises 22023 for bad tries, backoff, max_exceptions, timeout (negative, or longer than PostgreSQL can set) or priority (S4, S92).';


--
-- Name: _check_unique_debounce(boolean, boolean, interval, text, interval, interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._check_unique_debounce(p_unique boolean, p_debounce boolean, p_unique_for interval, p_unique_until text, p_debounce_for interval, p_debounce_max_wait interval) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _check_unique_debounce(p_unique boolean, p_debounce boolean, p_unique_for interval, p_unique_until text, p_debounce_for interval, p_debounce_max_wait interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._check_unique_debounce(p_unique boolean, p_debounce boolean, p_unique_for interval, p_unique_until text, p_debounce_for interval, p_debounce_max_wait interval) IS 'Raises 22023 for bad unique or debounce settings, or both at once (S25).';


--
-- Name: _circuit_key(text, jsonb, jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._circuit_key(p_job text, p_payload jsonb, p_cfg jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN CASE WHEN p_cfg IS NOT NULL THEN pgq._middleware_key(p_job, 'throttles_exceptions', p_cfg, p_payload) END;
END;
$$;


--
-- Name: FUNCTION _circuit_key(p_job text, p_payload jsonb, p_cfg jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._circuit_key(p_job text, p_payload jsonb, p_cfg jsonb) IS 'The key of a throttles_exceptions circuit (S29).';


--
-- Name: _clear_circuits(text[], jsonb[], jsonb[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._clear_circuits(p_jobs text[], p_breakers jsonb[], p_payloads jsonb[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
BEGIN
    DELETE FROM pgq.circuits c
    WHERE c.key = ANY (pgq._middleware_keys(p_jobs, array_fill('throttles_exceptions'::text, ARRAY[cardinality(p_breakers)]),
                                            p_breakers, p_payloads));
END;
$$;


--
-- Name: FUNCTION _clear_circuits(p_jobs text[], p_breakers jsonb[], p_payloads jsonb[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._clear_circuits(p_jobs text[], p_breakers jsonb[], p_payloads jsonb[]) IS 'Clears the throttles_exceptions circuits of jobs that succeeded (S29).';


--
-- Name: _concurrency_lock_ids(text, text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._concurrency_lock_ids(p_kind text, p_names text[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN pgq._lock_ids(ARRAY(SELECT 'concurrency_' || p_kind || ':' || u.name
                               FROM unnest(p_names) WITH ORDINALITY u(name, n) ORDER BY u.n));
END;
$$;


--
-- Name: FUNCTION _concurrency_lock_ids(p_kind text, p_names text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._concurrency_lock_ids(p_kind text, p_names text[]) IS 'The advisory lock ids of named concurrency limits (''limit'') or of concurrency_limited keys (''key''), one per name (S99).';


--
-- Name: _concurrency_room(integer[], integer[], integer[], text[], bigint[], boolean[], text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._concurrency_room(p_lim integer[], p_places integer[], p_at integer[], p_names text[], p_ids bigint[], p_live boolean[], p_leased text[]) RETURNS integer[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN ARRAY(
        SELECT k.lim - (SELECT count(*) FROM generate_series(k.at, k.at + k.places - 1) i WHERE p_live[i])
               - CASE WHEN k.places > k.lim THEN
                     (SELECT count(DISTINCT o.key) FROM pgq.overlap_locks o
                      WHERE o.key = ANY (p_names[k.at + k.lim : k.at + k.places - 1])
                        AND CASE WHEN o.key <> ALL (coalesce(p_leased, '{}'))  -- (a CASE: only those places' locks are tried)
                                 THEN NOT pg_try_advisory_xact_lock(p_ids[array_position(p_names, o.key)]) ELSE false END)
                 ELSE 0 END
        FROM unnest(p_lim, p_places, p_at) WITH ORDINALITY k(lim, places, at, n)
        ORDER BY k.n);
END;
$$;


--
-- Name: FUNCTION _concurrency_room(p_lim integer[], p_places integer[], p_at integer[], p_names text[], p_ids bigint[], p_live boolean[], p_leased text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._concurrency_room(p_lim integer[], p_places integer[], p_at integer[], p_names text[], p_ids bigint[], p_live boolean[], p_leased text[]) IS 'Admission: how many more handlers each concurrency_limited key may start: its limit less those holding its places, above the limit too (S99).';


--
-- Name: _concurrency_waiting(text[], integer[], integer[], uuid[], text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._concurrency_waiting(p_keys text[], p_lims integer[], p_places integer[], p_uuids uuid[], p_wkeys text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF cardinality(p_uuids) > 0 THEN
        PERFORM set_config('pgq.concurrency_waits',
            concat_ws(',', nullif(current_setting('pgq.concurrency_waits', true), ''),
                      (SELECT string_agg(jsonb_build_array(w.key, p_lims[k.n], p_places[k.n], w.uuid)::text, ',')
                       FROM unnest(p_wkeys, p_uuids) w(key, uuid), array_position(p_keys, w.key) k(n))),
            true);
    END IF;
END;
$$;


--
-- Name: FUNCTION _concurrency_waiting(p_keys text[], p_lims integer[], p_places integer[], p_uuids uuid[], p_wkeys text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._concurrency_waiting(p_keys text[], p_lims integer[], p_places integer[], p_uuids uuid[], p_wkeys text[]) IS 'Admission: notes the jobs left waiting for a concurrency_limited place, for the check at the reserve''s end (S99).';


--
-- Name: _concurrency_waits(timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._concurrency_waits(p_now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
DECLARE
    v_w     jsonb := '[' || nullif(current_setting('pgq.concurrency_waits', true), '') || ']';
    v_key   text[]; v_lim int[]; v_places int[]; v_alone boolean[];  -- per key
    v_at    int[];
    v_names text[]; v_ids bigint[]; v_live boolean[];  -- per place
    v_held  text[];
    v_room  int[];
    v_ready text[];    -- the keys whose jobs may not wait: a place is free,
    v_later text[];    -- or an end is under way
    v_queue text;
BEGIN
    IF v_w IS NULL THEN
        RETURN;
    END IF;
    PERFORM set_config('pgq.concurrency_waits', '', true);
    SELECT array_agg(k.key ORDER BY k.key), array_agg(k.lim ORDER BY k.key), array_agg(k.places ORDER BY k.key)
    INTO v_key, v_lim, v_places
    FROM (SELECT w ->> 0 AS key, max((w ->> 1)::int) AS lim, max((w ->> 2)::int) AS places
          FROM jsonb_array_elements(v_w) w GROUP BY 1) k;
    v_alone := ARRAY(SELECT pg_try_advisory_xact_lock(l.id)
                     FROM unnest(pgq._concurrency_lock_ids('wake', v_key)) WITH ORDINALITY l(id, n) ORDER BY l.n);
    -- The places as pgq._admit_concurrency counts them, read after the locks.
    v_at := ARRAY(SELECT 1 + (sum(k.places) OVER (ORDER BY k.n) - k.places)::int
                  FROM unnest(v_places) WITH ORDINALITY k(places, n) ORDER BY k.n);
    v_names := ARRAY(SELECT '#' || k.key || '#' || i FROM unnest(v_key, v_places) WITH ORDINALITY k(key, places, n),
                                                         generate_series(1, k.places) i ORDER BY k.n, i);
    v_ids := pgq._overlap_lock_ids(v_names);
    v_held := ARRAY(SELECT o.key FROM pgq.overlap_locks o WHERE o.key = ANY (v_names) AND o.expires_at > p_now);
    v_live := ARRAY(SELECT p.name = ANY (v_held) FROM unnest(v_names) WITH ORDINALITY p(name, n) ORDER BY p.n);
    v_room := pgq._concurrency_room(v_lim, v_places, v_at, v_names, v_ids, v_live, v_held);
    v_later := ARRAY(SELECT k.key FROM unnest(v_key, v_alone) k(key, alone) WHERE NOT k.alone);
    v_ready := ARRAY(SELECT k.key FROM unnest(v_key, v_lim, v_at, v_alone, v_room) WITH ORDINALITY k(key, lim, at, alone, room, n)
                     WHERE k.alone AND k.room > 0
                       AND EXISTS (SELECT FROM generate_series(k.at, k.at + k.lim - 1) i
                                   WHERE NOT v_live[i] AND pg_try_advisory_xact_lock(v_ids[i])));
    IF cardinality(v_ready) + cardinality(v_later) = 0 THEN
        RETURN;
    END IF;
    FOR v_queue IN
        WITH ready AS (
            UPDATE pgq.jobs j
            SET available_at = CASE WHEN w.key = ANY (v_ready) THEN least(p_now, now()) ELSE now() + interval '0.1 s' END,
                waits_on = NULL
            FROM (SELECT w ->> 0 AS key, (w ->> 3)::uuid AS uuid FROM jsonb_array_elements(v_w) w) w
            WHERE (w.key = ANY (v_ready) OR w.key = ANY (v_later)) AND j.uuid = w.uuid AND j.waits_on = w.key
              AND j.reserved_at IS NULL
            RETURNING j.queue, w.key = ANY (v_ready) AS woken
        )
        SELECT DISTINCT r.queue FROM ready r WHERE r.woken
    LOOP
        PERFORM pgq._notify(v_queue);
    END LOOP;
END;
$$;


--
-- Name: FUNCTION _concurrency_waits(p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._concurrency_waits(p_now timestamp with time zone) IS 'Reserve''s last stage: the jobs it left waiting for a concurrency_limited place are made ready again unless the key''s wake lock is held alone and no place is free (S99).';


--
-- Name: _cron_every_problem(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._cron_every_problem(p_text text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;


--
-- Name: FUNCTION _cron_every_problem(p_text text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._cron_every_problem(p_text text) IS 'Why the duration of a cron @every is invalid (whole numbers with units, whole seconds, at least 1 s), or NULL (S60).';


--
-- Name: _cron_item(integer, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._cron_item(p_field integer, p_item text, OUT problem text, OUT bits bigint, OUT star boolean) RETURNS record
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION _cron_item(p_field integer, p_item text, OUT problem text, OUT bits bigint, OUT star boolean); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._cron_item(p_field integer, p_item text, OUT problem text, OUT bits bigint, OUT star boolean) IS 'One item of a cron field''s list: the values it matches as bits, whether it is a star as robfig/cron counts one, or why it is invalid (S60).';


--
-- Name: _cron_number(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._cron_number(p_text text) RETURNS numeric
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
    SELECT CASE WHEN p_text ~ '^[+-]?[0-9]+$'
                 AND p_text::numeric BETWEEN -9223372036854775808 AND 9223372036854775807
                THEN p_text::numeric END;
$_$;


--
-- Name: FUNCTION _cron_number(p_text text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._cron_number(p_text text) IS 'A cron field''s number as robfig/cron reads it (optional sign, digits, within int64), or NULL.';


--
-- Name: _cron_problem(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._cron_problem(p_expr text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION _cron_problem(p_expr text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._cron_problem(p_expr text) IS 'Why a cron expression or macro is invalid, or NULL when it is valid: robfig/cron''s syntax with an optional seconds field, as the workers parse it (S60). Computes no times.';


--
-- Name: _default_retry_after(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._default_retry_after() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT 90 $$;


--
-- Name: FUNCTION _default_retry_after(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._default_retry_after() IS 'The lease in seconds of a queue with no pgq.queues row: 90 (S14).';


--
-- Name: job_classes; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.job_classes (
    name text NOT NULL,
    queue text DEFAULT 'default'::text NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean DEFAULT false NOT NULL,
    retry_for interval,
    unique_for interval,
    unique_until text,
    unique_by text[],
    debounce_for interval,
    debounce_by text[],
    debounce_max_wait interval,
    middleware jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    max_tries integer,
    max_retry_for interval,
    min_backoff integer,
    max_timeout integer,
    isolated boolean DEFAULT false NOT NULL,
    CONSTRAINT job_classes_max_retry_for_check CHECK ((max_retry_for > '00:00:00'::interval)),
    CONSTRAINT job_classes_max_timeout_check CHECK (((max_timeout >= 1) AND (max_timeout <= 2147483))),
    CONSTRAINT job_classes_max_tries_check CHECK ((max_tries >= 0)),
    CONSTRAINT job_classes_min_backoff_check CHECK ((min_backoff >= 0)),
    CONSTRAINT job_classes_unique_until_check CHECK ((unique_until = ANY (ARRAY['processed'::text, 'processing'::text])))
);


--
-- Name: TABLE job_classes; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.job_classes IS 'Job class declarations (pgq.define_job). Copied into each job at dispatch (S1).';


--
-- Name: COLUMN job_classes.max_tries; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_classes.max_tries IS 'The most tries a dispatch may set beyond the class''s own (0: unlimited allowed); NULL: the database''s pgq.max_tries (S90, S91).';


--
-- Name: COLUMN job_classes.max_retry_for; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_classes.max_retry_for IS 'The latest deadline a dispatch may set beyond the class''s own, from the dispatch; NULL: the database''s pgq.max_retry_for (S90, S91).';


--
-- Name: COLUMN job_classes.min_backoff; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_classes.min_backoff IS 'The shortest backoff entry, in seconds, a dispatch may set; NULL: the database''s pgq.min_backoff (S90, S91).';


--
-- Name: COLUMN job_classes.max_timeout; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_classes.max_timeout IS 'The longest timeout, in seconds, a dispatch may set beyond the class''s own; NULL: the database''s pgq.max_timeout (S90, S91).';


--
-- Name: COLUMN job_classes.isolated; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_classes.isolated IS 'The worker runs each job of this class in a transaction of its own, never grouped with other SQL jobs (S112).';


--
-- Name: _define_job(text, text, regprocedure, integer, integer[], integer, integer, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, integer, interval, integer, integer, text, boolean); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._define_job(name text, queue text, handler regprocedure, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text, isolated boolean) RETURNS pgq.job_classes
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_class pgq.job_classes;
BEGIN
    PERFORM pgq._check_name('job', _define_job.name);
    PERFORM pgq._check_name('queue', _define_job.queue);
    PERFORM pgq._check_settings(_define_job.tries, _define_job.backoff, _define_job.max_exceptions, _define_job.timeout);
    IF _define_job.retry_for <= interval '0' THEN
        RAISE EXCEPTION 'pgq: retry_for must be positive, got %', _define_job.retry_for USING ERRCODE = '22023';
    END IF;
    PERFORM pgq._check_unique_debounce(
        _define_job.unique_for IS NOT NULL OR _define_job.unique_until IS NOT NULL OR _define_job.unique_by IS NOT NULL,
        _define_job.debounce_for IS NOT NULL OR _define_job.debounce_by IS NOT NULL OR _define_job.debounce_max_wait IS NOT NULL,
        _define_job.unique_for, _define_job.unique_until, _define_job.debounce_for, _define_job.debounce_max_wait);
    PERFORM pgq._check_middleware(_define_job.middleware);
    PERFORM pgq._check_ceilings(_define_job.tries, _define_job.backoff, _define_job.timeout, _define_job.retry_for,
                                _define_job.max_tries, _define_job.max_retry_for, _define_job.min_backoff,
                                _define_job.max_timeout);
    INSERT INTO pgq.job_classes AS c
        (name, queue, handler, tries, backoff, max_exceptions, timeout, fail_on_timeout, retry_for,
         unique_for, unique_until, unique_by, debounce_for, debounce_by, debounce_max_wait, middleware,
         max_tries, max_retry_for, min_backoff, max_timeout, isolated)
    VALUES (_define_job.name, _define_job.queue, _define_job.handler, _define_job.tries, _define_job.backoff,
            _define_job.max_exceptions, _define_job.timeout, coalesce(_define_job.fail_on_timeout, false),
            _define_job.retry_for, _define_job.unique_for,
            CASE WHEN _define_job.unique_for IS NOT NULL OR _define_job.unique_by IS NOT NULL
                 THEN coalesce(_define_job.unique_until, 'processed') END,
            _define_job.unique_by, _define_job.debounce_for, _define_job.debounce_by, _define_job.debounce_max_wait,
            _define_job.middleware, _define_job.max_tries, _define_job.max_retry_for, _define_job.min_backoff,
            _define_job.max_timeout, coalesce(_define_job.isolated, false))
    ON CONFLICT ON CONSTRAINT job_classes_pkey DO UPDATE
        SET queue = EXCLUDED.queue, handler = EXCLUDED.handler, tries = EXCLUDED.tries,
            backoff = EXCLUDED.backoff, max_exceptions = EXCLUDED.max_exceptions,
            timeout = EXCLUDED.timeout, fail_on_timeout = EXCLUDED.fail_on_timeout,
            retry_for = EXCLUDED.retry_for, unique_for = EXCLUDED.unique_for,
            unique_until = EXCLUDED.unique_until, unique_by = EXCLUDED.unique_by,
            debounce_for = EXCLUDED.debounce_for, debounce_by = EXCLUDED.debounce_by,
            debounce_max_wait = EXCLUDED.debounce_max_wait, middleware = EXCLUDED.middleware,
            max_tries = EXCLUDED.max_tries, max_retry_for = EXCLUDED.max_retry_for,
            min_backoff = EXCLUDED.min_backoff, max_timeout = EXCLUDED.max_timeout,
            isolated = EXCLUDED.isolated, updated_at = now()
    RETURNING * INTO v_class;
    -- The handler's search_path (S86): the one given, for a handler that pins none; the
    -- last definition that names a handler decides it, for every class that names it.
    IF _define_job.handler IS NOT NULL AND _define_job.search_path IS NOT NULL THEN
        INSERT INTO pgq.handler_search_paths AS h (handler, search_path)
        VALUES (_define_job.handler, _define_job.search_path)
        ON CONFLICT ON CONSTRAINT handler_search_paths_pkey DO UPDATE
            SET search_path = EXCLUDED.search_path, defined_by = EXCLUDED.defined_by, defined_at = EXCLUDED.defined_at;
    ELSIF _define_job.handler IS NOT NULL THEN
        DELETE FROM pgq.handler_search_paths h WHERE h.handler = _define_job.handler;
    END IF;
    RETURN v_class;
END;
$$;


--
-- Name: FUNCTION _define_job(name text, queue text, handler regprocedure, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text, isolated boolean); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._define_job(name text, queue text, handler regprocedure, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text, isolated boolean) IS 'The privileged part of pgq.define_job: upserts the class, its handler resolved by the caller, and the search_path that handler runs with when it pins none (S86).';


--
-- Name: _describe_class(pgq.job_classes, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._describe_class(p_class pgq.job_classes, p_search_path text) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT concat_ws(', ',
        format('job class %s: queue %s', p_class.name, p_class.queue),
        CASE WHEN p_class.handler IS NULL THEN 'no SQL handler (a Go worker''s handler runs it)'
             ELSE format('handler %s', p_class.handler) END,
        CASE WHEN p_search_path IS NOT NULL THEN format('run with search_path %s', p_search_path) END,
        CASE WHEN p_class.tries IS NOT NULL THEN format('tries %s', p_class.tries) END,
        CASE WHEN p_class.backoff IS NOT NULL THEN format('backoff %s', p_class.backoff) END,
        CASE WHEN p_class.max_exceptions IS NOT NULL THEN format('max_exceptions %s', p_class.max_exceptions) END,
        CASE WHEN p_class.timeout IS NOT NULL THEN format('timeout %s s', p_class.timeout) END,
        CASE WHEN p_class.fail_on_timeout THEN 'fail_on_timeout' END,
        CASE WHEN p_class.isolated THEN 'isolated (each job runs in a transaction of its own)' END,
        CASE WHEN p_class.retry_for IS NOT NULL THEN format('retry_for %s', p_class.retry_for) END,
        CASE WHEN p_class.unique_for IS NOT NULL OR p_class.unique_by IS NOT NULL
             THEN format('unique until %s%s%s', p_class.unique_until,
                         CASE WHEN p_class.unique_for IS NOT NULL THEN format(' for %s', p_class.unique_for) END,
                         CASE WHEN p_class.unique_by IS NOT NULL THEN format(' by %s', p_class.unique_by) END) END,
        CASE WHEN p_class.debounce_for IS NOT NULL OR p_class.debounce_by IS NOT NULL
             THEN format('debounced%s%s%s',
                         CASE WHEN p_class.debounce_for IS NOT NULL THEN format(' for %s', p_class.debounce_for) END,
                         CASE WHEN p_class.debounce_by IS NOT NULL THEN format(' by %s', p_class.debounce_by) END,
                         CASE WHEN p_class.debounce_max_wait IS NOT NULL THEN format(' at most %s', p_class.debounce_max_wait) END) END,
        CASE WHEN num_nonnulls(p_class.max_tries, p_class.max_retry_for, p_class.min_backoff, p_class.max_timeout) > 0
             THEN 'a dispatch may set ' || concat_ws(', ',
                 CASE WHEN p_class.max_tries IS NOT NULL THEN format('tries up to %s', p_class.max_tries) END,
                 CASE WHEN p_class.max_retry_for IS NOT NULL THEN format('retry_for up to %s', p_class.max_retry_for) END,
                 CASE WHEN p_class.min_backoff IS NOT NULL THEN format('backoff from %s s', p_class.min_backoff) END,
                 CASE WHEN p_class.max_timeout IS NOT NULL THEN format('timeout up to %s s', p_class.max_timeout) END) END,
        CASE WHEN p_class.middleware IS NOT NULL
             THEN 'middleware ' || (SELECT string_agg(k, ', ' ORDER BY n)
                                    FROM jsonb_array_elements(p_class.middleware) WITH ORDINALITY AS m(e, n),
                                         jsonb_object_keys(m.e) k) END);
$$;


--
-- Name: FUNCTION _describe_class(p_class pgq.job_classes, p_search_path text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._describe_class(p_class pgq.job_classes, p_search_path text) IS 'A job class as one line of text: what pgq.define_job returns.';


--
-- Name: _dispatch(text, jsonb[], text, interval, integer, integer[], timestamp with time zone, integer, integer, boolean, integer, text, interval, text, text, interval, interval, jsonb, interval, uuid, uuid, integer, boolean, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._dispatch(job text, payloads jsonb[], queue text DEFAULT NULL::text, delay interval DEFAULT NULL::interval, tries integer DEFAULT NULL::integer, backoff integer[] DEFAULT NULL::integer[], retry_until timestamp with time zone DEFAULT NULL::timestamp with time zone, max_exceptions integer DEFAULT NULL::integer, timeout integer DEFAULT NULL::integer, fail_on_timeout boolean DEFAULT NULL::boolean, priority integer DEFAULT 0, unique_key text DEFAULT NULL::text, unique_for interval DEFAULT NULL::interval, unique_until text DEFAULT NULL::text, debounce_key text DEFAULT NULL::text, debounce_for interval DEFAULT NULL::interval, debounce_max_wait interval DEFAULT NULL::interval, middleware jsonb DEFAULT NULL::jsonb, retry_for interval DEFAULT NULL::interval, p_batch_id uuid DEFAULT NULL::uuid, p_chain_id uuid DEFAULT NULL::uuid, p_chain_step integer DEFAULT NULL::integer, p_ceilings boolean DEFAULT true, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text) RETURNS SETOF uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_class     pgq.job_classes;
    v_queue     text;
    v_job       pgq.jobs;
    v_unique    boolean;
    v_debounce  boolean;
    v_uuids     uuid[];
    v_keys      jsonb[];  -- the middleware keys of each payload (S38), kept in the row
    v_max_exceptions int;  -- set by the ceilings (S90)
BEGIN
    PERFORM pgq._check_name('job', _dispatch.job);
    SELECT * INTO v_class FROM pgq.job_classes c WHERE c.name = _dispatch.job;
    v_queue := coalesce(_dispatch.queue, v_class.queue, 'default');
    PERFORM pgq._check_name('queue', v_queue);
    PERFORM pgq._check_settings(_dispatch.tries, _dispatch.backoff, _dispatch.max_exceptions,
                                _dispatch.timeout, _dispatch.priority);
    PERFORM pgq._check_dispatch_limits(_dispatch.timeout, _dispatch.priority, _dispatch.payloads,
                                       _dispatch.delay, _dispatch.retry_until, _dispatch.retry_for);
    IF _dispatch.p_ceilings AND num_nonnulls(_dispatch.tries, _dispatch.backoff, _dispatch.retry_until, _dispatch.retry_for,
                                             _dispatch.max_exceptions, _dispatch.timeout) > 0 THEN
        v_max_exceptions := pgq._dispatch_ceilings(_dispatch.job, v_class, _dispatch.tries, _dispatch.backoff,
                                                   coalesce(_dispatch.retry_until, now() + _dispatch.retry_for),
                                                   _dispatch.max_exceptions, _dispatch.timeout);
    END IF;
    v_unique := _dispatch.unique_key IS NOT NULL OR _dispatch.unique_for IS NOT NULL
             OR _dispatch.unique_until IS NOT NULL OR v_class.unique_until IS NOT NULL;
    v_debounce := _dispatch.debounce_key IS NOT NULL OR _dispatch.debounce_for IS NOT NULL
               OR _dispatch.debounce_max_wait IS NOT NULL
               OR v_class.debounce_for IS NOT NULL OR v_class.debounce_by IS NOT NULL;
    PERFORM pgq._check_unique_debounce(v_unique, v_debounce, _dispatch.unique_for, _dispatch.unique_until,
                                       _dispatch.debounce_for, _dispatch.debounce_max_wait);
    PERFORM pgq._check_middleware(_dispatch.middleware);
    IF _dispatch.traceparent IS NOT NULL OR _dispatch.tracestate IS NOT NULL
       OR current_setting('pgq.traceparent', true) <> '' THEN
        SELECT t.traceparent, t.tracestate INTO v_job.traceparent, v_job.tracestate
        FROM pgq._trace_context(_dispatch.traceparent, _dispatch.tracestate) t;
    END IF;

    -- The frozen settings (S1), shared by every payload.
    v_job.job := _dispatch.job;
    v_job.batch_id := _dispatch.p_batch_id;
    v_job.chain_id := _dispatch.p_chain_id;
    v_job.chain_step := _dispatch.p_chain_step;
    v_job.queue := v_queue;
    v_job.priority := _dispatch.priority;
    v_job.handler := v_class.handler;
    v_job.tries := coalesce(_dispatch.tries, v_class.tries);
    v_job.backoff := coalesce(_dispatch.backoff, v_class.backoff);
    v_job.max_exceptions := coalesce(v_max_exceptions, _dispatch.max_exceptions, v_class.max_exceptions);
    v_job.timeout := coalesce(_dispatch.timeout, v_class.timeout);
    v_job.fail_on_timeout := coalesce(_dispatch.fail_on_timeout, v_class.fail_on_timeout, false);
    -- retry_for is turned into the retry_until timestamp here, by the database's clock (S1)
    v_job.retry_until := coalesce(_dispatch.retry_until, now() + _dispatch.retry_for, now() + v_class.retry_for);
    v_job.available_at := now() + coalesce(_dispatch.delay, interval '0');
    v_job.middleware := coalesce(_dispatch.middleware, v_class.middleware);
    -- Every key of the middleware must be computable from every payload and storable:
    -- a bad key would otherwise only surface when the job is reserved or reported (S38).
    IF v_job.middleware IS NOT NULL THEN
        v_keys := pgq._check_middleware_keys(_dispatch.job, v_job.middleware, _dispatch.payloads);
    END IF;

    IF NOT v_unique AND NOT v_debounce THEN
        -- Every payload becomes a job, so the uuids made here are the answer, with no
        -- RETURNING clause to pay for.
        v_uuids := pgq._uuid7s(cardinality(_dispatch.payloads));
        PERFORM pgq._store(v_job, _dispatch.payloads, v_uuids, v_keys);
        RETURN QUERY SELECT unnest(v_uuids);
    ELSE
        RETURN QUERY SELECT * FROM pgq._dispatch_keyed(v_job, v_class, _dispatch.payloads, v_keys, v_unique,
            _dispatch.unique_key, _dispatch.unique_for, _dispatch.unique_until,
            _dispatch.debounce_key, _dispatch.debounce_for, _dispatch.debounce_max_wait, _dispatch.delay);
    END IF;

    IF coalesce(_dispatch.delay, interval '0') = interval '0' AND NOT v_debounce THEN
        PERFORM pgq._notify(v_queue);
    END IF;
END;
$$;


--
-- Name: FUNCTION _dispatch(job text, payloads jsonb[], queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, p_batch_id uuid, p_chain_id uuid, p_chain_step integer, p_ceilings boolean, traceparent text, tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._dispatch(job text, payloads jsonb[], queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, p_batch_id uuid, p_chain_id uuid, p_chain_step integer, p_ceilings boolean, traceparent text, tracestate text) IS 'The body of pgq.dispatch_many, with the batch and chain the jobs belong to (S70-S76) and whether the ceilings apply (S90); returns their uuids in payload order (NULL for a unique duplicate dropped).';


--
-- Name: _dispatch_callback(text, text, jsonb, text, uuid, uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._dispatch_callback(p_kind text, p_job text, p_payload jsonb, p_queue text, p_batch uuid, p_chain uuid) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_uuid uuid;
BEGIN
    BEGIN
        SELECT u INTO v_uuid
        FROM pgq._dispatch(p_job, ARRAY[p_payload], queue => p_queue,
                           p_chain_id => coalesce(p_chain, p_batch), p_chain_step => 0) u;
    EXCEPTION WHEN OTHERS THEN
        RAISE WARNING 'pgq: callback % could not be queued: % (SQLSTATE %)', p_job, SQLERRM, SQLSTATE;
        PERFORM pg_notify('pgq_events', json_build_object('event', 'callback_failed', 'job', p_job,
            'chain_id', p_payload ->> 'chain_id', 'batch_id', p_payload ->> 'batch_id')::text);
        INSERT INTO pgq.callbacks (batch_id, chain_id, kind, job, error)
        VALUES (CASE WHEN p_chain IS NULL THEN p_batch END, p_chain, p_kind, p_job,
                format('%s (SQLSTATE %s)', SQLERRM, SQLSTATE));
        RETURN;
    END;
    INSERT INTO pgq.callbacks (batch_id, chain_id, kind, job, job_uuid, error)
    VALUES (CASE WHEN p_chain IS NULL THEN p_batch END, p_chain, p_kind, p_job, v_uuid,
            CASE WHEN v_uuid IS NULL THEN 'DroppedAsDuplicate: a unique lock on its key is held by another job' END);
END;
$$;


--
-- Name: FUNCTION _dispatch_callback(p_kind text, p_job text, p_payload jsonb, p_queue text, p_batch uuid, p_chain uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._dispatch_callback(p_kind text, p_job text, p_payload jsonb, p_queue text, p_batch uuid, p_chain uuid) IS 'Queues a chain''s on_failure or a batch callback and records it in pgq.callbacks (S97); an error becomes a WARNING, a callback_failed event and the row''s error, never a failed completion.';


--
-- Name: _dispatch_ceilings(text, pgq.job_classes, integer, integer[], timestamp with time zone, integer, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._dispatch_ceilings(p_job text, p_class pgq.job_classes, p_tries integer, p_backoff integer[], p_retry_until timestamp with time zone, p_max_exceptions integer, p_timeout integer) RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    -- Each ceiling is read only when an option goes beyond the class's own value.
    v_max_tries   int;
    v_max_for     interval;
    v_min_backoff int;
    v_max_timeout int;
    v_beyond      boolean := false;  -- the dispatch set a deadline beyond the class's own
    v_problem     text;
    v_ceiling     text;
BEGIN
    IF p_tries IS NOT NULL AND NOT coalesce(p_class.tries = 0 OR p_tries BETWEEN 1 AND p_class.tries, false) THEN
        v_max_tries := coalesce(p_class.max_tries, pgq._ceiling_int('max_tries'));
        IF NOT (v_max_tries = 0 OR p_tries BETWEEN 1 AND v_max_tries) THEN
            v_ceiling := 'max_tries';
            v_problem := format('tries %s: its ceiling is max_tries %s',
                                CASE WHEN p_tries = 0 THEN '0 (unlimited)' ELSE p_tries::text END, v_max_tries);
        END IF;
    END IF;
    IF v_problem IS NULL AND p_retry_until IS NOT NULL
       AND NOT coalesce(p_retry_until <= now() + p_class.retry_for, false) THEN
        v_beyond := true;
        v_max_for := coalesce(p_class.max_retry_for, pgq._ceiling_interval('max_retry_for'));
        IF p_retry_until > now() + v_max_for THEN
            v_ceiling := 'max_retry_for';
            v_problem := format('a retry deadline of %s: its ceiling is max_retry_for %s from now', p_retry_until, v_max_for);
        END IF;
    END IF;
    -- Within the class's own only when it has one: no class, or a class that sets none,
    -- leaves the ceiling to say (as for tries and timeout).
    IF v_problem IS NULL AND p_max_exceptions IS NOT NULL
       AND (v_beyond OR NOT coalesce(p_max_exceptions <= p_class.max_exceptions, false)) THEN
        v_max_tries := coalesce(v_max_tries, p_class.max_tries, pgq._ceiling_int('max_tries'));
        IF v_max_tries > 0 AND p_max_exceptions > v_max_tries THEN
            v_ceiling := 'max_tries';
            v_problem := format('max_exceptions %s: its ceiling is max_tries %s', p_max_exceptions, v_max_tries);
        END IF;
    END IF;
    IF v_problem IS NULL AND p_backoff IS NOT NULL AND p_backoff IS DISTINCT FROM p_class.backoff THEN
        v_min_backoff := coalesce(p_class.min_backoff, pgq._ceiling_int('min_backoff'));
        IF EXISTS (SELECT FROM unnest(p_backoff) b WHERE b < v_min_backoff) THEN
            v_ceiling := 'min_backoff';
            v_problem := format('backoff %s: its ceiling is min_backoff %s seconds for every entry', p_backoff, v_min_backoff);
        END IF;
    END IF;
    IF v_problem IS NULL AND p_timeout IS NOT NULL
       AND NOT coalesce(p_class.timeout = 0 OR p_timeout <= p_class.timeout, false) THEN
        v_max_timeout := coalesce(p_class.max_timeout, pgq._ceiling_int('max_timeout'));
        IF p_timeout > v_max_timeout THEN
            v_ceiling := 'max_timeout';
            v_problem := format('timeout %s: its ceiling is max_timeout %s seconds', p_timeout, v_max_timeout);
        END IF;
    END IF;

    IF v_problem IS NOT NULL THEN
        IF pgq._may_exceed_ceilings() THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION 'pgq: a dispatch of % may not set %', p_job, v_problem
            USING ERRCODE = '22023',
                  HINT = CASE WHEN p_class.name IS NOT NULL
                              THEN format('An admin may raise it on the job class: pgq.define_job(%L, …, %s => …).', p_job, v_ceiling)
                              ELSE format('%s has no job class: its ceiling is the database''s, which an admin sets with ALTER DATABASE %I SET pgq.%s = …, or define a class for it.',
                                          p_job, current_database(), v_ceiling) END;
    END IF;
    IF v_beyond THEN
        v_max_tries := coalesce(v_max_tries, p_class.max_tries, pgq._ceiling_int('max_tries'));
        IF v_max_tries > 0 AND NOT pgq._may_exceed_ceilings() THEN
            RETURN least(coalesce(p_max_exceptions, p_class.max_exceptions, v_max_tries), v_max_tries);
        END IF;
    END IF;
    RETURN NULL;
END;
$$;


--
-- Name: FUNCTION _dispatch_ceilings(p_job text, p_class pgq.job_classes, p_tries integer, p_backoff integer[], p_retry_until timestamp with time zone, p_max_exceptions integer, p_timeout integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._dispatch_ceilings(p_job text, p_class pgq.job_classes, p_tries integer, p_backoff integer[], p_retry_until timestamp with time zone, p_max_exceptions integer, p_timeout integer) IS 'Raises 22023 when a dispatch''s own tries, deadline, max_exceptions, backoff or timeout is looser than its class allows (S90, S91); returns the max_exceptions of a job whose deadline the dispatch set beyond its class''s.';


--
-- Name: _dispatch_entries(jsonb, text, uuid, uuid, integer, boolean, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._dispatch_entries(p_entries jsonb, p_queue text, p_batch uuid, p_chain uuid, p_step integer, p_ceilings boolean DEFAULT true, p_traceparent text DEFAULT NULL::text, p_tracestate text DEFAULT NULL::text) RETURNS uuid[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_group record;
    v_uuids uuid[];
    v_out   uuid[] := array_fill(NULL::uuid, ARRAY[jsonb_array_length(p_entries)]);
    i       int;
BEGIN
    FOR v_group IN
        SELECT e.value - 'payload' AS o,
               array_agg(coalesce(e.value -> 'payload', '{}') ORDER BY e.n) AS payloads,
               array_agg(e.n ORDER BY e.n) AS ns
        FROM jsonb_array_elements(p_entries) WITH ORDINALITY AS e(value, n)
        GROUP BY e.value - 'payload'
        ORDER BY min(e.n)
    LOOP
        v_uuids := ARRAY(SELECT pgq._dispatch(
            job => v_group.o ->> 'job',
            payloads => v_group.payloads,
            queue => coalesce(v_group.o ->> 'queue', p_queue),
            delay => pgq._json_interval(v_group.o -> 'delay'),
            tries => (v_group.o ->> 'tries')::int,
            backoff => CASE jsonb_typeof(v_group.o -> 'backoff')
                           WHEN 'array' THEN ARRAY(SELECT b::int FROM jsonb_array_elements_text(v_group.o -> 'backoff') b)
                           WHEN 'number' THEN ARRAY[(v_group.o ->> 'backoff')::int] END,
            retry_until => (v_group.o ->> 'retry_until')::timestamptz,
            max_exceptions => (v_group.o ->> 'max_exceptions')::int,
            timeout => (v_group.o ->> 'timeout')::int,
            fail_on_timeout => (v_group.o ->> 'fail_on_timeout')::boolean,
            priority => coalesce((v_group.o ->> 'priority')::int, 0),
            unique_key => v_group.o ->> 'unique_key',
            unique_for => pgq._json_interval(v_group.o -> 'unique_for'),
            unique_until => v_group.o ->> 'unique_until',
            debounce_key => v_group.o ->> 'debounce_key',
            debounce_for => pgq._json_interval(v_group.o -> 'debounce_for'),
            debounce_max_wait => pgq._json_interval(v_group.o -> 'debounce_max_wait'),
            middleware => nullif(v_group.o -> 'middleware', 'null'),
            retry_for => pgq._json_interval(v_group.o -> 'retry_for'),
            p_batch_id => p_batch, p_chain_id => p_chain, p_chain_step => p_step, p_ceilings => p_ceilings,
            traceparent => p_traceparent, tracestate => p_tracestate));
        FOR i IN 1 .. cardinality(v_uuids) LOOP
            v_out[v_group.ns[i]] := v_uuids[i];
        END LOOP;
    END LOOP;
    RETURN v_out;
END;
$$;


--
-- Name: FUNCTION _dispatch_entries(p_entries jsonb, p_queue text, p_batch uuid, p_chain uuid, p_step integer, p_ceilings boolean, p_traceparent text, p_tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._dispatch_entries(p_entries jsonb, p_queue text, p_batch uuid, p_chain uuid, p_step integer, p_ceilings boolean, p_traceparent text, p_tracestate text) IS 'Dispatches {"job", "payload", options} entries, one pgq._dispatch per set of options; uuids in entry order (NULL: dropped duplicate).';


--
-- Name: _dispatch_keyed(pgq.jobs, pgq.job_classes, jsonb[], jsonb[], boolean, text, interval, text, text, interval, interval, interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._dispatch_keyed(p_job pgq.jobs, p_class pgq.job_classes, p_payloads jsonb[], p_keys jsonb[], p_unique boolean, p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_delay interval) RETURNS SETOF uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_job          pgq.jobs := p_job;
    v_unique_for   interval := coalesce(p_unique_for, p_class.unique_for);
    v_debounce_for interval := coalesce(p_debounce_for, p_class.debounce_for);
    v_max_wait     interval := coalesce(p_debounce_max_wait, p_class.debounce_max_wait);
    v_explicit     text := CASE WHEN p_unique THEN p_unique_key ELSE p_debounce_key END;
    v_by           text[] := CASE WHEN p_unique THEN p_class.unique_by ELSE p_class.debounce_by END;
    v_n            int := cardinality(p_payloads);
    v_ukeys        text[];  -- the unique or debounce key of each payload
    v_uuids        uuid[] := pgq._uuid7s(v_n);
    v_burst        timestamptz;
BEGIN
    IF NOT p_unique AND v_debounce_for IS NULL THEN
        RAISE EXCEPTION 'pgq: a debounced dispatch of % needs debounce_for', p_job.job USING ERRCODE = '22023';
    END IF;
    -- Every payload's key in one call, as pgq._check_middleware_keys does (a call of
    -- pgq._key per payload would cost more than the rest); pgq._key raises for the
    -- first that cannot be computed or is too long (S38).
    v_ukeys := pgq._keys_or_null(array_fill(p_job.job, ARRAY[v_n]), array_fill(v_explicit, ARRAY[v_n]),
                                 array_fill(to_jsonb(v_by), ARRAY[v_n]), p_payloads);
    PERFORM pgq._key(p_job.job, v_explicit, v_by, p_payloads[k.n])
    FROM generate_subscripts(v_ukeys, 1) k(n)
    WHERE v_ukeys[k.n] IS NULL OR octet_length(v_ukeys[k.n]) > pgq._max_key_bytes()
    ORDER BY k.n;
    FOR i IN 1 .. v_n LOOP
        v_job.uuid := v_uuids[i];
        v_job.payload := p_payloads[i];
        IF p_unique THEN
            v_job.unique_key := v_ukeys[i];
            v_job.unique_token := gen_random_uuid();
            v_job.unique_until := coalesce(p_unique_until, p_class.unique_until, 'processed');
            IF NOT pgq._take_unique(v_job.unique_key, v_job.unique_token, v_job.uuid, v_unique_for) THEN
                RETURN NEXT NULL;  -- dropped: a live holder has the key (S21)
                CONTINUE;
            END IF;
        ELSE
            v_job.debounce_key := v_ukeys[i];
            v_job.debounce_token := gen_random_uuid();
            v_burst := pgq._take_debounce(v_job.debounce_key, v_job.debounce_token, v_job.uuid);
            v_job.available_at := greatest(now() + coalesce(p_delay, interval '0'),
                                           least(now() + v_debounce_for, v_burst + v_max_wait));
        END IF;
        PERFORM pgq._store(v_job, ARRAY[p_payloads[i]], ARRAY[v_job.uuid], ARRAY[p_keys[i]]);
        RETURN NEXT v_job.uuid;
    END LOOP;
END;
$$;


--
-- Name: FUNCTION _dispatch_keyed(p_job pgq.jobs, p_class pgq.job_classes, p_payloads jsonb[], p_keys jsonb[], p_unique boolean, p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_delay interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._dispatch_keyed(p_job pgq.jobs, p_class pgq.job_classes, p_payloads jsonb[], p_keys jsonb[], p_unique boolean, p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_delay interval) IS 'The jobs of a unique or debounced dispatch, each behind its key (S21-S24): NULL in the answer for a unique job dropped.';


--
-- Name: schedule_entries; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.schedule_entries (
    name text NOT NULL,
    cron text NOT NULL,
    timezone text DEFAULT 'UTC'::text NOT NULL,
    job text NOT NULL,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    queue text,
    catch_up text DEFAULT 'latest'::text NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean,
    retry_for interval,
    middleware jsonb,
    version bigint DEFAULT 1 NOT NULL,
    next_run_at timestamp with time zone,
    last_tick timestamp with time zone,
    last_run_at timestamp with time zone,
    last_job_uuid uuid,
    skipped_ticks bigint DEFAULT 0 NOT NULL,
    last_error text,
    last_error_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT schedule_entries_catch_up_check CHECK ((catch_up = ANY (ARRAY['latest'::text, 'none'::text, 'all'::text])))
);


--
-- Name: TABLE schedule_entries; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.schedule_entries IS 'Schedules (S60-S66): one row per schedule, its definition and the state of its ticks; read it through the view pgq.schedules.';


--
-- Name: COLUMN schedule_entries.cron; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.schedule_entries.cron IS 'Cron expression (5 fields, or 6 with seconds first) or macro (@hourly, @every 30s, ...), validated by pgq._cron_problem.';


--
-- Name: COLUMN schedule_entries.version; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.schedule_entries.version IS 'Counts the changes that reset next_run_at (expression, time zone, resume): the fence of pgq.plan_schedule and pgq.fire_schedule.';


--
-- Name: COLUMN schedule_entries.next_run_at; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.schedule_entries.next_run_at IS 'The next tick to fire; NULL while pending: a worker computes it within a second.';


--
-- Name: COLUMN schedule_entries.last_tick; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.schedule_entries.last_tick IS 'The latest tick a firing handled (fired or skipped by catch_up); no tick at or before it fires again.';


--
-- Name: COLUMN schedule_entries.last_run_at; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.schedule_entries.last_run_at IS 'When the schedule last dispatched a job (a tick or a run now).';


--
-- Name: COLUMN schedule_entries.skipped_ticks; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.schedule_entries.skipped_ticks IS 'Ticks that passed without a job: left out by catch_up after downtime (S62).';


--
-- Name: COLUMN schedule_entries.last_error; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.schedule_entries.last_error IS 'Why the last dispatch of a tick failed (the job class changed so that the dispatch is refused); cleared by the next dispatch.';


--
-- Name: _dispatch_scheduled(pgq.schedule_entries, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._dispatch_scheduled(p_entry pgq.schedule_entries, p_tick timestamp with time zone) RETURNS uuid
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT u FROM pgq._dispatch(p_entry.job, ARRAY[p_entry.payload], queue => p_entry.queue, tries => p_entry.tries,
                                backoff => p_entry.backoff, max_exceptions => p_entry.max_exceptions,
                                timeout => p_entry.timeout, fail_on_timeout => p_entry.fail_on_timeout,
                                priority => p_entry.priority, retry_for => p_entry.retry_for, middleware => p_entry.middleware,
                                unique_key => CASE WHEN p_tick IS NOT NULL THEN pgq._schedule_tick_key(p_entry.name, p_tick) END,
                                unique_for => CASE WHEN p_tick IS NOT NULL THEN pgq._schedule_unique_for() END,
                                unique_until => CASE WHEN p_tick IS NOT NULL THEN 'processed' END,
                                p_ceilings => false) u;
$$;


--
-- Name: FUNCTION _dispatch_scheduled(p_entry pgq.schedule_entries, p_tick timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._dispatch_scheduled(p_entry pgq.schedule_entries, p_tick timestamp with time zone) IS 'Dispatches a schedule''s job: unique on schedule:tick for a tick (S61), not unique for a run now (NULL tick).';


--
-- Name: _dispatch_staged_batch(text, jsonb[], text, interval, integer, integer[], timestamp with time zone, integer, integer, boolean, integer, text, interval, text, text, interval, interval, jsonb, interval, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._dispatch_staged_batch(p_job text, p_payloads jsonb[], p_queue text, p_delay interval, p_tries integer, p_backoff integer[], p_retry_until timestamp with time zone, p_max_exceptions integer, p_timeout integer, p_fail_on_timeout boolean, p_priority integer, p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_middleware jsonb, p_retry_for interval, p_traceparent text, p_tracestate text) RETURNS uuid[]
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN ARRAY(
        SELECT u FROM pgq.dispatch_many(p_job, p_payloads, p_queue, p_delay, p_tries, p_backoff, p_retry_until,
                                        p_max_exceptions, p_timeout, p_fail_on_timeout, p_priority, p_unique_key,
                                        p_unique_for, p_unique_until, p_debounce_key, p_debounce_for,
                                        p_debounce_max_wait, p_middleware, p_retry_for, p_traceparent, p_tracestate) u);
END;
$$;


--
-- Name: FUNCTION _dispatch_staged_batch(p_job text, p_payloads jsonb[], p_queue text, p_delay interval, p_tries integer, p_backoff integer[], p_retry_until timestamp with time zone, p_max_exceptions integer, p_timeout integer, p_fail_on_timeout boolean, p_priority integer, p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_middleware jsonb, p_retry_for interval, p_traceparent text, p_tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._dispatch_staged_batch(p_job text, p_payloads jsonb[], p_queue text, p_delay interval, p_tries integer, p_backoff integer[], p_retry_until timestamp with time zone, p_max_exceptions integer, p_timeout integer, p_fail_on_timeout boolean, p_priority integer, p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_middleware jsonb, p_retry_for interval, p_traceparent text, p_tracestate text) IS 'pgq.dispatch_many of some staged payloads, returning their uuids as one array in order (S68).';


--
-- Name: _dropped_message(pgq.job_chains, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._dropped_message(p_chain pgq.job_chains, p_step integer) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT format('DroppedAsDuplicate: step %s (%s) of chain %s was not queued: a unique lock on its key is held by another job',
                  p_step, p_chain.steps -> (p_step - 1) ->> 'job', p_chain.id);
$$;


--
-- Name: FUNCTION _dropped_message(p_chain pgq.job_chains, p_step integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._dropped_message(p_chain pgq.job_chains, p_step integer) IS 'The exception of a chain whose step was dropped as a unique duplicate (S72).';


--
-- Name: _edit_distance(text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._edit_distance(a text, b text) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE STRICT
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _edit_distance(a text, b text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._edit_distance(a text, b text) IS 'The Levenshtein distance between two short names, for "did you mean" suggestions.';


--
-- Name: _exhausted_message(pgq.jobs, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._exhausted_message(p_job pgq.jobs, p_now timestamp with time zone) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (
    WITH turned AS (
        SELECT coalesce(sum(t.value::int), 0) AS total,
               string_agg(format('%s× by %s', t.value, t.key), ', ' ORDER BY t.key) AS detail
        FROM jsonb_each_text(p_job.turn_aways) t
    )
    SELECT format('MaxAttemptsExceeded: %s %s', p_job.job,
                  CASE WHEN p_job.retry_until IS NOT NULL AND p_now > p_job.retry_until
                       THEN format('passed its retry deadline %s after %s attempts', p_job.retry_until, p_job.attempts - 1)
                       ELSE format('attempted %s times', p_job.attempts - 1) END)
        || CASE WHEN p_job.last_exception IS NOT NULL
                THEN format('; last exception (attempt %s): %s', p_job.last_exception_attempt, p_job.last_exception)
                WHEN turned.total > 0 AND turned.total = p_job.attempts - 1 THEN '; handler never ran'
                WHEN p_job.attempts > 1 THEN '; handler never raised an exception'
                ELSE '' END
        || CASE WHEN turned.total > 0 THEN
                    CASE WHEN p_job.last_exception IS NULL AND turned.total = p_job.attempts - 1 THEN ': ' ELSE '; ' END
                    || 'turned away ' || turned.detail
                ELSE '' END
        || CASE WHEN p_job.lease_expiries > 0
                THEN format('; %s× lease expired (worker died or froze mid-job%s)', p_job.lease_expiries,
                            CASE WHEN p_job.handler IS NULL
                                 THEN '; a Go handler''s outcome is then unknown, so the attempt counts' ELSE '' END)
                ELSE '' END
        || CASE WHEN p_job.interruptions > 0
                THEN format('; %s× interrupted by infrastructure and given back', p_job.interruptions)
                ELSE '' END
    FROM turned);
END;
$$;


--
-- Name: FUNCTION _exhausted_message(p_job pgq.jobs, p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._exhausted_message(p_job pgq.jobs, p_now timestamp with time zone) IS 'The MaxAttemptsExceeded text of a job exhausted at pickup, with its last exception, turn-aways and lease expiries (S12).';


--
-- Name: _fail_caught(pgq.jobs, jsonb, text, timestamp with time zone, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fail_caught(p_job pgq.jobs, p_breaker jsonb, p_text text, p_now timestamp with time zone, p_detail text, p_hint text) RETURNS pgq.attempts
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
DECLARE
    v_decay   int := coalesce((p_breaker ->> 'decay')::int, 600);
    v_delay   int := coalesce((p_breaker ->> 'backoff')::int, 0);
    v_attempt pgq.attempts;
BEGIN
    INSERT INTO pgq.circuits AS c (key, failures, window_start, decay, max_exceptions, last_exception)
    VALUES (pgq._circuit_key(p_job.job, p_job.payload, p_breaker), 1, p_now, v_decay,
            coalesce((p_breaker ->> 'max_exceptions')::int, 10), p_text)
    ON CONFLICT (key) DO UPDATE
        SET failures = CASE WHEN c.window_start + make_interval(secs => c.decay) <= p_now THEN 1 ELSE c.failures + 1 END,
            window_start = CASE WHEN c.window_start + make_interval(secs => c.decay) <= p_now THEN p_now ELSE c.window_start END,
            decay = EXCLUDED.decay, max_exceptions = EXCLUDED.max_exceptions,
            last_exception = EXCLUDED.last_exception, updated_at = now();
    v_attempt := pgq._record(p_job, 'failed', p_now, p_text, v_delay, p_detail => p_detail, p_hint => p_hint);
    UPDATE pgq.attempts a SET middleware = 'throttles_exceptions'
    WHERE a.job_uuid = v_attempt.job_uuid AND a.id = v_attempt.id
    RETURNING * INTO v_attempt;
    UPDATE pgq.jobs j
    SET last_exception = p_text, last_exception_attempt = p_job.attempts,
        available_at = p_now + make_interval(secs => v_delay), wait_reason = 'backoff',
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL,
        overlap_keys = NULL
    WHERE j.uuid = p_job.uuid;
    RETURN v_attempt;
END;
$$;


--
-- Name: FUNCTION _fail_caught(p_job pgq.jobs, p_breaker jsonb, p_text text, p_now timestamp with time zone, p_detail text, p_hint text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fail_caught(p_job pgq.jobs, p_breaker jsonb, p_text text, p_now timestamp with time zone, p_detail text, p_hint text) IS 'Outcomes: a failed attempt whose exception a throttles_exceptions breaker catches is counted on its circuit and released with the breaker''s backoff (S29).';


--
-- Name: _fair_back(jsonb, jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_back(p_cursor jsonb, p_back jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_back IS NOT NULL AND p_back <> '[]' THEN
        PERFORM set_config('pgq.fair_back', p_back::text, true);
    END IF;
    RETURN p_cursor;
END;
$$;


--
-- Name: FUNCTION _fair_back(p_cursor jsonb, p_back jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_back(p_cursor jsonb, p_back jsonb) IS 'Reserve: notes the parked turns of fair queues that come back, for its walk and its end (S125).';


--
-- Name: _fair_by(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_by(p_queue text) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(pgq._lock_space('fair_by'), hashtext(p_queue));
    RETURN (SELECT q.fair_by FROM pgq.queues q WHERE q.name = p_queue);
END;
$$;


--
-- Name: FUNCTION _fair_by(p_queue text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_by(p_queue text) IS 'A queue''s fair_by, read under its ''fair_by'' lock held shared until the transaction ends (S114).';


--
-- Name: _fair_enter(text, text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_enter(p_queue text, p_keys text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _fair_enter(p_queue text, p_keys text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_enter(p_queue text, p_keys text[]) IS 'Storage: keys of a fair queue whose jobs this transaction writes get a turn (at the queue''s floor) at its commit if they have none (S115, S121).';


--
-- Name: _fair_entered(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_entered() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _fair_entered(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_entered() IS 'Trigger, at commit: the turns of the keys of fair queues that the transaction stored jobs of and that had none, made in (queue, key) order (S121).';


--
-- Name: _fair_floor(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_floor(p_queue text) RETURNS double precision
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN coalesce((SELECT t.pass FROM pgq.fair_turns t WHERE t.queue = p_queue AND t.parked_until IS NULL
                     ORDER BY t.pass LIMIT 1),
                    (SELECT t.pass FROM pgq.fair_turns t WHERE t.queue = p_queue ORDER BY t.pass DESC LIMIT 1));
END;
$$;


--
-- Name: FUNCTION _fair_floor(p_queue text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_floor(p_queue text) IS 'Where a fair queue''s turns start: the lowest pass in play, or the highest when every turn is parked (S115, S125).';


--
-- Name: _fair_keep(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_keep() RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT interval '1 minute' $$;


--
-- Name: FUNCTION _fair_keep(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_keep() IS 'How long a fair queue''s key with no live job keeps its turn, parked: 1 minute (S126).';


--
-- Name: _fair_lock(text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_lock(p_queue text, p_key text) RETURNS integer
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN hashtext(p_queue || '/' || p_key) & 255;
END;
$$;


--
-- Name: FUNCTION _fair_lock(p_queue text, p_key text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_lock(p_queue text, p_key text) IS 'The second key of a fair queue''s key''s ''fair'' advisory lock: one of 256 (S120).';


--
-- Name: _fair_next_ready(text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_next_ready(p_queue text, p_key text) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    RETURN (
    WITH RECURSIVE p AS (
        (SELECT j.priority, j.available_at FROM pgq.jobs j
         WHERE j.queue = p_queue AND j.fair_key = p_key AND j.reserved_at IS NULL
         ORDER BY j.priority DESC, j.available_at, j.id LIMIT 1)
        UNION ALL
        SELECT n.priority, n.available_at
        FROM p CROSS JOIN LATERAL (
            SELECT j.priority, j.available_at FROM pgq.jobs j
            WHERE j.queue = p_queue AND j.fair_key = p_key AND j.reserved_at IS NULL AND j.priority < p.priority
            ORDER BY j.priority DESC, j.available_at, j.id LIMIT 1) n
    )
    SELECT min(p.available_at) FROM p);
END;
$$;


--
-- Name: FUNCTION _fair_next_ready(p_queue text, p_key text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_next_ready(p_queue text, p_key text) IS 'When a fair queue''s key''s first waiting job is ready, by one probe a priority; NULL when none waits (S125).';


--
-- Name: _fair_prune(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_prune() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    UPDATE pgq.fair_turns t SET parked_until = now() + pgq._fair_keep()
    WHERE t.ctid = ANY (ARRAY(
        SELECT x.ctid FROM pgq.fair_turns x
        WHERE x.parked_until = 'infinity'  -- fair_turns_parked_idx: parked while all its jobs ran
          AND (SELECT j.id FROM pgq.jobs j WHERE j.queue = x.queue AND j.fair_key = x.key LIMIT 1) IS NULL
        FOR UPDATE SKIP LOCKED));
END;
$$;


--
-- Name: FUNCTION _fair_prune(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_prune() IS 'Parks for pgq._fair_keep() the turns of fair queues parked while their jobs ran, once no live job is left (S126); called by pgq.rotate.';


--
-- Name: _fair_rejoin(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_rejoin(p_queue text) RETURNS double precision
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_floor float8 := pgq._fair_floor(p_queue);
BEGIN
    RETURN v_floor - greatest(1e-6, abs(v_floor) * 1e-15);
END;
$$;


--
-- Name: FUNCTION _fair_rejoin(p_queue text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_rejoin(p_queue text) IS 'Where a fair queue''s turn back from parking rejoins: just below the queue''s floor (S125).';


--
-- Name: _fair_rekey(text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_rekey(p_queue text, p_fair_by text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _fair_rekey(p_queue text, p_fair_by text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_rekey(p_queue text, p_fair_by text) IS 'Storage: a queue''s live jobs keyed anew by its new fair_by, and its turns made anew (S114).';


--
-- Name: _fair_round(smallint[], text, integer, text[], integer[], integer, timestamp with time zone, bigint[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_round(p_slots smallint[], p_queue text, p_prio integer, p_keys text[], p_quotas integer[], p_want integer, p_now timestamp with time zone, p_skip bigint[], OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT ords integer[], OUT nth integer[], OUT last integer) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    SELECT coalesce(array_agg(x.row_tid ORDER BY x.ord, x.n), '{}'), coalesce(array_agg(x.row_slot ORDER BY x.ord, x.n), '{}'),
           coalesce(array_agg(x.row_id ORDER BY x.ord, x.n), '{}'), coalesce(array_agg(x.row_plain ORDER BY x.ord, x.n), '{}'),
           coalesce(array_agg(x.ord ORDER BY x.ord, x.n), '{}'), coalesce(array_agg(x.n ORDER BY x.ord, x.n), '{}'),
           max(x.ord)
    INTO tids, slots, ids, plain, ords, nth, last
    FROM (SELECT r.*, (row_number() OVER (PARTITION BY r.ord ORDER BY r.available_at, r.row_id))::int AS n
          FROM (SELECT t.ord::int AS ord, l.*
                FROM unnest(p_keys, p_quotas) WITH ORDINALITY t(key, quota, ord)
                CROSS JOIN LATERAL (
                    SELECT p.ctid AS row_tid, p.slot AS row_slot, p.id AS row_id, p.available_at,
                           p.middleware IS NULL AND p.attempts = 0 AND p.cancel_requested_at IS NULL AND p.batch_id IS NULL
                           AND p.debounce_key IS NULL AND p.unique_until IS DISTINCT FROM 'processing'
                           AND (p.retry_until IS NULL OR p.retry_until >= p_now) AS row_plain
                    FROM pgq.jobs p
                    WHERE p.queue = p_queue AND p.fair_key = t.key AND p.priority = p_prio
                      AND p.reserved_at IS NULL AND p.available_at <= p_now AND p.id <> ALL (p_skip)
                      AND p.slot IN (p_slots[1], p_slots[2], p_slots[3], p_slots[4])
                    ORDER BY p.available_at, p.id  -- jobs_fair_idx
                    LIMIT least(t.quota, p_want)
                    FOR UPDATE SKIP LOCKED) l
                LIMIT p_want) r) x;  -- numbered above the LIMIT: a sort below it would lock rows it drops
END;
$$;


--
-- Name: FUNCTION _fair_round(p_slots smallint[], p_queue text, p_prio integer, p_keys text[], p_quotas integer[], p_want integer, p_now timestamp with time zone, p_skip bigint[], OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT ords integer[], OUT nth integer[], OUT last integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_round(p_slots smallint[], p_queue text, p_prio integer, p_keys text[], p_quotas integer[], p_want integer, p_now timestamp with time zone, p_skip bigint[], OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT ords integer[], OUT nth integer[], OUT last integer) IS 'Reserve: one round of a fair queue''s walk: each key''s next ready rows up to its quota, locked (SKIP LOCKED), in queue order within a key (S115, S116).';


--
-- Name: _fair_rows(smallint[], text, integer, integer, timestamp with time zone, bigint[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_rows(p_slots smallint[], p_queue text, p_prio integer, p_want integer, p_now timestamp with time zone, p_skip bigint[], OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT keys text[], OUT idle text[], OUT tags double precision[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    v_tk    text[];    -- the turns in play by pass (then key): key, pass, weight
    v_tp    float8[];
    v_tw    int[];
    v_more  text[];    -- keys that gave their whole share: they may have more
    v_pass  float8[];  -- and their pass, weight and rows taken, in walk order
    v_w     int[];
    v_took  int[];
    v_m     int;
    v_r     record;    -- a round (pgq._fair_round)
BEGIN
    SELECT coalesce(array_agg(t.key ORDER BY t.pass, t.key), '{}'), coalesce(array_agg(t.pass ORDER BY t.pass, t.key), '{}'),
           coalesce(array_agg(t.weight ORDER BY t.pass, t.key), '{}')
    INTO v_tk, v_tp, v_tw
    FROM pgq._fair_turns_now(p_queue, p_now) t;
    -- The opening round: the turns by pass, each key's next jobs up to its weight, until
    -- p_want jobs. The turns walked before the last that gave a job, and every turn
    -- when it left room, that gave none are idle.
    v_r := pgq._fair_round(p_slots, p_queue, p_prio, v_tk, v_tw, p_want, p_now, p_skip);
    tids := v_r.tids; slots := v_r.slots; ids := v_r.ids; plain := v_r.plain;
    keys := ARRAY(SELECT v_tk[u.o] FROM unnest(v_r.ords) WITH ORDINALITY u(o, i) ORDER BY u.i);
    tags := ARRAY(SELECT v_tp[u.o] + u.n::float8 / v_tw[u.o] FROM unnest(v_r.ords, v_r.nth) WITH ORDINALITY u(o, n, i) ORDER BY u.i);
    idle := ARRAY(SELECT v_tk[o]
                  FROM generate_series(1, CASE WHEN cardinality(tids) < p_want THEN cardinality(v_tk) ELSE v_r.last END) o
                  WHERE o <> ALL (v_r.ords) ORDER BY o);
    -- A key cut short by the walk's end (its last key when it took p_want) may have more.
    idle := idle || ARRAY(SELECT v_tk[c.o] FROM (SELECT u.o, count(*)::int AS n FROM unnest(v_r.ords) u(o) GROUP BY u.o) c
                          WHERE c.n < v_tw[c.o] AND (cardinality(tids) < p_want OR c.o < v_r.last) ORDER BY c.o);
    SELECT coalesce(array_agg(v_tk[c.o] ORDER BY c.o), '{}'), coalesce(array_agg(v_tp[c.o] ORDER BY c.o), '{}'),
           coalesce(array_agg(v_tw[c.o] ORDER BY c.o), '{}'), coalesce(array_agg(c.n ORDER BY c.o), '{}')
    INTO v_more, v_pass, v_w, v_took
    FROM (SELECT u.o, count(*)::int AS n FROM unnest(v_r.ords) u(o) GROUP BY u.o) c
    WHERE c.n = v_tw[c.o];
    WHILE cardinality(tids) < p_want AND cardinality(v_more) > 0 LOOP
        -- Whole rounds of the keys left, at once: each takes its weight times m.
        v_m := greatest(1, (p_want - cardinality(tids)) / (SELECT sum(w) FROM unnest(v_w) w)::int);
        v_r := pgq._fair_round(p_slots, p_queue, p_prio, v_more, ARRAY(SELECT w * v_m FROM unnest(v_w) WITH ORDINALITY u(w, i) ORDER BY u.i),
                               p_want - cardinality(tids), p_now, p_skip || ids);
        tids := tids || v_r.tids; slots := slots || v_r.slots; ids := ids || v_r.ids; plain := plain || v_r.plain;
        keys := keys || ARRAY(SELECT v_more[u.o] FROM unnest(v_r.ords) WITH ORDINALITY u(o, i) ORDER BY u.i);
        tags := tags || ARRAY(SELECT v_pass[u.o] + (v_took[u.o] + u.n)::float8 / v_w[u.o]
                              FROM unnest(v_r.ords, v_r.nth) WITH ORDINALITY u(o, n, i) ORDER BY u.i);
        idle := idle || ARRAY(SELECT v_more[o] FROM generate_subscripts(v_more, 1) o
                              WHERE (SELECT count(*) FROM unnest(v_r.ords) u(x) WHERE u.x = o) < v_w[o] * v_m
                                AND (cardinality(tids) < p_want OR o < v_r.last) ORDER BY o);
        -- The keys that gave their whole quota go on, in their order.
        SELECT coalesce(array_agg(v_more[c.o] ORDER BY c.o), '{}'), coalesce(array_agg(v_pass[c.o] ORDER BY c.o), '{}'),
               coalesce(array_agg(v_w[c.o] ORDER BY c.o), '{}'), coalesce(array_agg(v_took[c.o] + c.n ORDER BY c.o), '{}')
        INTO v_more, v_pass, v_w, v_took
        FROM (SELECT u.o, count(*)::int AS n FROM unnest(v_r.ords) u(o) GROUP BY u.o) c
        WHERE c.n = v_w[c.o] * v_m;
    END LOOP;
END;
$$;


--
-- Name: FUNCTION _fair_rows(p_slots smallint[], p_queue text, p_prio integer, p_want integer, p_now timestamp with time zone, p_skip bigint[], OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT keys text[], OUT idle text[], OUT tags double precision[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_rows(p_slots smallint[], p_queue text, p_prio integer, p_want integer, p_now timestamp with time zone, p_skip bigint[], OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT keys text[], OUT idle text[], OUT tags double precision[]) IS 'Reserve: the next ready rows of a fair queue at one priority, round-robin across its keys'' turns by pass and weight, locked (SKIP LOCKED), in the order to take them (S115-S117).';


--
-- Name: _fair_settle(jsonb, jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_settle(p_pending jsonb, p_back jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    v_tids  tid[];     -- the turns locked, in (queue, key) order
    v_q     text[]; v_k text[];
    v_n     bigint[];  -- jobs taken of the key; 0: idle; NULL: back, not walked
    v_dry   boolean[]; -- a walk left the key with no ready job (pgq._fair_rows' idle)
    v_pass  float8[];  -- as reserves order it (a turn back: where it rejoins, pgq._fair_rejoin)
    v_w     int[]; v_at timestamptz[];
    v_rejoin jsonb := (SELECT jsonb_object_agg(x.q, pgq._fair_rejoin(x.q))  -- per queue, once: where a turn back rejoins
                       FROM (SELECT DISTINCT p ->> 0 AS q FROM jsonb_array_elements(p_pending || p_back) p) x);
    v_front jsonb;     -- per queue, the lowest pass served
    v_was   boolean[]; -- parked before this reserve walked it
    v_alone tid[];     -- idle turns whose key's lock this reserve holds alone
    v_idle  tid[];
BEGIN
    SELECT array_agg(l.tid ORDER BY l.queue, l.key), array_agg(l.queue ORDER BY l.queue, l.key),
           array_agg(l.key ORDER BY l.queue, l.key), array_agg(l.n ORDER BY l.queue, l.key),
           array_agg(l.pass ORDER BY l.queue, l.key), array_agg(l.weight ORDER BY l.queue, l.key),
           array_agg(l.at ORDER BY l.queue, l.key), array_agg(l.was ORDER BY l.queue, l.key),
           array_agg(l.dry ORDER BY l.queue, l.key)
    INTO v_tids, v_q, v_k, v_n, v_pass, v_w, v_at, v_was, v_dry
    FROM (SELECT t.ctid AS tid, t.queue, t.key, e.n, e.dry,
                 CASE WHEN t.parked_until IS NULL THEN t.pass ELSE greatest(t.pass, (v_rejoin ->> t.queue)::float8) END AS pass,
                 coalesce(w.weight, 1) AS weight, e.at, t.parked_until IS NOT NULL AS was
          FROM (SELECT x.q, x.k, sum(x.n) AS n, min(x.at) AS at, coalesce(bool_or(x.n = 0), false) AS dry
                FROM (SELECT p ->> 0 AS q, p ->> 1 AS k, (p ->> 2)::int AS n, NULL::timestamptz AS at
                      FROM jsonb_array_elements(p_pending) p
                      UNION ALL
                      SELECT b ->> 0, b ->> 1, NULL, (b ->> 2)::timestamptz FROM jsonb_array_elements(p_back) b
                      WHERE b ->> 1 IS NOT NULL
                      UNION ALL
                      SELECT t.queue, t.key, NULL, r.at
                      FROM jsonb_array_elements(p_back) b
                      JOIN pgq.fair_turns t ON t.queue = b ->> 0 AND t.parked_until IS NOT NULL  -- fair_turns_parked_idx
                      CROSS JOIN LATERAL (SELECT coalesce(pgq._fair_next_ready(t.queue, t.key), 'infinity') AS at) r
                      WHERE b ->> 1 IS NULL AND r.at < t.parked_until) x
                GROUP BY x.q, x.k) e
          JOIN pgq.fair_turns t ON t.queue = e.q AND t.key = e.k
          LEFT JOIN pgq.fair_weights w ON w.queue = t.queue AND w.key = t.key
          WHERE e.n IS NOT NULL OR t.parked_until > e.at  -- a turn back, and not walked: only when parked later
          ORDER BY t.queue, t.key
          FOR UPDATE OF t) l;
    IF v_tids IS NULL THEN
        RETURN;
    END IF;
    -- Only the rows locked above, by TID: a turn made since by a store is left alone.
    SELECT jsonb_object_agg(f.q, f.pass) INTO v_front
    FROM (SELECT u.q, min(u.pass) AS pass FROM unnest(v_q, v_pass, v_n) u(q, pass, n) WHERE u.n > 0 GROUP BY u.q) f;
    UPDATE pgq.fair_turns t
    SET pass = CASE WHEN u.n > 0 THEN u.pass + u.n::float8 / u.w ELSE t.pass END,
        parked_until = CASE WHEN u.n > 0 AND u.dry  -- NULL when ready now; most often none waits: a probe, no call
                            THEN nullif(greatest(CASE WHEN NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.queue = t.queue AND j.fair_key = t.key AND j.reserved_at IS NULL)
                                                      THEN 'infinity' ELSE coalesce(pgq._fair_next_ready(t.queue, t.key), 'infinity') END, now()), now())
                            WHEN u.n > 0 THEN NULL ELSE u.at END
    FROM unnest(v_tids, v_pass, v_n, v_w, v_at, v_dry) u(tid, pass, n, w, at, dry)
    WHERE t.ctid = ANY (v_tids) AND t.ctid = u.tid AND (u.n > 0 OR (u.n IS NULL AND t.parked_until > u.at));
    -- An idle key in play with no live job is kept, parked for pgq._fair_keep(): a key
    -- that dispatches again meanwhile comes back as a parked one, with no turn to make.
    -- A probe per turn, to the key's first job: a scalar subquery, which the planner
    -- never turns into a join that reads every job of the queue.
    v_idle := ARRAY(SELECT u.tid FROM unnest(v_tids, v_n) u(tid, n) WHERE u.n = 0);
    UPDATE pgq.fair_turns t SET parked_until = now() + pgq._fair_keep(), pass = u.pass
    FROM unnest(v_tids, v_pass, v_was) u(tid, pass, was)
    WHERE t.ctid = ANY (v_idle) AND t.ctid = u.tid AND NOT u.was
      AND (SELECT j.id FROM pgq.jobs j WHERE j.queue = t.queue AND j.fair_key = t.key LIMIT 1) IS NULL;
    -- An idle key back from parking: alone on its lock first; then, by a statement that
    -- starts after, no live job. A key seen with a live job (delayed, or running) keeps
    -- its turn without the lock being tried: held to the reserve's end, it would hold
    -- up every store of the keys that share it.
    v_alone := ARRAY(SELECT u.tid FROM unnest(v_tids, v_q, v_k, v_n, v_was) u(tid, q, k, n, was)
                     WHERE u.n = 0 AND u.was
                       AND CASE WHEN (SELECT j.id FROM pgq.jobs j WHERE j.queue = u.q AND j.fair_key = u.k LIMIT 1) IS NOT NULL
                                THEN false  -- a CASE: the planner orders the conditions of an AND by cost
                                ELSE pg_try_advisory_xact_lock(pgq._lock_space('fair'), pgq._fair_lock(u.q, u.k)) END);
    DELETE FROM pgq.fair_turns t
    WHERE t.ctid = ANY (v_alone)
      AND (SELECT j.id FROM pgq.jobs j WHERE j.queue = t.queue AND j.fair_key = t.key LIMIT 1) IS NULL;
    -- The other idle keys: parked at the pass they rejoined at when a live job is seen;
    -- else a store under way writes their jobs, and they keep up with the lowest pass
    -- served here.
    UPDATE pgq.fair_turns t
    SET parked_until = coalesce(pgq._fair_next_ready(t.queue, t.key), 'infinity'), pass = u.pass
    FROM unnest(v_tids, v_pass) u(tid, pass)
    WHERE t.ctid = ANY (v_idle) AND t.ctid = u.tid
      AND (SELECT j.id FROM pgq.jobs j WHERE j.queue = t.queue AND j.fair_key = t.key LIMIT 1) IS NOT NULL;
    IF v_front IS NOT NULL THEN
        -- The rows just parked or deleted have no visible version at their old TIDs any
        -- more: only the idle turns left in play keep up.
        UPDATE pgq.fair_turns t SET pass = greatest(u.pass, (v_front ->> t.queue)::float8), parked_until = NULL
        FROM unnest(v_tids, v_pass) u(tid, pass)
        WHERE t.ctid = ANY (v_idle) AND t.ctid = u.tid;
    END IF;
END;
$$;


--
-- Name: FUNCTION _fair_settle(p_pending jsonb, p_back jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_settle(p_pending jsonb, p_back jsonb) IS 'Reserve''s end: a fair queue''s turns after its picks: passes advance by 1/weight a job taken, idle keys with no live job lose their turn, those with live jobs are parked, turns that came back are due (S115, S117, S125).';


--
-- Name: _fair_taken(text, text[], text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_taken(p_queue text, p_keys text[], p_idle text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM set_config('pgq.fair_pending',
        (coalesce(nullif(current_setting('pgq.fair_pending', true), ''), '[]')::jsonb
         || coalesce((SELECT jsonb_agg(jsonb_build_array(p_queue, k.key, k.n))
                      FROM (SELECT u.key, count(*) AS n FROM unnest(p_keys) u(key) GROUP BY u.key
                            UNION ALL SELECT i.key, 0 FROM unnest(p_idle) i(key)) k), '[]'))::text,
        true);
END;
$$;


--
-- Name: FUNCTION _fair_taken(p_queue text, p_keys text[], p_idle text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_taken(p_queue text, p_keys text[], p_idle text[]) IS 'Reserve: notes the jobs a pick of a fair queue took, by key, and its idle keys, for pgq._fair_settle (S115).';


--
-- Name: _fair_turns_now(text, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._fair_turns_now(p_queue text, p_now timestamp with time zone) RETURNS TABLE(key text, pass double precision, weight integer)
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    v_back  jsonb := coalesce(nullif(current_setting('pgq.fair_back', true), ''), '[]')::jsonb;
BEGIN
    RETURN QUERY
    SELECT t.key, CASE WHEN t.back THEN greatest(t.pass, (SELECT pgq._fair_rejoin(p_queue))) ELSE t.pass END  -- once, if at all
                  + coalesce(s.n, 0)::float8 / coalesce(w.weight, 1),
           coalesce(w.weight, 1)
    FROM (SELECT p.key, p.pass, false AS back FROM pgq.fair_turns p WHERE p.queue = p_queue AND p.parked_until IS NULL
          UNION ALL
          SELECT p.key, p.pass, true FROM pgq.fair_turns p WHERE p.queue = p_queue AND p.parked_until <= p_now
          UNION ALL
          -- A probe a key by fair_turns_pkey: the subquery names the key alone, and OFFSET 0
          -- keeps it apart, so that no plan reads every parked turn for each key instead.
          SELECT p.key, p.pass, true
          FROM (SELECT DISTINCT b ->> 1 AS k FROM jsonb_array_elements(v_back) b
                WHERE b ->> 0 = p_queue AND b ->> 1 IS NOT NULL AND (b ->> 2)::timestamptz <= p_now) b
          CROSS JOIN LATERAL (SELECT p.key, p.pass, p.parked_until FROM pgq.fair_turns p
                              WHERE p.queue = p_queue AND p.key = b.k OFFSET 0) p
          WHERE p.parked_until > p_now) t
    LEFT JOIN pgq.fair_weights w ON w.queue = p_queue AND w.key = t.key
    LEFT JOIN (SELECT e ->> 1 AS key, sum((e ->> 2)::int) AS n
               FROM jsonb_array_elements(coalesce(nullif(current_setting('pgq.fair_pending', true), ''), '[]')::jsonb) e
               WHERE e ->> 0 = p_queue
               GROUP BY 1) s ON s.key = t.key;
END;
$$;


--
-- Name: FUNCTION _fair_turns_now(p_queue text, p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._fair_turns_now(p_queue text, p_now timestamp with time zone) IS 'Reserve: a fair queue''s turns in play, with the passes this reserve''s earlier picks moved on, and their weights (S115, S117, S125).';


--
-- Name: _give_back(pgq.jobs, text, timestamp with time zone, boolean); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._give_back(p_job pgq.jobs, p_reason text, p_now timestamp with time zone, p_limited boolean) RETURNS pgq.attempts
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_refund boolean := NOT p_limited OR p_job.interruptions < pgq._max_give_backs();
    v_attempt pgq.attempts;
BEGIN
    v_attempt := pgq._record(p_job, 'interrupted', p_now,
        p_reason || CASE WHEN v_refund THEN '; attempt given back'
                         ELSE format('; counted: %s attempts were given back already', p_job.interruptions) END,
        0);
    PERFORM pgq._release_overlap(ARRAY[p_job.uuid], p_job.overlap_keys);
    UPDATE pgq.jobs j
    SET attempts = j.attempts - CASE WHEN v_refund THEN 1 ELSE 0 END,
        interruptions = j.interruptions + CASE WHEN v_refund AND p_limited THEN 1 ELSE 0 END,
        available_at = p_now, wait_reason = 'interrupted',
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL,
        overlap_keys = NULL
    WHERE j.uuid = p_job.uuid;
    RETURN v_attempt;
END;
$$;


--
-- Name: FUNCTION _give_back(p_job pgq.jobs, p_reason text, p_now timestamp with time zone, p_limited boolean); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._give_back(p_job pgq.jobs, p_reason text, p_now timestamp with time zone, p_limited boolean) IS 'Sends an interrupted attempt back to wait, recorded as interrupted and given back (up to pgq._max_give_backs() times when limited, S35).';


--
-- Name: _handing_over(pgq.jobs); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._handing_over(p_job pgq.jobs) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_job.unique_until = 'processing' THEN
        PERFORM pgq._release_owned(ARRAY[p_job.unique_key], ARRAY[p_job.unique_token], NULL, NULL);
    END IF;
    IF p_job.debounce_key IS NOT NULL THEN
        UPDATE pgq.debounce_tokens d SET burst_started_at = NULL
        WHERE d.key = p_job.debounce_key AND d.token = p_job.debounce_token;
    END IF;
END;
$$;


--
-- Name: FUNCTION _handing_over(p_job pgq.jobs); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._handing_over(p_job pgq.jobs) IS 'A picked job''s handler will run: its until-processing lock is released (S23) and its debounce burst ends.';


--
-- Name: _handler_path_hint(regprocedure, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._handler_path_hint(p_proc regprocedure, p_pinned text, p_message text) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _handler_path_hint(p_proc regprocedure, p_pinned text, p_message text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._handler_path_hint(p_proc regprocedure, p_pinned text, p_message text) IS 'The HINT of a handler''s "does not exist" error (42P01, 42883): its search_path and how to fix the name (S86).';


--
-- Name: _handler_proc(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._handler_proc(p_handler text) RETURNS regprocedure
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT to_regprocedure(p_handler || '(jsonb)');
$$;


--
-- Name: FUNCTION _handler_proc(p_handler text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._handler_proc(p_handler text) IS 'Resolves a SQL handler name to its function taking one jsonb argument; NULL when there is none.';


--
-- Name: _held(text, uuid, uuid, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._held(p_call text, p_uuid uuid, p_token uuid, p_now timestamp with time zone) RETURNS pgq.jobs
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_job pgq.jobs;
BEGIN
    SELECT * INTO v_job FROM pgq.jobs j
    WHERE j.slot = pgq._token_slot(p_token) AND j.uuid = p_uuid AND j.lease_token = p_token  -- one slot (S80)
    FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM pgq._reject(p_call, ARRAY[p_uuid], ARRAY[p_token], p_now);
        RETURN NULL;
    END IF;
    RETURN v_job;
END;
$$;


--
-- Name: FUNCTION _held(p_call text, p_uuid uuid, p_token uuid, p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._held(p_call text, p_uuid uuid, p_token uuid, p_now timestamp with time zone) IS 'The job a lease token holds, locked; NULL (and the call recorded as rejected) when it holds none (S15).';


--
-- Name: _held_job(uuid, uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._held_job(p_uuid uuid, p_token uuid, OUT id bigint, OUT job text, OUT handler regprocedure, OUT payload jsonb, OUT reserved_by text, OUT attempts integer, OUT overlap_keys text[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
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


--
-- Name: FUNCTION _held_job(p_uuid uuid, p_token uuid, OUT id bigint, OUT job text, OUT handler regprocedure, OUT payload jsonb, OUT reserved_by text, OUT attempts integer, OUT overlap_keys text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._held_job(p_uuid uuid, p_token uuid, OUT id bigint, OUT job text, OUT handler regprocedure, OUT payload jsonb, OUT reserved_by text, OUT attempts integer, OUT overlap_keys text[]) IS 'The fields of the job a lease token holds that a SQL handler''s start needs, from the token''s slot only (S80); NULLs when it holds none.';


--
-- Name: _job_ends_advance(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._job_ends_advance() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    r record;
BEGIN
    UPDATE pgq.callbacks c SET outcome = e.outcome, exception = e.exception, ended_at = e.ended_at
    FROM ended e
    WHERE e.chain_step = 0 AND c.job_uuid = e.job_uuid;
    FOR r IN
        SELECT e.outcome, e.exception, array_agg(e.job_uuid ORDER BY e.id) AS uuids, array_agg(e.batch_id ORDER BY e.id) AS batches,
               array_agg(e.chain_id ORDER BY e.id) AS chains, array_agg(e.chain_step ORDER BY e.id) AS steps
        FROM ended e
        WHERE e.chain_step IS DISTINCT FROM 0
        GROUP BY e.outcome, e.exception
        ORDER BY min(e.id)
    LOOP
        PERFORM pgq._jobs_ended(r.outcome, r.uuids, r.batches, r.chains, r.steps, r.exception);
    END LOOP;
    RETURN NULL;
END;
$$;


--
-- Name: FUNCTION _job_ends_advance(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._job_ends_advance() IS 'Trigger on pgq.job_ends: records callbacks'' ends (S97), moves the chains and counts the batches of the other jobs that ended (S70-S76).';


--
-- Name: _job_for_update(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._job_for_update(p_uuid uuid) RETURNS pgq.jobs
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _job_for_update(p_uuid uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._job_for_update(p_uuid uuid) IS 'The live job with this uuid, locked for an operation on it, out of its chunk if it was in one (S80, S85); NULL when there is none.';


--
-- Name: _jobs_ended(text, uuid[], uuid[], uuid[], integer[], text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._jobs_ended(p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[], p_exception text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_batches  uuid[] := '{}';  -- members of batches that ended: batch, member, outcome, job, exception
    v_members  uuid[] := '{}';
    v_outcomes text[] := '{}';
    v_jobs     uuid[] := '{}';
    v_texts    text[] := '{}';
    v_chain    pgq.job_chains;
    v_outcome  text;
    v_text     text;
    v_next     uuid;
    v_group    record;
    i          int;
BEGIN
    -- Lone jobs of batches, in one statement (a completion may carry hundreds).
    SELECT coalesce(array_agg(e.b), '{}'), coalesce(array_agg(e.u), '{}'),
           coalesce(array_agg(p_outcome), '{}'), coalesce(array_agg(e.u), '{}'), coalesce(array_agg(p_exception), '{}')
    INTO v_batches, v_members, v_outcomes, v_jobs, v_texts
    FROM unnest(p_uuids, p_batches, p_chains) AS e(u, b, c)
    WHERE e.c IS NULL AND e.b IS NOT NULL;

    -- Steps of chains, one by one.
    FOR i IN 1 .. coalesce(cardinality(p_uuids), 0) LOOP
        CONTINUE WHEN p_chains[i] IS NULL;
        v_outcome := p_outcome;
        v_text := p_exception;
        SELECT * INTO v_chain FROM pgq.job_chains c WHERE c.id = p_chains[i] FOR UPDATE;
        -- a chain already ended (or pruned) is not moved by a late or repeated end
        CONTINUE WHEN NOT FOUND OR v_chain.state <> 'running' OR v_chain.step <> p_steps[i];
        IF p_outcome = 'succeeded' AND v_chain.step < jsonb_array_length(v_chain.steps) THEN
            IF v_chain.batch_id IS NOT NULL
               AND EXISTS (SELECT FROM pgq.job_batches b WHERE b.id = v_chain.batch_id AND b.cancelled_at IS NOT NULL) THEN
                v_outcome := 'cancelled';
                v_text := format('cancelled: batch %s was cancelled', v_chain.batch_id);
                PERFORM pgq._chain_stop(v_chain, 'cancelled', p_uuids[i], v_text);
            ELSE
                -- A step that cannot be queued (its class changed since the chain
                -- was dispatched, say) must not make this completion fail again and
                -- again: the chain fails at that step instead (S72).
                BEGIN
                    v_next := pgq._chain_dispatch_step(v_chain, v_chain.step + 1);
                    IF v_next IS NULL THEN
                        v_text := pgq._dropped_message(v_chain, v_chain.step + 1);
                    END IF;
                EXCEPTION WHEN OTHERS THEN
                    v_next := NULL;
                    v_text := format('StepNotQueued: step %s (%s) of chain %s could not be queued: %s (SQLSTATE %s)',
                                     v_chain.step + 1, v_chain.steps -> v_chain.step ->> 'job', v_chain.id, SQLERRM, SQLSTATE);
                END;
                CONTINUE WHEN v_next IS NOT NULL;  -- the chain goes on: its member has not ended
                v_outcome := 'failed';
                v_chain.step := v_chain.step + 1;
                UPDATE pgq.job_chains c SET step = v_chain.step, job_uuid = NULL WHERE c.id = v_chain.id;
                PERFORM pgq._chain_stop(v_chain, 'failed', NULL, v_text);
            END IF;
        ELSIF p_outcome = 'succeeded' THEN
            UPDATE pgq.job_chains c SET state = 'succeeded', finished_at = now() WHERE c.id = v_chain.id;
        ELSE
            PERFORM pgq._chain_stop(v_chain, CASE WHEN p_outcome = 'failed' THEN 'failed' ELSE 'cancelled' END,
                                    p_uuids[i], p_exception);
        END IF;
        CONTINUE WHEN v_chain.batch_id IS NULL;
        v_batches := v_batches || v_chain.batch_id;
        v_members := v_members || v_chain.id;
        v_outcomes := v_outcomes || v_outcome;
        v_jobs := v_jobs || p_uuids[i];
        v_texts := v_texts || v_text;
    END LOOP;

    -- One call per batch and outcome (per member for failures: each is recorded), in
    -- batch order: the locks of one batch are all taken before the next's.
    FOR v_group IN
        SELECT e.batch, e.outcome, array_agg(e.member) AS members, min(e.job::text)::uuid AS job, min(e.txt) AS txt
        FROM unnest(v_batches, v_members, v_outcomes, v_jobs, v_texts) AS e(batch, member, outcome, job, txt)
        GROUP BY e.batch, e.outcome, CASE WHEN e.outcome = 'failed' THEN e.member END
        ORDER BY e.batch, e.outcome
    LOOP
        PERFORM pgq._batch_members_ended(v_group.batch, v_group.members, v_group.outcome, v_group.job, v_group.txt);
    END LOOP;
END;
$$;


--
-- Name: FUNCTION _jobs_ended(p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[], p_exception text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._jobs_ended(p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[], p_exception text) IS 'Moves the chains and batches of jobs that ended (succeeded, failed for good, cancelled): next step or chain stop (S70-S72, S74), batch counts and callbacks (S73-S76).';


--
-- Name: _jobs_retried(uuid[], uuid[], uuid[], integer[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._jobs_retried(p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_batches uuid[] := '{}';
    v_members uuid[] := '{}';
    v_jobs    uuid[] := '{}';
    v_batch   uuid;
    i         int;
BEGIN
    -- A retried callback (chain_step 0) waits again: it has not ended (S97).
    UPDATE pgq.callbacks c SET outcome = NULL, exception = NULL, ended_at = NULL
    FROM unnest(p_uuids, p_steps) AS r(uuid, step)
    WHERE r.step = 0 AND c.job_uuid = r.uuid;
    FOR i IN 1 .. cardinality(p_uuids) LOOP
        CONTINUE WHEN p_steps[i] = 0;
        IF p_chains[i] IS NOT NULL THEN
            UPDATE pgq.job_chains c
            SET state = 'running', step = p_steps[i], job_uuid = p_uuids[i], exception = NULL, finished_at = NULL
            WHERE c.id = p_chains[i] AND c.state = 'failed' AND c.step = p_steps[i]
            RETURNING c.batch_id INTO v_batch;
            CONTINUE WHEN NOT FOUND OR v_batch IS NULL;
            v_batches := v_batches || v_batch;
            v_members := v_members || p_chains[i];
        ELSE
            CONTINUE WHEN p_batches[i] IS NULL;
            v_batches := v_batches || p_batches[i];
            v_members := v_members || p_uuids[i];
        END IF;
        v_jobs := v_jobs || p_uuids[i];
    END LOOP;
    FOR v_batch IN SELECT DISTINCT b FROM unnest(v_batches) b ORDER BY b LOOP
        PERFORM FROM pgq.batch_counts c WHERE c.batch_id = v_batch ORDER BY c.shard FOR UPDATE;
        UPDATE pgq.batch_counts c SET pending = c.pending + d.n, failed = c.failed - d.n
        FROM (SELECT pgq._batch_shard(e.m) AS shard, count(*)::int AS n
              FROM unnest(v_batches, v_members) AS e(b, m) WHERE e.b = v_batch GROUP BY 1) d
        WHERE c.batch_id = v_batch AND c.shard = d.shard;
        UPDATE pgq.job_batches b
        SET failed_job_ids = ARRAY(SELECT f FROM unnest(b.failed_job_ids) f WHERE f <> ALL (v_jobs)), finished_at = NULL
        WHERE b.id = v_batch;
    END LOOP;
END;
$$;


--
-- Name: FUNCTION _jobs_retried(p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._jobs_retried(p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[]) IS 'Retried failed jobs of chains and batches: the chain resumes at the step, the batch counts the member pending again (S73).';


--
-- Name: _json_interval(jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._json_interval(p_value jsonb) RETURNS interval
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN CASE jsonb_typeof(p_value)
               WHEN 'number' THEN make_interval(secs => (p_value #>> '{}')::double precision)
               WHEN 'string' THEN (p_value #>> '{}')::interval
           END;
END;
$$;


--
-- Name: FUNCTION _json_interval(p_value jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._json_interval(p_value jsonb) IS 'An interval from JSON: a number of seconds, or text such as ''10 minutes''.';


--
-- Name: _key(text, text, text[], jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._key(p_job text, p_explicit text, p_by text[], p_payload jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _key(p_job text, p_explicit text, p_by text[], p_payload jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._key(p_job text, p_explicit text, p_by text[], p_payload jsonb) IS 'A key scoped to the job name for dispatch: raises 22023 when a field is missing or the key exceeds pgq._max_key_bytes() (S38).';


--
-- Name: _key_or_null(text, text, text[], jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._key_or_null(p_job text, p_explicit text, p_by text[], p_payload jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT (pgq._keys_or_null(ARRAY[p_job], ARRAY[p_explicit], ARRAY[to_jsonb(p_by)], ARRAY[p_payload]))[1];
$$;


--
-- Name: FUNCTION _key_or_null(p_job text, p_explicit text, p_by text[], p_payload jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._key_or_null(p_job text, p_explicit text, p_by text[], p_payload jsonb) IS 'A key scoped to the job name (explicit, or from payload fields), NULL when a field is missing; never raises.';


--
-- Name: _keys_or_null(text[], text[], jsonb[], jsonb[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._keys_or_null(p_jobs text[], p_explicits text[], p_bys jsonb[], p_payloads jsonb[]) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
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


--
-- Name: FUNCTION _keys_or_null(p_jobs text[], p_explicits text[], p_bys jsonb[], p_payloads jsonb[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._keys_or_null(p_jobs text[], p_explicits text[], p_bys jsonb[], p_payloads jsonb[]) IS 'Keys scoped to the job name (explicit, or from payload fields), one per element, NULL where a field is missing; never raises.';


--
-- Name: _lease_base(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._lease_base(p_call uuid) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN left(coalesce(p_call, gen_random_uuid())::text, 24);
END;
$$;


--
-- Name: FUNCTION _lease_base(p_call uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._lease_base(p_call uuid) IS 'The base of a reserve call''s lease tokens: the first twelve bytes of its call uuid, or random (S15).';


--
-- Name: _lease_call_range(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._lease_call_range(p_call uuid, OUT lo uuid, OUT hi uuid) RETURNS record
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT (left(p_call::text, 24) || '000000000000')::uuid, (left(p_call::text, 24) || 'ffffffffffff')::uuid $$;


--
-- Name: FUNCTION _lease_call_range(p_call uuid, OUT lo uuid, OUT hi uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._lease_call_range(p_call uuid, OUT lo uuid, OUT hi uuid) IS 'The range of the lease tokens of one reserve call (pgq.unreserve, S35).';


--
-- Name: _lease_tokens(text, smallint[], bigint[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._lease_tokens(p_base text, p_slots smallint[], p_ids bigint[]) RETURNS uuid[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    RETURN ARRAY(SELECT (p_base || u.slot || lpad(to_hex(u.id & pgq._token_id_mask()), 11, '0'))::uuid
                 FROM unnest(p_slots, p_ids) WITH ORDINALITY u(slot, id, n)
                 ORDER BY u.n);
END;
$$;


--
-- Name: FUNCTION _lease_tokens(p_base text, p_slots smallint[], p_ids bigint[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._lease_tokens(p_base text, p_slots smallint[], p_ids bigint[]) IS 'The lease tokens of jobs (slot, id) reserved by the call whose base is given, in order (S15).';


--
-- Name: workers; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.workers (
    name text NOT NULL,
    queues text[] NOT NULL,
    handlers text[] DEFAULT '{}'::text[] NOT NULL,
    version text,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    seen_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: TABLE workers; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.workers IS 'Running workers: the queues each serves and its Go handlers'' job names, written at start and every few seconds; live while seen_at is recent (S87).';


--
-- Name: _live_workers(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._live_workers() RETURNS SETOF pgq.workers
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT * FROM pgq.workers w WHERE w.seen_at > now() - pgq._worker_ttl();
$$;


--
-- Name: FUNCTION _live_workers(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._live_workers() IS 'The workers of pgq.workers seen within pgq._worker_ttl() (S87).';


--
-- Name: _load_chunk(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._load_chunk() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT 1024 $$;


--
-- Name: FUNCTION _load_chunk(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._load_chunk() IS 'The most jobs one pgq.loads row holds: 1,024, the step of pgq.jobs_id_seq.';


--
-- Name: _load_chunk_of(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._load_chunk_of(p_uuid uuid) RETURNS uuid
    LANGUAGE plpgsql STABLE STRICT SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (SELECT c.first_uuid
            FROM (SELECT l.first_uuid, l.n, l.next FROM pgq.loads l WHERE l.first_uuid <= p_uuid ORDER BY l.first_uuid DESC LIMIT 1) c
            WHERE pgq._load_offset(c.first_uuid, p_uuid) BETWEEN c.next AND c.n - 1);
END;
$$;


--
-- Name: FUNCTION _load_chunk_of(p_uuid uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._load_chunk_of(p_uuid uuid) IS 'The first_uuid of the chunk of pgq.loads that holds the job with this uuid, NULL when none does (S85).';


--
-- Name: _load_dispatch(pgq.jobs, jsonb[], uuid[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._load_dispatch(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _load_dispatch(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._load_dispatch(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[]) IS 'Writes the jobs of one plain dispatch as chunks of pgq.loads, in time linear in their number (S85).';


--
-- Name: _load_min(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._load_min() RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_text text := nullif(current_setting('pgq.load_min', true), '');
BEGIN
    IF v_text !~ '^\s*[0-9]{1,9}\s*$' THEN
        RAISE EXCEPTION 'pgq: the setting pgq.load_min must be a whole number of payloads (0: no loads), got %', quote_literal(v_text)
            USING ERRCODE = '22023';
    END IF;
    RETURN coalesce(v_text::int, 1000);
END;
$_$;


--
-- Name: FUNCTION _load_min(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._load_min() IS 'The fewest payloads of a plain dispatch that are written as a load (setting pgq.load_min, 1,000 when not set; 0: never).';


--
-- Name: _load_offset(uuid, uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._load_offset(p_first uuid, p_uuid uuid) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN CASE WHEN left(p_first::text, 24) = left(p_uuid::text, 24)
                THEN ('x' || right(p_uuid::text, 12))::bit(48)::bigint - ('x' || right(p_first::text, 12))::bit(48)::bigint END;
END;
$$;


--
-- Name: FUNCTION _load_offset(p_first uuid, p_uuid uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._load_offset(p_first uuid, p_uuid uuid) IS 'How many places after p_first the job p_uuid is in a chunk of pgq.loads, NULL when they are not of one dispatch.';


--
-- Name: _load_payloads(jsonb[], integer, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._load_payloads(p_payloads jsonb[], p_from integer, p_to integer) RETURNS TABLE(payload jsonb, o bigint)
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT * FROM unnest(p_payloads[p_from : p_to]) WITH ORDINALITY $$;


--
-- Name: FUNCTION _load_payloads(p_payloads jsonb[], p_from integer, p_to integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._load_payloads(p_payloads jsonb[], p_from integer, p_to integer) IS 'Payloads p_from .. p_to of a chunk of pgq.loads with their places from 1, for pgq.load_jobs (S85).';


--
-- Name: _load_rows(pgq.loads, integer, integer, smallint, timestamp with time zone, integer, text, uuid[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._load_rows(p_load pgq.loads, p_from integer, p_count integer, p_slot smallint, p_now timestamp with time zone, p_lease integer, p_worker text, p_tokens uuid[]) RETURNS TABLE(row_tid tid, row_id bigint, reserved pgq.reservation)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
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


--
-- Name: FUNCTION _load_rows(p_load pgq.loads, p_from integer, p_count integer, p_slot smallint, p_now timestamp with time zone, p_lease integer, p_worker text, p_tokens uuid[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._load_rows(p_load pgq.loads, p_from integer, p_count integer, p_slot smallint, p_now timestamp with time zone, p_lease integer, p_worker text, p_tokens uuid[]) IS 'Jobs of a chunk of pgq.loads as rows of pgq.jobs, as dispatched: reserved with the tokens given, or waiting; returns their ctids, ids and reservations in order (S85).';


--
-- Name: _load_split(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._load_split(p_uuid uuid) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _load_split(p_uuid uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._load_split(p_uuid uuid) IS 'Takes one job out of its chunk of pgq.loads as a waiting row of pgq.jobs, however often the chunk changes meanwhile; false when no chunk holds it (S85).';


--
-- Name: _load_unpacked(pgq.loads, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._load_unpacked(p_load pgq.loads, p_count integer) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    AS $$
BEGIN
    IF p_load.next + p_count = p_load.n THEN
        DELETE FROM pgq.loads l WHERE l.slot = p_load.slot AND l.first_uuid = p_load.first_uuid;
    ELSE
        UPDATE pgq.loads l SET next = l.next + p_count WHERE l.slot = p_load.slot AND l.first_uuid = p_load.first_uuid;
    END IF;
END;
$$;


--
-- Name: FUNCTION _load_unpacked(p_load pgq.loads, p_count integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._load_unpacked(p_load pgq.loads, p_count integer) IS 'A chunk of pgq.loads gives up its next jobs, which the caller makes rows (S85).';


--
-- Name: _load_uuid(uuid, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._load_uuid(p_first uuid, p_offset integer) RETURNS uuid
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (left(p_first::text, 24) || lpad(to_hex(('x' || right(p_first::text, 12))::bit(48)::bigint + p_offset), 12, '0'))::uuid;
END;
$$;


--
-- Name: FUNCTION _load_uuid(p_first uuid, p_offset integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._load_uuid(p_first uuid, p_offset integer) IS 'The uuid of the job p_offset places after the one whose uuid is p_first, in a chunk of pgq.loads.';


--
-- Name: _lock_id(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._lock_id(p_name text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (pgq._lock_ids(ARRAY[p_name]))[1];
END;
$$;


--
-- Name: FUNCTION _lock_id(p_name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._lock_id(p_name text) IS 'A one-key advisory lock id in pgq''s space, hashed from ''pgq.'' || name.';


--
-- Name: _lock_ids(text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._lock_ids(p_names text[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN ARRAY(SELECT hashtextextended('pgq.' || u.name, 0) FROM unnest(p_names) WITH ORDINALITY u(name, n) ORDER BY u.n);
END;
$$;


--
-- Name: FUNCTION _lock_ids(p_names text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._lock_ids(p_names text[]) IS 'One-key advisory lock ids in pgq''s space, hashed from ''pgq.'' || name, one per name.';


--
-- Name: _lock_space(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._lock_space(p_space text) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE p_space
        WHEN 'nap' THEN 776776852              -- hashtext('pgq.nap')
        WHEN 'dispatching' THEN -1140850413    -- hashtext('pgq.dispatching')
        WHEN 'fair' THEN 1297339926            -- hashtext('pgq.fair')
        WHEN 'fair_by' THEN 2130150743         -- hashtext('pgq.fair_by')
    END;
$$;


--
-- Name: FUNCTION _lock_space(p_space text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._lock_space(p_space text) IS 'First key of pgq''s two-key advisory lock spaces: nap, dispatching, fair, fair_by.';


--
-- Name: _max_give_backs(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._max_give_backs() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT 3 $$;


--
-- Name: FUNCTION _max_give_backs(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._max_give_backs() IS 'How many interrupted attempts of one job are given back rather than counted: 3 (S35).';


--
-- Name: _max_key_bytes(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._max_key_bytes() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT 1000 $$;


--
-- Name: FUNCTION _max_key_bytes(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._max_key_bytes() IS 'The longest key a dispatch may produce, in bytes: 1000 (S38).';


--
-- Name: _max_timeout(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._max_timeout() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT 2147483 $$;


--
-- Name: FUNCTION _max_timeout(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._max_timeout() IS 'The longest job timeout in seconds: 2147483, the longest statement_timeout PostgreSQL can set (S92).';


--
-- Name: _may_add_to_batch(pgq.job_batches, uuid, uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._may_add_to_batch(p_batch pgq.job_batches, p_job uuid, p_token uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF p_batch.dispatched_by IS NULL
       OR (to_regrole(quote_ident(p_batch.dispatched_by)) IS NOT NULL
           AND pg_has_role(session_user, p_batch.dispatched_by, 'MEMBER')) THEN
        RETURN true;
    END IF;
    RETURN p_job IS NOT NULL AND p_token IS NOT NULL AND EXISTS (
        SELECT FROM pgq.jobs j
        WHERE j.slot = pgq._token_slot(p_token) AND j.uuid = p_job AND j.lease_token = p_token
          AND j.batch_id = p_batch.id);
END;
$$;


--
-- Name: FUNCTION _may_add_to_batch(p_batch pgq.job_batches, p_job uuid, p_token uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._may_add_to_batch(p_batch pgq.job_batches, p_job uuid, p_token uuid) IS 'Whether the caller may add to a batch: a running member of it (its job''s uuid and lease token), or the role that dispatched it or a member of that role (S93).';


--
-- Name: _may_exceed_ceilings(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._may_exceed_ceilings() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT EXISTS (SELECT FROM pgq.roles r
                   WHERE r.kind IN ('admin', 'owner') AND to_regrole(quote_ident(r.name)) IS NOT NULL
                     AND pg_has_role(session_user, r.name, 'MEMBER'));
$$;


--
-- Name: FUNCTION _may_exceed_ceilings(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._may_exceed_ceilings() IS 'Whether the login role may define job classes (admin, owner, superuser), and so dispatch past the ceilings (S90).';


--
-- Name: _middleware(jsonb, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._middleware(p_middleware jsonb, p_name text) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (SELECT m -> p_name FROM jsonb_array_elements(p_middleware) m WHERE m ? p_name LIMIT 1);
END;
$$;


--
-- Name: FUNCTION _middleware(p_middleware jsonb, p_name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._middleware(p_middleware jsonb, p_name text) IS 'The settings of the first middleware of that name, or NULL.';


--
-- Name: _middleware_bounds(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._middleware_bounds(OUT entries integer, OUT by_fields integer, OUT key_bytes integer) RETURNS record
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    entries := 8;
    by_fields := 8;
    key_bytes := 4000;
END;
$$;


--
-- Name: FUNCTION _middleware_bounds(OUT entries integer, OUT by_fields integer, OUT key_bytes integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._middleware_bounds(OUT entries integer, OUT by_fields integer, OUT key_bytes integer) IS 'The most middleware a job may carry: 8 entries, 8 "by" fields each, 4,000 bytes of keys (S98).';


--
-- Name: _middleware_key(text, text, jsonb, jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._middleware_key(p_job text, p_name text, p_cfg jsonb, p_payload jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (pgq._middleware_keys(ARRAY[p_job], ARRAY[p_name], ARRAY[p_cfg], ARRAY[p_payload]))[1];
END;
$$;


--
-- Name: FUNCTION _middleware_key(p_job text, p_name text, p_cfg jsonb, p_payload jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._middleware_key(p_job text, p_name text, p_cfg jsonb, p_payload jsonb) IS 'The overlap, rate-limit or circuit key a middleware uses for a job; NULL when a by field is missing.';


--
-- Name: _middleware_keys(text[], text[], jsonb[], jsonb[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._middleware_keys(p_jobs text[], p_names text[], p_cfgs jsonb[], p_payloads jsonb[]) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (SELECT pgq._keys_or_null(
        array_agg(CASE u.name
                      WHEN 'rate_limited' THEN u.cfg ->> 'limit'
                      WHEN 'concurrency_limited' THEN CASE jsonb_typeof(u.cfg -> 'limit') WHEN 'string' THEN '@' || (u.cfg ->> 'limit') ELSE u.job END
                      WHEN 'without_overlapping' THEN CASE WHEN (u.cfg ->> 'shared')::boolean THEN 'shared' ELSE u.job END
                      ELSE u.job END ORDER BY u.n),
        array_agg(CASE WHEN u.name <> 'rate_limited' THEN u.cfg ->> 'key' END ORDER BY u.n),
        array_agg(u.cfg -> 'by' ORDER BY u.n),
        array_agg(u.payload ORDER BY u.n))
    FROM unnest(p_jobs, p_names, p_cfgs, p_payloads) WITH ORDINALITY AS u(job, name, cfg, payload, n));
END;
$$;


--
-- Name: FUNCTION _middleware_keys(p_jobs text[], p_names text[], p_cfgs jsonb[], p_payloads jsonb[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._middleware_keys(p_jobs text[], p_names text[], p_cfgs jsonb[], p_payloads jsonb[]) IS 'The overlap, rate-limit or circuit key a middleware uses for each job of a batch; NULL where a by field is missing.';


--
-- Name: _move_waiting(smallint, smallint, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._move_waiting(p_from smallint, p_to smallint, p_max integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _move_waiting(p_from smallint, p_to smallint, p_max integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._move_waiting(p_from smallint, p_to smallint, p_max integer) IS 'Moves up to p_max waiting jobs no one holds from one slot of pgq.jobs to another (deleted and inserted again); returns how many.';


--
-- Name: _notify(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._notify(queue text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_key int := hashtext(_notify.queue);
BEGIN
    -- The dispatching lock first, then the nap lock (pgq._lock_space): in this order a
    -- nap registered after the test below still waits for this transaction.
    IF pg_try_advisory_xact_lock_shared(pgq._lock_space('dispatching'), v_key) THEN
        IF (CASE WHEN pg_try_advisory_lock(pgq._lock_space('nap'), v_key)
                 THEN pg_advisory_unlock(pgq._lock_space('nap'), v_key) ELSE false END) THEN
            RETURN;  -- nobody naps on this queue: its workers will reserve again by themselves
        END IF;
    END IF;
    PERFORM pg_notify('pgq_jobs', _notify.queue);
END;
$$;


--
-- Name: FUNCTION _notify(queue text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._notify(queue text) IS 'Wakes napping workers of a queue on commit (pgq_jobs), and holds the queue''s dispatching lock until the transaction ends.';


--
-- Name: _overlap_gen(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._overlap_gen() RETURNS smallint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (SELECT g.gen FROM pgq.overlap_gens g WHERE g.state = 'current');  -- plan kept (see pgq.dispatch)
END;
$$;


--
-- Name: FUNCTION _overlap_gen(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._overlap_gen() IS 'The generation of pgq.overlap_locks that new leases go to (pgq.overlap_gens, state current).';


--
-- Name: _overlap_key_lock(bigint); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._overlap_key_lock(p_lock_id bigint) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '500ms'
    AS $$
BEGIN
    IF pg_try_advisory_xact_lock(p_lock_id) THEN
        RETURN true;  -- the common case, without the subtransaction below
    END IF;
    BEGIN
        PERFORM pg_advisory_xact_lock(p_lock_id);
        RETURN true;
    EXCEPTION WHEN lock_not_available THEN
        RETURN false;
    END;
END;
$$;


--
-- Name: FUNCTION _overlap_key_lock(p_lock_id bigint); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._overlap_key_lock(p_lock_id bigint) IS 'Takes an overlap key''s advisory lock for a SQL handler''s transaction, waiting up to 0.5 s for a reserve that holds it; false when it is still held (S34).';


--
-- Name: _overlap_lock_id(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._overlap_lock_id(p_key text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN pgq._lock_id('overlap:' || p_key);
END;
$$;


--
-- Name: FUNCTION _overlap_lock_id(p_key text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._overlap_lock_id(p_key text) IS 'The advisory lock id of a without_overlapping key (S26, S34).';


--
-- Name: _overlap_lock_ids(text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._overlap_lock_ids(p_keys text[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN pgq._lock_ids(ARRAY(SELECT 'overlap:' || k FROM unnest(p_keys) WITH ORDINALITY u(k, n) ORDER BY u.n));
END;
$$;


--
-- Name: FUNCTION _overlap_lock_ids(p_keys text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._overlap_lock_ids(p_keys text[]) IS 'The advisory lock ids of without_overlapping keys, in one call (S26, S34).';


--
-- Name: _overlap_ttl(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._overlap_ttl() RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT interval '10 seconds' $$;


--
-- Name: FUNCTION _overlap_ttl(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._overlap_ttl() IS 'How long an overlap lease lasts without a heartbeat: 10 s (S34).';


--
-- Name: _overlap_until(timestamp with time zone, timestamp with time zone, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._overlap_until(p_since timestamp with time zone, p_now timestamp with time zone, p_expire_after integer) RETURNS timestamp with time zone
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN least(p_now + pgq._overlap_ttl(), p_since + make_interval(secs => p_expire_after));
END;
$$;


--
-- Name: FUNCTION _overlap_until(p_since timestamp with time zone, p_now timestamp with time zone, p_expire_after integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._overlap_until(p_since timestamp with time zone, p_now timestamp with time zone, p_expire_after integer) IS 'The end of an overlap lease renewed at p_now: the TTL, capped by expire_after (S27, S34).';


--
-- Name: _pick(jsonb, text, integer, timestamp with time zone, bigint[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pick(p_cursor jsonb, p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[]) RETURNS pgq.picked
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
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


--
-- Name: FUNCTION _pick(p_cursor jsonb, p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pick(p_cursor jsonb, p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[]) IS 'Reserve: the next waiting jobs of a queue in its order, locked (SKIP LOCKED): rows of one slot, or the chunk of a bulk dispatch whose jobs come next (S30, S77, S85).';


--
-- Name: _pick_begin(text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pick_begin(p_queues text[]) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
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


--
-- Name: FUNCTION _pick_begin(p_queues text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pick_begin(p_queues text[]) IS 'Reserve''s cursor: this session''s marks for these queues, lowered to the rows written since its last reserve by transactions it did not see, with this call''s snapshot (S77).';


--
-- Name: _pick_done(jsonb, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pick_done(p_cursor jsonb, p_queue text) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
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


--
-- Name: FUNCTION _pick_done(p_cursor jsonb, p_queue text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pick_done(p_cursor jsonb, p_queue text) IS 'Reserve''s cursor once a queue is done: its marks move up to its first waiting job of each priority (S77).';


--
-- Name: _pick_end(jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pick_end(p_cursor jsonb) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _pick_end(p_cursor jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pick_end(p_cursor jsonb) IS 'Reserve''s cursor: keeps its marks in the session (setting pgq.reserve_marks) with the snapshot they hold for (S77).';


--
-- Name: _pick_fair(jsonb, text, integer, timestamp with time zone, bigint[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pick_fair(p_cursor jsonb, p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[]) RETURNS pgq.picked
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
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


--
-- Name: FUNCTION _pick_fair(p_cursor jsonb, p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pick_fair(p_cursor jsonb, p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[]) IS 'Reserve: pgq._pick for a fair queue: the next ready jobs round-robin across its keys by pass and weight, locked (SKIP LOCKED), rows of one slot in the order to take them (S114-S117).';


--
-- Name: _pick_lower(jsonb, text, integer, timestamp with time zone, bigint); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pick_lower(p_cursor jsonb, p_queue text, p_priority integer, p_at timestamp with time zone, p_id bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _pick_lower(p_cursor jsonb, p_queue text, p_priority integer, p_at timestamp with time zone, p_id bigint); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pick_lower(p_cursor jsonb, p_queue text, p_priority integer, p_at timestamp with time zone, p_id bigint) IS 'Reserve''s cursor with the mark of (queue, priority) lowered to (at, id): such a job became waiting below it (S77).';


--
-- Name: _pick_rows(jsonb, smallint[], text, integer, timestamp with time zone, bigint[], pgq.loads); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pick_rows(p_marks jsonb, p_slots smallint[], p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[], p_load pgq.loads, OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT before boolean[], OUT plain boolean[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
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


--
-- Name: FUNCTION _pick_rows(p_marks jsonb, p_slots smallint[], p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[], p_load pgq.loads, OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT before boolean[], OUT plain boolean[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pick_rows(p_marks jsonb, p_slots smallint[], p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[], p_load pgq.loads, OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT before boolean[], OUT plain boolean[]) IS 'Reserve: the next waiting rows of a queue, locked (SKIP LOCKED), in its order, from the session''s marks (S30, S77).';


--
-- Name: _pick_slots(jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pick_slots(p_cursor jsonb) RETURNS smallint[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (p_cursor ->> 'slots')::smallint[];
END;
$$;


--
-- Name: FUNCTION _pick_slots(p_cursor jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pick_slots(p_cursor jsonb) IS 'The slots of pgq.jobs that may hold jobs, as the reserve''s cursor read them (S80).';


--
-- Name: _pick_swept(jsonb, text[], timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pick_swept(p_cursor jsonb, p_queues text[], p_low timestamp with time zone, p_now timestamp with time zone) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
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


--
-- Name: FUNCTION _pick_swept(p_cursor jsonb, p_queues text[], p_low timestamp with time zone, p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pick_swept(p_cursor jsonb, p_queues text[], p_low timestamp with time zone, p_now timestamp with time zone) IS 'Reserve''s cursor after its lease sweep: the next sweep of each queue starts at the first expired lease left (S77).';


--
-- Name: _pickup_checks(pgq.picked, text, timestamp with time zone, integer, text, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pickup_checks(p_pick pgq.picked, p_base text, p_now timestamp with time zone, p_lease integer, p_worker text, p_default_tries integer) RETURNS pgq.reserve_batch
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    v_n     int := cardinality(p_pick.tids);
    v_b     pgq.reserve_batch;
    v_tids  tid[] := p_pick.tids;         -- local arrays: see pgq._admission
    v_tokens uuid[] := pgq._lease_tokens(p_base, array_fill(p_pick.slot, ARRAY[v_n]), p_pick.ids);
    v_rep   pgq.reservation[] := '{}';
    v_rep_places int[] := '{}';
    v_jobs  pgq.jobs[];                   -- the rows read, as reserved, with their places,
    v_ords  int[];
    v_checked boolean[];                  -- and whether a check other than admission applies
    v_admit pgq.jobs[] := '{}';           -- to admission, with their places
    v_admit_ords int[] := '{}';
    v_job   pgq.jobs;
    v_why   text;
    v_ended boolean := false;             -- a batch member failed for good here: others of the pick may have ended
BEGIN
    v_b.slot := p_pick.slot;
    v_b.tokens := v_tokens;
    SELECT r.jobs, r.ords, r.checked INTO v_jobs, v_ords, v_checked FROM pgq._pickup_rows(p_pick, p_now, p_default_tries) r;
    v_jobs := pgq._as_reserved(v_jobs, v_ords, v_tokens, p_now, p_lease, p_worker);
    FOR i IN 1 .. coalesce(cardinality(v_jobs), 0) LOOP
        IF v_ended AND NOT pgq._still_waiting(p_pick.slot, v_tids[v_ords[i]]) THEN
            v_tids[v_ords[i]] := NULL;
            CONTINUE;
        END IF;
        IF NOT v_checked[i] THEN  -- middleware only: straight to admission
            v_admit := v_admit || v_jobs[i];
            v_admit_ords := v_admit_ords || v_ords[i];
            CONTINUE;
        END IF;
        v_job := v_jobs[i];
        IF v_job.cancel_requested_at IS NULL AND v_job.batch_id IS NOT NULL
           AND EXISTS (SELECT FROM pgq.job_batches b WHERE b.id = v_job.batch_id AND b.cancelled_at IS NOT NULL) THEN
            v_job.cancel_requested_at := p_now;
            v_job.cancel_requested_by := format('the cancel of batch %s', v_job.batch_id);
        END IF;
        IF v_job.cancel_requested_at IS NOT NULL THEN
            v_why := 'cancelled by ' || v_job.cancel_requested_by;
            PERFORM pgq._cancel(v_job, p_now, false);
            v_rep := v_rep || pgq._reported(v_job, 'cancelled', v_why);
        ELSIF v_job.debounce_key IS NOT NULL AND NOT EXISTS (
            SELECT FROM pgq.debounce_tokens d WHERE d.key = v_job.debounce_key AND d.token = v_job.debounce_token
        ) THEN
            v_why := 'superseded by a newer dispatch of ' || v_job.debounce_key;
            PERFORM pgq._record(v_job, 'debounced', p_now, v_why, p_started => false);
            DELETE FROM pgq.jobs j WHERE j.uuid = v_job.uuid;
            PERFORM pgq._record_ends('cancelled', ARRAY[v_job.uuid], ARRAY[v_job.batch_id], ARRAY[v_job.chain_id],
                                     ARRAY[v_job.chain_step], v_why);  -- ended without running (S74)
            -- No key in the event: keys come from payloads, and any role may LISTEN.
            PERFORM pg_notify('pgq_events', json_build_object(
                'event', 'job_debounced', 'uuid', v_job.uuid, 'job', v_job.job, 'queue', v_job.queue)::text);
            v_rep := v_rep || pgq._reported(v_job, 'debounced', v_why);
        ELSIF (v_job.retry_until IS NOT NULL AND p_now > v_job.retry_until)
              OR (v_job.retry_until IS NULL AND coalesce(v_job.tries, p_default_tries) > 0
                  AND v_job.attempts > coalesce(v_job.tries, p_default_tries)) THEN
            v_why := pgq._exhausted_message(v_job, p_now);
            PERFORM pgq._record(v_job, 'exhausted', p_now, v_why, p_final => true, p_started => false);
            PERFORM pgq._bury(v_job, v_why, p_now);
            v_rep := v_rep || pgq._reported(v_job, 'exhausted', v_why);
            v_ended := v_ended OR v_job.batch_id IS NOT NULL;  -- only a batch member's failure ends others
        ELSIF v_job.middleware IS NOT NULL THEN
            v_admit := v_admit || v_job;
            v_admit_ords := v_admit_ords || v_ords[i];
            CONTINUE;
        ELSE
            PERFORM pgq._handing_over(v_job);
            CONTINUE;
        END IF;
        v_rep_places := v_rep_places || v_ords[i];
        v_tids[v_ords[i]] := NULL;
    END LOOP;
    IF v_ended THEN  -- those sent to admission before an end that ended them too
        SELECT coalesce(array_agg(v_admit[a.n] ORDER BY a.n), '{}'), coalesce(array_agg(a.o ORDER BY a.n), '{}')
        INTO v_admit, v_admit_ords
        FROM unnest(v_admit_ords) WITH ORDINALITY a(o, n)
        WHERE pgq._still_waiting(p_pick.slot, v_tids[a.o]);
    END IF;
    v_b.tids := v_tids;
    v_b.held := array_fill(NULL::text, ARRAY[v_n]);
    v_b.expire := array_fill(NULL::int, ARRAY[v_n]);
    v_b.admit := v_admit;
    v_b.admit_ords := v_admit_ords;
    v_b.reports := v_rep;
    v_b.report_places := v_rep_places;
    v_b.turned := '{}';
    v_b.busy := false;
    RETURN v_b;
END;
$$;


--
-- Name: FUNCTION _pickup_checks(p_pick pgq.picked, p_base text, p_now timestamp with time zone, p_lease integer, p_worker text, p_default_tries integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pickup_checks(p_pick pgq.picked, p_base text, p_now timestamp with time zone, p_lease integer, p_worker text, p_default_tries integer) IS 'Reserve stage 3: picked jobs that must not run end before their handler (cancelled S40 S74, debounced S24, exhausted S12); returns the batch for admission.';


--
-- Name: _pickup_rows(pgq.picked, timestamp with time zone, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._pickup_rows(p_pick pgq.picked, p_now timestamp with time zone, p_default_tries integer, OUT jobs pgq.jobs[], OUT ords integer[], OUT checked boolean[]) RETURNS record
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_mergejoin TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_hashjoin TO 'on'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    SELECT array_agg(x.job), array_agg(x.ord), array_agg(x.checked) INTO jobs, ords, checked
    FROM (SELECT j AS job, p.ord::int AS ord, c.checked
          FROM pgq.jobs j
          JOIN unnest(p_pick.tids) WITH ORDINALITY p(tid, ord) ON j.ctid = p.tid
          CROSS JOIN LATERAL (
              SELECT (j.cancel_requested_at IS NOT NULL OR j.batch_id IS NOT NULL OR j.debounce_key IS NOT NULL
                      OR j.unique_until = 'processing'
                      OR (j.retry_until IS NOT NULL AND p_now > j.retry_until)
                      OR (j.retry_until IS NULL AND coalesce(j.tries, p_default_tries) > 0
                          AND j.attempts + 1 > coalesce(j.tries, p_default_tries))) IS TRUE AS checked
          ) c
          WHERE j.slot = p_pick.slot AND j.ctid = ANY (p_pick.tids) AND (j.middleware IS NOT NULL OR c.checked)
          ORDER BY p.ord) x;  -- the aggregates keep this order
END;
$$;


--
-- Name: FUNCTION _pickup_rows(p_pick pgq.picked, p_now timestamp with time zone, p_default_tries integer, OUT jobs pgq.jobs[], OUT ords integer[], OUT checked boolean[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._pickup_rows(p_pick pgq.picked, p_now timestamp with time zone, p_default_tries integer, OUT jobs pgq.jobs[], OUT ords integer[], OUT checked boolean[]) IS 'Reserve: the picked rows a pickup check or admission applies to, in pick order, by one TID scan (S78).';


--
-- Name: _proc_search_path(regprocedure); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._proc_search_path(p_proc regprocedure) RETURNS text
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT substr(c, length('search_path=') + 1)
    FROM pg_proc p, unnest(p.proconfig) c
    WHERE p.oid = p_proc AND c LIKE 'search\_path=%'
    LIMIT 1;
$$;


--
-- Name: FUNCTION _proc_search_path(p_proc regprocedure); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._proc_search_path(p_proc regprocedure) IS 'The search_path a function pins itself; NULL when it pins none (S86).';


--
-- Name: _record(pgq.jobs, text, timestamp with time zone, text, integer, boolean, boolean, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._record(p_job pgq.jobs, p_outcome text, p_now timestamp with time zone, p_exception text DEFAULT NULL::text, p_delay integer DEFAULT NULL::integer, p_final boolean DEFAULT false, p_started boolean DEFAULT true, p_detail text DEFAULT NULL::text, p_hint text DEFAULT NULL::text) RETURNS pgq.attempts
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_row pgq.attempts;
BEGIN
    INSERT INTO pgq.attempts
        (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at,
         finished_at, outcome, exception, delay, final, exception_detail, exception_hint)
    VALUES (p_job.uuid, p_job.job, p_job.queue, p_job.attempts, p_job.reserved_by, p_job.lease_token,
            p_job.reserved_at, CASE WHEN p_started THEN p_job.started_at END, p_now, p_outcome,
            p_exception, p_delay, p_final, nullif(p_detail, ''), nullif(p_hint, ''))
    RETURNING * INTO v_row;  -- plan kept (see pgq.dispatch)
    RETURN v_row;
END;
$$;


--
-- Name: FUNCTION _record(p_job pgq.jobs, p_outcome text, p_now timestamp with time zone, p_exception text, p_delay integer, p_final boolean, p_started boolean, p_detail text, p_hint text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._record(p_job pgq.jobs, p_outcome text, p_now timestamp with time zone, p_exception text, p_delay integer, p_final boolean, p_started boolean, p_detail text, p_hint text) IS 'Appends one attempt row for a job as it is now (S19), with its exception''s DETAIL and HINT (S88).';


--
-- Name: _record_action(text, uuid, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._record_action(p_action text, p_job uuid, p_queue text, p_detail text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO pgq.actions (actor, action, job_uuid, queue, detail)
    VALUES (session_user, p_action, p_job, p_queue, p_detail);
END;
$$;


--
-- Name: FUNCTION _record_action(p_action text, p_job uuid, p_queue text, p_detail text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._record_action(p_action text, p_job uuid, p_queue text, p_detail text) IS 'Records an operator''s action in pgq.actions, with the login role that took it.';


--
-- Name: _record_ends(text, uuid[], uuid[], uuid[], integer[], text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._record_ends(p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[], p_exception text DEFAULT NULL::text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO pgq.job_ends (job_uuid, outcome, exception, batch_id, chain_id, chain_step)
    SELECT e.uuid, p_outcome, p_exception, e.batch, e.chain, e.step
    FROM unnest(p_uuids, p_batches, p_chains, p_steps) WITH ORDINALITY AS e(uuid, batch, chain, step, n)
    WHERE e.batch IS NOT NULL OR e.chain IS NOT NULL
    ORDER BY e.n;
END;
$$;


--
-- Name: FUNCTION _record_ends(p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[], p_exception text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._record_ends(p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[], p_exception text) IS 'Records that jobs of chains or batches ended (pgq.job_ends), which moves their chains and batches in this transaction (S70-S76).';


--
-- Name: _refuse_named_limit(text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._refuse_named_limit(p_kind text, p_name text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_path  jsonpath := format('$[*].%s.limit ? (@ == $name)', p_kind)::jsonpath;
    v_chain jsonpath := format('$[*].middleware[*].%s.limit ? (@ == $name)', p_kind)::jsonpath;
    v_vars  jsonb := jsonb_build_object('name', p_name);
    v_users text;
BEGIN
    SELECT string_agg(u, ', ' ORDER BY u) INTO v_users
    FROM (SELECT format('job class %s', c.name) AS u FROM pgq.job_classes c
          WHERE jsonb_path_exists(c.middleware, v_path, v_vars)
          UNION ALL
          SELECT format('schedule %s', e.name) FROM pgq.schedule_entries e
          WHERE jsonb_path_exists(e.middleware, v_path, v_vars)
          UNION ALL
          SELECT format('chain %s', ch.id) FROM pgq.job_chains ch
          WHERE ch.state = 'running' AND jsonb_path_exists(ch.steps, v_chain, v_vars)) x(u);
    IF v_users IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: limit % is named by %', quote_literal(p_name), v_users
            USING ERRCODE = '2BP01', HINT = 'Define them without it first (a running chain: let it end, or cancel it).';
    END IF;
END;
$_$;


--
-- Name: FUNCTION _refuse_named_limit(p_kind text, p_name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._refuse_named_limit(p_kind text, p_name text) IS 'Raises 2BP01 while a job class, schedule or running chain names this limit (S83, S99).';


--
-- Name: _reject(text, uuid[], uuid[], timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._reject(p_call text, p_uuids uuid[], p_tokens uuid[], p_now timestamp with time zone) RETURNS void
    LANGUAGE sql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    UPDATE pgq.attempts a
    SET rejected_calls = array_append(a.rejected_calls, format('%s rejected at %s: lease lost', p_call, p_now))
    FROM unnest(p_uuids, p_tokens) AS t(uuid, token)
    WHERE a.job_uuid = t.uuid
      AND a.lease_token = t.token;
$$;


--
-- Name: FUNCTION _reject(p_call text, p_uuids uuid[], p_tokens uuid[], p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._reject(p_call text, p_uuids uuid[], p_tokens uuid[], p_now timestamp with time zone) IS 'Records calls made with lease tokens that lost their jobs on their attempts (S15).';


--
-- Name: _release_overlap(uuid[], text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._release_overlap(p_uuids uuid[], p_keys text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_hashjoin TO 'on'
    SET enable_mergejoin TO 'on'
    AS $_$
DECLARE
    v_freed text[];
    v_n     bigint[];
BEGIN
    -- Shared: ends never wait for each other. Only a reserve's last stage takes it
    -- alone, and waits for nothing after, so an end waits for it in no cycle.
    PERFORM pg_advisory_xact_lock_shared(l.id)
    FROM (SELECT DISTINCT unnest(pgq._concurrency_lock_ids('wake',
              ARRAY(SELECT regexp_replace(substr(k, 2), '#[0-9]+$', '') FROM unnest(p_keys) k WHERE k LIKE '#%'))) AS id) l
    ORDER BY l.id;
    -- The keys as one index scan of each generation, and the uuids as a hashed
    -- semi-join, not "= ANY", which would test each lease found against every uuid of a
    -- completion batch (a join with unnest(p_keys) gets a generic plan that does too).
    WITH gone AS (
        DELETE FROM pgq.overlap_locks o
        WHERE o.key = ANY (p_keys) AND o.job_uuid IN (SELECT u FROM unnest(p_uuids) u)
        RETURNING o.key
    )
    SELECT array_agg(f.key), array_agg(f.n) INTO v_freed, v_n
    FROM (SELECT regexp_replace(substr(g.key, 2), '#[0-9]+$', '') AS key, count(*) AS n
          FROM gone g WHERE g.key LIKE '#%'
          GROUP BY 1) f;
    IF v_freed IS NOT NULL THEN
        PERFORM pgq._wake_waiting(v_freed, v_n);
    END IF;
END;
$_$;


--
-- Name: FUNCTION _release_overlap(p_uuids uuid[], p_keys text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._release_overlap(p_uuids uuid[], p_keys text[]) IS 'Ends the overlap leases these jobs hold on these keys; a lease taken over by another job stays (S26, S34); wakes a job waiting for each concurrency_limited place freed (S99).';


--
-- Name: _release_owned(text[], uuid[], text[], uuid[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._release_owned(p_unique text[], p_owners uuid[], p_debounce text[], p_tokens uuid[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
BEGIN
    DELETE FROM pgq.unique_locks u USING unnest(p_unique, p_owners) AS l(key, owner)
    WHERE u.key = l.key AND u.owner = l.owner;
    DELETE FROM pgq.debounce_tokens d USING unnest(p_debounce, p_tokens) AS t(key, token)
    WHERE d.key = t.key AND d.token = t.token;
END;
$$;


--
-- Name: FUNCTION _release_owned(p_unique text[], p_owners uuid[], p_debounce text[], p_tokens uuid[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._release_owned(p_unique text[], p_owners uuid[], p_debounce text[], p_tokens uuid[]) IS 'Deletes the unique locks and debounce tokens of ended jobs that they still own (S22, S24).';


--
-- Name: _reported(pgq.jobs, pgq.pickup, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._reported(p_job pgq.jobs, p_pickup pgq.pickup, p_note text, p_middleware text DEFAULT NULL::text) RETURNS pgq.reservation
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN ROW(p_job.uuid, p_job.job, p_job.queue, p_job.payload, p_job.priority, p_job.attempts, p_job.tries,
               p_job.handler::text, p_job.timeout, p_job.lease_token, p_job.reserved_at, p_job.reserved_until,
               p_job.overlap_keys, p_job.created_at, p_pickup, p_note, p_middleware, NULL,
               p_job.traceparent, p_job.tracestate)::pgq.reservation;
END;
$$;


--
-- Name: FUNCTION _reported(p_job pgq.jobs, p_pickup pgq.pickup, p_note text, p_middleware text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._reported(p_job pgq.jobs, p_pickup pgq.pickup, p_note text, p_middleware text) IS 'A job as pgq.reserve returns it: to run, or with what happened at pickup.';


--
-- Name: _retry_failed_ids(bigint[], text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._retry_failed_ids(p_ids bigint[], p_detail text DEFAULT NULL::text) RETURNS SETOF uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_uuids  uuid[];
    v_queues text[];
    v_grouped uuid[];  -- jobs of batches or chains, with theirs (S73)
    v_batches uuid[];
    v_chains  uuid[];
    v_steps   int[];
BEGIN
    -- Their queues' fair_by is read under its lock (pgq._fair_by, S114).
    PERFORM pgq._fair_by(f.queue) FROM (SELECT DISTINCT f.queue FROM pgq.failed_jobs f WHERE f.id = ANY (p_ids) ORDER BY 1) f;
    WITH gone AS (
        DELETE FROM pgq.failed_jobs f
        WHERE f.id = ANY (p_ids)
        RETURNING f.*
    ), back AS (
        -- The unique token comes back but not the lock (released when the job failed):
        -- every release is owner-checked, so this copy can never free another's lock (S22).
        -- A debounced job comes back without its token (also released): retrying it is a
        -- deliberate act, so it runs instead of being debounced at pickup.
        INSERT INTO pgq.jobs AS j
            (uuid, job, queue, payload, priority, handler, tries, backoff, max_exceptions, timeout,
             fail_on_timeout, retry_until, unique_key, unique_token, unique_until, debounce_key, debounce_token,
             middleware, wait_reason, batch_id, chain_id, chain_step, slot, fair_key)
        SELECT g.uuid, g.job, g.queue, g.payload, g.priority,
               -- a handler dropped since the job failed: the class's current one
               CASE WHEN EXISTS (SELECT FROM pg_proc p WHERE p.oid = g.handler) THEN g.handler
                    ELSE (SELECT c.handler FROM pgq.job_classes c WHERE c.name = g.job) END,
               g.tries, g.backoff, g.max_exceptions,
               g.timeout, g.fail_on_timeout, now() + (g.retry_until - g.dispatched_at), g.unique_key, g.unique_token,
               g.unique_until, NULL, NULL, g.middleware, 'retried', g.batch_id, g.chain_id, g.chain_step, pgq._slot(),
               CASE WHEN q.fair_by IS NOT NULL THEN coalesce(g.payload ->> q.fair_by, '') END  -- S114
        FROM gone g
        LEFT JOIN pgq.queues q ON q.name = g.queue
        ORDER BY g.id
        RETURNING j.uuid, j.queue, j.batch_id, j.chain_id, j.chain_step
    ), recorded AS (
        INSERT INTO pgq.actions (actor, action, job_uuid, queue, detail)
        SELECT session_user, 'retry', b.uuid, b.queue, p_detail FROM back b
    )
    SELECT coalesce(array_agg(b.uuid), '{}'), coalesce(array_agg(DISTINCT b.queue), '{}'),
           array_agg(b.uuid) FILTER (WHERE b.batch_id IS NOT NULL OR b.chain_id IS NOT NULL),
           array_agg(b.batch_id) FILTER (WHERE b.batch_id IS NOT NULL OR b.chain_id IS NOT NULL),
           array_agg(b.chain_id) FILTER (WHERE b.batch_id IS NOT NULL OR b.chain_id IS NOT NULL),
           array_agg(b.chain_step) FILTER (WHERE b.batch_id IS NOT NULL OR b.chain_id IS NOT NULL)
    INTO v_uuids, v_queues, v_grouped, v_batches, v_chains, v_steps
    FROM back b;
    IF v_grouped IS NOT NULL THEN
        -- a chain goes on from the retried step; its batch counts the member pending again
        PERFORM pgq._jobs_retried(v_grouped, v_batches, v_chains, v_steps);
    END IF;

    -- The keys of fair queues get their turns (S115).
    PERFORM pgq._fair_enter(j.queue, array_agg(j.fair_key))
    FROM pgq.jobs j WHERE j.uuid = ANY (v_uuids) AND j.fair_key IS NOT NULL GROUP BY j.queue;
    PERFORM pg_notify('pgq_jobs', q) FROM unnest(v_queues) q;
    RETURN QUERY SELECT unnest(v_uuids);
END;
$$;


--
-- Name: FUNCTION _retry_failed_ids(p_ids bigint[], p_detail text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._retry_failed_ids(p_ids bigint[], p_detail text) IS 'Requeues the failed jobs of these pgq.failed_jobs ids with attempts reset, recorded in pgq.actions; chains resume, batches count them pending (S20, S73).';


--
-- Name: _retry_window(integer, integer[], integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._retry_window(p_tries integer, p_backoff integer[], p_timeout integer) RETURNS bigint
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE WHEN p_tries = 0 THEN NULL ELSE
        coalesce((SELECT sum(p_backoff[least(n, cardinality(p_backoff))]) FROM generate_series(1, p_tries - 1) n), 0)
        + p_tries::bigint * p_timeout END;
$$;


--
-- Name: FUNCTION _retry_window(p_tries integer, p_backoff integer[], p_timeout integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._retry_window(p_tries integer, p_backoff integer[], p_timeout integer) IS 'Seconds between a job''s first attempt and its last: backoffs plus tries x timeout; NULL when tries is unlimited.';


--
-- Name: _rotate_overlap_gens(bigint, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._rotate_overlap_gens(p_bytes bigint, p_now timestamp with time zone) RETURNS smallint
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _rotate_overlap_gens(p_bytes bigint, p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._rotate_overlap_gens(p_bytes bigint, p_now timestamp with time zone) IS 'Moves the generations of pgq.overlap_locks on: once the current one holds p_bytes of rows, an old one with no live lease is truncated and made current (S81). Returns it, or NULL.';


--
-- Name: _schedule_grace(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._schedule_grace() RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT interval '30 seconds' $$;


--
-- Name: FUNCTION _schedule_grace(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._schedule_grace() IS 'How late a schedule''s tick may fire and still be on time, not missed: 30 s (S62).';


--
-- Name: _schedule_max_catch_up(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._schedule_max_catch_up() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT 100 $$;


--
-- Name: FUNCTION _schedule_max_catch_up(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._schedule_max_catch_up() IS 'The most ticks one firing of a schedule dispatches; older missed ticks are skipped: 100 (S62).';


--
-- Name: _schedule_tick_key(text, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._schedule_tick_key(p_schedule text, p_tick timestamp with time zone) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT p_schedule || ':' || to_char(p_tick AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"');
$$;


--
-- Name: FUNCTION _schedule_tick_key(p_schedule text, p_tick timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._schedule_tick_key(p_schedule text, p_tick timestamp with time zone) IS 'The unique key of a schedule tick''s job: schedule:tick in UTC (S61).';


--
-- Name: _schedule_unique_for(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._schedule_unique_for() RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT interval '1 day' $$;


--
-- Name: FUNCTION _schedule_unique_for(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._schedule_unique_for() IS 'The unique_for of the job dispatched for a schedule''s tick: 1 day (S61).';


--
-- Name: _sees_payloads(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._sees_payloads() RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT coalesce((SELECT pg_has_role(current_user, r.name, 'MEMBER')
                     FROM pgq.roles r WHERE r.kind = 'payload_reader' AND to_regrole(quote_ident(r.name)) IS NOT NULL), false);
$$;


--
-- Name: FUNCTION _sees_payloads(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._sees_payloads() IS 'Whether the current role may read job payloads (a member of the payload reader role, S45).';


--
-- Name: _shrink_places(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._shrink_places() RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;


--
-- Name: FUNCTION _shrink_places(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._shrink_places() IS 'Brings the places of each named concurrency limit down to the highest place a lease of its keys names, never below the limit (S99).';


--
-- Name: _slot(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._slot() RETURNS smallint
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (SELECT s.slot FROM pgq.job_slots s WHERE s.state = 'current');
END;
$$;


--
-- Name: FUNCTION _slot(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._slot() IS 'The slot of pgq.jobs that new jobs go to (pgq.job_slots, state current).';


--
-- Name: _slot_move_max(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._slot_move_max() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT 10000 $$;


--
-- Name: FUNCTION _slot_move_max(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._slot_move_max() IS 'At most this many waiting jobs are moved out of a draining slot of pgq.jobs at once (pgq.rotate).';


--
-- Name: _slot_written_since(smallint, pg_snapshot); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._slot_written_since(p_slot smallint, p_snap pg_snapshot) RETURNS boolean
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
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


--
-- Name: FUNCTION _slot_written_since(p_slot smallint, p_snap pg_snapshot); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._slot_written_since(p_slot smallint, p_snap pg_snapshot) IS 'Whether slot p_slot of pgq.jobs or pgq.loads holds a row written by a transaction the snapshot did not see (through jobs_txid_idx, loads_txid_idx).';


--
-- Name: _sql_job(uuid, uuid, boolean); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._sql_job(p_uuid uuid, p_token uuid, p_grouped boolean, OUT handler regprocedure, OUT payload jsonb, OUT worker text, OUT attempt integer, OUT search_path text) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_job      record;
    v_isolated boolean;
    v_alone    boolean;
    v_found    boolean;
    v_key      text;
BEGIN
    v_job := pgq._held_job(p_uuid, p_token);  -- (it locks the token's slot alone: S80)
    IF v_job.id IS NULL THEN
        RAISE EXCEPTION 'pgq: job % is not held by lease token %', p_uuid, p_token USING ERRCODE = 'PQ001';
    END IF;
    IF NOT p_grouped THEN
        DELETE FROM pgq.sql_alone a WHERE a.job_uuid = p_uuid;
    ELSE
        SELECT EXISTS (SELECT FROM pgq.job_classes c WHERE c.name = v_job.job AND c.isolated),
               EXISTS (SELECT FROM pgq.sql_alone a WHERE a.job_uuid = p_uuid)
        INTO v_isolated, v_alone;
        IF v_isolated OR v_alone THEN
            RAISE EXCEPTION 'pgq: job % runs alone, not in a group', p_uuid
                USING ERRCODE = 'PQ003', DETAIL = CASE WHEN v_isolated THEN format('Its class %s is isolated.', v_job.job)
                                                       ELSE 'Its last attempt was lost with its group.' END;
        END IF;
    END IF;
    -- The handler function, and the search_path pinned for it (NULL: none).
    SELECT true, h.search_path INTO v_found, search_path
    FROM pg_proc p LEFT JOIN pgq.handler_search_paths h ON h.handler = p.oid
    WHERE p.oid = v_job.handler;
    IF v_found IS NULL THEN
        RAISE EXCEPTION 'pgq: handler function of job % does not exist: function %, its handler when the job was dispatched, was dropped since',
            v_job.job, v_job.handler::oid
            USING ERRCODE = '42883',
                  HINT = 'Keep handlers with CREATE OR REPLACE; after a DROP, define the class again and retry the failed jobs (pgq.retry_failed takes the class''s handler).';
    END IF;
    IF v_job.overlap_keys IS NOT NULL THEN  -- (most jobs have none: then no statement)
        FOR v_key IN
            SELECT o.key FROM pgq.overlap_locks o
            WHERE o.key = ANY (v_job.overlap_keys) AND o.job_uuid = p_uuid AND o.expire_after IS NULL
        LOOP
            IF NOT pgq._overlap_key_lock(pgq._overlap_lock_id(v_key)) THEN
                RAISE EXCEPTION 'pgq: overlap key % is still held by a handler whose lease ended', v_key
                    USING ERRCODE = 'PQ002';
            END IF;
        END LOOP;
    END IF;
    handler := v_job.handler;
    payload := v_job.payload;
    worker := v_job.reserved_by;
    attempt := v_job.attempts;
END;
$$;


--
-- Name: FUNCTION _sql_job(p_uuid uuid, p_token uuid, p_grouped boolean, OUT handler regprocedure, OUT payload jsonb, OUT worker text, OUT attempt integer, OUT search_path text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._sql_job(p_uuid uuid, p_token uuid, p_grouped boolean, OUT handler regprocedure, OUT payload jsonb, OUT worker text, OUT attempt integer, OUT search_path text) IS 'The handler and payload of a SQL job held by a lease token, and its pinned search_path (S86), its overlap keys locked for the transaction; PQ003 in a group for a job that must run alone (S111, S112); the privileged start of pgq.run_sql_job.';


--
-- Name: _staged_batch(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._staged_batch() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT 16384 $$;


--
-- Name: FUNCTION _staged_batch(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._staged_batch() IS 'The fewest payloads pgq.dispatch_staged queues in one call of pgq.dispatch_many (S68).';


--
-- Name: _staged_payloads_checked(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._staged_payloads_checked() RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_class c
                   WHERE c.oid = to_regclass('pg_temp.pgq_staged_payloads')
                     AND c.relkind = 'r' AND c.relpersistence = 't'
                     AND c.relowner = (SELECT r.oid FROM pg_roles r WHERE r.rolname = current_user)) THEN
        RAISE EXCEPTION 'pgq: pg_temp.pgq_staged_payloads is not the staging table of pgq.stage_dispatch (missing, or made by someone else)'
            USING ERRCODE = '42P07';
    END IF;
END;
$$;


--
-- Name: FUNCTION _staged_payloads_checked(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._staged_payloads_checked() IS 'Raises 42P07 unless pg_temp.pgq_staged_payloads is the staging table pgq.stage_dispatch made (S68).';


--
-- Name: _stamp_txid(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._stamp_txid() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    NEW.txid := pg_current_xact_id();
    RETURN NEW;
END;
$$;


--
-- Name: FUNCTION _stamp_txid(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._stamp_txid() IS 'Trigger: stamps pgq.jobs.txid on an update that leaves the job waiting or renews its lease, for the low-water marks of pgq.reserve (S77).';


--
-- Name: _still_waiting(smallint, tid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._still_waiting(p_slot smallint, p_tid tid) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN EXISTS (SELECT FROM pgq.jobs j WHERE j.slot = p_slot AND j.ctid = p_tid AND j.reserved_at IS NULL);
END;
$$;


--
-- Name: FUNCTION _still_waiting(p_slot smallint, p_tid tid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._still_waiting(p_slot smallint, p_tid tid) IS 'Reserve: whether a row it picked is still a waiting job, not ended by another job of the same reserve (S74).';


--
-- Name: _store(pgq.jobs, jsonb[], uuid[], jsonb[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._store(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[], p_keys jsonb[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _store(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[], p_keys jsonb[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._store(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[], p_keys jsonb[]) IS 'Writes new waiting jobs of a dispatch, one per payload, with the settings of a template job: as a load when many and plain (S85), else as rows.';


--
-- Name: _store_bulk(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._store_bulk() RETURNS integer
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN pgq._load_min();
END;
$$;


--
-- Name: FUNCTION _store_bulk(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._store_bulk() IS 'The fewest payloads of plain jobs that pgq._store keeps together as a load (S85); 0: never.';


--
-- Name: _sweep_from(jsonb, text[], timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._sweep_from(p_cursor jsonb, p_queues text[], p_now timestamp with time zone) RETURNS timestamp with time zone
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _sweep_from(p_cursor jsonb, p_queues text[], p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._sweep_from(p_cursor jsonb, p_queues text[], p_now timestamp with time zone) IS 'Where a reserve''s lease sweep starts: below it, the session''s last reserve swept every expired lease of these queues (S77).';


--
-- Name: _sweep_leases(jsonb, text[], timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._sweep_leases(p_cursor jsonb, p_queues text[], p_now timestamp with time zone) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
DECLARE
    v_low   timestamptz := pgq._sweep_from(p_cursor, p_queues, p_now);
    v_slots smallint[] := pgq._pick_slots(p_cursor);
    r     record;
BEGIN
    -- Looked for first: setting up the sweep's statement costs more than a probe of
    -- jobs_lease_idx, and most calls find no lease to sweep.
    IF EXISTS (SELECT FROM pgq.jobs j
               WHERE j.reserved_until < p_now AND j.reserved_until >= v_low AND j.queue = ANY (p_queues)
                 AND j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])) THEN
        FOR r IN
        WITH expired AS (
            SELECT j.*, j.handler IS NOT NULL AND j.interruptions < pgq._max_give_backs() AS refund
            FROM pgq.jobs j
            WHERE j.reserved_until < p_now AND j.reserved_until >= v_low AND j.queue = ANY (p_queues)
              AND j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
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
            p_cursor := pgq._pick_lower(p_cursor, r.queue, r.priority, r.available_at, r.id);
        END LOOP;
        RETURN pgq._pick_swept(p_cursor, p_queues, v_low, p_now);
    END IF;
    RETURN pgq._pick_swept(p_cursor, p_queues, NULL, p_now);  -- no lease ended since v_low
END;
$$;


--
-- Name: FUNCTION _sweep_leases(p_cursor jsonb, p_queues text[], p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._sweep_leases(p_cursor jsonb, p_queues text[], p_now timestamp with time zone) IS 'Reserve stage 1: expired leases of these queues come back to waiting, recorded as lease_expired (S14; given back for SQL handlers, S35); returns the cursor.';


--
-- Name: _take_chunk(pgq.loads, integer, timestamp with time zone, integer, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._take_chunk(p_chunk pgq.loads, p_want integer, p_now timestamp with time zone, p_lease integer, p_worker text, p_base text) RETURNS SETOF pgq.reservation
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _take_chunk(p_chunk pgq.loads, p_want integer, p_now timestamp with time zone, p_lease integer, p_worker text, p_base text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._take_chunk(p_chunk pgq.loads, p_want integer, p_now timestamp with time zone, p_lease integer, p_worker text, p_base text) IS 'Reserve: the next jobs of a picked chunk of a bulk dispatch become reserved rows (S5, S14, S85); returns them in order.';


--
-- Name: _take_debounce(text, uuid, uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._take_debounce(p_key text, p_token uuid, p_job uuid) RETURNS timestamp with time zone
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_began timestamptz;
BEGIN
    INSERT INTO pgq.debounce_tokens AS d (key, token, job_uuid, burst_started_at)
    VALUES (p_key, p_token, p_job, now())
    ON CONFLICT (key) DO UPDATE
        SET token = EXCLUDED.token, job_uuid = EXCLUDED.job_uuid, updated_at = now(),
            burst_started_at = coalesce(d.burst_started_at, now())
    RETURNING d.burst_started_at INTO v_began;
    RETURN v_began;
END;
$$;


--
-- Name: FUNCTION _take_debounce(p_key text, p_token uuid, p_job uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._take_debounce(p_key text, p_token uuid, p_job uuid) IS 'Makes a new job''s token the current debounce token of its key (S24); returns when the key''s burst began.';


--
-- Name: _take_rows(smallint, tid[], uuid[], text[], integer[], timestamp with time zone, integer, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._take_rows(p_slot smallint, p_tids tid[], p_tokens uuid[], p_held text[], p_expire integer[], p_now timestamp with time zone, p_lease integer, p_worker text) RETURNS TABLE(place integer, reserved pgq.reservation)
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_mergejoin TO 'off'
    SET enable_bitmapscan TO 'off'
    SET enable_indexscan TO 'off'
    SET enable_nestloop TO 'off'
    SET enable_hashjoin TO 'on'
    SET plan_cache_mode TO 'force_generic_plan'
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


--
-- Name: FUNCTION _take_rows(p_slot smallint, p_tids tid[], p_tokens uuid[], p_held text[], p_expire integer[], p_now timestamp with time zone, p_lease integer, p_worker text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._take_rows(p_slot smallint, p_tids tid[], p_tokens uuid[], p_held text[], p_expire integer[], p_now timestamp with time zone, p_lease integer, p_worker text) IS 'Reserve: picked rows of pgq.jobs become reserved, with the lease tokens and overlap keys given (S5, S14, S77); returns them with their places, in order.';


--
-- Name: _take_unique(text, uuid, uuid, interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._take_unique(p_key text, p_owner uuid, p_job uuid, p_for interval) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO pgq.unique_locks AS u (key, owner, job_uuid, expires_at)
    VALUES (p_key, p_owner, p_job, now() + p_for)
    ON CONFLICT (key) DO UPDATE
        SET owner = EXCLUDED.owner, job_uuid = EXCLUDED.job_uuid,
            expires_at = EXCLUDED.expires_at, created_at = now()
        WHERE u.expires_at <= now();
    RETURN FOUND;
END;
$$;


--
-- Name: FUNCTION _take_unique(p_key text, p_owner uuid, p_job uuid, p_for interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._take_unique(p_key text, p_owner uuid, p_job uuid, p_for interval) IS 'Takes (or takes over, when expired) the unique lock of a key for a new job; false when a live holder has it (S21).';


--
-- Name: _texts(jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._texts(p jsonb) RETURNS text[]
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT CASE WHEN p IS NOT NULL THEN ARRAY(SELECT jsonb_array_elements_text(p)) END;
$$;


--
-- Name: FUNCTION _texts(p jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._texts(p jsonb) IS 'A jsonb array of strings as text[].';


--
-- Name: _timezone_problem(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._timezone_problem(p_tz text) RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION _timezone_problem(p_tz text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._timezone_problem(p_tz text) IS 'Why a schedule''s time zone is not an IANA zone name as pg_timezone_names spells it, or NULL (S60).';


--
-- Name: _token_id_mask(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._token_id_mask() RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT 17592186044415::bigint $$;


--
-- Name: FUNCTION _token_id_mask(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._token_id_mask() IS 'The bits of a job''s id a lease token carries: the low 44 (S15).';


--
-- Name: _token_slot(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._token_slot(p_token uuid) RETURNS smallint
    LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN (pgq._token_slots(ARRAY[p_token]))[1];
END;
$$;


--
-- Name: FUNCTION _token_slot(p_token uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._token_slot(p_token uuid) IS 'The slot of pgq.jobs a lease token names; NULL for a token pgq did not issue.';


--
-- Name: _token_slots(uuid[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._token_slots(p_tokens uuid[]) RETURNS smallint[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _token_slots(p_tokens uuid[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._token_slots(p_tokens uuid[]) IS 'The slots of pgq.jobs these lease tokens name, distinct, padded with NULLs to at least four elements.';


--
-- Name: _trace_context(text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._trace_context(p_traceparent text, p_tracestate text, OUT traceparent text, OUT tracestate text) RETURNS record
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_from text := 'option';
BEGIN
    traceparent := p_traceparent;
    tracestate := p_tracestate;
    IF p_traceparent IS NULL THEN
        IF p_tracestate IS NOT NULL THEN
            RAISE EXCEPTION 'pgq: tracestate % needs a traceparent', quote_literal(p_tracestate) USING ERRCODE = '22023';
        END IF;
        v_from := 'setting pgq.traceparent';
        traceparent := nullif(current_setting('pgq.traceparent', true), '');
        tracestate := CASE WHEN traceparent IS NOT NULL THEN nullif(current_setting('pgq.tracestate', true), '') END;
    END IF;
    IF traceparent IS NULL THEN
        RETURN;
    END IF;
    IF traceparent !~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
       OR substr(traceparent, 4, 32) = repeat('0', 32) OR substr(traceparent, 37, 16) = repeat('0', 16) THEN
        RAISE EXCEPTION 'pgq: traceparent (%) must be 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>, ids not all zero, got %',
            v_from, quote_literal(traceparent) USING ERRCODE = '22023';
    END IF;
    IF tracestate IS NOT NULL AND (
           octet_length(tracestate) > 512
           OR (SELECT count(*) FROM regexp_split_to_table(tracestate, ',') m WHERE btrim(m, E' \t') <> '') > 32
           OR EXISTS (SELECT FROM regexp_split_to_table(tracestate, ',') m
                      WHERE btrim(m, E' \t') <> ''
                        AND btrim(m, E' \t') !~ '^[a-z0-9][_0-9a-z*/@-]{0,255}=[\x21-\x2b\x2d-\x3c\x3e-\x7e]([\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,254}[\x21-\x2b\x2d-\x3c\x3e-\x7e])?$')) THEN
        RAISE EXCEPTION 'pgq: tracestate (%) must be at most 32 comma-separated key=value members in 512 characters, got %',
            replace(v_from, 'traceparent', 'tracestate'), quote_literal(tracestate) USING ERRCODE = '22023';
    END IF;
END;
$_$;


--
-- Name: FUNCTION _trace_context(p_traceparent text, p_tracestate text, OUT traceparent text, OUT tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._trace_context(p_traceparent text, p_tracestate text, OUT traceparent text, OUT tracestate text) IS 'The W3C trace context a dispatch stores: the options, else the settings pgq.traceparent and pgq.tracestate; raises 22023 for an invalid one (S105, S106).';


--
-- Name: _truncate_overlap_gen(smallint, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._truncate_overlap_gen(p_gen smallint, p_now timestamp with time zone) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _truncate_overlap_gen(p_gen smallint, p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._truncate_overlap_gen(p_gen smallint, p_now timestamp with time zone) IS 'Truncates a generation of pgq.overlap_locks in which no lease is live: true; NULL when its lock was not free in time, false when a lease is live (S81).';


--
-- Name: _truncate_slot(smallint, pg_snapshot); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._truncate_slot(p_slot smallint, p_snap pg_snapshot) RETURNS boolean
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION _truncate_slot(p_slot smallint, p_snap pg_snapshot); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._truncate_slot(p_slot smallint, p_snap pg_snapshot) IS 'Truncates a slot of pgq.jobs and pgq.loads in which no row was visible to the snapshot, unless it cannot take the lock in time or the slot was written since; returns whether it did.';


--
-- Name: _turn_away(pgq.jobs, text, text, integer, boolean, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._turn_away(p_job pgq.jobs, p_middleware text, p_note text, p_delay integer, p_drop boolean, p_now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    INSERT INTO pgq.attempts
        (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at, finished_at, outcome,
         middleware, exception, delay)
    VALUES (p_job.uuid, p_job.job, p_job.queue, p_job.attempts, p_job.reserved_by, p_job.lease_token,
            p_job.reserved_at, NULL, p_now, 'turned_away', p_middleware, p_note,
            CASE WHEN NOT p_drop THEN p_delay END);
    IF p_drop THEN
        DELETE FROM pgq.jobs j WHERE j.uuid = p_job.uuid;
        PERFORM pgq._release_owned(ARRAY[p_job.unique_key], ARRAY[p_job.unique_token],
                                   ARRAY[p_job.debounce_key], ARRAY[p_job.debounce_token]);
        IF p_job.batch_id IS NOT NULL OR p_job.chain_id IS NOT NULL THEN  -- ended without running (S74)
            PERFORM pgq._record_ends('cancelled', ARRAY[p_job.uuid], ARRAY[p_job.batch_id], ARRAY[p_job.chain_id],
                                     ARRAY[p_job.chain_step], 'dropped by ' || p_middleware || ': ' || p_note);
        END IF;
        RETURN;
    END IF;
    UPDATE pgq.jobs j
    SET attempts = p_job.attempts, available_at = p_now + make_interval(secs => p_delay), wait_reason = 'turned_away',
        waits_on = NULL,  -- it waits for its delay, not for a place: no end of a key wakes it (S99)
        turn_aways = jsonb_set(j.turn_aways, ARRAY[p_middleware], to_jsonb(coalesce((j.turn_aways ->> p_middleware)::int, 0) + 1)),
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL
    WHERE j.uuid = p_job.uuid;
END;
$$;


--
-- Name: FUNCTION _turn_away(p_job pgq.jobs, p_middleware text, p_note text, p_delay integer, p_drop boolean, p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._turn_away(p_job pgq.jobs, p_middleware text, p_note text, p_delay integer, p_drop boolean, p_now timestamp with time zone) IS 'Records a turn-away and sends the job back to wait, or deletes it with dont_release (S27).';


--
-- Name: _turn_away_slack(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._turn_away_slack() RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT 3 $$;


--
-- Name: FUNCTION _turn_away_slack(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._turn_away_slack() IS 'Seconds past a limit''s reset that a turned-away job waits: 3 (S28, S29).';


--
-- Name: _uuid7s(integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._uuid7s(p_count integer) RETURNS uuid[]
    LANGUAGE plpgsql PARALLEL SAFE
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
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


--
-- Name: FUNCTION _uuid7s(p_count integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._uuid7s(p_count integer) IS 'Version 7 uuids, as many as asked: milliseconds first, then random bits (job uuids, time-ordered).';


--
-- Name: _wait_for_places(smallint, pgq.admission[], uuid[], timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._wait_for_places(p_slot smallint, p_adm pgq.admission[], p_uuids uuid[], p_now timestamp with time zone) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
BEGIN
    UPDATE pgq.jobs j SET available_at = p_now + make_interval(secs => w.delay), waits_on = w.key
    FROM (SELECT a.delay, a.held[1] AS key, p_uuids[a.ordinality] AS uuid
          FROM unnest(p_adm) WITH ORDINALITY a
          WHERE a.turned_by = 'concurrency_limited' AND a.error IS NULL AND a.busy IS NOT TRUE) w
    WHERE j.uuid = w.uuid AND j.slot = p_slot;
END;
$$;


--
-- Name: FUNCTION _wait_for_places(p_slot smallint, p_adm pgq.admission[], p_uuids uuid[], p_now timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._wait_for_places(p_slot smallint, p_adm pgq.admission[], p_uuids uuid[], p_now timestamp with time zone) IS 'Admission: the jobs of a batch left waiting for a concurrency_limited place wait, uncounted (S99).';


--
-- Name: _wake_waiting(text[], bigint[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._wake_waiting(p_keys text[], p_counts bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_hashjoin TO 'on'
    SET enable_mergejoin TO 'on'
    AS $$
DECLARE
    v_queue text;
BEGIN
    FOR v_queue IN
        WITH woken AS (
            UPDATE pgq.jobs j SET available_at = now(), waits_on = NULL
            FROM unnest(p_keys, p_counts) f(key, n),
                 LATERAL (SELECT w.uuid FROM pgq.jobs w
                          WHERE w.waits_on = f.key AND w.reserved_at IS NULL AND w.available_at > now()
                          ORDER BY w.id LIMIT f.n
                          FOR UPDATE SKIP LOCKED) w
            WHERE j.uuid = w.uuid
            RETURNING j.queue
        )
        SELECT DISTINCT queue FROM woken
    LOOP
        PERFORM pgq._notify(v_queue);
    END LOOP;
END;
$$;


--
-- Name: FUNCTION _wake_waiting(p_keys text[], p_counts bigint[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._wake_waiting(p_keys text[], p_counts bigint[]) IS 'Makes ready, per concurrency_limited key, its first waiting jobs that no other transaction has locked, and wakes their queues (S99).';


--
-- Name: _window_lock_ids(text[], text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._window_lock_ids(p_limits text[], p_keys text[]) RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN pgq._lock_ids(ARRAY(SELECT 'window:' || jsonb_build_array(u.limit_name, u.key)::text
                               FROM unnest(p_limits, p_keys) WITH ORDINALITY u(limit_name, key, n) ORDER BY u.n));
END;
$$;


--
-- Name: FUNCTION _window_lock_ids(p_limits text[], p_keys text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._window_lock_ids(p_limits text[], p_keys text[]) IS 'The advisory lock ids of rate-limit windows, one per (limit, key) (S28, S82).';


--
-- Name: _worker_ttl(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq._worker_ttl() RETURNS interval
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ SELECT interval '1 minute' $$;


--
-- Name: FUNCTION _worker_ttl(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq._worker_ttl() IS 'How long a worker counts as live after it last wrote its row of pgq.workers (S87).';


--
-- Name: add_to_batch(uuid, jsonb, uuid, uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.add_to_batch(batch uuid, jobs jsonb, job uuid DEFAULT NULL::uuid, token uuid DEFAULT NULL::uuid) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_batch pgq.job_batches;
    v_job   uuid := add_to_batch.job;
    v_token uuid := add_to_batch.token;
    v_n     int;
BEGIN
    PERFORM pgq._check_entries('batch jobs', add_to_batch.jobs, true);
    SELECT * INTO v_batch FROM pgq.job_batches b WHERE b.id = add_to_batch.batch;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pgq: no batch %', add_to_batch.batch USING ERRCODE = 'P0002';
    END IF;
    IF v_job IS NULL AND v_token IS NULL THEN
        -- a SQL handler's own job (pgq.run_sql_job); text a session set that is not a
        -- uuid proves nothing, so it is no error either
        v_job := CASE WHEN current_setting('pgq.job_uuid', true) ~* '^[0-9a-f-]{36}$'
                      THEN current_setting('pgq.job_uuid', true)::uuid END;
        v_token := CASE WHEN current_setting('pgq.job_token', true) ~* '^[0-9a-f-]{36}$'
                        THEN current_setting('pgq.job_token', true)::uuid END;
    END IF;
    IF NOT pgq._may_add_to_batch(v_batch, v_job, v_token) THEN
        RAISE EXCEPTION 'pgq: % may not add to batch %: only the role that dispatched it and its running jobs may',
            session_user, add_to_batch.batch
            USING ERRCODE = '42501',
                  HINT = 'A running job of the batch passes its uuid and lease token (job =>, token =>); a SQL handler''s are taken from its transaction.';
    END IF;
    v_n := pgq._batch_add(v_batch, add_to_batch.jobs);
    -- Checked after counting, under the batch row's lock (taken last, like every path):
    -- a batch that finished or was cancelled meanwhile is seen here, and this rolls back.
    SELECT * INTO v_batch FROM pgq.job_batches b WHERE b.id = add_to_batch.batch FOR UPDATE;
    IF v_batch.finished_at IS NOT NULL OR v_batch.cancelled_at IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: batch % has % : no job can be added', add_to_batch.batch,
            CASE WHEN v_batch.cancelled_at IS NOT NULL THEN 'been cancelled' ELSE 'finished' END
            USING ERRCODE = 'PQ003';
    END IF;
    RETURN v_n;
END;
$_$;


--
-- Name: FUNCTION add_to_batch(batch uuid, jobs jsonb, job uuid, token uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.add_to_batch(batch uuid, jobs jsonb, job uuid, token uuid) IS 'Adds jobs (and chains) to a running batch (S73), from a running member of it (job, token) or the role that dispatched it (S93); 42501 for anyone else, PQ003 when it has finished or was cancelled. Returns how many members were added.';


--
-- Name: cancel(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.cancel(uuid uuid) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_job pgq.jobs := pgq._job_for_update(cancel.uuid);
BEGIN
    IF v_job.id IS NULL THEN
        RETURN NULL;
    END IF;
    IF v_job.reserved_at IS NULL THEN
        PERFORM pgq._cancel(v_job, now(), false);
        PERFORM pgq._record_action('cancel', v_job.uuid, v_job.queue, 'waiting job cancelled');
        RETURN 'cancelled';
    END IF;
    UPDATE pgq.jobs j SET cancel_requested_at = now(), cancel_requested_by = session_user
    WHERE j.uuid = v_job.uuid AND j.cancel_requested_at IS NULL;
    PERFORM pgq._record_action('cancel', v_job.uuid, v_job.queue, 'running job: its handler is cancelled');
    RETURN 'cancelling';
END;
$$;


--
-- Name: FUNCTION cancel(uuid uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.cancel(uuid uuid) IS 'Cancels a job: a waiting one at once (''cancelled''), a running one through its worker (''cancelling''); NULL when there is no such live job. Not retried, not a failure.';


--
-- Name: cancel_batch(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.cancel_batch(batch uuid) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_batch pgq.job_batches;
    v_n     int;
BEGIN
    PERFORM FROM pgq.batch_counts c WHERE c.batch_id = cancel_batch.batch ORDER BY c.shard FOR UPDATE;
    SELECT * INTO v_batch FROM pgq.job_batches b WHERE b.id = cancel_batch.batch FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    UPDATE pgq.job_batches b SET cancelled_at = coalesce(b.cancelled_at, now()) WHERE b.id = v_batch.id;
    v_n := pgq._batch_cancel_waiting(v_batch.id, 'cancelled by ' || session_user || ' with its batch');
    PERFORM pgq._record_action('cancel', NULL, v_batch.options ->> 'queue',
                               format('batch %s cancelled: %s waiting jobs', v_batch.id, v_n));
    PERFORM pgq._batch_settle(v_batch.id);
    RETURN v_n;
END;
$$;


--
-- Name: FUNCTION cancel_batch(batch uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.cancel_batch(batch uuid) IS 'Cancels a batch: waiting jobs now, later pickups before they run, running ones finish; no callback but finally_job (S74). Returns the waiting jobs cancelled; NULL when there is no such batch.';


--
-- Name: cancel_requests(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.cancel_requests(worker text) RETURNS SETOF uuid
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    RETURN QUERY
    SELECT j.lease_token FROM pgq.jobs j
    WHERE j.reserved_by = cancel_requests.worker AND j.cancel_requested_at IS NOT NULL;
END;
$$;


--
-- Name: FUNCTION cancel_requests(worker text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.cancel_requests(worker text) IS 'Worker protocol: the lease tokens of this worker''s jobs that an operator asked to cancel.';


--
-- Name: cancelled(uuid[], uuid[], timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.cancelled(uuids uuid[], tokens uuid[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS SETOF pgq.attempts
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now timestamptz := coalesce(cancelled.as_of, now());
    v_job pgq.jobs;
    i     int;
BEGIN
    IF cardinality(cancelled.uuids) IS DISTINCT FROM cardinality(cancelled.tokens) THEN
        RAISE EXCEPTION 'pgq: cancelled needs one token per uuid, got % uuids and % tokens',
            cardinality(cancelled.uuids), cardinality(cancelled.tokens) USING ERRCODE = '22023';
    END IF;
    FOR i IN 1 .. coalesce(cardinality(cancelled.uuids), 0) LOOP
        v_job := pgq._held('cancelled', cancelled.uuids[i], cancelled.tokens[i], v_now);
        CONTINUE WHEN v_job.id IS NULL;
        RETURN NEXT pgq._cancel(v_job, v_now, true);
    END LOOP;
END;
$$;


--
-- Name: FUNCTION cancelled(uuids uuid[], tokens uuid[], as_of timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.cancelled(uuids uuid[], tokens uuid[], as_of timestamp with time zone) IS 'Worker protocol: jobs whose handlers were cancelled on an operator''s request end as cancelled; returns the attempts recorded.';


--
-- Name: check(integer, integer, text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq."check"(worker_timeout integer DEFAULT 60, worker_tries integer DEFAULT 1, queues text[] DEFAULT NULL::text[]) RETURNS SETOF pgq.check_finding
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT f.* FROM (
    SELECT 'worker' AS object, 'timeout_zero' AS rule,
           '--timeout 0 disables the handler timeout: a stuck handler holds its slot and its lease forever' AS detail,
           'give the worker a timeout below the shortest retry_after (e.g. --timeout 60)' AS fix, NULL::text AS queue
    WHERE worker_timeout = 0
    UNION ALL
    SELECT 'queue ' || q.name, 'timeout_reaches_retry_after',
           format('worker --timeout %s >= retry_after %s: the lease can end while the handler still runs (equal is not safe: the lease starts first)',
                  worker_timeout, q.retry_after),
           format('raise retry_after (pgq.define_queue(%L, retry_after => %s)) or lower --timeout', q.name, worker_timeout * 3 / 2 + 10),
           q.name
    FROM pgq.queues q
    WHERE worker_timeout >= q.retry_after
    UNION ALL
    SELECT * FROM pgq._check_classes(worker_timeout, worker_tries)
    UNION ALL
    SELECT * FROM pgq._check_live()
    ) f
    WHERE queues IS NULL OR f.queue IS NULL OR f.queue = ANY (queues)  -- the parameter: f has no such column
    ORDER BY 1, 2, 5;
$$;


--
-- Name: FUNCTION "check"(worker_timeout integer, worker_tries integer, queues text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq."check"(worker_timeout integer, worker_tries integer, queues text[]) IS 'The ordering linter (S16): one row per problem in queues and job classes (object, rule, detail, fix, queue), given the worker''s --timeout and --tries; with queues, only those about them. Also SQL handlers without a search_path (S86), queues no live worker serves and job names nothing handles (S87), and stalled chains and batches (S95).';


--
-- Name: complete(uuid[], uuid[], timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.complete(uuids uuid[], tokens uuid[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS SETOF uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    -- clock_timestamp: inside run_sql_job's transaction now() is when the handler started
    v_now      timestamptz := coalesce(complete.as_of, clock_timestamp());
    v_slots    smallint[] := pgq._token_slots(complete.tokens);  -- the slots to read (S80)
    v_done     uuid[];
    v_unique   text[];  -- unique locks to release: keys, and the owner token of each
    v_owners   uuid[];
    v_debounce text[];  -- debounce tokens to delete: keys, and the token of each
    v_tokens   uuid[];
    v_breaker_jobs text[];  -- jobs with a throttles_exceptions breaker: their names, breakers and payloads
    v_breakers jsonb[];
    v_breaker_payloads jsonb[];
    v_overlapped uuid[];  -- jobs that held overlap leases, and their keys
    v_overlaps text[];
    v_grouped  uuid[];  -- jobs of batches or chains, with theirs (S70, S73)
    v_batches  uuid[];
    v_chains   uuid[];
    v_steps    int[];
BEGIN
    IF cardinality(complete.uuids) IS DISTINCT FROM cardinality(complete.tokens) THEN
        RAISE EXCEPTION 'pgq: complete needs one token per uuid, got % uuids and % tokens',
            cardinality(complete.uuids), cardinality(complete.tokens) USING ERRCODE = '22023';
    END IF;

    WITH done AS (
        -- One index probe per uuid, and no join that a plan cached on a small table
        -- could turn around (S78). The token is checked against the set: a lease token
        -- names one reservation of one job (its last six bytes are the job's id), so
        -- only the job it was issued for can hold it. The set is a hashed subquery
        -- (lease_token = ANY (tokens) would scan the array for every row); OR false
        -- keeps the planner from making the subquery a join. The slots the tokens name are read, not the others (a reserved job
        -- does not change slot: S80).
        DELETE FROM pgq.jobs j
        WHERE j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
          AND j.uuid = ANY (complete.uuids)
          AND (j.lease_token IN (SELECT unnest(complete.tokens)) OR false)
        RETURNING j.uuid, j.job, j.queue, j.attempts, j.reserved_by, j.lease_token, j.reserved_at, j.started_at,
                  j.unique_key, j.unique_token, j.debounce_key, j.debounce_token, j.overlap_keys, j.payload,
                  j.batch_id, j.chain_id, j.chain_step,
                  -- the first throttles_exceptions of the job, as pgq._middleware finds it:
                  -- a call per job would cost more than the rest of the statement
                  (SELECT m -> 'throttles_exceptions' FROM jsonb_array_elements(j.middleware) m
                   WHERE m ? 'throttles_exceptions' LIMIT 1) AS breaker
    ), history AS (
        INSERT INTO pgq.attempts
            (job_uuid, job, queue, attempt, worker, lease_token, reserved_at, started_at, finished_at, outcome)
        SELECT d.uuid, d.job, d.queue, d.attempts, d.reserved_by, d.lease_token, d.reserved_at, d.started_at,
               v_now, 'succeeded'
        FROM done d
    )
    SELECT coalesce(array_agg(d.uuid), '{}'),
           array_agg(d.unique_key) FILTER (WHERE d.unique_key IS NOT NULL),
           array_agg(d.unique_token) FILTER (WHERE d.unique_key IS NOT NULL),
           array_agg(d.debounce_key) FILTER (WHERE d.debounce_key IS NOT NULL),
           array_agg(d.debounce_token) FILTER (WHERE d.debounce_key IS NOT NULL),
           array_agg(d.job) FILTER (WHERE d.breaker IS NOT NULL),
           array_agg(d.breaker) FILTER (WHERE d.breaker IS NOT NULL),
           array_agg(d.payload) FILTER (WHERE d.breaker IS NOT NULL),
           array_agg(d.uuid) FILTER (WHERE d.overlap_keys IS NOT NULL),
           (SELECT array_agg(k) FROM done o, unnest(o.overlap_keys) k),
           array_agg(d.uuid) FILTER (WHERE d.batch_id IS NOT NULL OR d.chain_id IS NOT NULL),
           array_agg(d.batch_id) FILTER (WHERE d.batch_id IS NOT NULL OR d.chain_id IS NOT NULL),
           array_agg(d.chain_id) FILTER (WHERE d.batch_id IS NOT NULL OR d.chain_id IS NOT NULL),
           array_agg(d.chain_step) FILTER (WHERE d.batch_id IS NOT NULL OR d.chain_id IS NOT NULL)
    INTO v_done, v_unique, v_owners, v_debounce, v_tokens, v_breaker_jobs, v_breakers, v_breaker_payloads,
         v_overlapped, v_overlaps, v_grouped, v_batches, v_chains, v_steps
    FROM done d;

    IF v_unique IS NOT NULL OR v_debounce IS NOT NULL THEN
        PERFORM pgq._release_owned(v_unique, v_owners, v_debounce, v_tokens);
    END IF;
    IF v_breakers IS NOT NULL THEN
        PERFORM pgq._clear_circuits(v_breaker_jobs, v_breakers, v_breaker_payloads);
    END IF;
    IF v_overlapped IS NOT NULL THEN
        PERFORM pgq._release_overlap(v_overlapped, v_overlaps);
    END IF;
    IF v_grouped IS NOT NULL THEN
        -- the next step of a chain is queued, and a batch counted, by this transaction
        PERFORM pgq._record_ends('succeeded', v_grouped, v_batches, v_chains, v_steps);
    END IF;

    IF cardinality(v_done) < cardinality(complete.uuids) THEN
        PERFORM pgq._reject('complete',
                            ARRAY(SELECT t.uuid FROM unnest(complete.uuids, complete.tokens) t(uuid, token) WHERE t.uuid <> ALL (v_done)),
                            ARRAY(SELECT t.token FROM unnest(complete.uuids, complete.tokens) t(uuid, token) WHERE t.uuid <> ALL (v_done)),
                            v_now);
    END IF;
    RETURN QUERY SELECT unnest(v_done);
END;
$$;


--
-- Name: FUNCTION complete(uuids uuid[], tokens uuid[], as_of timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.complete(uuids uuid[], tokens uuid[], as_of timestamp with time zone) IS 'Worker protocol: completes jobs whose lease token still holds them, recording succeeded attempts; stale tokens are rejected and recorded (S15). Returns the uuids completed.';


--
-- Name: define_concurrency(text, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.define_concurrency(name text, "limit" integer) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_was int;
BEGIN
    PERFORM pgq._check_name('limit', define_concurrency.name);
    IF define_concurrency."limit" IS NULL OR define_concurrency."limit" NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'pgq: a concurrency limit is 1 to 1000 handlers, got %', define_concurrency."limit" USING ERRCODE = '22023';
    END IF;
    -- The limit this one replaces: read under the row's lock, which a concurrent change waits for.
    SELECT l."limit" INTO v_was FROM pgq.concurrency_limits l WHERE l.name = define_concurrency.name FOR UPDATE;
    -- A change waits for the reserves that read the limit: a lowering holds once it
    -- commits, and a raise wakes the jobs they left waiting (a statement after the lock).
    IF v_was <> define_concurrency."limit" THEN
        PERFORM pg_advisory_xact_lock((pgq._concurrency_lock_ids('limit', ARRAY[define_concurrency.name]))[1]);
    END IF;
    INSERT INTO pgq.concurrency_limits AS l (name, "limit", places)
    VALUES (define_concurrency.name, define_concurrency."limit", define_concurrency."limit")
    ON CONFLICT ON CONSTRAINT concurrency_limits_pkey
    DO UPDATE SET "limit" = EXCLUDED."limit", places = greatest(l.places, EXCLUDED."limit"), updated_at = now();
    IF v_was < define_concurrency."limit" THEN
        PERFORM pgq._wake_waiting(k.keys, array_fill(define_concurrency."limit" - v_was::bigint, ARRAY[cardinality(k.keys)]))
        FROM (SELECT array_agg(DISTINCT w.waits_on) AS keys FROM pgq.jobs w
              WHERE w.waits_on IS NOT NULL
                AND (w.waits_on = '@' || define_concurrency.name OR starts_with(w.waits_on, '@' || define_concurrency.name || ':['))) k
        WHERE k.keys IS NOT NULL;
    END IF;
    RETURN format('concurrency limit %s: at most %s at once per key, across every worker',
                  define_concurrency.name, define_concurrency."limit");
END;
$$;


--
-- Name: FUNCTION define_concurrency(name text, "limit" integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.define_concurrency(name text, "limit" integer) IS 'Creates or updates a named concurrency limit: at most "limit" handlers of a key at once, across every worker (S99). Returns it as a line of text.';


--
-- Name: define_job(text, text, text, integer, integer[], integer, integer, boolean, interval, interval, text, text[], interval, text[], interval, jsonb, integer, interval, integer, integer, text[], boolean); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.define_job(name text, queue text DEFAULT 'default'::text, handler text DEFAULT NULL::text, tries integer DEFAULT NULL::integer, backoff integer[] DEFAULT NULL::integer[], max_exceptions integer DEFAULT NULL::integer, timeout integer DEFAULT NULL::integer, fail_on_timeout boolean DEFAULT false, retry_for interval DEFAULT NULL::interval, unique_for interval DEFAULT NULL::interval, unique_until text DEFAULT NULL::text, unique_by text[] DEFAULT NULL::text[], debounce_for interval DEFAULT NULL::interval, debounce_by text[] DEFAULT NULL::text[], debounce_max_wait interval DEFAULT NULL::interval, middleware jsonb DEFAULT NULL::jsonb, max_tries integer DEFAULT NULL::integer, max_retry_for interval DEFAULT NULL::interval, min_backoff integer DEFAULT NULL::integer, max_timeout integer DEFAULT NULL::integer, search_path text[] DEFAULT current_schemas(false), isolated boolean DEFAULT false) RETURNS text
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_proc    regprocedure;
    v_own     text;     -- the search_path the handler function pins itself
    v_path    text;     -- the one pinned for it here
    v_skipped text;     -- schemas of the caller's path left out: anyone may create in them
    v_class   pgq.job_classes;
BEGIN
    IF define_job.handler IS NOT NULL THEN
        IF define_job.handler !~ '^[^.]+\.[^.]+$' THEN
            RAISE EXCEPTION 'pgq: handler % must name its schema, e.g. public.%', quote_literal(define_job.handler), define_job.handler
                USING ERRCODE = '22023';
        END IF;
        v_proc := pgq._handler_proc(define_job.handler);
        IF v_proc IS NULL THEN
            RAISE EXCEPTION 'pgq: handler function %(jsonb) does not exist', define_job.handler
                USING ERRCODE = '42883',
                      HINT = 'Create the function first: CREATE FUNCTION ' || define_job.handler || '(payload jsonb) RETURNS void ...';
        END IF;
        IF NOT has_function_privilege(v_proc, 'EXECUTE') THEN
            RAISE EXCEPTION 'pgq: % may not execute handler %', current_user, v_proc USING ERRCODE = '42501';
        END IF;
        v_own := pgq._proc_search_path(v_proc);
        IF v_own IS NULL THEN
            -- By default current_schemas(false): the caller's path as it resolves now
            -- ("$user" and schemas that do not exist are gone; the implicit ones are not
            -- listed).
            SELECT string_agg(quote_ident(s), ', ' ORDER BY n) FILTER (WHERE NOT has_schema_privilege('public', s, 'CREATE')),
                   string_agg(quote_ident(s), ', ' ORDER BY n) FILTER (WHERE has_schema_privilege('public', s, 'CREATE'))
            INTO v_path, v_skipped
            FROM unnest(define_job.search_path) WITH ORDINALITY AS c(s, n)
            WHERE s NOT LIKE 'pg\_temp%' AND s NOT IN ('pgq', 'pg_catalog') AND to_regnamespace(quote_ident(s)) IS NOT NULL;
            RAISE NOTICE '%', format('pgq: handler %s pins no search_path: ', v_proc)
                || CASE WHEN v_path IS NOT NULL
                        THEN format('it runs with search_path pg_catalog, %s, pg_temp', v_path)
                        ELSE 'it runs with search_path pg_catalog, pg_temp: name its tables with their schema' END
                || CASE WHEN v_skipped IS NOT NULL
                        THEN format('; %s left out, since every role may create objects there', v_skipped) ELSE '' END
                USING HINT = format('To pin one on the function itself: ALTER FUNCTION %s SET search_path = %s',
                                    v_proc, coalesce(v_path, quote_ident((SELECT nspname FROM pg_namespace ns JOIN pg_proc p ON p.pronamespace = ns.oid WHERE p.oid = v_proc))));
        END IF;
    END IF;
    v_class := pgq._define_job(define_job.name, define_job.queue, v_proc, define_job.tries, define_job.backoff,
                               define_job.max_exceptions, define_job.timeout, define_job.fail_on_timeout, define_job.retry_for,
                               define_job.unique_for, define_job.unique_until, define_job.unique_by, define_job.debounce_for,
                               define_job.debounce_by, define_job.debounce_max_wait, define_job.middleware,
                               define_job.max_tries, define_job.max_retry_for, define_job.min_backoff, define_job.max_timeout,
                               v_path, define_job.isolated);
    RETURN pgq._describe_class(v_class, coalesce(v_own, CASE WHEN v_path IS NOT NULL THEN 'pg_catalog, ' || v_path || ', pg_temp' END));
END;
$_$;


--
-- Name: FUNCTION define_job(name text, queue text, handler text, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text[], isolated boolean); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.define_job(name text, queue text, handler text, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text[], isolated boolean) IS 'Upserts a job class: queue, SQL handler (resolved with the caller''s privileges; run with search_path, by default the caller''s, when it pins none, S86; isolated: each job in a transaction of its own, S112), tries, backoff, max_exceptions, timeout, fail_on_timeout, retry_for, unique_*, debounce_*, middleware, and the ceilings of a dispatch''s own options (max_tries, max_retry_for, min_backoff, max_timeout, S90). New dispatches copy it (S1, S44). Returns the class as a line of text.';


--
-- Name: define_limit(text, integer, interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.define_limit(name text, max integer, per interval) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_limit pgq.rate_limits;
BEGIN
    PERFORM pgq._check_name('limit', define_limit.name);
    IF define_limit.max IS NULL OR define_limit.max < 1 THEN
        RAISE EXCEPTION 'pgq: limit max must be >= 1, got %', define_limit.max USING ERRCODE = '22023';
    END IF;
    IF define_limit.per IS NULL OR define_limit.per <= interval '0' THEN
        RAISE EXCEPTION 'pgq: limit per must be a positive interval, got %', define_limit.per USING ERRCODE = '22023';
    END IF;
    INSERT INTO pgq.rate_limits AS l (name, max, per) VALUES (define_limit.name, define_limit.max, define_limit.per)
    ON CONFLICT ON CONSTRAINT rate_limits_pkey DO UPDATE SET max = EXCLUDED.max, per = EXCLUDED.per, updated_at = now()
    RETURNING * INTO v_limit;
    RETURN format('limit %s: %s per %s, shared by every worker', v_limit.name, v_limit.max, v_limit.per);
END;
$$;


--
-- Name: FUNCTION define_limit(name text, max integer, per interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.define_limit(name text, max integer, per interval) IS 'Creates or updates a named rate limit: max hits per interval, one budget for every worker (S28). Returns it as a line of text.';


--
-- Name: define_queue(text, integer, boolean, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.define_queue(name text, retry_after integer DEFAULT pgq._default_retry_after(), paused boolean DEFAULT false, fair_by text DEFAULT NULL::text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_queue pgq.queues;
    v_was   text;
BEGIN
    PERFORM pgq._check_name('queue', define_queue.name);
    IF define_queue.retry_after IS NULL OR define_queue.retry_after < 1 THEN
        RAISE EXCEPTION 'pgq: retry_after must be seconds >= 1, got %', define_queue.retry_after
            USING ERRCODE = '22023';
    END IF;
    IF define_queue.fair_by IS NOT NULL AND (define_queue.fair_by = '' OR octet_length(define_queue.fair_by) > 200) THEN
        RAISE EXCEPTION 'pgq: fair_by must name a payload field (1 to 200 bytes), got %', quote_literal(define_queue.fair_by)
            USING ERRCODE = '22023';
    END IF;
    -- A new fair_by waits for the transactions storing jobs in the queue under the old
    -- one (pgq._fair_by), so that the rekey below sees their jobs.
    IF define_queue.fair_by IS DISTINCT FROM (SELECT q.fair_by FROM pgq.queues q WHERE q.name = define_queue.name) THEN
        PERFORM pg_advisory_xact_lock(pgq._lock_space('fair_by'), hashtext(define_queue.name));
    END IF;
    SELECT q.fair_by INTO v_was FROM pgq.queues q WHERE q.name = define_queue.name FOR UPDATE;
    INSERT INTO pgq.queues AS q (name, retry_after, paused, fair_by)
    VALUES (define_queue.name, define_queue.retry_after, coalesce(define_queue.paused, false), define_queue.fair_by)
    ON CONFLICT ON CONSTRAINT queues_pkey DO UPDATE
        SET retry_after = EXCLUDED.retry_after, paused = EXCLUDED.paused, fair_by = EXCLUDED.fair_by, updated_at = now()
    RETURNING * INTO v_queue;
    IF v_queue.fair_by IS DISTINCT FROM v_was THEN
        PERFORM pgq._fair_rekey(v_queue.name, v_queue.fair_by);
    END IF;
    RETURN format('queue %s: retry_after %s s%s%s', v_queue.name, v_queue.retry_after,
                  CASE WHEN v_queue.fair_by IS NOT NULL THEN format(', fair by %s', v_queue.fair_by) ELSE '' END,
                  CASE WHEN v_queue.paused THEN ', paused (pgq.resume_queue starts it)' ELSE '' END);
END;
$$;


--
-- Name: FUNCTION define_queue(name text, retry_after integer, paused boolean, fair_by text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.define_queue(name text, retry_after integer, paused boolean, fair_by text) IS 'Creates or updates a queue: retry_after is its lease in seconds (default 90), paused stops reservations, fair_by names the payload field whose values share the queue round-robin (S114). Returns what it defined, as a line of text.';


--
-- Name: dispatch(text, jsonb, text, interval, integer, integer[], timestamp with time zone, integer, integer, boolean, integer, text, interval, text, text, interval, interval, jsonb, interval, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.dispatch(job text, payload jsonb DEFAULT '{}'::jsonb, queue text DEFAULT NULL::text, delay interval DEFAULT NULL::interval, tries integer DEFAULT NULL::integer, backoff integer[] DEFAULT NULL::integer[], retry_until timestamp with time zone DEFAULT NULL::timestamp with time zone, max_exceptions integer DEFAULT NULL::integer, timeout integer DEFAULT NULL::integer, fail_on_timeout boolean DEFAULT NULL::boolean, priority integer DEFAULT 0, unique_key text DEFAULT NULL::text, unique_for interval DEFAULT NULL::interval, unique_until text DEFAULT NULL::text, debounce_key text DEFAULT NULL::text, debounce_for interval DEFAULT NULL::interval, debounce_max_wait interval DEFAULT NULL::interval, middleware jsonb DEFAULT NULL::jsonb, retry_for interval DEFAULT NULL::interval, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
-- plpgsql, which keeps its statement's plan for the session: a LANGUAGE sql function
-- that is not inlined (none with SET is) parses and plans its body in every transaction.
DECLARE
    v_uuid uuid;
BEGIN
    SELECT d INTO v_uuid
    FROM pgq.dispatch_many(dispatch.job, ARRAY[dispatch.payload], dispatch.queue, dispatch.delay,
                           dispatch.tries, dispatch.backoff, dispatch.retry_until,
                           dispatch.max_exceptions, dispatch.timeout, dispatch.fail_on_timeout,
                           dispatch.priority, dispatch.unique_key, dispatch.unique_for, dispatch.unique_until,
                           dispatch.debounce_key, dispatch.debounce_for, dispatch.debounce_max_wait,
                           dispatch.middleware, dispatch.retry_for, dispatch.traceparent, dispatch.tracestate) d;
    RETURN v_uuid;
END;
$$;


--
-- Name: FUNCTION dispatch(job text, payload jsonb, queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.dispatch(job text, payload jsonb, queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text) IS 'Queues one job in the caller''s transaction and returns its uuid (NULL: dropped as a unique duplicate). Options override the job class (S1).';


--
-- Name: dispatch_batch(jsonb, text, text, text, text, boolean, text, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.dispatch_batch(jobs jsonb, name text DEFAULT NULL::text, then_job text DEFAULT NULL::text, catch_job text DEFAULT NULL::text, finally_job text DEFAULT NULL::text, allow_failures boolean DEFAULT false, queue text DEFAULT NULL::text, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_batch pgq.job_batches;
    v_job   text;
BEGIN
    PERFORM pgq._check_entries('batch jobs', dispatch_batch.jobs, true);
    FOREACH v_job IN ARRAY ARRAY[dispatch_batch.then_job, dispatch_batch.catch_job, dispatch_batch.finally_job] LOOP
        IF v_job IS NOT NULL THEN
            PERFORM pgq._check_name('job', v_job);
        END IF;
    END LOOP;
    IF dispatch_batch.queue IS NOT NULL THEN
        PERFORM pgq._check_name('queue', dispatch_batch.queue);
    END IF;
    IF length(dispatch_batch.name) > 1000 THEN
        RAISE EXCEPTION 'pgq: a batch name is at most 1,000 characters, got %', length(dispatch_batch.name)
            USING ERRCODE = '22023';
    END IF;
    INSERT INTO pgq.job_batches (id, name, dispatched_by, options)
    VALUES ((pgq._uuid7s(1))[1], dispatch_batch.name, session_user,
            jsonb_strip_nulls(jsonb_build_object(
                'then_job', dispatch_batch.then_job, 'catch_job', dispatch_batch.catch_job,
                'finally_job', dispatch_batch.finally_job,
                'allow_failures', coalesce(dispatch_batch.allow_failures, false), 'queue', dispatch_batch.queue)))
    RETURNING * INTO v_batch;
    INSERT INTO pgq.batch_counts (batch_id, shard) SELECT v_batch.id, s FROM generate_series(0, 15) s;
    PERFORM pgq._batch_add(v_batch, dispatch_batch.jobs, dispatch_batch.traceparent, dispatch_batch.tracestate);
    -- Every member a dropped duplicate: nothing will end it, so it ends here.
    PERFORM pgq._batch_settle(v_batch.id) WHERE NOT EXISTS (
        SELECT FROM pgq.batch_counts c WHERE c.batch_id = v_batch.id AND c.pending > 0);
    RETURN v_batch.id;
END;
$$;


--
-- Name: FUNCTION dispatch_batch(jobs jsonb, name text, then_job text, catch_job text, finally_job text, allow_failures boolean, queue text, traceparent text, tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.dispatch_batch(jobs jsonb, name text, then_job text, catch_job text, finally_job text, allow_failures boolean, queue text, traceparent text, tracestate text) IS 'Queues jobs (and chains) as one batch; then_job when all succeeded, catch_job at the first failure, finally_job when all finished, each once (S73-S76). Returns the batch id.';


--
-- Name: dispatch_chain(jsonb, text, text, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.dispatch_chain(steps jsonb, on_failure text DEFAULT NULL::text, queue text DEFAULT NULL::text, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_id uuid := (pgq._uuid7s(1))[1];
BEGIN
    PERFORM pgq._check_entries('chain steps', dispatch_chain.steps, false);
    IF dispatch_chain.on_failure IS NOT NULL THEN
        PERFORM pgq._check_name('job', dispatch_chain.on_failure);
    END IF;
    IF dispatch_chain.queue IS NOT NULL THEN
        PERFORM pgq._check_name('queue', dispatch_chain.queue);
    END IF;
    PERFORM pgq._chain_start(v_id, dispatch_chain.steps, dispatch_chain.on_failure, dispatch_chain.queue, NULL,
                             dispatch_chain.traceparent, dispatch_chain.tracestate);
    RETURN v_id;
END;
$$;


--
-- Name: FUNCTION dispatch_chain(steps jsonb, on_failure text, queue text, traceparent text, tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.dispatch_chain(steps jsonb, on_failure text, queue text, traceparent text, tracestate text) IS 'Queues a chain: step n+1 is queued when step n completes (S70); a step failing for good, or dropped as a duplicate, stops it and queues on_failure (S71, S72). Returns the chain id.';


--
-- Name: dispatch_many(text, jsonb[], text, interval, integer, integer[], timestamp with time zone, integer, integer, boolean, integer, text, interval, text, text, interval, interval, jsonb, interval, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.dispatch_many(job text, payloads jsonb[], queue text DEFAULT NULL::text, delay interval DEFAULT NULL::interval, tries integer DEFAULT NULL::integer, backoff integer[] DEFAULT NULL::integer[], retry_until timestamp with time zone DEFAULT NULL::timestamp with time zone, max_exceptions integer DEFAULT NULL::integer, timeout integer DEFAULT NULL::integer, fail_on_timeout boolean DEFAULT NULL::boolean, priority integer DEFAULT 0, unique_key text DEFAULT NULL::text, unique_for interval DEFAULT NULL::interval, unique_until text DEFAULT NULL::text, debounce_key text DEFAULT NULL::text, debounce_for interval DEFAULT NULL::interval, debounce_max_wait interval DEFAULT NULL::interval, middleware jsonb DEFAULT NULL::jsonb, retry_for interval DEFAULT NULL::interval, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text) RETURNS SETOF uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    -- plpgsql, whose set-returning functions hand back all their rows at once: a LANGUAGE
    -- sql one is entered again for each row, and each entry of a function with SET saves
    -- and restores the settings.
    RETURN QUERY
    SELECT * FROM pgq._dispatch(dispatch_many.job, dispatch_many.payloads, dispatch_many.queue,
                                dispatch_many.delay, dispatch_many.tries, dispatch_many.backoff,
                                dispatch_many.retry_until, dispatch_many.max_exceptions,
                                dispatch_many.timeout, dispatch_many.fail_on_timeout, dispatch_many.priority,
                                dispatch_many.unique_key, dispatch_many.unique_for,
                                dispatch_many.unique_until, dispatch_many.debounce_key,
                                dispatch_many.debounce_for, dispatch_many.debounce_max_wait,
                                dispatch_many.middleware, dispatch_many.retry_for,
                                traceparent => dispatch_many.traceparent, tracestate => dispatch_many.tracestate);
END;
$$;


--
-- Name: FUNCTION dispatch_many(job text, payloads jsonb[], queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.dispatch_many(job text, payloads jsonb[], queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text) IS 'Queues one job per payload with shared options, in the caller''s transaction; returns their uuids in payload order (NULL for a unique duplicate dropped).';


--
-- Name: dispatch_staged(text, text, interval, integer, integer[], timestamp with time zone, integer, integer, boolean, integer, text, interval, text, text, interval, interval, jsonb, interval, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.dispatch_staged(job text, queue text DEFAULT NULL::text, delay interval DEFAULT NULL::interval, tries integer DEFAULT NULL::integer, backoff integer[] DEFAULT NULL::integer[], retry_until timestamp with time zone DEFAULT NULL::timestamp with time zone, max_exceptions integer DEFAULT NULL::integer, timeout integer DEFAULT NULL::integer, fail_on_timeout boolean DEFAULT NULL::boolean, priority integer DEFAULT 0, unique_key text DEFAULT NULL::text, unique_for interval DEFAULT NULL::interval, unique_until text DEFAULT NULL::text, debounce_key text DEFAULT NULL::text, debounce_for interval DEFAULT NULL::interval, debounce_max_wait interval DEFAULT NULL::interval, middleware jsonb DEFAULT NULL::jsonb, retry_for interval DEFAULT NULL::interval, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text) RETURNS uuid[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    -- The last row an earlier call of this transaction queued. The rows are not deleted:
    -- the table is emptied at commit anyway (ON COMMIT DELETE ROWS). The mark is local to
    -- the transaction, as the rows are, and a rollback to a savepoint takes it back with
    -- the jobs it queued.
    v_from     tid := coalesce(nullif(current_setting('pgq.staged_upto', true), ''), '(0,0)')::tid;
    v_left     bigint;        -- rows not read yet
    v_page     bigint;        -- the first page of the next range
    v_pages    bigint;
    v_payloads jsonb[] := '{}';  -- read, not queued yet
    v_read     jsonb[];
    v_n        bigint;
    v_upto     tid;
    v_uuids    uuid[] := '{}';
BEGIN
    PERFORM pgq._staged_payloads_checked();
    SELECT count(*), max(s.ctid) INTO v_left, v_upto FROM pg_temp.pgq_staged_payloads s WHERE s.ctid > v_from;
    IF v_upto IS NOT NULL THEN
        PERFORM set_config('pgq.staged_upto', v_upto::text, true);
    END IF;
    v_page := (v_from::text::point)[0]::bigint;
    v_pages := pg_relation_size('pg_temp.pgq_staged_payloads') / current_setting('block_size')::bigint;
    WHILE v_left > 0 AND v_page < v_pages LOOP
        -- A table COPY only appended to since it was emptied reads back in the order written.
        SELECT coalesce(array_agg(s.payload ORDER BY s.ctid), '{}'), count(*) INTO v_read, v_n
        FROM pg_temp.pgq_staged_payloads s
        WHERE s.ctid > v_from
          AND s.ctid >= format('(%s,0)', v_page)::tid AND s.ctid < format('(%s,0)', v_page + 1024)::tid;
        v_page := v_page + 1024;
        v_payloads := v_payloads || v_read;
        v_left := v_left - v_n;
        IF cardinality(v_payloads) >= greatest(pgq._staged_batch(), pgq._store_bulk())
           AND (v_left = 0 OR v_left >= pgq._store_bulk()) THEN
            v_uuids := v_uuids || pgq._dispatch_staged_batch(dispatch_staged.job, v_payloads, dispatch_staged.queue,
                dispatch_staged.delay, dispatch_staged.tries, dispatch_staged.backoff, dispatch_staged.retry_until,
                dispatch_staged.max_exceptions, dispatch_staged.timeout, dispatch_staged.fail_on_timeout,
                dispatch_staged.priority, dispatch_staged.unique_key, dispatch_staged.unique_for,
                dispatch_staged.unique_until, dispatch_staged.debounce_key, dispatch_staged.debounce_for,
                dispatch_staged.debounce_max_wait, dispatch_staged.middleware, dispatch_staged.retry_for,
                dispatch_staged.traceparent, dispatch_staged.tracestate);
            v_payloads := '{}';
        END IF;
    END LOOP;
    RETURN v_uuids || pgq._dispatch_staged_batch(dispatch_staged.job, v_payloads, dispatch_staged.queue,
        dispatch_staged.delay, dispatch_staged.tries, dispatch_staged.backoff, dispatch_staged.retry_until,
        dispatch_staged.max_exceptions, dispatch_staged.timeout, dispatch_staged.fail_on_timeout,
        dispatch_staged.priority, dispatch_staged.unique_key, dispatch_staged.unique_for,
        dispatch_staged.unique_until, dispatch_staged.debounce_key, dispatch_staged.debounce_for,
        dispatch_staged.debounce_max_wait, dispatch_staged.middleware, dispatch_staged.retry_for,
                dispatch_staged.traceparent, dispatch_staged.tracestate);
END;
$$;


--
-- Name: FUNCTION dispatch_staged(job text, queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.dispatch_staged(job text, queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text) IS 'Bulk dispatch, step 2: queues the payloads staged by COPY into pg_temp.pgq_staged_payloads through pgq.dispatch_many (the same checks), those staged since its last call in the transaction; returns their uuids in order (S68).';


--
-- Name: dispatch_warnings(text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.dispatch_warnings(job text, queue text DEFAULT NULL::text) RETURNS SETOF text
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_queue text := coalesce(dispatch_warnings.queue,
                             (SELECT c.queue FROM pgq.job_classes c WHERE c.name = dispatch_warnings.job), 'default');
    v_live  int := (SELECT count(*) FROM pgq._live_workers());
    v_near  text;
BEGIN
    IF NOT EXISTS (SELECT FROM pgq.job_classes c WHERE c.name = dispatch_warnings.job)
       AND NOT EXISTS (SELECT FROM pgq._live_workers() w WHERE dispatch_warnings.job = ANY (w.handlers)) THEN
        SELECT string_agg(n, ' or ' ORDER BY d, n) INTO v_near
        FROM (SELECT n, pgq._edit_distance(n, dispatch_warnings.job) AS d
              FROM (SELECT c.name FROM pgq.job_classes c
                    UNION SELECT h FROM pgq._live_workers() w, unnest(w.handlers) h) k(n)) s
        WHERE d <= greatest(2, length(dispatch_warnings.job) / 3);
        RETURN NEXT format('no job class defines %s, and no live worker has a handler for it: the job fails with "no handler" unless one comes%s',
                           dispatch_warnings.job,
                           CASE WHEN v_near IS NOT NULL THEN format(' (did you mean %s?)', v_near) ELSE '' END);
    END IF;
    IF NOT EXISTS (SELECT FROM pgq._live_workers() w WHERE v_queue = ANY (w.queues)) THEN
        RETURN NEXT format('no live worker serves queue %s%s: the job waits until one does (pgq-worker work --queue %s)',
                           v_queue,
                           CASE WHEN v_live = 0 THEN format(' (no worker was seen in the last %s s)', extract(epoch FROM pgq._worker_ttl())::int)
                                ELSE format(' (%s live workers serve %s)', v_live,
                                            (SELECT string_agg(DISTINCT q, ', ') FROM pgq._live_workers() w, unnest(w.queues) q)) END,
                           v_queue);
    END IF;
END;
$$;


--
-- Name: FUNCTION dispatch_warnings(job text, queue text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.dispatch_warnings(job text, queue text) IS 'What would keep a job of this name in this queue from running: no class and no live worker''s handler for the name, no live worker for the queue (S87). One sentence each; none when nothing is in the way.';


--
-- Name: drop_concurrency(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.drop_concurrency(name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM pgq._refuse_named_limit('concurrency_limited', drop_concurrency.name);
    DELETE FROM pgq.concurrency_limits l WHERE l.name = drop_concurrency.name;
    RETURN FOUND;
END;
$$;


--
-- Name: FUNCTION drop_concurrency(name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.drop_concurrency(name text) IS 'Deletes a named concurrency limit, unless a job class, schedule or running chain names it (2BP01); jobs already dispatched with it are admitted. False when there was none (S99).';


--
-- Name: drop_limit(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.drop_limit(name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM pgq._refuse_named_limit('rate_limited', drop_limit.name);
    DELETE FROM pgq.rate_limits l WHERE l.name = drop_limit.name;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DELETE FROM pgq.rate_limit_windows w
    WHERE w.limit_name = drop_limit.name
      AND pg_try_advisory_xact_lock((pgq._window_lock_ids(ARRAY[w.limit_name], ARRAY[w.key]))[1]);
    RETURN true;
END;
$$;


--
-- Name: FUNCTION drop_limit(name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.drop_limit(name text) IS 'Deletes a named rate limit, unless a job class, schedule or running chain names it (2BP01); jobs already dispatched with it are admitted. False when there was none (S83).';


--
-- Name: due_schedules(timestamp with time zone, interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.due_schedules(as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, horizon interval DEFAULT '00:00:00'::interval) RETURNS SETOF pgq.schedule_entries
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT e.* FROM pgq.schedule_entries e
    WHERE NOT e.paused
      AND (e.next_run_at IS NULL
           OR e.next_run_at <= coalesce(due_schedules.as_of, now()) + coalesce(due_schedules.horizon, interval '0'))
    ORDER BY e.next_run_at NULLS FIRST, e.name;
$$;


--
-- Name: FUNCTION due_schedules(as_of timestamp with time zone, horizon interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.due_schedules(as_of timestamp with time zone, horizon interval) IS 'Worker protocol (S66): the unpaused schedules pending (next_run_at NULL) or due by as_of + horizon.';


--
-- Name: fail(uuid, uuid, text, boolean, integer, integer[], timestamp with time zone, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.fail(uuid uuid, token uuid, exception text, timed_out boolean DEFAULT false, default_tries integer DEFAULT 1, default_backoff integer[] DEFAULT '{0}'::integer[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, detail text DEFAULT NULL::text, hint text DEFAULT NULL::text) RETURNS SETOF pgq.attempts
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
DECLARE
    v_now     timestamptz := coalesce(fail.as_of, now());
    v_job     pgq.jobs;
    v_tries   int;
    v_backoff int[];
    v_delay   int;
    v_text    text;
    v_final   boolean;
    v_outcome text := CASE WHEN fail.timed_out THEN 'timed_out' ELSE 'failed' END;
    v_breaker jsonb;
    v_detail  text := left(fail.detail, 65536);  -- bounded as the exception is (S38)
    v_hint    text := left(fail.hint, 65536);
BEGIN
    PERFORM pgq._check_settings(fail.default_tries, fail.default_backoff, NULL, NULL);
    v_job := pgq._held('fail', fail.uuid, fail.token, v_now);
    IF v_job.id IS NULL THEN
        RETURN;
    END IF;
    PERFORM pgq._release_overlap(ARRAY[v_job.uuid], v_job.overlap_keys);

    -- S38: one job's exception is kept to 64 KiB, so it cannot swell the batch it is
    -- reported in.
    v_text := left(coalesce(nullif(fail.exception, ''), 'unknown error'), 65536);
    IF fail.timed_out THEN
        v_text := format('TimeoutExceeded: %s attempt %s ran past its timeout (%s)', v_job.job, v_job.attempts, v_text);
    ELSE
        v_job.exceptions := v_job.exceptions + 1;
        v_job.last_exception := v_text;
        v_job.last_exception_attempt := v_job.attempts;
    END IF;

    -- S29: while a throttles_exceptions breaker catches the exception, it releases the
    -- job with the breaker's backoff instead of failing it.
    v_breaker := pgq._middleware(v_job.middleware, 'throttles_exceptions');
    IF v_breaker IS NOT NULL AND NOT fail.timed_out
       AND (v_breaker ->> 'when' IS NULL OR left(v_text, 4096) ~ (v_breaker ->> 'when')) THEN  -- bounded input (S38)
        RETURN NEXT pgq._fail_caught(v_job, v_breaker, v_text, v_now, v_detail, v_hint);
        RETURN;
    END IF;

    v_tries := coalesce(v_job.tries, fail.default_tries);
    v_final := (fail.timed_out AND v_job.fail_on_timeout)
            OR (NOT fail.timed_out AND v_job.max_exceptions IS NOT NULL AND v_job.exceptions >= v_job.max_exceptions)
            OR (v_job.retry_until IS NOT NULL AND v_now > v_job.retry_until)
            OR (v_job.retry_until IS NULL AND v_tries > 0 AND v_job.attempts >= v_tries);

    IF v_final THEN
        RETURN NEXT pgq._record(v_job, v_outcome, v_now, v_text, p_final => true, p_detail => v_detail, p_hint => v_hint);
        PERFORM pgq._bury(v_job, v_text, v_now, v_detail, v_hint);
        RETURN;
    END IF;

    v_backoff := coalesce(v_job.backoff, fail.default_backoff);
    v_delay := v_backoff[least(v_job.attempts, cardinality(v_backoff))];
    RETURN NEXT pgq._record(v_job, v_outcome, v_now, v_text, v_delay, p_detail => v_detail, p_hint => v_hint);
    UPDATE pgq.jobs j
    SET exceptions = v_job.exceptions, last_exception = v_job.last_exception,
        last_exception_attempt = v_job.last_exception_attempt,
        available_at = v_now + make_interval(secs => v_delay), wait_reason = 'backoff',
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL,
        overlap_keys = NULL
    WHERE j.uuid = v_job.uuid;
END;
$$;


--
-- Name: FUNCTION fail(uuid uuid, token uuid, exception text, timed_out boolean, default_tries integer, default_backoff integer[], as_of timestamp with time zone, detail text, hint text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.fail(uuid uuid, token uuid, exception text, timed_out boolean, default_tries integer, default_backoff integer[], as_of timestamp with time zone, detail text, hint text) IS 'Worker protocol: records a failed or timed-out attempt (with its exception''s DETAIL and HINT, S88) and decides retry with backoff or final failure (S7-S10, S13, S17). Returns the attempt; no row when the lease was lost.';


--
-- Name: fail_many(uuid[], uuid[], text[], boolean[], integer, integer[], text[], text[]); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.fail_many(uuids uuid[], tokens uuid[], exceptions text[], timed_out boolean[], default_tries integer DEFAULT 1, default_backoff integer[] DEFAULT '{0}'::integer[], details text[] DEFAULT NULL::text[], hints text[] DEFAULT NULL::text[]) RETURNS SETOF pgq.attempts
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
BEGIN
    IF cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.tokens)
       OR cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.exceptions)
       OR cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.timed_out)
       OR (fail_many.details IS NOT NULL AND cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.details))
       OR (fail_many.hints IS NOT NULL AND cardinality(fail_many.uuids) IS DISTINCT FROM cardinality(fail_many.hints)) THEN
        RAISE EXCEPTION 'pgq: fail_many needs as many tokens, exceptions, timed_out flags (and details and hints, when given) as uuids'
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY
        SELECT a.*
        FROM unnest(fail_many.uuids, fail_many.tokens, fail_many.exceptions, fail_many.timed_out)
                 WITH ORDINALITY AS f(uuid, token, exception, timed_out, n),
             LATERAL pgq.fail(f.uuid, f.token, f.exception, f.timed_out,
                              fail_many.default_tries, fail_many.default_backoff,
                              detail => fail_many.details[f.n], hint => fail_many.hints[f.n]) a;
END;
$$;


--
-- Name: FUNCTION fail_many(uuids uuid[], tokens uuid[], exceptions text[], timed_out boolean[], default_tries integer, default_backoff integer[], details text[], hints text[]); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.fail_many(uuids uuid[], tokens uuid[], exceptions text[], timed_out boolean[], default_tries integer, default_backoff integer[], details text[], hints text[]) IS 'Worker protocol: pgq.fail for a batch of attempts in one transaction, with each exception''s DETAIL and HINT (S88); returns the attempts recorded (a missing uuid lost its lease).';


--
-- Name: fail_setup(uuid, uuid, text, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.fail_setup(uuid uuid, token uuid, reason text, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS SETOF pgq.attempts
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
DECLARE
    v_now  timestamptz := coalesce(fail_setup.as_of, now());
    v_job  pgq.jobs;
    v_text text;
BEGIN
    v_job := pgq._held('fail_setup', fail_setup.uuid, fail_setup.token, v_now);
    IF v_job.id IS NULL THEN
        RETURN;
    END IF;
    PERFORM pgq._release_overlap(ARRAY[v_job.uuid], v_job.overlap_keys);
    v_text := format('SetupFailed: attempt %s of %s could not be set up, so its handler never ran: %s',
                     v_job.attempts, v_job.job, left(coalesce(nullif(fail_setup.reason, ''), 'unknown error'), 65536));
    RETURN NEXT pgq._record(v_job, 'failed', v_now, v_text, p_final => true, p_started => false);
    PERFORM pgq._bury(v_job, v_text, v_now);
END;
$$;


--
-- Name: FUNCTION fail_setup(uuid uuid, token uuid, reason text, as_of timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.fail_setup(uuid uuid, token uuid, reason text, as_of timestamp with time zone) IS 'Worker protocol: the server refused pgq''s own setup of this attempt for a reason of the job''s: it fails for good at once (SetupFailed), no exception counted (S92). Returns the attempt; no row when the lease was lost.';


--
-- Name: fire_schedule(text, bigint, timestamp with time zone, timestamp with time zone[], timestamp with time zone, bigint, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.fire_schedule(name text, version bigint, expected timestamp with time zone, ticks timestamp with time zone[], next_run_at timestamp with time zone, skipped bigint DEFAULT 0, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS SETOF uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION fire_schedule(name text, version bigint, expected timestamp with time zone, ticks timestamp with time zone[], next_run_at timestamp with time zone, skipped bigint, as_of timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.fire_schedule(name text, version bigint, expected timestamp with time zone, ticks timestamp with time zone[], next_run_at timestamp with time zone, skipped bigint, as_of timestamp with time zone) IS 'Worker protocol (S61, S62): advances a schedule''s next_run_at if it still is the expected tick, and in the same transaction dispatches the due ticks its catch_up keeps, unique on schedule:tick. Returns the job uuids.';


--
-- Name: flush_failed(interval, text, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.flush_failed(older_than interval DEFAULT NULL::interval, queue text DEFAULT NULL::text, job text DEFAULT NULL::text) RETURNS bigint
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH gone AS (
        DELETE FROM pgq.failed_jobs f
        WHERE (flush_failed.older_than IS NULL OR f.failed_at < now() - flush_failed.older_than)
          AND (flush_failed.queue IS NULL OR f.queue = flush_failed.queue)
          AND (flush_failed.job IS NULL OR f.job = flush_failed.job)
        RETURNING 1
    ), counted AS (
        SELECT count(*) AS n FROM gone
    ), recorded AS (
        INSERT INTO pgq.actions (actor, action, queue, detail)
        SELECT session_user, 'flush', flush_failed.queue,
               format('%s failed jobs deleted (job %s, older than %s)', c.n, coalesce(flush_failed.job, 'any'),
                      coalesce(flush_failed.older_than::text, 'any age'))
        FROM counted c
    )
    SELECT n FROM counted;
$$;


--
-- Name: FUNCTION flush_failed(older_than interval, queue text, job text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.flush_failed(older_than interval, queue text, job text) IS 'Deletes the failed jobs matching older_than, queue and job (none given: all, S20); returns the count.';


--
-- Name: forget_failed(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.forget_failed(uuid uuid) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH gone AS (DELETE FROM pgq.failed_jobs f WHERE f.uuid = forget_failed.uuid RETURNING f.uuid, f.queue),
         recorded AS (INSERT INTO pgq.actions (actor, action, job_uuid, queue)
                      SELECT session_user, 'forget', g.uuid, g.queue FROM gone g)
    SELECT EXISTS (SELECT FROM gone);
$$;


--
-- Name: FUNCTION forget_failed(uuid uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.forget_failed(uuid uuid) IS 'Deletes one failed job (S20); false when there was none.';


--
-- Name: give_back(uuid[], uuid[], text, boolean, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.give_back(uuids uuid[], tokens uuid[], reason text, started boolean DEFAULT true, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS SETOF pgq.attempts
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
DECLARE
    v_now timestamptz := coalesce(give_back.as_of, now());
    v_job pgq.jobs;
    i     int;
BEGIN
    IF cardinality(give_back.uuids) IS DISTINCT FROM cardinality(give_back.tokens) THEN
        RAISE EXCEPTION 'pgq: give_back needs one token per uuid, got % uuids and % tokens',
            cardinality(give_back.uuids), cardinality(give_back.tokens) USING ERRCODE = '22023';
    END IF;
    FOR i IN 1 .. coalesce(cardinality(give_back.uuids), 0) LOOP
        v_job := pgq._held('give_back', give_back.uuids[i], give_back.tokens[i], v_now);
        CONTINUE WHEN v_job.id IS NULL;
        RETURN NEXT pgq._give_back(v_job, coalesce(give_back.reason, 'interrupted'), v_now, give_back.started);
    END LOOP;
END;
$$;


--
-- Name: FUNCTION give_back(uuids uuid[], tokens uuid[], reason text, started boolean, as_of timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.give_back(uuids uuid[], tokens uuid[], reason text, started boolean, as_of timestamp with time zone) IS 'Worker protocol: attempts interrupted by infrastructure go back to wait, given back rather than counted (at most pgq._max_give_backs() per job, S35).';


--
-- Name: give_back_group(uuid[], uuid[], text, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.give_back_group(uuids uuid[], tokens uuid[], reason text, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS SETOF pgq.attempts
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_back pgq.attempts[] := ARRAY(SELECT a FROM pgq.give_back(give_back_group.uuids, give_back_group.tokens,
                                                              give_back_group.reason, true, give_back_group.as_of) a);
BEGIN
    INSERT INTO pgq.sql_alone AS a (job_uuid)
    SELECT DISTINCT b.job_uuid FROM unnest(v_back) b
    ON CONFLICT ON CONSTRAINT sql_alone_pkey DO UPDATE SET marked_at = now();
    RETURN QUERY SELECT * FROM unnest(v_back);
END;
$$;


--
-- Name: FUNCTION give_back_group(uuids uuid[], tokens uuid[], reason text, as_of timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.give_back_group(uuids uuid[], tokens uuid[], reason text, as_of timestamp with time zone) IS 'Worker protocol: attempts lost with their group go back to wait, given back as pgq.give_back does (S35), each job given back marked to run alone next (S111).';


--
-- Name: heartbeat(uuid[], uuid[], timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.heartbeat(uuids uuid[], tokens uuid[], as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS SETOF uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
DECLARE
    v_slots smallint[] := pgq._token_slots(heartbeat.tokens);  -- as in pgq.complete (S80)
BEGIN
    RETURN QUERY
    WITH held AS (
        UPDATE pgq.jobs j
        SET reserved_until = coalesce(heartbeat.as_of, now())
                             + make_interval(secs => coalesce((SELECT q.retry_after FROM pgq.queues q WHERE q.name = j.queue),
                                                              pgq._default_retry_after()))
            , txid = pg_current_xact_id()  -- the low-water marks of pgq.reserve (S77)
        WHERE j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])
          AND j.uuid = ANY (heartbeat.uuids)  -- as in pgq.complete (S78)
          AND (j.lease_token IN (SELECT unnest(heartbeat.tokens)) OR false)
        RETURNING j.uuid, j.lease_token, j.overlap_keys
    ), renewed AS (
        UPDATE pgq.overlap_locks o
        SET expires_at = pgq._overlap_until(o.since, coalesce(heartbeat.as_of, now()), o.expire_after)
        FROM held h
        WHERE h.overlap_keys IS NOT NULL
          AND o.key = ANY (h.overlap_keys) AND o.job_uuid = h.uuid AND o.lease_token = h.lease_token
    )
    SELECT h.lease_token FROM held h;
END;
$$;


--
-- Name: FUNCTION heartbeat(uuids uuid[], tokens uuid[], as_of timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.heartbeat(uuids uuid[], tokens uuid[], as_of timestamp with time zone) IS 'Worker protocol: extends the leases still held by these tokens and their overlap leases; returns the tokens still holding (S14, S34).';


--
-- Name: job_batch(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.job_batch(job uuid) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT j.batch_id FROM pgq.jobs j WHERE j.uuid = job_batch.job;
$$;


--
-- Name: FUNCTION job_batch(job uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.job_batch(job uuid) IS 'The batch a live job belongs to, or NULL (S73).';


--
-- Name: load_jobs; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.load_jobs AS
 SELECT (((l.first_id + l.next) + p.o) - 1) AS id,
    ((c.head || lpad(to_hex((((c.base + l.next) + p.o) - 1)), 12, '0'::text)))::uuid AS uuid,
    l.job,
    l.queue,
    l.priority,
    l.handler,
    l.tries,
    l.backoff,
    l.max_exceptions,
    l.timeout,
    l.fail_on_timeout,
    l.retry_until,
    l.available_at,
    l.created_at,
    p.payload,
    l.slot,
    l.first_uuid AS chunk,
    (l.first_id + l.next) AS sort_id
   FROM ((pgq.loads l
     CROSS JOIN LATERAL ( SELECT "left"((l.first_uuid)::text, 24) AS head,
            ((('x'::text || "right"((l.first_uuid)::text, 12)))::bit(48))::bigint AS base) c)
     CROSS JOIN LATERAL pgq._load_payloads(l.payloads, (l.next + 1), l.n) p(payload, o));


--
-- Name: VIEW load_jobs; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.load_jobs IS 'The jobs of bulk dispatches still in chunks of pgq.loads (S85), one row each: waiting, never attempted.';


--
-- Name: live_jobs; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.live_jobs AS
( SELECT j.uuid,
    j.id,
    j.job,
    j.queue,
    j.priority,
        CASE
            WHEN (j.reserved_at IS NOT NULL) THEN 'running'::text
            WHEN (j.available_at <= now()) THEN 'ready'::text
            WHEN (j.attempts = 0) THEN 'scheduled'::text
            ELSE 'retrying'::text
        END AS state,
        CASE
            WHEN ( SELECT pgq._sees_payloads() AS _sees_payloads) THEN j.payload
            ELSE NULL::jsonb
        END AS payload,
    j.handler,
    j.tries,
    j.backoff,
    j.max_exceptions,
    j.timeout,
    j.fail_on_timeout,
    j.retry_until,
    j.unique_key,
    j.unique_until,
    j.debounce_key,
    j.middleware,
    j.attempts,
    j.exceptions,
    j.lease_expiries,
    j.interruptions,
    j.turn_aways,
    j.last_exception_attempt,
    j.last_exception,
    j.wait_reason,
    j.available_at,
    j.created_at,
    j.reserved_by,
    j.reserved_at,
    j.started_at,
    j.reserved_until,
    j.cancel_requested_at,
    j.cancel_requested_by,
    j.batch_id,
    j.chain_id,
    j.chain_step,
    j.id AS sort_id,
    NULL::uuid AS chunk
   FROM pgq.jobs j
  ORDER BY j.queue, j.priority DESC, j.available_at, j.id)
UNION ALL
( SELECT l.uuid,
    l.id,
    l.job,
    l.queue,
    l.priority,
        CASE
            WHEN (l.available_at <= now()) THEN 'ready'::text
            ELSE 'scheduled'::text
        END AS state,
        CASE
            WHEN ( SELECT pgq._sees_payloads() AS _sees_payloads) THEN l.payload
            ELSE NULL::jsonb
        END AS payload,
    l.handler,
    l.tries,
    l.backoff,
    l.max_exceptions,
    l.timeout,
    l.fail_on_timeout,
    l.retry_until,
    NULL::text AS unique_key,
    NULL::text AS unique_until,
    NULL::text AS debounce_key,
    NULL::jsonb AS middleware,
    0 AS attempts,
    0 AS exceptions,
    0 AS lease_expiries,
    0 AS interruptions,
    '{}'::jsonb AS turn_aways,
    NULL::integer AS last_exception_attempt,
    NULL::text AS last_exception,
    'dispatched'::text AS wait_reason,
    l.available_at,
    l.created_at,
    NULL::text AS reserved_by,
    NULL::timestamp with time zone AS reserved_at,
    NULL::timestamp with time zone AS started_at,
    NULL::timestamp with time zone AS reserved_until,
    NULL::timestamp with time zone AS cancel_requested_at,
    NULL::text AS cancel_requested_by,
    NULL::uuid AS batch_id,
    NULL::uuid AS chain_id,
    NULL::integer AS chain_step,
    l.sort_id,
    l.chunk
   FROM pgq.load_jobs l
  ORDER BY l.queue, l.priority DESC, l.available_at, l.sort_id, l.id);


--
-- Name: VIEW live_jobs; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.live_jobs IS 'Every live job (waiting or running) with its frozen settings, counters and state, however it is kept; payload for payload readers only. One job: pgq.live_job(uuid).';


--
-- Name: live_job(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.live_job(uuid uuid) RETURNS SETOF pgq.live_jobs
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT * FROM pgq.live_jobs l
    WHERE l.uuid = live_job.uuid AND l.chunk IS NOT DISTINCT FROM (SELECT pgq._load_chunk_of(live_job.uuid));
$$;


--
-- Name: FUNCTION live_job(uuid uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.live_job(uuid uuid) IS 'The live job with this uuid as pgq.live_jobs shows it (no row when there is none), reading one chunk at most.';


--
-- Name: nap(text[], interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.nap(queues text[], wait interval DEFAULT '00:00:00.01'::interval) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION nap(queues text[], wait interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.nap(queues text[], wait interval) IS 'Worker protocol: the session naps on queues (dispatches to them notify until pgq.wake) and waits up to wait for dispatches under way; true: reserve once more, then sleep.';


--
-- Name: pause_queue(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.pause_queue(queue text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_was boolean;
    v_known text;
BEGIN
    PERFORM pgq._check_name('queue', pause_queue.queue);
    SELECT q.paused INTO v_was FROM pgq.queues q WHERE q.name = pause_queue.queue FOR UPDATE;
    IF NOT FOUND AND pause_queue.queue <> 'default'
       AND NOT EXISTS (SELECT FROM pgq.job_classes c WHERE c.queue = pause_queue.queue)
       AND NOT EXISTS (SELECT FROM pgq.schedule_entries e WHERE e.queue = pause_queue.queue)
       AND NOT EXISTS (SELECT FROM pgq._live_counted j WHERE j.queue = pause_queue.queue)
       AND NOT EXISTS (SELECT FROM pgq.failed_jobs f WHERE f.queue = pause_queue.queue) THEN
        SELECT string_agg(n, ', ' ORDER BY d, n) INTO v_known
        FROM (SELECT n, pgq._edit_distance(n, pause_queue.queue) AS d
              FROM (SELECT q.name FROM pgq.queues q UNION SELECT c.queue FROM pgq.job_classes c
                    UNION SELECT 'default') k(n)
              ORDER BY 2, 1 LIMIT 3) s
        WHERE d <= greatest(2, length(pause_queue.queue) / 3);
        RAISE EXCEPTION 'pgq: no queue %: no pgq.queues row, job class, schedule or job names it', quote_literal(pause_queue.queue)
            USING ERRCODE = '22023',
                  HINT = CASE WHEN v_known IS NOT NULL THEN format('Did you mean %s? ', v_known) ELSE '' END
                         || format('To create it paused: SELECT pgq.define_queue(%L, paused => true)', pause_queue.queue);
    END IF;
    INSERT INTO pgq.queues AS q (name, paused) VALUES (pause_queue.queue, true)
    ON CONFLICT (name) DO UPDATE SET paused = true, updated_at = now();
    PERFORM pgq._record_action('pause', NULL, pause_queue.queue);
    RETURN NOT coalesce(v_was, false);
END;
$$;


--
-- Name: FUNCTION pause_queue(queue text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.pause_queue(queue text) IS 'Stops workers from reserving the queue''s jobs; returns whether it was running. A name no queue, class, schedule or job uses is refused (S89). Recorded in pgq.actions.';


--
-- Name: pause_schedule(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.pause_schedule(name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION pause_schedule(name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.pause_schedule(name text) IS 'Stops a schedule: ticks that pass while paused never fire (S65). Returns whether it was running, NULL when there is no such schedule. Recorded in pgq.actions.';


--
-- Name: plan_schedule(text, bigint, timestamp with time zone, text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.plan_schedule(name text, version bigint, next_run_at timestamp with time zone, error text DEFAULT NULL::text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION plan_schedule(name text, version bigint, next_run_at timestamp with time zone, error text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.plan_schedule(name text, version bigint, next_run_at timestamp with time zone, error text) IS 'Worker protocol (S60, S64): sets a pending schedule''s first tick if it is still pending under that version; with no tick, records the error. Returns whether it set it.';


--
-- Name: prune(interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.prune(older_than interval) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_count bigint;
BEGIN
    IF prune.older_than IS NULL OR prune.older_than < interval '0' THEN
        RAISE EXCEPTION 'pgq: prune older_than must be a non-negative interval, got %', prune.older_than
            USING ERRCODE = '22023';
    END IF;
    -- A live job's turn-aways go too (S39): a job turned away for weeks would otherwise
    -- grow its history without bound; pgq.jobs.turn_aways keeps their count.
    WITH gone AS (
        DELETE FROM pgq.attempts a
        WHERE a.finished_at < now() - prune.older_than
          AND NOT EXISTS (SELECT FROM pgq.failed_jobs f WHERE f.uuid = a.job_uuid)
          AND (a.outcome = 'turned_away' OR NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = a.job_uuid))
        RETURNING 1
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_count;
END;
$$;


--
-- Name: FUNCTION prune(older_than interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.prune(older_than interval) IS 'Deletes attempt history older than older_than of jobs no longer live or failed, and old turn-aways of live jobs; returns the count.';


--
-- Name: prune_all(interval, interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.prune_all(history_older_than interval, failed_older_than interval DEFAULT NULL::interval) RETURNS bigint
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_count bigint := 0;
    v_n     bigint;
BEGIN
    IF NOT pg_try_advisory_xact_lock(pgq._lock_id('prune_all')) THEN
        RETURN NULL;
    END IF;
    v_count := pgq.prune(prune_all.history_older_than);
    IF prune_all.failed_older_than IS NOT NULL THEN  -- retention, not an operator's flush: not in pgq.actions
        DELETE FROM pgq.failed_jobs f WHERE f.failed_at < now() - prune_all.failed_older_than;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_count := v_count + v_n;
    END IF;
    DELETE FROM pgq.unique_locks u WHERE u.expires_at < now();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    DELETE FROM pgq.overlap_locks o WHERE o.expires_at < now();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    DELETE FROM pgq.circuits c WHERE c.window_start + make_interval(secs => c.decay) < now();
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    DELETE FROM pgq.debounce_tokens d
    WHERE d.updated_at < now() - interval '1 hour'
      AND NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = d.job_uuid);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    -- S111: a mark to run alone goes with its job, whichever way the job ended (cancelled,
    -- failed for good, completed without running alone). A marked job is a row of
    -- pgq.jobs while it lives: it has run, and pgq.give_back_group marks it in the
    -- transaction that sends it back to wait.
    DELETE FROM pgq.sql_alone a WHERE NOT EXISTS (SELECT FROM pgq.jobs j WHERE j.uuid = a.job_uuid);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    DELETE FROM pgq.workers w WHERE w.seen_at < now() - interval '1 day';  -- died long ago (S87)
    GET DIAGNOSTICS v_n = ROW_COUNT;
    v_count := v_count + v_n;
    v_count := v_count + pgq._batches_prune(prune_all.history_older_than);  -- S73
    -- Last, and only the windows whose lock is free (S82): a reserve writes a window only
    -- under its advisory lock, and may wait for it; after taking these, this transaction
    -- waits for nothing more. A window has ended, or its limit is gone (S83).
    DELETE FROM pgq.rate_limit_windows w
    WHERE CASE WHEN NOT EXISTS (SELECT FROM pgq.rate_limits l  -- (a CASE: only those windows' locks are tried)
                                WHERE l.name = w.limit_name AND w.window_start + l.per >= now())
               THEN pg_try_advisory_xact_lock((pgq._window_lock_ids(ARRAY[w.limit_name], ARRAY[w.key]))[1]) END;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_count + v_n;
END;
$$;


--
-- Name: FUNCTION prune_all(history_older_than interval, failed_older_than interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.prune_all(history_older_than interval, failed_older_than interval) IS 'Retention (S39): prunes finished history, old failed jobs (when failed_older_than is given) and coordination rows that no longer say anything; one caller at a time (others get NULL).';


--
-- Name: release(uuid, uuid, integer, boolean, text, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.release(uuid uuid, token uuid, delay integer DEFAULT 0, refund boolean DEFAULT false, reason text DEFAULT NULL::text, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS SETOF pgq.attempts
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
DECLARE
    v_now timestamptz := coalesce(release.as_of, now());
    v_job pgq.jobs;
BEGIN
    IF release.delay IS NULL OR release.delay < 0 THEN
        RAISE EXCEPTION 'pgq: release delay must be seconds >= 0, got %', release.delay USING ERRCODE = '22023';
    END IF;
    v_job := pgq._held('release', release.uuid, release.token, v_now);
    IF v_job.id IS NULL THEN
        RETURN;
    END IF;
    RETURN NEXT pgq._record(v_job, 'released', v_now, release.reason, release.delay);
    PERFORM pgq._release_overlap(ARRAY[v_job.uuid], v_job.overlap_keys);
    UPDATE pgq.jobs j
    SET attempts = j.attempts - CASE WHEN release.refund THEN 1 ELSE 0 END,
        available_at = v_now + make_interval(secs => release.delay), wait_reason = 'released',
        reserved_at = NULL, reserved_until = NULL, reserved_by = NULL, lease_token = NULL, started_at = NULL,
        overlap_keys = NULL
    WHERE j.uuid = v_job.uuid;
END;
$$;


--
-- Name: FUNCTION release(uuid uuid, token uuid, delay integer, refund boolean, reason text, as_of timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.release(uuid uuid, token uuid, delay integer, refund boolean, reason text, as_of timestamp with time zone) IS 'Worker protocol: puts a reserved job back to wait delay seconds, no exception counted (S11); refund gives the attempt back (shutdown, S32).';


--
-- Name: reserve(text, text[], integer, integer, timestamp with time zone, uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.reserve(worker text, queues text[], max integer, default_tries integer DEFAULT 1, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, call uuid DEFAULT NULL::uuid) RETURNS SETOF pgq.reservation
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_now    timestamptz := coalesce(reserve.as_of, now());
    v_base   text := pgq._lease_base(reserve.call);  -- of this call's lease tokens
    v_cursor jsonb;                                  -- where the walk of each queue starts (S77)
    v_left   int := reserve.max;
    v_queue  text;
    v_lease  int;
    v_paused boolean;
    v_fair   boolean;                                -- round-robin across keys (S114)
    v_skip   bigint[];
    v_pick   pgq.picked;
    v_batch  pgq.reserve_batch;
    v_reports pgq.reservation[];
    v_places int[];
    v_taken  int;
    v_pass   int := greatest(reserve.max, 1000);  -- the most jobs a queue's turn passes over (S122)
BEGIN
    IF reserve.max IS NULL OR reserve.max < 1 THEN
        RAISE EXCEPTION 'pgq: reserve max must be >= 1, got %', reserve.max USING ERRCODE = '22023';
    END IF;
    IF reserve.default_tries IS NULL OR reserve.default_tries < 0 THEN
        RAISE EXCEPTION 'pgq: default_tries must be >= 0, got %', reserve.default_tries USING ERRCODE = '22023';
    END IF;
    -- The settings its stages hand each other start empty: a caller cannot give them values.
    PERFORM set_config('pgq.fair_pending', '', true), set_config('pgq.fair_back', '', true),
            set_config('pgq.fair_rest', '', true), set_config('pgq.concurrency_waits', '', true);
    v_cursor := pgq._sweep_leases(pgq._pick_begin(reserve.queues), reserve.queues, v_now);
    FOREACH v_queue IN ARRAY reserve.queues LOOP
        EXIT WHEN v_left <= 0;
        SELECT q.retry_after, q.paused, q.fair_by IS NOT NULL INTO v_lease, v_paused, v_fair FROM pgq.queues q WHERE q.name = v_queue;
        CONTINUE WHEN v_paused;
        v_lease := coalesce(v_lease, pgq._default_retry_after());
        v_skip := '{}';
        LOOP
            v_pick := CASE WHEN v_fair THEN pgq._pick_fair(v_cursor, v_queue, v_left, v_now, v_skip)
                           ELSE pgq._pick(v_cursor, v_queue, v_left, v_now, v_skip) END;
            IF (v_pick.chunk).first_id IS NOT NULL THEN
                RETURN QUERY SELECT * FROM pgq._take_chunk(v_pick.chunk, v_left, v_now, v_lease, reserve.worker, v_base);
                GET DIAGNOSTICS v_taken = ROW_COUNT;
                v_left := v_left - v_taken;
                EXIT WHEN v_left <= 0;
                CONTINUE;
            END IF;
            EXIT WHEN coalesce(cardinality(v_pick.tids), 0) = 0;
            IF false <> ALL (v_pick.plain) THEN
                -- Plain jobs only, as a chunk's: no pickup check or admission applies.
                RETURN QUERY
                SELECT (t.reserved).*
                FROM pgq._take_rows(v_pick.slot, v_pick.tids,
                                    pgq._lease_tokens(v_base, array_fill(v_pick.slot, ARRAY[cardinality(v_pick.ids)]), v_pick.ids),
                                    NULL, NULL, v_now, v_lease, reserve.worker) t;
                GET DIAGNOSTICS v_taken = ROW_COUNT;
                v_left := v_left - v_taken;
                EXIT WHEN v_pick.last OR v_left <= 0;
                CONTINUE;
            END IF;
            v_batch := pgq._admission(pgq._pickup_checks(v_pick, v_base, v_now, v_lease, reserve.worker, reserve.default_tries),
                                      v_now, reserve.worker);
            -- Taken and reported, in pick order.
            v_reports := v_batch.reports;
            v_places := v_batch.report_places;
            RETURN QUERY
            SELECT (x.r).* FROM (
                SELECT t.place, t.reserved AS r
                FROM pgq._take_rows(v_batch.slot, v_batch.tids, v_batch.tokens, v_batch.held, v_batch.expire,
                                    v_now, v_lease, reserve.worker) t
                UNION ALL
                SELECT v_places[i], v_reports[i] FROM generate_subscripts(v_reports, 1) i
            ) x
            ORDER BY x.place;
            GET DIAGNOSTICS v_taken = ROW_COUNT;
            v_left := v_left - (v_taken - cardinality(v_reports));
            v_skip := v_skip || v_batch.turned;
            EXIT WHEN v_batch.busy OR v_pick.last OR v_left <= 0 OR cardinality(v_skip) >= v_pass;
        END LOOP;
        v_cursor := pgq._pick_done(v_cursor, v_queue);
    END LOOP;
    v_cursor := pgq._pick_end(v_cursor);
    IF current_setting('pgq.concurrency_waits', true) <> '' THEN  -- jobs left waiting (stage 7)
        PERFORM pgq._concurrency_waits(v_now);
    END IF;
END;
$$;


--
-- Name: FUNCTION reserve(worker text, queues text[], max integer, default_tries integer, as_of timestamp with time zone, call uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.reserve(worker text, queues text[], max integer, default_tries integer, as_of timestamp with time zone, call uuid) IS 'Worker protocol: sweeps expired leases, reserves up to max jobs from the queues in order (SKIP LOCKED), applies the pickup checks (cancel, debounce, S12, middleware); returns runnable jobs with fresh lease tokens, and the others with pickup set.';


--
-- Name: resume_queue(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.resume_queue(queue text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_was boolean;
BEGIN
    PERFORM pgq._check_name('queue', resume_queue.queue);
    SELECT q.paused INTO v_was FROM pgq.queues q WHERE q.name = resume_queue.queue FOR UPDATE;
    UPDATE pgq.queues q SET paused = false, updated_at = now() WHERE q.name = resume_queue.queue;
    PERFORM pgq._record_action('resume', NULL, resume_queue.queue);
    PERFORM pg_notify('pgq_jobs', resume_queue.queue);
    RETURN coalesce(v_was, false);
END;
$$;


--
-- Name: FUNCTION resume_queue(queue text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.resume_queue(queue text) IS 'Lets workers reserve the queue''s jobs again and wakes them; returns whether it was paused. Recorded in pgq.actions.';


--
-- Name: resume_schedule(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.resume_schedule(name text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION resume_schedule(name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.resume_schedule(name text) IS 'Lets a paused schedule fire again from its first tick after now (S65). Returns whether it was paused, NULL when there is no such schedule. Recorded in pgq.actions.';


--
-- Name: retry_batch_failed(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.retry_batch_failed(batch uuid) RETURNS SETOF uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_uuids     uuid[];
    v_cancelled timestamptz;
BEGIN
    SELECT b.cancelled_at INTO v_cancelled FROM pgq.job_batches b WHERE b.id = retry_batch_failed.batch;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pgq: no batch %', retry_batch_failed.batch USING ERRCODE = 'P0002';
    END IF;
    IF v_cancelled IS NULL THEN
        v_uuids := ARRAY(SELECT pgq._retry_failed_ids(
            ARRAY(SELECT f.id FROM pgq.failed_jobs f WHERE f.batch_id = retry_batch_failed.batch ORDER BY f.id),
            format('with batch %s', retry_batch_failed.batch)));
        -- The retry locked the batch's shards, then its row (pgq._jobs_retried): a cancel
        -- that committed meanwhile is seen now.
        SELECT b.cancelled_at INTO v_cancelled FROM pgq.job_batches b WHERE b.id = retry_batch_failed.batch;
    END IF;
    IF v_cancelled IS NOT NULL THEN
        RAISE EXCEPTION 'pgq: batch % was cancelled: a retried job would be cancelled before it runs', retry_batch_failed.batch
            USING ERRCODE = 'PQ003', HINT = 'dispatch the failed jobs again in a new batch';
    END IF;
    RETURN QUERY SELECT unnest(v_uuids);
END;
$$;


--
-- Name: FUNCTION retry_batch_failed(batch uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.retry_batch_failed(batch uuid) IS 'Requeues every failed job of a batch as pgq.retry_failed does (S96); P0002 when there is no such batch, PQ003 when it was cancelled. Returns the uuids requeued.';


--
-- Name: retry_failed(uuid, text, text, interval); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.retry_failed(uuid uuid, queue text DEFAULT NULL::text, job text DEFAULT NULL::text, older_than interval DEFAULT NULL::interval) RETURNS SETOF uuid
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    SELECT pgq._retry_failed_ids(ARRAY(
        SELECT f.id FROM pgq.failed_jobs f
        WHERE (retry_failed.uuid IS NULL OR f.uuid = retry_failed.uuid)
          AND (retry_failed.queue IS NULL OR f.queue = retry_failed.queue)
          AND (retry_failed.job IS NULL OR f.job = retry_failed.job)
          AND (retry_failed.older_than IS NULL OR f.failed_at < now() - retry_failed.older_than)
        ORDER BY f.id));
$$;


--
-- Name: FUNCTION retry_failed(uuid uuid, queue text, job text, older_than interval); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.retry_failed(uuid uuid, queue text, job text, older_than interval) IS 'Requeues a failed job (or, uuid NULL, all matching queue, job and older_than) with attempts reset; history kept (S20).';


--
-- Name: rotate(bigint, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.rotate(slot_bytes bigint DEFAULT 67108864, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS text[]
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET lock_timeout TO '50ms'
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


--
-- Name: FUNCTION rotate(slot_bytes bigint, as_of timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.rotate(slot_bytes bigint, as_of timestamp with time zone) IS 'Worker protocol: moves the slots of pgq.jobs on: a new current slot once the current one holds slot_bytes (0: never), a draining slot truncated once no job is left in it, the few waiting jobs of a slot moved when no slot is empty (S80); and the generations of pgq.overlap_locks (S81), the places of named concurrency limits (S99), the turns of fair queues'' keys with no live job (S125). Returns what it did.';


--
-- Name: run_now(uuid); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.run_now(uuid uuid) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
DECLARE
    v_job pgq.jobs := pgq._job_for_update(run_now.uuid);
BEGIN
    IF v_job.id IS NULL OR v_job.reserved_at IS NOT NULL THEN
        RETURN false;
    END IF;
    UPDATE pgq.jobs j
    SET available_at = least(j.available_at, now()),
        wait_reason = CASE WHEN j.available_at > now() THEN 'run_now' ELSE j.wait_reason END
    WHERE j.uuid = v_job.uuid;
    PERFORM pgq._record_action('run_now', v_job.uuid, v_job.queue);
    PERFORM pg_notify('pgq_jobs', v_job.queue);
    RETURN true;
END;
$$;


--
-- Name: FUNCTION run_now(uuid uuid); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.run_now(uuid uuid) IS 'Makes a waiting job available now (S20); false when there is no such waiting job.';


--
-- Name: run_schedule(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.run_schedule(name text) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION run_schedule(name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.run_schedule(name text) IS 'Dispatches a schedule''s job now, once, without moving its ticks (S65); returns its uuid; P0002 when there is no such schedule (S89). Recorded in pgq.actions.';


--
-- Name: run_sql_job(uuid, uuid, boolean); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.run_sql_job(uuid uuid, token uuid, grouped boolean DEFAULT false) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
DECLARE
    v_job    record;
    v_call   text;
    v_state  text;
    v_msg    text;
    v_detail text;
    v_hint   text;
BEGIN
    v_job := pgq._sql_job(run_sql_job.uuid, run_sql_job.token, run_sql_job.grouped);
    PERFORM set_config('pgq.job_uuid', run_sql_job.uuid::text, true),
            set_config('pgq.job_token', run_sql_job.token::text, true),
            set_config('pgq.job_attempt', v_job.attempt::text, true),
            set_config('pgq.worker', coalesce(v_job.worker, ''), true);
    -- Written under pgq's own search_path, where the handler's name always comes out
    -- schema-qualified.
    v_call := format('SELECT %s($1)', v_job.handler::regproc);
    IF v_job.search_path IS NOT NULL THEN
        -- For this call only: the function's own SET search_path ends with it (S86).
        PERFORM set_config('search_path', 'pg_catalog, ' || v_job.search_path || ', pg_temp', true);
    END IF;
    BEGIN
        EXECUTE v_call USING v_job.payload;
    EXCEPTION WHEN OTHERS THEN  -- not query_canceled: a statement timeout stays 57014
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT,
                                v_detail = PG_EXCEPTION_DETAIL, v_hint = PG_EXCEPTION_HINT;
        IF v_state IN ('42P01', '42883') AND v_hint = '' THEN
            v_hint := pgq._handler_path_hint(v_job.handler, v_job.search_path, v_msg);
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'PQ100', MESSAGE = v_msg, DETAIL = v_detail, HINT = v_hint;
    END;
    PERFORM set_config('search_path', 'pg_catalog, pg_temp', true);
    IF run_sql_job.grouped THEN
        RETURN;  -- the caller completes its group's jobs together, before its commit
    END IF;
    IF NOT EXISTS (SELECT FROM pgq.complete(ARRAY[run_sql_job.uuid], ARRAY[run_sql_job.token])) THEN
        RAISE EXCEPTION 'pgq: job % lost its lease while its handler ran', run_sql_job.uuid USING ERRCODE = 'PQ001';
    END IF;
END;
$_$;


--
-- Name: FUNCTION run_sql_job(uuid uuid, token uuid, grouped boolean); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.run_sql_job(uuid uuid, token uuid, grouped boolean) IS 'Worker protocol: runs the job''s SQL handler with its payload, as the calling role and with its pinned search_path (S86), and completes the job in the same transaction; PQ100 marks the handler''s own exception, with its DETAIL and HINT (S35, S44, S88); grouped: in a savepoint of a group, completed by the caller with the group''s other jobs, PQ003 for a job that must run alone (S109-S112).';


--
-- Name: schedule(text, text, text, jsonb, text, text, text, boolean, integer, integer, integer[], integer, integer, boolean, interval, jsonb); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.schedule(name text, cron text, job text, payload jsonb DEFAULT '{}'::jsonb, timezone text DEFAULT 'UTC'::text, queue text DEFAULT NULL::text, catch_up text DEFAULT 'latest'::text, paused boolean DEFAULT false, priority integer DEFAULT 0, tries integer DEFAULT NULL::integer, backoff integer[] DEFAULT NULL::integer[], max_exceptions integer DEFAULT NULL::integer, timeout integer DEFAULT NULL::integer, fail_on_timeout boolean DEFAULT NULL::boolean, retry_for interval DEFAULT NULL::interval, middleware jsonb DEFAULT NULL::jsonb) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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


--
-- Name: FUNCTION schedule(name text, cron text, job text, payload jsonb, timezone text, queue text, catch_up text, paused boolean, priority integer, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, middleware jsonb); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.schedule(name text, cron text, job text, payload jsonb, timezone text, queue text, catch_up text, paused boolean, priority integer, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, middleware jsonb) IS 'Creates or replaces a schedule: job dispatched with payload and options at every tick of cron in timezone; catch_up latest, none or all (S60, S62, S64). Raises 22023 with the reason for a bad expression, zone or option. Returns the schedule as a line of text.';


--
-- Name: set_fair_weight(text, text, integer); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.set_fair_weight(queue text, key text, weight integer) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    PERFORM pgq._check_name('queue', set_fair_weight.queue);
    IF set_fair_weight.key IS NULL THEN
        RAISE EXCEPTION 'pgq: set_fair_weight needs a key' USING ERRCODE = '22023';
    END IF;
    IF set_fair_weight.weight IS NULL OR set_fair_weight.weight NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'pgq: a fair weight must be from 1 to 1000, got %', set_fair_weight.weight USING ERRCODE = '22023';
    END IF;
    INSERT INTO pgq.fair_weights AS w (queue, key, weight)
    VALUES (set_fair_weight.queue, set_fair_weight.key, set_fair_weight.weight)
    ON CONFLICT ON CONSTRAINT fair_weights_pkey DO UPDATE SET weight = EXCLUDED.weight;
    RETURN format('queue %s: key %s weighs %s%s', set_fair_weight.queue, quote_literal(set_fair_weight.key),
                  set_fair_weight.weight,
                  CASE WHEN NOT EXISTS (SELECT FROM pgq.queues q WHERE q.name = set_fair_weight.queue AND q.fair_by IS NOT NULL)
                       THEN ' (the queue is not fair yet: pgq.define_queue(..., fair_by => ...))' ELSE '' END);
END;
$$;


--
-- Name: FUNCTION set_fair_weight(queue text, key text, weight integer); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.set_fair_weight(queue text, key text, weight integer) IS 'Sets the weight (1 to 1000, default 1) of a key of a fair queue: it gets that many jobs a round (S117). Returns what it set, as a line of text.';


--
-- Name: stage_dispatch(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.stage_dispatch() RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
BEGIN
    IF to_regclass('pg_temp.pgq_staged_payloads') IS NULL THEN
        CREATE TEMPORARY TABLE pgq_staged_payloads (payload jsonb) ON COMMIT DELETE ROWS;
        GRANT INSERT ON pg_temp.pgq_staged_payloads TO PUBLIC;
    END IF;
    PERFORM pgq._staged_payloads_checked();
    RETURN 'pg_temp.pgq_staged_payloads';
END;
$$;


--
-- Name: FUNCTION stage_dispatch(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.stage_dispatch() IS 'Bulk dispatch, step 1: this session''s staging table pg_temp.pgq_staged_payloads (payload jsonb) for COPY; then pgq.dispatch_staged (S68).';


--
-- Name: unreserve(uuid, timestamp with time zone); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.unreserve(call uuid, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS integer
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    SET enable_seqscan TO 'off'
    SET enable_hashjoin TO 'off'
    SET enable_mergejoin TO 'off'
    AS $$
DECLARE
    v_now   timestamptz := coalesce(unreserve.as_of, now());
    v_range record := pgq._lease_call_range(unreserve.call);
    v_job   pgq.jobs;
    v_count int := 0;
BEGIN
    IF unreserve.call IS NULL THEN
        RAISE EXCEPTION 'pgq: unreserve needs the call uuid given to pgq.reserve' USING ERRCODE = '22023';
    END IF;
    FOR v_job IN
        SELECT * FROM pgq.jobs j
        WHERE j.reserved_until IS NOT NULL
          AND j.lease_token BETWEEN v_range.lo AND v_range.hi
        FOR UPDATE SKIP LOCKED
    LOOP
        PERFORM pgq._give_back(v_job, 'the answer of its reserve call was lost: the worker never ran it', v_now, false);
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END;
$$;


--
-- Name: FUNCTION unreserve(call uuid, as_of timestamp with time zone); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.unreserve(call uuid, as_of timestamp with time zone) IS 'Worker protocol: gives back, not counted, the jobs still reserved by a reserve call whose answer the worker lost (S35); returns how many.';


--
-- Name: unschedule(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.unschedule(name text) RETURNS boolean
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    WITH gone AS (DELETE FROM pgq.schedule_entries e WHERE e.name = unschedule.name RETURNING 1)
    SELECT EXISTS (SELECT FROM gone);
$$;


--
-- Name: FUNCTION unschedule(name text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.unschedule(name text) IS 'Deletes a schedule (jobs already dispatched stay); false when there was none.';


--
-- Name: wake(); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.wake() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
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


--
-- Name: FUNCTION wake(); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.wake() IS 'Worker protocol: the session stops napping (see pgq.nap); dispatches stop notifying for it.';


--
-- Name: worker_seen(text, text[], text[], text, boolean); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.worker_seen(worker text, queues text[], handlers text[], version text DEFAULT NULL::text, starting boolean DEFAULT false) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    INSERT INTO pgq.workers AS w (name, queues, handlers, version)
    VALUES (worker_seen.worker, coalesce(worker_seen.queues, '{}'), coalesce(worker_seen.handlers, '{}'), worker_seen.version)
    ON CONFLICT (name) DO UPDATE
        SET queues = EXCLUDED.queues, handlers = EXCLUDED.handlers, version = EXCLUDED.version, seen_at = now(),
            started_at = CASE WHEN worker_seen.starting THEN now() ELSE w.started_at END;
$$;


--
-- Name: FUNCTION worker_seen(worker text, queues text[], handlers text[], version text, starting boolean); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.worker_seen(worker text, queues text[], handlers text[], version text, starting boolean) IS 'Worker protocol: records that a worker runs, the queues it serves and its Go handlers'' job names (S87).';


--
-- Name: worker_stopped(text); Type: FUNCTION; Schema: pgq; Owner: -
--

CREATE FUNCTION pgq.worker_stopped(worker text) RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
    DELETE FROM pgq.workers w WHERE w.name = worker_stopped.worker;
$$;


--
-- Name: FUNCTION worker_stopped(worker text); Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON FUNCTION pgq.worker_stopped(worker text) IS 'Worker protocol: a stopping worker deletes its row of pgq.workers (S87).';


--
-- Name: _live_counted; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq._live_counted AS
 SELECT j.queue,
    j.reserved_at,
    j.available_at,
    j.attempts,
    (1)::bigint AS n,
    j.job,
    j.handler
   FROM pgq.jobs j
UNION ALL
 SELECT l.queue,
    NULL::timestamp with time zone AS reserved_at,
    l.available_at,
    0 AS attempts,
    ((l.n - l.next))::bigint AS n,
    l.job,
    l.handler
   FROM pgq.loads l;


--
-- Name: VIEW _live_counted; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq._live_counted IS 'Live jobs for counting per queue: a row per row of pgq.jobs (n 1), one per chunk of pgq.loads (n its jobs) (S85).';


--
-- Name: actions; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.actions (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    actor text NOT NULL,
    action text NOT NULL,
    job_uuid uuid,
    queue text,
    detail text,
    on_behalf_of text DEFAULT NULLIF(current_setting('pgq.on_behalf_of'::text, true), ''::text),
    schedule text,
    CONSTRAINT actions_action_check CHECK ((action = ANY (ARRAY['retry'::text, 'forget'::text, 'flush'::text, 'run_now'::text, 'cancel'::text, 'pause'::text, 'resume'::text])))
);


--
-- Name: TABLE actions; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.actions IS 'Operators'' actions on jobs and queues (retry, forget, flush, run now, cancel, pause, resume), with the role that took each.';


--
-- Name: COLUMN actions.on_behalf_of; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.actions.on_behalf_of IS 'Who the login role (actor) acted for, as the tool that took the action named them in the setting pgq.on_behalf_of (the dashboard: dashboard:USER); NULL when none was set.';


--
-- Name: COLUMN actions.schedule; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.actions.schedule IS 'The schedule an action (run_now, pause, resume) was taken on; NULL for actions on jobs and queues.';


--
-- Name: actions_id_seq; Type: SEQUENCE; Schema: pgq; Owner: -
--

ALTER TABLE pgq.actions ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgq.actions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: attempts_id_seq; Type: SEQUENCE; Schema: pgq; Owner: -
--

ALTER TABLE pgq.attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgq.attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: batch_counts; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.batch_counts (
    batch_id uuid NOT NULL,
    shard smallint NOT NULL,
    pending integer DEFAULT 0 NOT NULL,
    failed integer DEFAULT 0 NOT NULL,
    cancelled integer DEFAULT 0 NOT NULL
);


--
-- Name: TABLE batch_counts; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.batch_counts IS 'A batch''s counters in 16 shards (member id hashed): members not yet finished, failed for good, cancelled. Sum them, or read pgq.batches.';


--
-- Name: failed_jobs; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.failed_jobs (
    id bigint NOT NULL,
    uuid uuid NOT NULL,
    connection text DEFAULT 'pgq'::text NOT NULL,
    queue text NOT NULL,
    payload jsonb NOT NULL,
    exception text NOT NULL,
    failed_at timestamp with time zone DEFAULT now() NOT NULL,
    job text NOT NULL,
    attempts integer NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean DEFAULT false NOT NULL,
    retry_until timestamp with time zone,
    unique_key text,
    unique_token uuid,
    unique_until text,
    debounce_key text,
    debounce_token uuid,
    middleware jsonb,
    dispatched_at timestamp with time zone NOT NULL,
    batch_id uuid,
    chain_id uuid,
    chain_step integer,
    exception_detail text,
    exception_hint text
);


--
-- Name: TABLE failed_jobs; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.failed_jobs IS 'Jobs that failed for good (S17), with Laravel''s columns plus job name and attempts used.';


--
-- Name: COLUMN failed_jobs.exception_detail; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.failed_jobs.exception_detail IS 'The DETAIL of the final exception, when it had one (S88).';


--
-- Name: COLUMN failed_jobs.exception_hint; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.failed_jobs.exception_hint IS 'The HINT of the final exception, when it had one (S88).';


--
-- Name: job_ends; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.job_ends (
    id bigint NOT NULL,
    job_uuid uuid NOT NULL,
    outcome text NOT NULL,
    exception text,
    batch_id uuid,
    chain_id uuid,
    chain_step integer,
    ended_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT job_ends_check CHECK (((batch_id IS NOT NULL) OR (chain_id IS NOT NULL))),
    CONSTRAINT job_ends_outcome_check CHECK ((outcome = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text])))
);


--
-- Name: TABLE job_ends; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.job_ends IS 'The end of each job of a chain or batch (succeeded, failed, cancelled), written by the ending transaction; its trigger moves the chain and counts the batch (S70-S76).';


--
-- Name: batch_jobs; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.batch_jobs AS
 SELECT j.batch_id,
    j.chain_id,
    j.chain_step,
    j.uuid,
    j.job,
    j.queue,
    'running'::text AS state,
    j.available_at AS at,
    j.id AS sort,
    j.attempts,
    j.last_exception AS exception,
    j.reserved_by AS worker,
    j.started_at
   FROM pgq.jobs j
  WHERE ((j.batch_id IS NOT NULL) AND (j.reserved_at IS NOT NULL) AND (j.reserved_until IS NOT NULL))
UNION ALL
 SELECT j.batch_id,
    j.chain_id,
    j.chain_step,
    j.uuid,
    j.job,
    j.queue,
    'ready'::text AS state,
    j.available_at AS at,
    j.id AS sort,
    j.attempts,
    j.last_exception AS exception,
    NULL::text AS worker,
    NULL::timestamp with time zone AS started_at
   FROM pgq.jobs j
  WHERE ((j.batch_id IS NOT NULL) AND (j.reserved_at IS NULL) AND (j.available_at <= now()))
UNION ALL
 SELECT j.batch_id,
    j.chain_id,
    j.chain_step,
    j.uuid,
    j.job,
    j.queue,
    'scheduled'::text AS state,
    j.available_at AS at,
    j.id AS sort,
    j.attempts,
    j.last_exception AS exception,
    NULL::text AS worker,
    NULL::timestamp with time zone AS started_at
   FROM pgq.jobs j
  WHERE ((j.batch_id IS NOT NULL) AND (j.reserved_at IS NULL) AND (j.available_at > now()) AND (j.attempts = 0))
UNION ALL
 SELECT j.batch_id,
    j.chain_id,
    j.chain_step,
    j.uuid,
    j.job,
    j.queue,
    'retrying'::text AS state,
    j.available_at AS at,
    j.id AS sort,
    j.attempts,
    j.last_exception AS exception,
    NULL::text AS worker,
    NULL::timestamp with time zone AS started_at
   FROM pgq.jobs j
  WHERE ((j.batch_id IS NOT NULL) AND (j.reserved_at IS NULL) AND (j.available_at > now()) AND (j.attempts > 0))
UNION ALL
 SELECT f.batch_id,
    f.chain_id,
    f.chain_step,
    f.uuid,
    f.job,
    f.queue,
    'failed'::text AS state,
    f.failed_at AS at,
    f.id AS sort,
    f.attempts,
    f.exception,
    NULL::text AS worker,
    NULL::timestamp with time zone AS started_at
   FROM pgq.failed_jobs f
  WHERE (f.batch_id IS NOT NULL)
UNION ALL
 SELECT e.batch_id,
    e.chain_id,
    e.chain_step,
    e.job_uuid AS uuid,
    COALESCE(a.job, ''::text) AS job,
    COALESCE(a.queue, ''::text) AS queue,
    e.outcome AS state,
    e.ended_at AS at,
    e.id AS sort,
    COALESCE(a.attempt, 0) AS attempts,
    e.exception,
    a.worker,
    a.started_at
   FROM (pgq.job_ends e
     LEFT JOIN LATERAL ( SELECT a_1.job,
            a_1.queue,
            a_1.attempt,
            a_1.worker,
            a_1.started_at
           FROM pgq.attempts a_1
          WHERE (a_1.job_uuid = e.job_uuid)
          ORDER BY a_1.id DESC
         LIMIT 1) a ON (true))
  WHERE ((e.batch_id IS NOT NULL) AND (e.outcome = ANY (ARRAY['succeeded'::text, 'cancelled'::text])));


--
-- Name: VIEW batch_jobs; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.batch_jobs IS 'Every job of a batch (lone jobs and chain steps), live, failed or ended, with its state (ready, scheduled, retrying, running, failed, succeeded, cancelled); read it by batch_id and state in (at, sort) order (S97).';


--
-- Name: batches; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.batches AS
 SELECT b.id,
    b.name,
    b.total_jobs,
    ((c.pending + c.failed))::integer AS pending_jobs,
    (c.failed)::integer AS failed_jobs,
    b.failed_job_ids,
    b.options,
    b.cancelled_at,
    b.created_at,
    b.finished_at,
    (c.pending)::integer AS unfinished_jobs,
    (c.cancelled)::integer AS cancelled_jobs,
    ((((b.total_jobs - c.pending) - c.failed) - c.cancelled))::integer AS succeeded_jobs,
    (
        CASE
            WHEN (b.total_jobs = 0) THEN (100)::numeric
            ELSE round(((100.0 * ((b.total_jobs - c.pending))::numeric) / (b.total_jobs)::numeric), 1)
        END)::double precision AS progress,
    b.then_at,
    b.catch_at,
    b.finally_at,
        CASE
            WHEN (b.finished_at IS NULL) THEN
            CASE
                WHEN (b.cancelled_at IS NULL) THEN 'running'::text
                ELSE 'cancelling'::text
            END
            WHEN (c.failed > 0) THEN 'failed'::text
            WHEN ((b.cancelled_at IS NOT NULL) OR (c.cancelled > 0)) THEN 'cancelled'::text
            ELSE 'succeeded'::text
        END AS state
   FROM (pgq.job_batches b
     CROSS JOIN LATERAL ( SELECT COALESCE(sum(s.pending), (0)::bigint) AS pending,
            COALESCE(sum(s.failed), (0)::bigint) AS failed,
            COALESCE(sum(s.cancelled), (0)::bigint) AS cancelled
           FROM pgq.batch_counts s
          WHERE (s.batch_id = b.id)) c);


--
-- Name: VIEW batches; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.batches IS 'Batches with Laravel''s job_batches columns (pending_jobs counts failed members too, as Laravel''s does) plus unfinished, cancelled and succeeded members, progress (% finished), when each callback was queued, and state: running, cancelling (cancelled, members still running), or once finished failed (a member failed for good), cancelled (the batch or a member was) or succeeded.';


--
-- Name: callbacks; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.callbacks (
    id bigint NOT NULL,
    batch_id uuid,
    chain_id uuid,
    kind text NOT NULL,
    job text NOT NULL,
    job_uuid uuid,
    queued_at timestamp with time zone DEFAULT now() NOT NULL,
    error text,
    outcome text,
    exception text,
    ended_at timestamp with time zone,
    CONSTRAINT callbacks_check CHECK ((num_nonnulls(batch_id, chain_id) = 1)),
    CONSTRAINT callbacks_check1 CHECK (((job_uuid IS NOT NULL) OR (error IS NOT NULL))),
    CONSTRAINT callbacks_kind_check CHECK ((kind = ANY (ARRAY['then'::text, 'catch'::text, 'finally'::text, 'on_failure'::text]))),
    CONSTRAINT callbacks_outcome_check CHECK ((outcome = ANY (ARRAY['succeeded'::text, 'failed'::text, 'cancelled'::text])))
);


--
-- Name: TABLE callbacks; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.callbacks IS 'Each callback queued for a batch (then, catch, finally) or a chain (on_failure): its job uuid, or error when it could not be queued, and its end (outcome NULL: waiting, running, or failed and retried) (S97).';


--
-- Name: callbacks_id_seq; Type: SEQUENCE; Schema: pgq; Owner: -
--

ALTER TABLE pgq.callbacks ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgq.callbacks_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: chains; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.chains AS
 SELECT c.id,
    c.batch_id,
    c.state,
    c.step,
    jsonb_array_length(c.steps) AS total_steps,
    ((c.steps -> (c.step - 1)) ->> 'job'::text) AS job,
    c.job_uuid,
    c.on_failure,
    c.queue,
    c.exception,
    c.created_at,
    c.finished_at,
        CASE
            WHEN ( SELECT pgq._sees_payloads() AS _sees_payloads) THEN c.steps
            ELSE NULL::jsonb
        END AS steps,
    c.job_uuids,
    ARRAY( SELECT (x.s ->> 'job'::text)
           FROM jsonb_array_elements(c.steps) WITH ORDINALITY x(s, n)
          ORDER BY x.n) AS step_jobs
   FROM pgq.job_chains c;


--
-- Name: VIEW chains; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.chains IS 'Chains: state (running, succeeded, failed, cancelled), the step queued or where it stopped, its job, why it stopped; steps (with payloads) only for payload readers; each step''s job name (step_jobs) and, once queued, its job uuid (job_uuids).';


--
-- Name: circuits; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.circuits (
    key text NOT NULL,
    failures integer NOT NULL,
    window_start timestamp with time zone NOT NULL,
    decay integer NOT NULL,
    max_exceptions integer NOT NULL,
    last_exception text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: TABLE circuits; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.circuits IS 'Circuit breakers of throttles_exceptions (S29): exceptions counted per key within decay seconds; open at max_exceptions; a success deletes the row.';


--
-- Name: concurrency_limits; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.concurrency_limits (
    name text NOT NULL,
    "limit" integer NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    places integer NOT NULL,
    CONSTRAINT concurrency_limits_limit_check CHECK ((("limit" >= 1) AND ("limit" <= 1000))),
    CONSTRAINT concurrency_limits_places_check CHECK (((places >= "limit") AND (places <= 1000)))
);


--
-- Name: TABLE concurrency_limits; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.concurrency_limits IS 'Named concurrency limits (pgq.define_concurrency): at most "limit" handlers of a key run at once across every worker (S99).';


--
-- Name: COLUMN concurrency_limits.places; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.concurrency_limits.places IS 'The places 1..places of each key that a handler may hold: the limit, or more while handlers that started under a higher limit still hold places above it (pgq.define_concurrency raises it, pgq.rotate brings it back, S99).';


--
-- Name: debounce_tokens; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.debounce_tokens (
    key text NOT NULL,
    token uuid NOT NULL,
    job_uuid uuid NOT NULL,
    burst_started_at timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: TABLE debounce_tokens; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.debounce_tokens IS 'The current debounce token per key (S24): only the job carrying it runs. burst_started_at bounds the wait with debounce_max_wait.';


--
-- Name: failed; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.failed AS
 SELECT f.id,
    f.uuid,
    f.job,
    f.queue,
    f.attempts,
    f.failed_at,
    f.exception,
        CASE
            WHEN ( SELECT pgq._sees_payloads() AS _sees_payloads) THEN f.payload
            ELSE NULL::jsonb
        END AS payload,
    ( SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object('attempt', a.attempt, 'outcome', a.outcome, 'worker', a.worker, 'finished_at', a.finished_at, 'exception', a.exception, 'delay', a.delay, 'detail', a.exception_detail, 'hint', a.exception_hint)) ORDER BY a.id) AS jsonb_agg
           FROM pgq.attempts a
          WHERE (a.job_uuid = f.uuid)) AS history,
    f.exception_detail,
    f.exception_hint
   FROM pgq.failed_jobs f;


--
-- Name: VIEW failed; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.failed IS 'Failed jobs with every previous attempt (outcome and exception, with its detail and hint when it had them) as history; the final exception''s DETAIL and HINT (S88).';


--
-- Name: failed_job_settings; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.failed_job_settings AS
 SELECT f.uuid,
    f.job,
    f.queue,
    f.priority,
    f.handler,
    f.tries,
    f.backoff,
    f.max_exceptions,
    f.timeout,
    f.fail_on_timeout,
    f.retry_until,
    f.unique_key,
    f.unique_until,
    f.debounce_key,
    f.middleware,
    f.attempts,
    f.dispatched_at,
    f.failed_at,
    f.exception,
    f.exception_detail,
    f.exception_hint,
    f.batch_id,
    f.chain_id,
    f.chain_step
   FROM pgq.failed_jobs f;


--
-- Name: VIEW failed_job_settings; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.failed_job_settings IS 'Each failed job''s frozen settings (S1), its failure (failed_at, exception with its DETAIL and HINT) and its batch or chain, without its payload.';


--
-- Name: failed_jobs_id_seq; Type: SEQUENCE; Schema: pgq; Owner: -
--

ALTER TABLE pgq.failed_jobs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgq.failed_jobs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: fair_entries; Type: TABLE; Schema: pgq; Owner: -
--

CREATE UNLOGGED TABLE pgq.fair_entries (
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL
);


--
-- Name: TABLE fair_entries; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.fair_entries IS 'A row per open transaction that stored jobs of keys of fair queues with no turn: its deferred trigger makes their turns at commit (S121).';


--
-- Name: fair_turns; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.fair_turns (
    queue text NOT NULL,
    key text NOT NULL,
    pass double precision DEFAULT 0 NOT NULL,
    parked_until timestamp with time zone
);


--
-- Name: TABLE fair_turns; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.fair_turns IS 'The turns of a fair queue''s keys that have live jobs (S115): the reserve serves keys by ascending pass; each job it takes adds 1/weight to its key''s pass.';


--
-- Name: COLUMN fair_turns.parked_until; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.fair_turns.parked_until IS 'NULL: the turn is in play. Else the key had nothing ready when a reserve last walked it, and reserves pass it over until then (S125).';


--
-- Name: fair_weights; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.fair_weights (
    queue text NOT NULL,
    key text NOT NULL,
    weight integer NOT NULL,
    CONSTRAINT fair_weights_weight_check CHECK (((weight >= 1) AND (weight <= 1000)))
);


--
-- Name: TABLE fair_weights; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.fair_weights IS 'Weights of keys of fair queues (S117, pgq.set_fair_weight): a key of weight w gets w jobs a round; a key with no row weighs 1.';


--
-- Name: fair_keys; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.fair_keys AS
 SELECT j.queue,
    j.fair_key AS key,
    COALESCE(w.weight, 1) AS weight,
    count(*) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at <= now()))) AS ready,
    COALESCE((now() - min(j.available_at) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at <= now())))), '00:00:00'::interval) AS oldest_wait,
    count(*) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at > now()))) AS later,
    count(*) FILTER (WHERE (j.reserved_at IS NOT NULL)) AS running,
    t.pass,
    t.parked_until
   FROM ((pgq.jobs j
     LEFT JOIN pgq.fair_weights w ON (((w.queue = j.queue) AND (w.key = j.fair_key))))
     LEFT JOIN pgq.fair_turns t ON (((t.queue = j.queue) AND (t.key = j.fair_key))))
  WHERE (j.fair_key IS NOT NULL)
  GROUP BY j.queue, j.fair_key, w.weight, t.pass, t.parked_until;


--
-- Name: VIEW fair_keys; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.fair_keys IS 'Keys of fair queues with live jobs: weight, ready jobs and the oldest one''s wait, waiting later, running, the pass that orders their turns, and until when a key with nothing ready is set aside (S119, S125).';


--
-- Name: goose_version; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.goose_version (
    id integer NOT NULL,
    version_id bigint NOT NULL,
    is_applied boolean NOT NULL,
    tstamp timestamp without time zone DEFAULT now() NOT NULL
);


--
-- Name: TABLE goose_version; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.goose_version IS 'The migrations applied (goose''s version table): pgq-worker status shows the last one.';


--
-- Name: goose_version_id_seq; Type: SEQUENCE; Schema: pgq; Owner: -
--

ALTER TABLE pgq.goose_version ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME pgq.goose_version_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: handler_search_paths; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.handler_search_paths (
    handler regprocedure NOT NULL,
    search_path text NOT NULL,
    defined_by text DEFAULT SESSION_USER NOT NULL,
    defined_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: TABLE handler_search_paths; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.handler_search_paths IS 'The search_path each SQL handler that pins none of its own runs with: its admin''s when pgq.define_job named it (S86).';


--
-- Name: job_ends_id_seq; Type: SEQUENCE; Schema: pgq; Owner: -
--

ALTER TABLE pgq.job_ends ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME pgq.job_ends_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: job_settings; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.job_settings AS
 SELECT l.uuid,
    l.state,
    l.job,
    l.queue,
    l.priority,
    l.handler,
    l.tries,
    l.backoff,
    l.max_exceptions,
    l.timeout,
    l.fail_on_timeout,
    l.retry_until,
    l.unique_key,
    l.unique_until,
    l.debounce_key,
    l.middleware,
    l.attempts,
    l.exceptions,
    l.lease_expiries,
    l.interruptions,
    l.turn_aways,
    l.last_exception_attempt,
    l.last_exception,
    l.wait_reason,
    l.available_at,
    l.reserved_by AS worker,
    l.reserved_at,
    l.started_at,
    l.reserved_until AS lease_until,
    l.cancel_requested_at,
    l.cancel_requested_by,
    l.created_at AS dispatched_at,
    l.batch_id,
    l.chain_id,
    l.chain_step
   FROM pgq.live_jobs l;


--
-- Name: VIEW job_settings; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.job_settings IS 'Each live job''s frozen settings (S1), counters, state (ready, scheduled, retrying, running) and its batch or chain, without its payload.';


--
-- Name: job_slots; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.job_slots (
    slot smallint NOT NULL,
    partition regclass NOT NULL,
    state text NOT NULL,
    since timestamp with time zone DEFAULT now() NOT NULL,
    tries integer DEFAULT 0 NOT NULL,
    next_try timestamp with time zone,
    loads regclass NOT NULL,
    CONSTRAINT job_slots_state_check CHECK ((state = ANY (ARRAY['current'::text, 'draining'::text, 'empty'::text])))
);


--
-- Name: TABLE job_slots; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.job_slots IS 'The partitions of pgq.jobs: current (new jobs go there), draining (no new jobs; truncated once no job is left) or empty. pgq.rotate moves them on; read pgq.job_storage for their sizes.';


--
-- Name: COLUMN job_slots.since; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_slots.since IS 'When the slot entered its state.';


--
-- Name: COLUMN job_slots.tries; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_slots.tries IS 'Draining: how many times pgq.rotate found a job left in it, or could not take its lock in time.';


--
-- Name: COLUMN job_slots.next_try; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_slots.next_try IS 'Draining: pgq.rotate tries to truncate it again from then on (1, 2, 4, 8, then every 10 seconds).';


--
-- Name: COLUMN job_slots.loads; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.job_slots.loads IS 'The slot''s partition of pgq.loads.';


--
-- Name: job_storage; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.job_storage AS
 SELECT s.slot,
    s.state,
    s.since,
    s.next_try,
    s.partition,
    (pg_total_relation_size(s.partition) + pg_total_relation_size(s.loads)) AS bytes,
    pg_stat_get_live_tuples((s.partition)::oid) AS live_rows,
    pg_stat_get_dead_tuples((s.partition)::oid) AS dead_rows
   FROM pgq.job_slots s
  ORDER BY s.slot;


--
-- Name: VIEW job_storage; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.job_storage IS 'The slots of pgq.jobs: state, when a draining one is looked at again, size with indexes and with the slot''s part of pgq.loads (bytes), and the statistics'' live and dead row counts of pgq.jobs.';


--
-- Name: jobs_id_seq; Type: SEQUENCE; Schema: pgq; Owner: -
--

CREATE SEQUENCE pgq.jobs_id_seq
    START WITH 1
    INCREMENT BY 1024
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


--
-- Name: jobs_id_seq; Type: SEQUENCE OWNED BY; Schema: pgq; Owner: -
--

ALTER SEQUENCE pgq.jobs_id_seq OWNED BY pgq.jobs.id;


--
-- Name: jobs_0; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.jobs_0 (
    id bigint DEFAULT nextval('pgq.jobs_id_seq'::regclass) NOT NULL,
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    payload jsonb NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean DEFAULT false NOT NULL,
    retry_until timestamp with time zone,
    unique_key text,
    unique_token uuid,
    unique_until text,
    debounce_key text,
    debounce_token uuid,
    middleware jsonb,
    attempts integer DEFAULT 0 NOT NULL,
    exceptions integer DEFAULT 0 NOT NULL,
    lease_expiries integer DEFAULT 0 NOT NULL,
    last_exception text,
    last_exception_attempt integer,
    turn_aways jsonb DEFAULT '{}'::jsonb NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    wait_reason text DEFAULT 'dispatched'::text NOT NULL,
    reserved_at timestamp with time zone,
    reserved_until timestamp with time zone,
    reserved_by text,
    lease_token uuid,
    started_at timestamp with time zone,
    overlap_keys text[],
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    interruptions integer DEFAULT 0 NOT NULL,
    cancel_requested_at timestamp with time zone,
    cancel_requested_by text,
    batch_id uuid,
    chain_id uuid,
    chain_step integer,
    middleware_keys jsonb,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    slot smallint NOT NULL,
    waits_on text,
    traceparent text,
    tracestate text,
    fair_key text,
    CONSTRAINT jobs_wait_reason_check CHECK ((wait_reason = ANY (ARRAY['dispatched'::text, 'backoff'::text, 'released'::text, 'turned_away'::text, 'lease_expired'::text, 'run_now'::text, 'retried'::text, 'interrupted'::text])))
)
WITH (autovacuum_vacuum_scale_factor='0', autovacuum_vacuum_threshold='5000', autovacuum_vacuum_insert_scale_factor='0', autovacuum_vacuum_insert_threshold='50000', autovacuum_vacuum_cost_delay='0');
ALTER TABLE ONLY pgq.jobs_0 ALTER COLUMN fair_key SET (n_distinct=-0.01);


--
-- Name: TABLE jobs_0; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.jobs_0 IS 'Slot 0 of pgq.jobs (pgq.job_slots): read pgq.jobs.';


--
-- Name: jobs_1; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.jobs_1 (
    id bigint DEFAULT nextval('pgq.jobs_id_seq'::regclass) NOT NULL,
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    payload jsonb NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean DEFAULT false NOT NULL,
    retry_until timestamp with time zone,
    unique_key text,
    unique_token uuid,
    unique_until text,
    debounce_key text,
    debounce_token uuid,
    middleware jsonb,
    attempts integer DEFAULT 0 NOT NULL,
    exceptions integer DEFAULT 0 NOT NULL,
    lease_expiries integer DEFAULT 0 NOT NULL,
    last_exception text,
    last_exception_attempt integer,
    turn_aways jsonb DEFAULT '{}'::jsonb NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    wait_reason text DEFAULT 'dispatched'::text NOT NULL,
    reserved_at timestamp with time zone,
    reserved_until timestamp with time zone,
    reserved_by text,
    lease_token uuid,
    started_at timestamp with time zone,
    overlap_keys text[],
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    interruptions integer DEFAULT 0 NOT NULL,
    cancel_requested_at timestamp with time zone,
    cancel_requested_by text,
    batch_id uuid,
    chain_id uuid,
    chain_step integer,
    middleware_keys jsonb,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    slot smallint NOT NULL,
    waits_on text,
    traceparent text,
    tracestate text,
    fair_key text,
    CONSTRAINT jobs_wait_reason_check CHECK ((wait_reason = ANY (ARRAY['dispatched'::text, 'backoff'::text, 'released'::text, 'turned_away'::text, 'lease_expired'::text, 'run_now'::text, 'retried'::text, 'interrupted'::text])))
)
WITH (autovacuum_vacuum_scale_factor='0', autovacuum_vacuum_threshold='5000', autovacuum_vacuum_insert_scale_factor='0', autovacuum_vacuum_insert_threshold='50000', autovacuum_vacuum_cost_delay='0');
ALTER TABLE ONLY pgq.jobs_1 ALTER COLUMN fair_key SET (n_distinct=-0.01);


--
-- Name: TABLE jobs_1; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.jobs_1 IS 'Slot 1 of pgq.jobs (pgq.job_slots): read pgq.jobs.';


--
-- Name: jobs_2; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.jobs_2 (
    id bigint DEFAULT nextval('pgq.jobs_id_seq'::regclass) NOT NULL,
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    payload jsonb NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean DEFAULT false NOT NULL,
    retry_until timestamp with time zone,
    unique_key text,
    unique_token uuid,
    unique_until text,
    debounce_key text,
    debounce_token uuid,
    middleware jsonb,
    attempts integer DEFAULT 0 NOT NULL,
    exceptions integer DEFAULT 0 NOT NULL,
    lease_expiries integer DEFAULT 0 NOT NULL,
    last_exception text,
    last_exception_attempt integer,
    turn_aways jsonb DEFAULT '{}'::jsonb NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    wait_reason text DEFAULT 'dispatched'::text NOT NULL,
    reserved_at timestamp with time zone,
    reserved_until timestamp with time zone,
    reserved_by text,
    lease_token uuid,
    started_at timestamp with time zone,
    overlap_keys text[],
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    interruptions integer DEFAULT 0 NOT NULL,
    cancel_requested_at timestamp with time zone,
    cancel_requested_by text,
    batch_id uuid,
    chain_id uuid,
    chain_step integer,
    middleware_keys jsonb,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    slot smallint NOT NULL,
    waits_on text,
    traceparent text,
    tracestate text,
    fair_key text,
    CONSTRAINT jobs_wait_reason_check CHECK ((wait_reason = ANY (ARRAY['dispatched'::text, 'backoff'::text, 'released'::text, 'turned_away'::text, 'lease_expired'::text, 'run_now'::text, 'retried'::text, 'interrupted'::text])))
)
WITH (autovacuum_vacuum_scale_factor='0', autovacuum_vacuum_threshold='5000', autovacuum_vacuum_insert_scale_factor='0', autovacuum_vacuum_insert_threshold='50000', autovacuum_vacuum_cost_delay='0');
ALTER TABLE ONLY pgq.jobs_2 ALTER COLUMN fair_key SET (n_distinct=-0.01);


--
-- Name: TABLE jobs_2; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.jobs_2 IS 'Slot 2 of pgq.jobs (pgq.job_slots): read pgq.jobs.';


--
-- Name: jobs_3; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.jobs_3 (
    id bigint DEFAULT nextval('pgq.jobs_id_seq'::regclass) NOT NULL,
    uuid uuid DEFAULT gen_random_uuid() NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    payload jsonb NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean DEFAULT false NOT NULL,
    retry_until timestamp with time zone,
    unique_key text,
    unique_token uuid,
    unique_until text,
    debounce_key text,
    debounce_token uuid,
    middleware jsonb,
    attempts integer DEFAULT 0 NOT NULL,
    exceptions integer DEFAULT 0 NOT NULL,
    lease_expiries integer DEFAULT 0 NOT NULL,
    last_exception text,
    last_exception_attempt integer,
    turn_aways jsonb DEFAULT '{}'::jsonb NOT NULL,
    available_at timestamp with time zone DEFAULT now() NOT NULL,
    wait_reason text DEFAULT 'dispatched'::text NOT NULL,
    reserved_at timestamp with time zone,
    reserved_until timestamp with time zone,
    reserved_by text,
    lease_token uuid,
    started_at timestamp with time zone,
    overlap_keys text[],
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    interruptions integer DEFAULT 0 NOT NULL,
    cancel_requested_at timestamp with time zone,
    cancel_requested_by text,
    batch_id uuid,
    chain_id uuid,
    chain_step integer,
    middleware_keys jsonb,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    slot smallint NOT NULL,
    waits_on text,
    traceparent text,
    tracestate text,
    fair_key text,
    CONSTRAINT jobs_wait_reason_check CHECK ((wait_reason = ANY (ARRAY['dispatched'::text, 'backoff'::text, 'released'::text, 'turned_away'::text, 'lease_expired'::text, 'run_now'::text, 'retried'::text, 'interrupted'::text])))
)
WITH (autovacuum_vacuum_scale_factor='0', autovacuum_vacuum_threshold='5000', autovacuum_vacuum_insert_scale_factor='0', autovacuum_vacuum_insert_threshold='50000', autovacuum_vacuum_cost_delay='0');
ALTER TABLE ONLY pgq.jobs_3 ALTER COLUMN fair_key SET (n_distinct=-0.01);


--
-- Name: TABLE jobs_3; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.jobs_3 IS 'Slot 3 of pgq.jobs (pgq.job_slots): read pgq.jobs.';


--
-- Name: overlap_locks; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.overlap_locks (
    key text NOT NULL,
    job_uuid uuid NOT NULL,
    worker text,
    since timestamp with time zone NOT NULL,
    expire_after integer,
    lease_token uuid NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    gen smallint NOT NULL
)
PARTITION BY LIST (gen);


--
-- Name: TABLE overlap_locks; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.overlap_locks IS 'without_overlapping leases (S26, S34): the job holding each key, until expires_at unless its worker''s heartbeat renews it. Released with the attempt''s outcome. Partitioned by generation (pgq.overlap_gens, S81).';


--
-- Name: COLUMN overlap_locks.expires_at; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.overlap_locks.expires_at IS 'When the lease ends unless renewed: 10 s after the last heartbeat, never past since + expire_after.';


--
-- Name: COLUMN overlap_locks.gen; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.overlap_locks.gen IS 'The generation the lease was taken in (pgq.overlap_gens): the current one then. A key has at most one live lease, in any generation.';


--
-- Name: rate_limit_windows; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.rate_limit_windows (
    limit_name text NOT NULL,
    key text NOT NULL,
    window_start timestamp with time zone NOT NULL,
    hits integer NOT NULL
);


--
-- Name: TABLE rate_limit_windows; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.rate_limit_windows IS 'The current fixed window of each rate limit key: hits counted under the window''s advisory lock, so the budget is exact under concurrency (S28, S82). A window of a dropped limit is read by no reserve and deleted by pgq.drop_limit or retention (S83).';


--
-- Name: rate_limits; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.rate_limits (
    name text NOT NULL,
    max integer NOT NULL,
    per interval NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT rate_limits_max_check CHECK ((max > 0)),
    CONSTRAINT rate_limits_per_check CHECK ((per > '00:00:00'::interval))
);


--
-- Name: TABLE rate_limits; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.rate_limits IS 'Named rate limits (pgq.define_limit): max hits per window, one budget shared by every worker (S28).';


--
-- Name: limits; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.limits AS
 SELECT 'rate_limit'::text AS kind,
    r.name,
    COALESCE(w.key, r.name) AS key,
    r.max,
    r.per,
        CASE
            WHEN ((w.window_start + r.per) > now()) THEN w.hits
            ELSE 0
        END AS used,
        CASE
            WHEN ((w.window_start + r.per) > now()) THEN (w.window_start + r.per)
            ELSE NULL::timestamp with time zone
        END AS resets_at,
        CASE
            WHEN (((w.window_start + r.per) > now()) AND (w.hits >= r.max)) THEN 'exhausted'::text
            ELSE 'available'::text
        END AS state,
    NULL::text AS last_exception
   FROM (pgq.rate_limits r
     LEFT JOIN pgq.rate_limit_windows w ON ((w.limit_name = r.name)))
UNION ALL
 SELECT 'circuit'::text AS kind,
    c.key AS name,
    c.key,
    c.max_exceptions AS max,
    make_interval(secs => (c.decay)::double precision) AS per,
        CASE
            WHEN ((c.window_start + make_interval(secs => (c.decay)::double precision)) > now()) THEN c.failures
            ELSE 0
        END AS used,
        CASE
            WHEN ((c.window_start + make_interval(secs => (c.decay)::double precision)) > now()) THEN (c.window_start + make_interval(secs => (c.decay)::double precision))
            ELSE NULL::timestamp with time zone
        END AS resets_at,
        CASE
            WHEN (((c.window_start + make_interval(secs => (c.decay)::double precision)) > now()) AND (c.failures >= c.max_exceptions)) THEN 'open'::text
            ELSE 'closed'::text
        END AS state,
    c.last_exception
   FROM pgq.circuits c
UNION ALL
 SELECT 'concurrency'::text AS kind,
    COALESCE(l.name, k.name) AS name,
    COALESCE(k.key, ('@'::text || l.name)) AS key,
    l."limit" AS max,
    NULL::interval AS per,
    (COALESCE(k.running, (0)::bigint))::integer AS used,
    NULL::timestamp with time zone AS resets_at,
        CASE
            WHEN ((k.running >= l."limit") OR (k.waiting > 0)) THEN 'full'::text
            ELSE 'available'::text
        END AS state,
    NULL::text AS last_exception
   FROM (( SELECT u.key,
                CASE
                    WHEN (u.key ~~ '@%'::text) THEN split_part(substr(u.key, 2), ':['::text, 1)
                    ELSE min(u.job)
                END AS name,
            sum(u.running) AS running,
            sum(u.waiting) AS waiting
           FROM ( SELECT regexp_replace(substr(o.key, 2), '#[0-9]+$'::text, ''::text) AS key,
                    j.job,
                    1 AS running,
                    0 AS waiting
                   FROM (pgq.overlap_locks o
                     LEFT JOIN pgq.jobs j ON ((j.uuid = o.job_uuid)))
                  WHERE ((o.key ~~ '#%'::text) AND (o.expires_at > now()))
                UNION ALL
                 SELECT j.waits_on,
                    j.job,
                    0,
                    1
                   FROM pgq.jobs j
                  WHERE ((j.waits_on IS NOT NULL) AND (j.reserved_at IS NULL))) u
          GROUP BY u.key) k
     FULL JOIN pgq.concurrency_limits l ON (((k.key ~~ '@%'::text) AND (l.name = k.name))));


--
-- Name: VIEW limits; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.limits IS 'Each rate limit''s budget in its current window (used of max, when it resets), each circuit''s state (open: jobs are turned away until resets_at + 3 s), and each concurrency limit''s handlers running per key (used of max; max is NULL for a limit a class sets per key, S99).';


--
-- Name: live_workers; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.live_workers AS
 SELECT w.name,
    w.queues,
    w.handlers,
    w.version,
    w.started_at,
    w.seen_at
   FROM pgq.workers w
  WHERE (w.seen_at > (now() - pgq._worker_ttl()));


--
-- Name: VIEW live_workers; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.live_workers IS 'Workers seen in the last minute: the queues each serves, its Go handlers'' job names, its version (S87).';


--
-- Name: loads_0; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.loads_0 (
    first_id bigint NOT NULL,
    first_uuid uuid NOT NULL,
    n integer NOT NULL,
    next integer DEFAULT 0 NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    priority integer NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean NOT NULL,
    retry_until timestamp with time zone,
    available_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    payloads jsonb[] NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    slot smallint NOT NULL,
    traceparent text,
    tracestate text,
    CONSTRAINT loads_check CHECK ((next < n)),
    CONSTRAINT loads_check1 CHECK ((cardinality(payloads) >= n)),
    CONSTRAINT loads_n_check CHECK (((n >= 1) AND (n <= 1024)))
)
WITH (autovacuum_vacuum_cost_delay='0');
ALTER TABLE ONLY pgq.loads_0 ALTER COLUMN payloads SET STORAGE EXTERNAL;


--
-- Name: TABLE loads_0; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.loads_0 IS 'Slot 0 of pgq.loads (pgq.job_slots): read pgq.loads.';


--
-- Name: loads_1; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.loads_1 (
    first_id bigint NOT NULL,
    first_uuid uuid NOT NULL,
    n integer NOT NULL,
    next integer DEFAULT 0 NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    priority integer NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean NOT NULL,
    retry_until timestamp with time zone,
    available_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    payloads jsonb[] NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    slot smallint NOT NULL,
    traceparent text,
    tracestate text,
    CONSTRAINT loads_check CHECK ((next < n)),
    CONSTRAINT loads_check1 CHECK ((cardinality(payloads) >= n)),
    CONSTRAINT loads_n_check CHECK (((n >= 1) AND (n <= 1024)))
)
WITH (autovacuum_vacuum_cost_delay='0');
ALTER TABLE ONLY pgq.loads_1 ALTER COLUMN payloads SET STORAGE EXTERNAL;


--
-- Name: TABLE loads_1; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.loads_1 IS 'Slot 1 of pgq.loads (pgq.job_slots): read pgq.loads.';


--
-- Name: loads_2; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.loads_2 (
    first_id bigint NOT NULL,
    first_uuid uuid NOT NULL,
    n integer NOT NULL,
    next integer DEFAULT 0 NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    priority integer NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean NOT NULL,
    retry_until timestamp with time zone,
    available_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    payloads jsonb[] NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    slot smallint NOT NULL,
    traceparent text,
    tracestate text,
    CONSTRAINT loads_check CHECK ((next < n)),
    CONSTRAINT loads_check1 CHECK ((cardinality(payloads) >= n)),
    CONSTRAINT loads_n_check CHECK (((n >= 1) AND (n <= 1024)))
)
WITH (autovacuum_vacuum_cost_delay='0');
ALTER TABLE ONLY pgq.loads_2 ALTER COLUMN payloads SET STORAGE EXTERNAL;


--
-- Name: TABLE loads_2; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.loads_2 IS 'Slot 2 of pgq.loads (pgq.job_slots): read pgq.loads.';


--
-- Name: loads_3; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.loads_3 (
    first_id bigint NOT NULL,
    first_uuid uuid NOT NULL,
    n integer NOT NULL,
    next integer DEFAULT 0 NOT NULL,
    job text NOT NULL,
    queue text NOT NULL,
    priority integer NOT NULL,
    handler regprocedure,
    tries integer,
    backoff integer[],
    max_exceptions integer,
    timeout integer,
    fail_on_timeout boolean NOT NULL,
    retry_until timestamp with time zone,
    available_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    payloads jsonb[] NOT NULL,
    txid xid8 DEFAULT pg_current_xact_id() NOT NULL,
    slot smallint NOT NULL,
    traceparent text,
    tracestate text,
    CONSTRAINT loads_check CHECK ((next < n)),
    CONSTRAINT loads_check1 CHECK ((cardinality(payloads) >= n)),
    CONSTRAINT loads_n_check CHECK (((n >= 1) AND (n <= 1024)))
)
WITH (autovacuum_vacuum_cost_delay='0');
ALTER TABLE ONLY pgq.loads_3 ALTER COLUMN payloads SET STORAGE EXTERNAL;


--
-- Name: TABLE loads_3; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.loads_3 IS 'Slot 3 of pgq.loads (pgq.job_slots): read pgq.loads.';


--
-- Name: unique_locks; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.unique_locks (
    key text NOT NULL,
    owner uuid NOT NULL,
    job_uuid uuid NOT NULL,
    expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: TABLE unique_locks; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.unique_locks IS 'Unique-job locks (S21), written in the dispatching transaction: a rolled-back dispatch leaves none. expires_at NULL: held until released.';


--
-- Name: locks; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.locks AS
 SELECT 'unique'::text AS kind,
    u.key,
    u.job_uuid,
    u.owner AS token,
    u.created_at AS since,
    u.expires_at,
    (EXISTS ( SELECT
           FROM pgq.jobs j
          WHERE (j.uuid = u.job_uuid))) AS job_exists,
    NULL::text AS worker
   FROM pgq.unique_locks u
UNION ALL
 SELECT 'debounce'::text AS kind,
    d.key,
    d.job_uuid,
    d.token,
    d.updated_at AS since,
    NULL::timestamp with time zone AS expires_at,
    (EXISTS ( SELECT
           FROM pgq.jobs j
          WHERE (j.uuid = d.job_uuid))) AS job_exists,
    NULL::text AS worker
   FROM pgq.debounce_tokens d
UNION ALL
 SELECT 'overlap'::text AS kind,
    o.key,
    o.job_uuid,
    NULL::uuid AS token,
    o.since,
    o.expires_at,
    (EXISTS ( SELECT
           FROM pgq.jobs j
          WHERE (j.uuid = o.job_uuid))) AS job_exists,
    o.worker
   FROM pgq.overlap_locks o
  WHERE (o.expires_at > now());


--
-- Name: VIEW locks; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.locks IS 'Held locks: unique locks (key, owner job, expiry, whether the owner job still exists), current debounce tokens, and unexpired without_overlapping leases (worker, since when, until when unless renewed; no token: an overlap lease''s token is its job''s lease token).';


--
-- Name: overlap_gens; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.overlap_gens (
    gen smallint NOT NULL,
    partition regclass NOT NULL,
    state text NOT NULL,
    since timestamp with time zone DEFAULT now() NOT NULL,
    tries integer DEFAULT 0 NOT NULL,
    next_try timestamp with time zone,
    CONSTRAINT overlap_gens_state_check CHECK ((state = ANY (ARRAY['current'::text, 'old'::text])))
);


--
-- Name: TABLE overlap_gens; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.overlap_gens IS 'The generations of pgq.overlap_locks (S81): current (new leases go there) or old (its leases end where they are; truncated and made current again once none is live). pgq.rotate moves them on.';


--
-- Name: COLUMN overlap_gens.since; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.overlap_gens.since IS 'When the generation entered its state.';


--
-- Name: COLUMN overlap_gens.tries; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.overlap_gens.tries IS 'Old: how many times in a row pgq.rotate could not take its lock in time to truncate it.';


--
-- Name: COLUMN overlap_gens.next_try; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.overlap_gens.next_try IS 'Old: pgq.rotate asks for its lock again from then on (1, 2, 4, 8, then every 10 seconds).';


--
-- Name: overlap_locks_0; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.overlap_locks_0 (
    key text NOT NULL,
    job_uuid uuid NOT NULL,
    worker text,
    since timestamp with time zone NOT NULL,
    expire_after integer,
    lease_token uuid NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    gen smallint NOT NULL
);


--
-- Name: TABLE overlap_locks_0; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.overlap_locks_0 IS 'Generation 0 of pgq.overlap_locks (pgq.overlap_gens): read pgq.overlap_locks.';


--
-- Name: overlap_locks_1; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.overlap_locks_1 (
    key text NOT NULL,
    job_uuid uuid NOT NULL,
    worker text,
    since timestamp with time zone NOT NULL,
    expire_after integer,
    lease_token uuid NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    gen smallint NOT NULL
);


--
-- Name: TABLE overlap_locks_1; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.overlap_locks_1 IS 'Generation 1 of pgq.overlap_locks (pgq.overlap_gens): read pgq.overlap_locks.';


--
-- Name: overlap_locks_2; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.overlap_locks_2 (
    key text NOT NULL,
    job_uuid uuid NOT NULL,
    worker text,
    since timestamp with time zone NOT NULL,
    expire_after integer,
    lease_token uuid NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    gen smallint NOT NULL
);


--
-- Name: TABLE overlap_locks_2; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.overlap_locks_2 IS 'Generation 2 of pgq.overlap_locks (pgq.overlap_gens): read pgq.overlap_locks.';


--
-- Name: queues; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.queues (
    name text NOT NULL,
    retry_after integer DEFAULT 90 NOT NULL,
    paused boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    fair_by text,
    CONSTRAINT queues_retry_after_check CHECK ((retry_after > 0))
);


--
-- Name: TABLE queues; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.queues IS 'Queues. retry_after is the lease in seconds (S14); a queue with no row uses 90.';


--
-- Name: COLUMN queues.retry_after; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.queues.retry_after IS 'Seconds a reservation lasts without a heartbeat before the job is handed to another worker.';


--
-- Name: COLUMN queues.fair_by; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON COLUMN pgq.queues.fair_by IS 'The payload field whose value is a job''s key in a fair queue (S114): the reserve takes jobs round-robin across keys. NULL: a plain FIFO queue.';


--
-- Name: queue_overview; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.queue_overview AS
 WITH live AS (
         SELECT j.queue,
            sum(j.n) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at <= now()))) AS ready,
            sum(j.n) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at > now()) AND (j.attempts = 0))) AS scheduled,
            sum(j.n) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at > now()) AND (j.attempts > 0))) AS retrying,
            sum(j.n) FILTER (WHERE (j.reserved_at IS NOT NULL)) AS running,
            min(j.available_at) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at <= now()))) AS oldest_available_at
           FROM pgq._live_counted j
          GROUP BY j.queue
        ), failed AS (
         SELECT f_1.queue,
            count(*) AS failed
           FROM pgq.failed_jobs f_1
          GROUP BY f_1.queue
        ), names AS (
         SELECT q_1.name AS queue
           FROM pgq.queues q_1
        UNION
         SELECT l_1.queue
           FROM live l_1
        UNION
         SELECT f_1.queue
           FROM failed f_1
        )
 SELECT n.queue,
    (COALESCE(l.ready, (0)::numeric))::bigint AS ready,
    (COALESCE(l.scheduled, (0)::numeric))::bigint AS scheduled,
    (COALESCE(l.retrying, (0)::numeric))::bigint AS retrying,
    (COALESCE(l.running, (0)::numeric))::bigint AS running,
    COALESCE(f.failed, (0)::bigint) AS failed,
    COALESCE((now() - l.oldest_available_at), '00:00:00'::interval) AS oldest_wait,
    COALESCE(q.paused, false) AS paused,
    q.retry_after
   FROM (((names n
     LEFT JOIN live l ON ((l.queue = n.queue)))
     LEFT JOIN failed f ON ((f.queue = n.queue)))
     LEFT JOIN pgq.queues q ON ((q.name = n.queue)));


--
-- Name: VIEW queue_overview; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.queue_overview IS 'Per queue: jobs ready, scheduled, retrying, running and failed, the oldest wait (pgq.queue_stats''s figures, in one pass over the live jobs), whether it is paused, its retry_after (NULL: no pgq.queues row, 90).';


--
-- Name: queue_stats; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.queue_stats AS
 SELECT q.queue,
    (COALESCE(sum(j.n) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at <= now()))), (0)::numeric))::bigint AS ready,
    (COALESCE(sum(j.n) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at > now()) AND (j.attempts = 0))), (0)::numeric))::bigint AS scheduled,
    (COALESCE(sum(j.n) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at > now()) AND (j.attempts > 0))), (0)::numeric))::bigint AS retrying,
    (COALESCE(sum(j.n) FILTER (WHERE (j.reserved_at IS NOT NULL)), (0)::numeric))::bigint AS running,
    ( SELECT count(*) AS count
           FROM pgq.failed_jobs f
          WHERE (f.queue = q.queue)) AS failed,
    COALESCE((now() - min(j.available_at) FILTER (WHERE ((j.reserved_at IS NULL) AND (j.available_at <= now())))), '00:00:00'::interval) AS oldest_wait
   FROM (( SELECT queues.name AS queue
           FROM pgq.queues
        UNION
         SELECT DISTINCT _live_counted.queue
           FROM pgq._live_counted
        UNION
         SELECT DISTINCT failed_jobs.queue
           FROM pgq.failed_jobs) q
     LEFT JOIN pgq._live_counted j ON ((j.queue = q.queue)))
  GROUP BY q.queue;


--
-- Name: VIEW queue_stats; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.queue_stats IS 'How far behind each queue is: jobs ready now and how long the oldest has waited, scheduled, retrying, running, failed.';


--
-- Name: ready; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.ready AS
 SELECT l.queue,
    l.priority,
    l.id,
    l.uuid,
    l.job,
    l.attempts,
    l.available_at,
    (now() - l.available_at) AS waiting_for,
    l.wait_reason,
    l.payload,
    l.sort_id
   FROM pgq.live_jobs l
  WHERE ((l.reserved_at IS NULL) AND (l.available_at <= now()));


--
-- Name: VIEW ready; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.ready IS 'Jobs a worker may reserve now; ORDER BY queue, priority DESC, available_at, sort_id, id is the order the reserves take them in (S30).';


--
-- Name: retrying; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.retrying AS
 SELECT l.queue,
    l.id,
    l.uuid,
    l.job,
    l.attempts,
    l.tries,
    l.wait_reason,
    l.available_at,
    (l.available_at - now()) AS due_in,
    l.last_exception_attempt,
    l.last_exception,
    l.payload
   FROM pgq.live_jobs l
  WHERE ((l.reserved_at IS NULL) AND (l.available_at > now()) AND (l.attempts > 0));


--
-- Name: VIEW retrying; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.retrying IS 'Jobs waiting to be attempted again: a backoff after an exception, or a release (wait_reason says which).';


--
-- Name: roles; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.roles (
    kind text NOT NULL,
    name text NOT NULL,
    CONSTRAINT roles_kind_check CHECK ((kind = ANY (ARRAY['owner'::text, 'producer'::text, 'worker'::text, 'reader'::text, 'payload_reader'::text, 'admin'::text])))
);


--
-- Name: TABLE roles; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.roles IS 'The roles pgq grants to, by kind (pgq.Migrate writes them): owner, producer, worker, reader, payload_reader, admin.';


--
-- Name: running; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.running AS
 SELECT l.queue,
    l.id,
    l.uuid,
    l.job,
    l.attempts,
    l.reserved_by AS worker,
    l.reserved_at,
    l.started_at,
    l.reserved_until AS lease_until,
    (l.reserved_until < now()) AS lease_expired,
    l.payload
   FROM pgq.live_jobs l
  WHERE (l.reserved_at IS NOT NULL);


--
-- Name: VIEW running; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.running IS 'Reserved jobs: which worker runs them and until when their lease lasts.';


--
-- Name: scheduled; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.scheduled AS
 SELECT l.queue,
    l.id,
    l.uuid,
    l.job,
    l.available_at,
    (l.available_at - now()) AS due_in,
    l.created_at,
    l.payload
   FROM pgq.live_jobs l
  WHERE ((l.reserved_at IS NULL) AND (l.available_at > now()) AND (l.attempts = 0));


--
-- Name: VIEW scheduled; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.scheduled IS 'Jobs waiting out a dispatch delay (never attempted yet).';


--
-- Name: schedules; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.schedules AS
 SELECT e.name,
    e.cron,
    e.timezone,
    e.job,
    e.queue,
        CASE
            WHEN ( SELECT pgq._sees_payloads() AS _sees_payloads) THEN e.payload
            ELSE NULL::jsonb
        END AS payload,
    e.catch_up,
    e.paused,
        CASE
            WHEN e.paused THEN 'paused'::text
            WHEN (e.next_run_at IS NULL) THEN 'pending'::text
            ELSE 'active'::text
        END AS state,
    e.next_run_at,
    e.last_tick,
    e.last_run_at,
    e.last_job_uuid,
    e.skipped_ticks,
    e.last_error,
    e.last_error_at,
    e.priority,
    e.tries,
    e.backoff,
    e.max_exceptions,
    e.timeout,
    e.fail_on_timeout,
    e.retry_for,
    e.middleware,
    e.version,
    e.created_at,
    e.updated_at
   FROM pgq.schedule_entries e;


--
-- Name: VIEW schedules; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.schedules IS 'Schedules (S60-S66): definition (payload NULL unless the reader may see payloads, S45), state (active, pending, paused), next_run_at, the last tick handled, the last run and its job, ticks skipped, the last dispatch error.';


--
-- Name: sql_alone; Type: TABLE; Schema: pgq; Owner: -
--

CREATE TABLE pgq.sql_alone (
    job_uuid uuid NOT NULL,
    marked_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: TABLE sql_alone; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON TABLE pgq.sql_alone IS 'SQL jobs whose last attempt was lost with its group: their next attempt runs alone (S111).';


--
-- Name: stalled; Type: VIEW; Schema: pgq; Owner: -
--

CREATE VIEW pgq.stalled AS
 WITH running AS (
         SELECT DISTINCT j.batch_id
           FROM pgq.jobs j
          WHERE ((j.reserved_until IS NOT NULL) AND (j.batch_id IS NOT NULL))
        )
 SELECT 'batch'::text AS kind,
    b.id,
    b.name,
    w.uuid AS job_uuid,
    w.job,
    w.queue,
    w.available_at AS waiting_since,
    w.retry_after,
    w.paused,
    e.last_end
   FROM ((pgq.job_batches b
     CROSS JOIN LATERAL ( SELECT j.uuid,
            j.job,
            j.queue,
            j.available_at,
            COALESCE(q.retry_after, pgq._default_retry_after()) AS retry_after,
            COALESCE(q.paused, false) AS paused
           FROM (pgq.jobs j
             LEFT JOIN pgq.queues q ON ((q.name = j.queue)))
          WHERE ((j.batch_id = b.id) AND (j.reserved_at IS NULL) AND (j.available_at <= now()))
          ORDER BY j.available_at, j.id
         LIMIT 1) w)
     CROSS JOIN LATERAL ( SELECT GREATEST(( SELECT max(x.ended_at) AS max
                   FROM pgq.job_ends x
                  WHERE ((x.batch_id = b.id) AND (x.outcome = 'succeeded'::text))), ( SELECT max(x.ended_at) AS max
                   FROM pgq.job_ends x
                  WHERE ((x.batch_id = b.id) AND (x.outcome = 'failed'::text))), ( SELECT max(x.ended_at) AS max
                   FROM pgq.job_ends x
                  WHERE ((x.batch_id = b.id) AND (x.outcome = 'cancelled'::text)))) AS last_end) e)
  WHERE ((b.finished_at IS NULL) AND (w.available_at < (now() - make_interval(secs => (w.retry_after)::double precision))) AND (NOT (EXISTS ( SELECT
           FROM running r
          WHERE (r.batch_id = b.id)))) AND ((e.last_end IS NULL) OR (e.last_end < (now() - make_interval(secs => (w.retry_after)::double precision)))))
UNION ALL
 SELECT 'chain'::text AS kind,
    c.id,
    NULL::text AS name,
    j.uuid AS job_uuid,
    j.job,
    j.queue,
    j.available_at AS waiting_since,
    COALESCE(q.retry_after, pgq._default_retry_after()) AS retry_after,
    COALESCE(q.paused, false) AS paused,
    NULL::timestamp with time zone AS last_end
   FROM ((pgq.jobs j
     JOIN pgq.job_chains c ON (((c.id = j.chain_id) AND (c.job_uuid = j.uuid))))
     LEFT JOIN pgq.queues q ON ((q.name = j.queue)))
  WHERE ((j.chain_id IS NOT NULL) AND (j.batch_id IS NULL) AND (j.reserved_at IS NULL) AND (j.available_at < (now() - make_interval(secs => (( SELECT LEAST(pgq._default_retry_after(), min(x.retry_after)) AS "least"
           FROM pgq.queues x))::double precision))) AND (j.chain_step > 0) AND (c.state = 'running'::text) AND (j.available_at < (now() - make_interval(secs => (COALESCE(q.retry_after, pgq._default_retry_after()))::double precision))));


--
-- Name: VIEW stalled; Type: COMMENT; Schema: pgq; Owner: -
--

COMMENT ON VIEW pgq.stalled IS 'Chains and batches that wait without moving: a job ready for longer than its queue''s retry_after while none of theirs runs or ended in that time (S95).';


--
-- Name: jobs_0; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.jobs ATTACH PARTITION pgq.jobs_0 FOR VALUES IN ('0');


--
-- Name: jobs_1; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.jobs ATTACH PARTITION pgq.jobs_1 FOR VALUES IN ('1');


--
-- Name: jobs_2; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.jobs ATTACH PARTITION pgq.jobs_2 FOR VALUES IN ('2');


--
-- Name: jobs_3; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.jobs ATTACH PARTITION pgq.jobs_3 FOR VALUES IN ('3');


--
-- Name: loads_0; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.loads ATTACH PARTITION pgq.loads_0 FOR VALUES IN ('0');


--
-- Name: loads_1; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.loads ATTACH PARTITION pgq.loads_1 FOR VALUES IN ('1');


--
-- Name: loads_2; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.loads ATTACH PARTITION pgq.loads_2 FOR VALUES IN ('2');


--
-- Name: loads_3; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.loads ATTACH PARTITION pgq.loads_3 FOR VALUES IN ('3');


--
-- Name: overlap_locks_0; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.overlap_locks ATTACH PARTITION pgq.overlap_locks_0 FOR VALUES IN ('0');


--
-- Name: overlap_locks_1; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.overlap_locks ATTACH PARTITION pgq.overlap_locks_1 FOR VALUES IN ('1');


--
-- Name: overlap_locks_2; Type: TABLE ATTACH; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.overlap_locks ATTACH PARTITION pgq.overlap_locks_2 FOR VALUES IN ('2');


--
-- Name: jobs id; Type: DEFAULT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.jobs ALTER COLUMN id SET DEFAULT nextval('pgq.jobs_id_seq'::regclass);


--
-- Name: actions actions_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.actions
    ADD CONSTRAINT actions_pkey PRIMARY KEY (id);


--
-- Name: attempts attempts_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.attempts
    ADD CONSTRAINT attempts_pkey PRIMARY KEY (job_uuid, id);


--
-- Name: batch_counts batch_counts_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.batch_counts
    ADD CONSTRAINT batch_counts_pkey PRIMARY KEY (batch_id, shard);


--
-- Name: callbacks callbacks_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.callbacks
    ADD CONSTRAINT callbacks_pkey PRIMARY KEY (id);


--
-- Name: circuits circuits_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.circuits
    ADD CONSTRAINT circuits_pkey PRIMARY KEY (key);


--
-- Name: concurrency_limits concurrency_limits_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.concurrency_limits
    ADD CONSTRAINT concurrency_limits_pkey PRIMARY KEY (name);


--
-- Name: debounce_tokens debounce_tokens_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.debounce_tokens
    ADD CONSTRAINT debounce_tokens_pkey PRIMARY KEY (key);


--
-- Name: failed_jobs failed_jobs_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.failed_jobs
    ADD CONSTRAINT failed_jobs_pkey PRIMARY KEY (id);


--
-- Name: failed_jobs failed_jobs_uuid_key; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.failed_jobs
    ADD CONSTRAINT failed_jobs_uuid_key UNIQUE (uuid);


--
-- Name: fair_entries fair_entries_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.fair_entries
    ADD CONSTRAINT fair_entries_pkey PRIMARY KEY (txid);


--
-- Name: fair_turns fair_turns_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.fair_turns
    ADD CONSTRAINT fair_turns_pkey PRIMARY KEY (queue, key);


--
-- Name: fair_weights fair_weights_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.fair_weights
    ADD CONSTRAINT fair_weights_pkey PRIMARY KEY (queue, key);


--
-- Name: goose_version goose_version_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.goose_version
    ADD CONSTRAINT goose_version_pkey PRIMARY KEY (id);


--
-- Name: handler_search_paths handler_search_paths_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.handler_search_paths
    ADD CONSTRAINT handler_search_paths_pkey PRIMARY KEY (handler);


--
-- Name: job_batches job_batches_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.job_batches
    ADD CONSTRAINT job_batches_pkey PRIMARY KEY (id);


--
-- Name: job_chains job_chains_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.job_chains
    ADD CONSTRAINT job_chains_pkey PRIMARY KEY (id);


--
-- Name: job_classes job_classes_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.job_classes
    ADD CONSTRAINT job_classes_pkey PRIMARY KEY (name);


--
-- Name: job_ends job_ends_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.job_ends
    ADD CONSTRAINT job_ends_pkey PRIMARY KEY (id);


--
-- Name: job_slots job_slots_partition_key; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.job_slots
    ADD CONSTRAINT job_slots_partition_key UNIQUE (partition);


--
-- Name: job_slots job_slots_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.job_slots
    ADD CONSTRAINT job_slots_pkey PRIMARY KEY (slot);


--
-- Name: jobs_0 jobs_0_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.jobs_0
    ADD CONSTRAINT jobs_0_pkey PRIMARY KEY (uuid) WITH (fillfactor='50');


--
-- Name: jobs_1 jobs_1_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.jobs_1
    ADD CONSTRAINT jobs_1_pkey PRIMARY KEY (uuid) WITH (fillfactor='50');


--
-- Name: jobs_2 jobs_2_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.jobs_2
    ADD CONSTRAINT jobs_2_pkey PRIMARY KEY (uuid) WITH (fillfactor='50');


--
-- Name: jobs_3 jobs_3_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.jobs_3
    ADD CONSTRAINT jobs_3_pkey PRIMARY KEY (uuid) WITH (fillfactor='50');


--
-- Name: overlap_gens overlap_gens_partition_key; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.overlap_gens
    ADD CONSTRAINT overlap_gens_partition_key UNIQUE (partition);


--
-- Name: overlap_gens overlap_gens_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.overlap_gens
    ADD CONSTRAINT overlap_gens_pkey PRIMARY KEY (gen);


--
-- Name: overlap_locks overlap_locks_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.overlap_locks
    ADD CONSTRAINT overlap_locks_pkey PRIMARY KEY (key, gen);


--
-- Name: overlap_locks_0 overlap_locks_0_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.overlap_locks_0
    ADD CONSTRAINT overlap_locks_0_pkey PRIMARY KEY (key, gen);


--
-- Name: overlap_locks_1 overlap_locks_1_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.overlap_locks_1
    ADD CONSTRAINT overlap_locks_1_pkey PRIMARY KEY (key, gen);


--
-- Name: overlap_locks_2 overlap_locks_2_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.overlap_locks_2
    ADD CONSTRAINT overlap_locks_2_pkey PRIMARY KEY (key, gen);


--
-- Name: queues queues_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.queues
    ADD CONSTRAINT queues_pkey PRIMARY KEY (name);


--
-- Name: rate_limit_windows rate_limit_windows_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.rate_limit_windows
    ADD CONSTRAINT rate_limit_windows_pkey PRIMARY KEY (limit_name, key);


--
-- Name: rate_limits rate_limits_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.rate_limits
    ADD CONSTRAINT rate_limits_pkey PRIMARY KEY (name);


--
-- Name: roles roles_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.roles
    ADD CONSTRAINT roles_pkey PRIMARY KEY (kind);


--
-- Name: schedule_entries schedule_entries_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.schedule_entries
    ADD CONSTRAINT schedule_entries_pkey PRIMARY KEY (name);


--
-- Name: sql_alone sql_alone_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.sql_alone
    ADD CONSTRAINT sql_alone_pkey PRIMARY KEY (job_uuid);


--
-- Name: unique_locks unique_locks_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.unique_locks
    ADD CONSTRAINT unique_locks_pkey PRIMARY KEY (key);


--
-- Name: workers workers_pkey; Type: CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (name);


--
-- Name: actions_job_uuid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX actions_job_uuid_idx ON pgq.actions USING btree (job_uuid) WHERE (job_uuid IS NOT NULL);


--
-- Name: attempts_finished_at_brin; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX attempts_finished_at_brin ON pgq.attempts USING brin (finished_at) WITH (autosummarize='on');


--
-- Name: callbacks_batch_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX callbacks_batch_idx ON pgq.callbacks USING btree (batch_id) WHERE (batch_id IS NOT NULL);


--
-- Name: callbacks_chain_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX callbacks_chain_idx ON pgq.callbacks USING btree (chain_id) WHERE (chain_id IS NOT NULL);


--
-- Name: callbacks_job_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE UNIQUE INDEX callbacks_job_idx ON pgq.callbacks USING btree (job_uuid) WHERE (job_uuid IS NOT NULL);


--
-- Name: failed_jobs_batch_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX failed_jobs_batch_idx ON pgq.failed_jobs USING btree (batch_id, failed_at, id) WHERE (batch_id IS NOT NULL);


--
-- Name: failed_jobs_chain_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX failed_jobs_chain_idx ON pgq.failed_jobs USING btree (chain_id) WHERE (chain_id IS NOT NULL);


--
-- Name: failed_jobs_failed_at_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX failed_jobs_failed_at_idx ON pgq.failed_jobs USING btree (failed_at);


--
-- Name: fair_turns_parked_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX fair_turns_parked_idx ON pgq.fair_turns USING btree (queue, parked_until) WHERE (parked_until IS NOT NULL);


--
-- Name: fair_turns_pass_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX fair_turns_pass_idx ON pgq.fair_turns USING btree (queue, pass, key);


--
-- Name: fair_turns_play_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX fair_turns_play_idx ON pgq.fair_turns USING btree (queue, pass, key) WHERE (parked_until IS NULL);


--
-- Name: job_batches_created_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX job_batches_created_idx ON pgq.job_batches USING btree (created_at, id);


--
-- Name: job_batches_unfinished_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX job_batches_unfinished_idx ON pgq.job_batches USING btree (created_at) WHERE (finished_at IS NULL);


--
-- Name: job_chains_batch_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX job_chains_batch_idx ON pgq.job_chains USING btree (batch_id) WHERE (batch_id IS NOT NULL);


--
-- Name: job_chains_created_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX job_chains_created_idx ON pgq.job_chains USING btree (created_at, id);


--
-- Name: job_chains_running_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX job_chains_running_idx ON pgq.job_chains USING btree (created_at) WHERE (state = 'running'::text);


--
-- Name: job_ends_batch_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX job_ends_batch_idx ON pgq.job_ends USING btree (batch_id, outcome, ended_at, id) WHERE (batch_id IS NOT NULL);


--
-- Name: job_ends_chain_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX job_ends_chain_idx ON pgq.job_ends USING btree (chain_id) WHERE (chain_id IS NOT NULL);


--
-- Name: job_ends_job_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX job_ends_job_idx ON pgq.job_ends USING btree (job_uuid);


--
-- Name: job_slots_current_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE UNIQUE INDEX job_slots_current_idx ON pgq.job_slots USING btree (state) WHERE (state = 'current'::text);


--
-- Name: jobs_chain_wait_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_chain_wait_idx ON ONLY pgq.jobs USING btree (available_at) WHERE ((chain_id IS NOT NULL) AND (batch_id IS NULL) AND (reserved_at IS NULL));


--
-- Name: jobs_0_available_at_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_0_available_at_idx ON pgq.jobs_0 USING btree (available_at) WHERE ((chain_id IS NOT NULL) AND (batch_id IS NULL) AND (reserved_at IS NULL));


--
-- Name: jobs_batch_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_batch_idx ON ONLY pgq.jobs USING btree (batch_id, available_at, id) WHERE (batch_id IS NOT NULL);


--
-- Name: jobs_0_batch_id_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_0_batch_id_available_at_id_idx ON pgq.jobs_0 USING btree (batch_id, available_at, id) WHERE (batch_id IS NOT NULL);


--
-- Name: jobs_fair_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_fair_idx ON ONLY pgq.jobs USING btree (queue, fair_key, priority DESC, available_at, id) WHERE (fair_key IS NOT NULL);


--
-- Name: jobs_0_queue_fair_key_priority_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_0_queue_fair_key_priority_available_at_id_idx ON pgq.jobs_0 USING btree (queue, fair_key, priority DESC, available_at, id) WHERE (fair_key IS NOT NULL);


--
-- Name: jobs_reserve_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_reserve_idx ON ONLY pgq.jobs USING btree (queue, priority DESC, available_at, id) WHERE (reserved_at IS NULL);


--
-- Name: jobs_0_queue_priority_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_0_queue_priority_available_at_id_idx ON pgq.jobs_0 USING btree (queue, priority DESC, available_at, id) WHERE (reserved_at IS NULL);


--
-- Name: jobs_cancel_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_cancel_idx ON ONLY pgq.jobs USING btree (reserved_by) WHERE (cancel_requested_at IS NOT NULL);


--
-- Name: jobs_0_reserved_by_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_0_reserved_by_idx ON pgq.jobs_0 USING btree (reserved_by) WHERE (cancel_requested_at IS NOT NULL);


--
-- Name: jobs_lease_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_lease_idx ON ONLY pgq.jobs USING btree (reserved_until) WHERE (reserved_until IS NOT NULL);


--
-- Name: jobs_0_reserved_until_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_0_reserved_until_idx ON pgq.jobs_0 USING btree (reserved_until) WHERE (reserved_until IS NOT NULL);


--
-- Name: jobs_txid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_txid_idx ON ONLY pgq.jobs USING btree (txid);


--
-- Name: jobs_0_txid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_0_txid_idx ON pgq.jobs_0 USING btree (txid);


--
-- Name: jobs_waits_on_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_waits_on_idx ON ONLY pgq.jobs USING btree (waits_on, id) WHERE (waits_on IS NOT NULL);


--
-- Name: jobs_0_waits_on_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_0_waits_on_id_idx ON pgq.jobs_0 USING btree (waits_on, id) WHERE (waits_on IS NOT NULL);


--
-- Name: jobs_1_available_at_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_1_available_at_idx ON pgq.jobs_1 USING btree (available_at) WHERE ((chain_id IS NOT NULL) AND (batch_id IS NULL) AND (reserved_at IS NULL));


--
-- Name: jobs_1_batch_id_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_1_batch_id_available_at_id_idx ON pgq.jobs_1 USING btree (batch_id, available_at, id) WHERE (batch_id IS NOT NULL);


--
-- Name: jobs_1_queue_fair_key_priority_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_1_queue_fair_key_priority_available_at_id_idx ON pgq.jobs_1 USING btree (queue, fair_key, priority DESC, available_at, id) WHERE (fair_key IS NOT NULL);


--
-- Name: jobs_1_queue_priority_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_1_queue_priority_available_at_id_idx ON pgq.jobs_1 USING btree (queue, priority DESC, available_at, id) WHERE (reserved_at IS NULL);


--
-- Name: jobs_1_reserved_by_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_1_reserved_by_idx ON pgq.jobs_1 USING btree (reserved_by) WHERE (cancel_requested_at IS NOT NULL);


--
-- Name: jobs_1_reserved_until_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_1_reserved_until_idx ON pgq.jobs_1 USING btree (reserved_until) WHERE (reserved_until IS NOT NULL);


--
-- Name: jobs_1_txid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_1_txid_idx ON pgq.jobs_1 USING btree (txid);


--
-- Name: jobs_1_waits_on_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_1_waits_on_id_idx ON pgq.jobs_1 USING btree (waits_on, id) WHERE (waits_on IS NOT NULL);


--
-- Name: jobs_2_available_at_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_2_available_at_idx ON pgq.jobs_2 USING btree (available_at) WHERE ((chain_id IS NOT NULL) AND (batch_id IS NULL) AND (reserved_at IS NULL));


--
-- Name: jobs_2_batch_id_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_2_batch_id_available_at_id_idx ON pgq.jobs_2 USING btree (batch_id, available_at, id) WHERE (batch_id IS NOT NULL);


--
-- Name: jobs_2_queue_fair_key_priority_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_2_queue_fair_key_priority_available_at_id_idx ON pgq.jobs_2 USING btree (queue, fair_key, priority DESC, available_at, id) WHERE (fair_key IS NOT NULL);


--
-- Name: jobs_2_queue_priority_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_2_queue_priority_available_at_id_idx ON pgq.jobs_2 USING btree (queue, priority DESC, available_at, id) WHERE (reserved_at IS NULL);


--
-- Name: jobs_2_reserved_by_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_2_reserved_by_idx ON pgq.jobs_2 USING btree (reserved_by) WHERE (cancel_requested_at IS NOT NULL);


--
-- Name: jobs_2_reserved_until_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_2_reserved_until_idx ON pgq.jobs_2 USING btree (reserved_until) WHERE (reserved_until IS NOT NULL);


--
-- Name: jobs_2_txid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_2_txid_idx ON pgq.jobs_2 USING btree (txid);


--
-- Name: jobs_2_waits_on_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_2_waits_on_id_idx ON pgq.jobs_2 USING btree (waits_on, id) WHERE (waits_on IS NOT NULL);


--
-- Name: jobs_3_available_at_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_3_available_at_idx ON pgq.jobs_3 USING btree (available_at) WHERE ((chain_id IS NOT NULL) AND (batch_id IS NULL) AND (reserved_at IS NULL));


--
-- Name: jobs_3_batch_id_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_3_batch_id_available_at_id_idx ON pgq.jobs_3 USING btree (batch_id, available_at, id) WHERE (batch_id IS NOT NULL);


--
-- Name: jobs_3_queue_fair_key_priority_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_3_queue_fair_key_priority_available_at_id_idx ON pgq.jobs_3 USING btree (queue, fair_key, priority DESC, available_at, id) WHERE (fair_key IS NOT NULL);


--
-- Name: jobs_3_queue_priority_available_at_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_3_queue_priority_available_at_id_idx ON pgq.jobs_3 USING btree (queue, priority DESC, available_at, id) WHERE (reserved_at IS NULL);


--
-- Name: jobs_3_reserved_by_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_3_reserved_by_idx ON pgq.jobs_3 USING btree (reserved_by) WHERE (cancel_requested_at IS NOT NULL);


--
-- Name: jobs_3_reserved_until_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_3_reserved_until_idx ON pgq.jobs_3 USING btree (reserved_until) WHERE (reserved_until IS NOT NULL);


--
-- Name: jobs_3_txid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_3_txid_idx ON pgq.jobs_3 USING btree (txid);


--
-- Name: jobs_3_waits_on_id_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX jobs_3_waits_on_id_idx ON pgq.jobs_3 USING btree (waits_on, id) WHERE (waits_on IS NOT NULL);


--
-- Name: loads_uuid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_uuid_idx ON ONLY pgq.loads USING btree (first_uuid);


--
-- Name: loads_0_first_uuid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_0_first_uuid_idx ON pgq.loads_0 USING btree (first_uuid);


--
-- Name: loads_queue_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_queue_idx ON ONLY pgq.loads USING btree (queue, priority DESC, available_at, ((first_id + next)));


--
-- Name: loads_0_queue_priority_available_at_expr_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_0_queue_priority_available_at_expr_idx ON pgq.loads_0 USING btree (queue, priority DESC, available_at, ((first_id + next)));


--
-- Name: loads_txid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_txid_idx ON ONLY pgq.loads USING btree (txid);


--
-- Name: loads_0_txid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_0_txid_idx ON pgq.loads_0 USING btree (txid);


--
-- Name: loads_1_first_uuid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_1_first_uuid_idx ON pgq.loads_1 USING btree (first_uuid);


--
-- Name: loads_1_queue_priority_available_at_expr_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_1_queue_priority_available_at_expr_idx ON pgq.loads_1 USING btree (queue, priority DESC, available_at, ((first_id + next)));


--
-- Name: loads_1_txid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_1_txid_idx ON pgq.loads_1 USING btree (txid);


--
-- Name: loads_2_first_uuid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_2_first_uuid_idx ON pgq.loads_2 USING btree (first_uuid);


--
-- Name: loads_2_queue_priority_available_at_expr_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_2_queue_priority_available_at_expr_idx ON pgq.loads_2 USING btree (queue, priority DESC, available_at, ((first_id + next)));


--
-- Name: loads_2_txid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_2_txid_idx ON pgq.loads_2 USING btree (txid);


--
-- Name: loads_3_first_uuid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_3_first_uuid_idx ON pgq.loads_3 USING btree (first_uuid);


--
-- Name: loads_3_queue_priority_available_at_expr_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_3_queue_priority_available_at_expr_idx ON pgq.loads_3 USING btree (queue, priority DESC, available_at, ((first_id + next)));


--
-- Name: loads_3_txid_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX loads_3_txid_idx ON pgq.loads_3 USING btree (txid);


--
-- Name: overlap_gens_current_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE UNIQUE INDEX overlap_gens_current_idx ON pgq.overlap_gens USING btree (state) WHERE (state = 'current'::text);


--
-- Name: schedule_entries_next_run_at_idx; Type: INDEX; Schema: pgq; Owner: -
--

CREATE INDEX schedule_entries_next_run_at_idx ON pgq.schedule_entries USING btree (next_run_at) WHERE (NOT paused);


--
-- Name: jobs_0_available_at_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_chain_wait_idx ATTACH PARTITION pgq.jobs_0_available_at_idx;


--
-- Name: jobs_0_batch_id_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_batch_idx ATTACH PARTITION pgq.jobs_0_batch_id_available_at_id_idx;


--
-- Name: jobs_0_queue_fair_key_priority_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_fair_idx ATTACH PARTITION pgq.jobs_0_queue_fair_key_priority_available_at_id_idx;


--
-- Name: jobs_0_queue_priority_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_reserve_idx ATTACH PARTITION pgq.jobs_0_queue_priority_available_at_id_idx;


--
-- Name: jobs_0_reserved_by_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_cancel_idx ATTACH PARTITION pgq.jobs_0_reserved_by_idx;


--
-- Name: jobs_0_reserved_until_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_lease_idx ATTACH PARTITION pgq.jobs_0_reserved_until_idx;


--
-- Name: jobs_0_txid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_txid_idx ATTACH PARTITION pgq.jobs_0_txid_idx;


--
-- Name: jobs_0_waits_on_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_waits_on_idx ATTACH PARTITION pgq.jobs_0_waits_on_id_idx;


--
-- Name: jobs_1_available_at_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_chain_wait_idx ATTACH PARTITION pgq.jobs_1_available_at_idx;


--
-- Name: jobs_1_batch_id_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_batch_idx ATTACH PARTITION pgq.jobs_1_batch_id_available_at_id_idx;


--
-- Name: jobs_1_queue_fair_key_priority_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_fair_idx ATTACH PARTITION pgq.jobs_1_queue_fair_key_priority_available_at_id_idx;


--
-- Name: jobs_1_queue_priority_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_reserve_idx ATTACH PARTITION pgq.jobs_1_queue_priority_available_at_id_idx;


--
-- Name: jobs_1_reserved_by_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_cancel_idx ATTACH PARTITION pgq.jobs_1_reserved_by_idx;


--
-- Name: jobs_1_reserved_until_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_lease_idx ATTACH PARTITION pgq.jobs_1_reserved_until_idx;


--
-- Name: jobs_1_txid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_txid_idx ATTACH PARTITION pgq.jobs_1_txid_idx;


--
-- Name: jobs_1_waits_on_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_waits_on_idx ATTACH PARTITION pgq.jobs_1_waits_on_id_idx;


--
-- Name: jobs_2_available_at_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_chain_wait_idx ATTACH PARTITION pgq.jobs_2_available_at_idx;


--
-- Name: jobs_2_batch_id_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_batch_idx ATTACH PARTITION pgq.jobs_2_batch_id_available_at_id_idx;


--
-- Name: jobs_2_queue_fair_key_priority_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_fair_idx ATTACH PARTITION pgq.jobs_2_queue_fair_key_priority_available_at_id_idx;


--
-- Name: jobs_2_queue_priority_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_reserve_idx ATTACH PARTITION pgq.jobs_2_queue_priority_available_at_id_idx;


--
-- Name: jobs_2_reserved_by_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_cancel_idx ATTACH PARTITION pgq.jobs_2_reserved_by_idx;


--
-- Name: jobs_2_reserved_until_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_lease_idx ATTACH PARTITION pgq.jobs_2_reserved_until_idx;


--
-- Name: jobs_2_txid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_txid_idx ATTACH PARTITION pgq.jobs_2_txid_idx;


--
-- Name: jobs_2_waits_on_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_waits_on_idx ATTACH PARTITION pgq.jobs_2_waits_on_id_idx;


--
-- Name: jobs_3_available_at_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_chain_wait_idx ATTACH PARTITION pgq.jobs_3_available_at_idx;


--
-- Name: jobs_3_batch_id_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_batch_idx ATTACH PARTITION pgq.jobs_3_batch_id_available_at_id_idx;


--
-- Name: jobs_3_queue_fair_key_priority_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_fair_idx ATTACH PARTITION pgq.jobs_3_queue_fair_key_priority_available_at_id_idx;


--
-- Name: jobs_3_queue_priority_available_at_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_reserve_idx ATTACH PARTITION pgq.jobs_3_queue_priority_available_at_id_idx;


--
-- Name: jobs_3_reserved_by_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_cancel_idx ATTACH PARTITION pgq.jobs_3_reserved_by_idx;


--
-- Name: jobs_3_reserved_until_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_lease_idx ATTACH PARTITION pgq.jobs_3_reserved_until_idx;


--
-- Name: jobs_3_txid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_txid_idx ATTACH PARTITION pgq.jobs_3_txid_idx;


--
-- Name: jobs_3_waits_on_id_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.jobs_waits_on_idx ATTACH PARTITION pgq.jobs_3_waits_on_id_idx;


--
-- Name: loads_0_first_uuid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_uuid_idx ATTACH PARTITION pgq.loads_0_first_uuid_idx;


--
-- Name: loads_0_queue_priority_available_at_expr_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_queue_idx ATTACH PARTITION pgq.loads_0_queue_priority_available_at_expr_idx;


--
-- Name: loads_0_txid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_txid_idx ATTACH PARTITION pgq.loads_0_txid_idx;


--
-- Name: loads_1_first_uuid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_uuid_idx ATTACH PARTITION pgq.loads_1_first_uuid_idx;


--
-- Name: loads_1_queue_priority_available_at_expr_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_queue_idx ATTACH PARTITION pgq.loads_1_queue_priority_available_at_expr_idx;


--
-- Name: loads_1_txid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_txid_idx ATTACH PARTITION pgq.loads_1_txid_idx;


--
-- Name: loads_2_first_uuid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_uuid_idx ATTACH PARTITION pgq.loads_2_first_uuid_idx;


--
-- Name: loads_2_queue_priority_available_at_expr_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_queue_idx ATTACH PARTITION pgq.loads_2_queue_priority_available_at_expr_idx;


--
-- Name: loads_2_txid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_txid_idx ATTACH PARTITION pgq.loads_2_txid_idx;


--
-- Name: loads_3_first_uuid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_uuid_idx ATTACH PARTITION pgq.loads_3_first_uuid_idx;


--
-- Name: loads_3_queue_priority_available_at_expr_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_queue_idx ATTACH PARTITION pgq.loads_3_queue_priority_available_at_expr_idx;


--
-- Name: loads_3_txid_idx; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.loads_txid_idx ATTACH PARTITION pgq.loads_3_txid_idx;


--
-- Name: overlap_locks_0_pkey; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.overlap_locks_pkey ATTACH PARTITION pgq.overlap_locks_0_pkey;


--
-- Name: overlap_locks_1_pkey; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.overlap_locks_pkey ATTACH PARTITION pgq.overlap_locks_1_pkey;


--
-- Name: overlap_locks_2_pkey; Type: INDEX ATTACH; Schema: pgq; Owner: -
--

ALTER INDEX pgq.overlap_locks_pkey ATTACH PARTITION pgq.overlap_locks_2_pkey;


--
-- Name: fair_entries fair_entries_commit; Type: TRIGGER; Schema: pgq; Owner: -
--

CREATE CONSTRAINT TRIGGER fair_entries_commit AFTER INSERT ON pgq.fair_entries DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION pgq._fair_entered();


--
-- Name: job_ends job_ends_advance; Type: TRIGGER; Schema: pgq; Owner: -
--

CREATE TRIGGER job_ends_advance AFTER INSERT ON pgq.job_ends REFERENCING NEW TABLE AS ended FOR EACH STATEMENT EXECUTE FUNCTION pgq._job_ends_advance();

ALTER TABLE pgq.job_ends ENABLE ALWAYS TRIGGER job_ends_advance;


--
-- Name: jobs jobs_stamp_txid; Type: TRIGGER; Schema: pgq; Owner: -
--

CREATE TRIGGER jobs_stamp_txid BEFORE UPDATE ON pgq.jobs FOR EACH ROW WHEN (((new.reserved_at IS NULL) OR ((old.reserved_at IS NOT NULL) AND (new.reserved_until IS DISTINCT FROM old.reserved_until)))) EXECUTE FUNCTION pgq._stamp_txid();


--
-- Name: batch_counts batch_counts_batch_id_fkey; Type: FK CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.batch_counts
    ADD CONSTRAINT batch_counts_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES pgq.job_batches(id) ON DELETE CASCADE;


--
-- Name: callbacks callbacks_batch_id_fkey; Type: FK CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.callbacks
    ADD CONSTRAINT callbacks_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES pgq.job_batches(id) ON DELETE CASCADE;


--
-- Name: callbacks callbacks_chain_id_fkey; Type: FK CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.callbacks
    ADD CONSTRAINT callbacks_chain_id_fkey FOREIGN KEY (chain_id) REFERENCES pgq.job_chains(id) ON DELETE CASCADE;


--
-- Name: job_chains job_chains_batch_id_fkey; Type: FK CONSTRAINT; Schema: pgq; Owner: -
--

ALTER TABLE ONLY pgq.job_chains
    ADD CONSTRAINT job_chains_batch_id_fkey FOREIGN KEY (batch_id) REFERENCES pgq.job_batches(id) ON DELETE CASCADE;


--
-- Name: SCHEMA pgq; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA pgq TO pgq_producer;
GRANT USAGE ON SCHEMA pgq TO pgq_worker;
GRANT USAGE ON SCHEMA pgq TO pgq_reader;
GRANT USAGE ON SCHEMA pgq TO pgq_admin;


--
-- Name: FUNCTION _admission(p_batch pgq.reserve_batch, p_now timestamp with time zone, p_worker text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._admission(p_batch pgq.reserve_batch, p_now timestamp with time zone, p_worker text) FROM PUBLIC;


--
-- Name: FUNCTION _admit(p_jobs text[], p_payloads jsonb[], p_middleware jsonb[], p_keys jsonb[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._admit(p_jobs text[], p_payloads jsonb[], p_middleware jsonb[], p_keys jsonb[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _admit_circuit(p_ord integer[], p_name text[], p_key text[], p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._admit_circuit(p_ord integer[], p_name text[], p_key text[], p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _admit_concurrency(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone, OUT turned pgq.admission[], OUT won_ord integer[], OUT won_key text[], OUT won_exp integer[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._admit_concurrency(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone, OUT turned pgq.admission[], OUT won_ord integer[], OUT won_key text[], OUT won_exp integer[]) FROM PUBLIC;


--
-- Name: FUNCTION _admit_concurrency_keys(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], OUT ords integer[], OUT keys text[], OUT lims integer[], OUT k_key text[], OUT k_lim integer[], OUT k_places integer[], OUT busy pgq.admission[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._admit_concurrency_keys(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], OUT ords integer[], OUT keys text[], OUT lims integer[], OUT k_key text[], OUT k_lim integer[], OUT k_places integer[], OUT busy pgq.admission[]) FROM PUBLIC;


--
-- Name: FUNCTION _admit_missing_keys(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_jobs text[], p_payloads jsonb[], OUT keys text[], OUT failed pgq.admission[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._admit_missing_keys(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_jobs text[], p_payloads jsonb[], OUT keys text[], OUT failed pgq.admission[]) FROM PUBLIC;


--
-- Name: FUNCTION _admit_overlap(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone, OUT turned pgq.admission[], OUT won_ord integer[], OUT won_key text[], OUT won_exp integer[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._admit_overlap(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_uuids uuid[], p_tokens uuid[], p_worker text, p_now timestamp with time zone, OUT turned pgq.admission[], OUT won_ord integer[], OUT won_key text[], OUT won_exp integer[]) FROM PUBLIC;


--
-- Name: FUNCTION _admit_rate(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._admit_rate(p_ord integer[], p_name text[], p_cfg jsonb[], p_key text[], p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _admit_unbounded(p_middleware jsonb[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._admit_unbounded(p_middleware jsonb[]) FROM PUBLIC;


--
-- Name: FUNCTION _as_reserved(p_jobs pgq.jobs[], p_places integer[], p_tokens uuid[], p_now timestamp with time zone, p_lease integer, p_worker text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._as_reserved(p_jobs pgq.jobs[], p_places integer[], p_tokens uuid[], p_now timestamp with time zone, p_lease integer, p_worker text) FROM PUBLIC;


--
-- Name: FUNCTION _batch_add(p_batch pgq.job_batches, p_entries jsonb, p_traceparent text, p_tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._batch_add(p_batch pgq.job_batches, p_entries jsonb, p_traceparent text, p_tracestate text) FROM PUBLIC;


--
-- Name: FUNCTION _batch_callback(p_batch pgq.job_batches, p_kind text, p_extra jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._batch_callback(p_batch pgq.job_batches, p_kind text, p_extra jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _batch_cancel_waiting(p_batch uuid, p_reason text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._batch_cancel_waiting(p_batch uuid, p_reason text) FROM PUBLIC;


--
-- Name: FUNCTION _batch_members_ended(p_batch uuid, p_members uuid[], p_outcome text, p_job uuid, p_exception text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._batch_members_ended(p_batch uuid, p_members uuid[], p_outcome text, p_job uuid, p_exception text) FROM PUBLIC;


--
-- Name: FUNCTION _batch_settle(p_batch uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._batch_settle(p_batch uuid) FROM PUBLIC;


--
-- Name: FUNCTION _batch_shard(p_member uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._batch_shard(p_member uuid) FROM PUBLIC;


--
-- Name: FUNCTION _batches_prune(p_older_than interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._batches_prune(p_older_than interval) FROM PUBLIC;


--
-- Name: FUNCTION _bury(p_job pgq.jobs, p_exception text, p_now timestamp with time zone, p_detail text, p_hint text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._bury(p_job pgq.jobs, p_exception text, p_now timestamp with time zone, p_detail text, p_hint text) FROM PUBLIC;


--
-- Name: TABLE attempts; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.attempts TO pgq_reader;


--
-- Name: FUNCTION _cancel(p_job pgq.jobs, p_now timestamp with time zone, p_started boolean); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._cancel(p_job pgq.jobs, p_now timestamp with time zone, p_started boolean) FROM PUBLIC;


--
-- Name: FUNCTION _ceiling(p_name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._ceiling(p_name text) FROM PUBLIC;


--
-- Name: FUNCTION _ceiling_int(p_name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._ceiling_int(p_name text) FROM PUBLIC;


--
-- Name: FUNCTION _ceiling_interval(p_name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._ceiling_interval(p_name text) FROM PUBLIC;


--
-- Name: FUNCTION _chain_dispatch_step(p_chain pgq.job_chains, p_step integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._chain_dispatch_step(p_chain pgq.job_chains, p_step integer) FROM PUBLIC;


--
-- Name: FUNCTION _chain_start(p_id uuid, p_steps jsonb, p_on_failure text, p_queue text, p_batch uuid, p_traceparent text, p_tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._chain_start(p_id uuid, p_steps jsonb, p_on_failure text, p_queue text, p_batch uuid, p_traceparent text, p_tracestate text) FROM PUBLIC;


--
-- Name: FUNCTION _chain_stop(p_chain pgq.job_chains, p_state text, p_job uuid, p_exception text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._chain_stop(p_chain pgq.job_chains, p_state text, p_job uuid, p_exception text) FROM PUBLIC;


--
-- Name: FUNCTION _check_ceilings(p_tries integer, p_backoff integer[], p_timeout integer, p_retry_for interval, p_max_tries integer, p_max_retry_for interval, p_min_backoff integer, p_max_timeout integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_ceilings(p_tries integer, p_backoff integer[], p_timeout integer, p_retry_for interval, p_max_tries integer, p_max_retry_for interval, p_min_backoff integer, p_max_timeout integer) FROM PUBLIC;


--
-- Name: FUNCTION _check_classes(worker_timeout integer, worker_tries integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_classes(worker_timeout integer, worker_tries integer) FROM PUBLIC;


--
-- Name: FUNCTION _check_concurrency(p_cfg jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_concurrency(p_cfg jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _check_dispatch_limits(p_timeout integer, p_priority integer, p_payloads jsonb[], p_delay interval, p_retry_until timestamp with time zone, p_retry_for interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_dispatch_limits(p_timeout integer, p_priority integer, p_payloads jsonb[], p_delay interval, p_retry_until timestamp with time zone, p_retry_for interval) FROM PUBLIC;


--
-- Name: FUNCTION _check_entries(p_what text, p_entries jsonb, p_chains boolean); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_entries(p_what text, p_entries jsonb, p_chains boolean) FROM PUBLIC;


--
-- Name: FUNCTION _check_live(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_live() FROM PUBLIC;


--
-- Name: FUNCTION _check_middleware(p_middleware jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_middleware(p_middleware jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _check_middleware_keys(p_job text, p_middleware jsonb, p_payloads jsonb[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_middleware_keys(p_job text, p_middleware jsonb, p_payloads jsonb[]) FROM PUBLIC;


--
-- Name: FUNCTION _check_name(p_kind text, p_name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_name(p_kind text, p_name text) FROM PUBLIC;


--
-- Name: FUNCTION _check_regex(p_when jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_regex(p_when jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _check_settings(p_tries integer, p_backoff integer[], p_max_exceptions integer, p_timeout integer, p_priority integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_settings(p_tries integer, p_backoff integer[], p_max_exceptions integer, p_timeout integer, p_priority integer) FROM PUBLIC;


--
-- Name: FUNCTION _check_unique_debounce(p_unique boolean, p_debounce boolean, p_unique_for interval, p_unique_until text, p_debounce_for interval, p_debounce_max_wait interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._check_unique_debounce(p_unique boolean, p_debounce boolean, p_unique_for interval, p_unique_until text, p_debounce_for interval, p_debounce_max_wait interval) FROM PUBLIC;


--
-- Name: FUNCTION _circuit_key(p_job text, p_payload jsonb, p_cfg jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._circuit_key(p_job text, p_payload jsonb, p_cfg jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _clear_circuits(p_jobs text[], p_breakers jsonb[], p_payloads jsonb[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._clear_circuits(p_jobs text[], p_breakers jsonb[], p_payloads jsonb[]) FROM PUBLIC;


--
-- Name: FUNCTION _concurrency_lock_ids(p_kind text, p_names text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._concurrency_lock_ids(p_kind text, p_names text[]) FROM PUBLIC;


--
-- Name: FUNCTION _concurrency_room(p_lim integer[], p_places integer[], p_at integer[], p_names text[], p_ids bigint[], p_live boolean[], p_leased text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._concurrency_room(p_lim integer[], p_places integer[], p_at integer[], p_names text[], p_ids bigint[], p_live boolean[], p_leased text[]) FROM PUBLIC;


--
-- Name: FUNCTION _concurrency_waiting(p_keys text[], p_lims integer[], p_places integer[], p_uuids uuid[], p_wkeys text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._concurrency_waiting(p_keys text[], p_lims integer[], p_places integer[], p_uuids uuid[], p_wkeys text[]) FROM PUBLIC;


--
-- Name: FUNCTION _concurrency_waits(p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._concurrency_waits(p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _cron_every_problem(p_text text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._cron_every_problem(p_text text) FROM PUBLIC;


--
-- Name: FUNCTION _cron_item(p_field integer, p_item text, OUT problem text, OUT bits bigint, OUT star boolean); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._cron_item(p_field integer, p_item text, OUT problem text, OUT bits bigint, OUT star boolean) FROM PUBLIC;


--
-- Name: FUNCTION _cron_number(p_text text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._cron_number(p_text text) FROM PUBLIC;


--
-- Name: FUNCTION _cron_problem(p_expr text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._cron_problem(p_expr text) FROM PUBLIC;


--
-- Name: FUNCTION _default_retry_after(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._default_retry_after() FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._default_retry_after() TO pgq_worker;
GRANT ALL ON FUNCTION pgq._default_retry_after() TO pgq_reader;
GRANT ALL ON FUNCTION pgq._default_retry_after() TO pgq_admin;


--
-- Name: TABLE job_classes; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.job_classes TO pgq_reader;


--
-- Name: FUNCTION _define_job(name text, queue text, handler regprocedure, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text, isolated boolean); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._define_job(name text, queue text, handler regprocedure, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text, isolated boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._define_job(name text, queue text, handler regprocedure, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text, isolated boolean) TO pgq_admin;


--
-- Name: FUNCTION _describe_class(p_class pgq.job_classes, p_search_path text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._describe_class(p_class pgq.job_classes, p_search_path text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._describe_class(p_class pgq.job_classes, p_search_path text) TO pgq_admin;


--
-- Name: FUNCTION _dispatch(job text, payloads jsonb[], queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, p_batch_id uuid, p_chain_id uuid, p_chain_step integer, p_ceilings boolean, traceparent text, tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._dispatch(job text, payloads jsonb[], queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, p_batch_id uuid, p_chain_id uuid, p_chain_step integer, p_ceilings boolean, traceparent text, tracestate text) FROM PUBLIC;


--
-- Name: FUNCTION _dispatch_callback(p_kind text, p_job text, p_payload jsonb, p_queue text, p_batch uuid, p_chain uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._dispatch_callback(p_kind text, p_job text, p_payload jsonb, p_queue text, p_batch uuid, p_chain uuid) FROM PUBLIC;


--
-- Name: FUNCTION _dispatch_ceilings(p_job text, p_class pgq.job_classes, p_tries integer, p_backoff integer[], p_retry_until timestamp with time zone, p_max_exceptions integer, p_timeout integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._dispatch_ceilings(p_job text, p_class pgq.job_classes, p_tries integer, p_backoff integer[], p_retry_until timestamp with time zone, p_max_exceptions integer, p_timeout integer) FROM PUBLIC;


--
-- Name: FUNCTION _dispatch_entries(p_entries jsonb, p_queue text, p_batch uuid, p_chain uuid, p_step integer, p_ceilings boolean, p_traceparent text, p_tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._dispatch_entries(p_entries jsonb, p_queue text, p_batch uuid, p_chain uuid, p_step integer, p_ceilings boolean, p_traceparent text, p_tracestate text) FROM PUBLIC;


--
-- Name: FUNCTION _dispatch_keyed(p_job pgq.jobs, p_class pgq.job_classes, p_payloads jsonb[], p_keys jsonb[], p_unique boolean, p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_delay interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._dispatch_keyed(p_job pgq.jobs, p_class pgq.job_classes, p_payloads jsonb[], p_keys jsonb[], p_unique boolean, p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_delay interval) FROM PUBLIC;


--
-- Name: FUNCTION _dispatch_scheduled(p_entry pgq.schedule_entries, p_tick timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._dispatch_scheduled(p_entry pgq.schedule_entries, p_tick timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _dispatch_staged_batch(p_job text, p_payloads jsonb[], p_queue text, p_delay interval, p_tries integer, p_backoff integer[], p_retry_until timestamp with time zone, p_max_exceptions integer, p_timeout integer, p_fail_on_timeout boolean, p_priority integer, p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_middleware jsonb, p_retry_for interval, p_traceparent text, p_tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._dispatch_staged_batch(p_job text, p_payloads jsonb[], p_queue text, p_delay interval, p_tries integer, p_backoff integer[], p_retry_until timestamp with time zone, p_max_exceptions integer, p_timeout integer, p_fail_on_timeout boolean, p_priority integer, p_unique_key text, p_unique_for interval, p_unique_until text, p_debounce_key text, p_debounce_for interval, p_debounce_max_wait interval, p_middleware jsonb, p_retry_for interval, p_traceparent text, p_tracestate text) FROM PUBLIC;


--
-- Name: FUNCTION _dropped_message(p_chain pgq.job_chains, p_step integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._dropped_message(p_chain pgq.job_chains, p_step integer) FROM PUBLIC;


--
-- Name: FUNCTION _edit_distance(a text, b text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._edit_distance(a text, b text) FROM PUBLIC;


--
-- Name: FUNCTION _exhausted_message(p_job pgq.jobs, p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._exhausted_message(p_job pgq.jobs, p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _fail_caught(p_job pgq.jobs, p_breaker jsonb, p_text text, p_now timestamp with time zone, p_detail text, p_hint text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fail_caught(p_job pgq.jobs, p_breaker jsonb, p_text text, p_now timestamp with time zone, p_detail text, p_hint text) FROM PUBLIC;


--
-- Name: FUNCTION _fair_back(p_cursor jsonb, p_back jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_back(p_cursor jsonb, p_back jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _fair_by(p_queue text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_by(p_queue text) FROM PUBLIC;


--
-- Name: FUNCTION _fair_enter(p_queue text, p_keys text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_enter(p_queue text, p_keys text[]) FROM PUBLIC;


--
-- Name: FUNCTION _fair_entered(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_entered() FROM PUBLIC;


--
-- Name: FUNCTION _fair_floor(p_queue text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_floor(p_queue text) FROM PUBLIC;


--
-- Name: FUNCTION _fair_keep(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_keep() FROM PUBLIC;


--
-- Name: FUNCTION _fair_lock(p_queue text, p_key text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_lock(p_queue text, p_key text) FROM PUBLIC;


--
-- Name: FUNCTION _fair_next_ready(p_queue text, p_key text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_next_ready(p_queue text, p_key text) FROM PUBLIC;


--
-- Name: FUNCTION _fair_prune(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_prune() FROM PUBLIC;


--
-- Name: FUNCTION _fair_rejoin(p_queue text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_rejoin(p_queue text) FROM PUBLIC;


--
-- Name: FUNCTION _fair_rekey(p_queue text, p_fair_by text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_rekey(p_queue text, p_fair_by text) FROM PUBLIC;


--
-- Name: FUNCTION _fair_round(p_slots smallint[], p_queue text, p_prio integer, p_keys text[], p_quotas integer[], p_want integer, p_now timestamp with time zone, p_skip bigint[], OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT ords integer[], OUT nth integer[], OUT last integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_round(p_slots smallint[], p_queue text, p_prio integer, p_keys text[], p_quotas integer[], p_want integer, p_now timestamp with time zone, p_skip bigint[], OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT ords integer[], OUT nth integer[], OUT last integer) FROM PUBLIC;


--
-- Name: FUNCTION _fair_rows(p_slots smallint[], p_queue text, p_prio integer, p_want integer, p_now timestamp with time zone, p_skip bigint[], OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT keys text[], OUT idle text[], OUT tags double precision[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_rows(p_slots smallint[], p_queue text, p_prio integer, p_want integer, p_now timestamp with time zone, p_skip bigint[], OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT plain boolean[], OUT keys text[], OUT idle text[], OUT tags double precision[]) FROM PUBLIC;


--
-- Name: FUNCTION _fair_settle(p_pending jsonb, p_back jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_settle(p_pending jsonb, p_back jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _fair_taken(p_queue text, p_keys text[], p_idle text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_taken(p_queue text, p_keys text[], p_idle text[]) FROM PUBLIC;


--
-- Name: FUNCTION _fair_turns_now(p_queue text, p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._fair_turns_now(p_queue text, p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _give_back(p_job pgq.jobs, p_reason text, p_now timestamp with time zone, p_limited boolean); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._give_back(p_job pgq.jobs, p_reason text, p_now timestamp with time zone, p_limited boolean) FROM PUBLIC;


--
-- Name: FUNCTION _handing_over(p_job pgq.jobs); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._handing_over(p_job pgq.jobs) FROM PUBLIC;


--
-- Name: FUNCTION _handler_path_hint(p_proc regprocedure, p_pinned text, p_message text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._handler_path_hint(p_proc regprocedure, p_pinned text, p_message text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._handler_path_hint(p_proc regprocedure, p_pinned text, p_message text) TO pgq_worker;


--
-- Name: FUNCTION _handler_proc(p_handler text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._handler_proc(p_handler text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._handler_proc(p_handler text) TO pgq_admin;


--
-- Name: FUNCTION _held(p_call text, p_uuid uuid, p_token uuid, p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._held(p_call text, p_uuid uuid, p_token uuid, p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _held_job(p_uuid uuid, p_token uuid, OUT id bigint, OUT job text, OUT handler regprocedure, OUT payload jsonb, OUT reserved_by text, OUT attempts integer, OUT overlap_keys text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._held_job(p_uuid uuid, p_token uuid, OUT id bigint, OUT job text, OUT handler regprocedure, OUT payload jsonb, OUT reserved_by text, OUT attempts integer, OUT overlap_keys text[]) FROM PUBLIC;


--
-- Name: FUNCTION _job_ends_advance(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._job_ends_advance() FROM PUBLIC;


--
-- Name: FUNCTION _job_for_update(p_uuid uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._job_for_update(p_uuid uuid) FROM PUBLIC;


--
-- Name: FUNCTION _jobs_ended(p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[], p_exception text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._jobs_ended(p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[], p_exception text) FROM PUBLIC;


--
-- Name: FUNCTION _jobs_retried(p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._jobs_retried(p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[]) FROM PUBLIC;


--
-- Name: FUNCTION _json_interval(p_value jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._json_interval(p_value jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _key(p_job text, p_explicit text, p_by text[], p_payload jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._key(p_job text, p_explicit text, p_by text[], p_payload jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _key_or_null(p_job text, p_explicit text, p_by text[], p_payload jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._key_or_null(p_job text, p_explicit text, p_by text[], p_payload jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _keys_or_null(p_jobs text[], p_explicits text[], p_bys jsonb[], p_payloads jsonb[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._keys_or_null(p_jobs text[], p_explicits text[], p_bys jsonb[], p_payloads jsonb[]) FROM PUBLIC;


--
-- Name: FUNCTION _lease_base(p_call uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._lease_base(p_call uuid) FROM PUBLIC;


--
-- Name: FUNCTION _lease_call_range(p_call uuid, OUT lo uuid, OUT hi uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._lease_call_range(p_call uuid, OUT lo uuid, OUT hi uuid) FROM PUBLIC;


--
-- Name: FUNCTION _lease_tokens(p_base text, p_slots smallint[], p_ids bigint[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._lease_tokens(p_base text, p_slots smallint[], p_ids bigint[]) FROM PUBLIC;


--
-- Name: TABLE workers; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.workers TO pgq_reader;


--
-- Name: FUNCTION _live_workers(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._live_workers() FROM PUBLIC;


--
-- Name: FUNCTION _load_chunk(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._load_chunk() FROM PUBLIC;


--
-- Name: FUNCTION _load_chunk_of(p_uuid uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._load_chunk_of(p_uuid uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._load_chunk_of(p_uuid uuid) TO pgq_reader;


--
-- Name: FUNCTION _load_dispatch(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._load_dispatch(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[]) FROM PUBLIC;


--
-- Name: FUNCTION _load_min(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._load_min() FROM PUBLIC;


--
-- Name: FUNCTION _load_offset(p_first uuid, p_uuid uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._load_offset(p_first uuid, p_uuid uuid) FROM PUBLIC;


--
-- Name: FUNCTION _load_payloads(p_payloads jsonb[], p_from integer, p_to integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._load_payloads(p_payloads jsonb[], p_from integer, p_to integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._load_payloads(p_payloads jsonb[], p_from integer, p_to integer) TO pgq_reader;


--
-- Name: FUNCTION _load_rows(p_load pgq.loads, p_from integer, p_count integer, p_slot smallint, p_now timestamp with time zone, p_lease integer, p_worker text, p_tokens uuid[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._load_rows(p_load pgq.loads, p_from integer, p_count integer, p_slot smallint, p_now timestamp with time zone, p_lease integer, p_worker text, p_tokens uuid[]) FROM PUBLIC;


--
-- Name: FUNCTION _load_split(p_uuid uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._load_split(p_uuid uuid) FROM PUBLIC;


--
-- Name: FUNCTION _load_unpacked(p_load pgq.loads, p_count integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._load_unpacked(p_load pgq.loads, p_count integer) FROM PUBLIC;


--
-- Name: FUNCTION _load_uuid(p_first uuid, p_offset integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._load_uuid(p_first uuid, p_offset integer) FROM PUBLIC;


--
-- Name: FUNCTION _lock_id(p_name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._lock_id(p_name text) FROM PUBLIC;


--
-- Name: FUNCTION _lock_ids(p_names text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._lock_ids(p_names text[]) FROM PUBLIC;


--
-- Name: FUNCTION _lock_space(p_space text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._lock_space(p_space text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._lock_space(p_space text) TO pgq_reader;


--
-- Name: FUNCTION _max_give_backs(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._max_give_backs() FROM PUBLIC;


--
-- Name: FUNCTION _max_key_bytes(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._max_key_bytes() FROM PUBLIC;


--
-- Name: FUNCTION _max_timeout(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._max_timeout() FROM PUBLIC;


--
-- Name: FUNCTION _may_add_to_batch(p_batch pgq.job_batches, p_job uuid, p_token uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._may_add_to_batch(p_batch pgq.job_batches, p_job uuid, p_token uuid) FROM PUBLIC;


--
-- Name: FUNCTION _may_exceed_ceilings(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._may_exceed_ceilings() FROM PUBLIC;


--
-- Name: FUNCTION _middleware(p_middleware jsonb, p_name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._middleware(p_middleware jsonb, p_name text) FROM PUBLIC;


--
-- Name: FUNCTION _middleware_bounds(OUT entries integer, OUT by_fields integer, OUT key_bytes integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._middleware_bounds(OUT entries integer, OUT by_fields integer, OUT key_bytes integer) FROM PUBLIC;


--
-- Name: FUNCTION _middleware_key(p_job text, p_name text, p_cfg jsonb, p_payload jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._middleware_key(p_job text, p_name text, p_cfg jsonb, p_payload jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _middleware_keys(p_jobs text[], p_names text[], p_cfgs jsonb[], p_payloads jsonb[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._middleware_keys(p_jobs text[], p_names text[], p_cfgs jsonb[], p_payloads jsonb[]) FROM PUBLIC;


--
-- Name: FUNCTION _move_waiting(p_from smallint, p_to smallint, p_max integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._move_waiting(p_from smallint, p_to smallint, p_max integer) FROM PUBLIC;


--
-- Name: FUNCTION _notify(queue text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._notify(queue text) FROM PUBLIC;


--
-- Name: FUNCTION _overlap_gen(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._overlap_gen() FROM PUBLIC;


--
-- Name: FUNCTION _overlap_key_lock(p_lock_id bigint); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._overlap_key_lock(p_lock_id bigint) FROM PUBLIC;


--
-- Name: FUNCTION _overlap_lock_id(p_key text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._overlap_lock_id(p_key text) FROM PUBLIC;


--
-- Name: FUNCTION _overlap_lock_ids(p_keys text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._overlap_lock_ids(p_keys text[]) FROM PUBLIC;


--
-- Name: FUNCTION _overlap_ttl(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._overlap_ttl() FROM PUBLIC;


--
-- Name: FUNCTION _overlap_until(p_since timestamp with time zone, p_now timestamp with time zone, p_expire_after integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._overlap_until(p_since timestamp with time zone, p_now timestamp with time zone, p_expire_after integer) FROM PUBLIC;


--
-- Name: FUNCTION _pick(p_cursor jsonb, p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pick(p_cursor jsonb, p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[]) FROM PUBLIC;


--
-- Name: FUNCTION _pick_begin(p_queues text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pick_begin(p_queues text[]) FROM PUBLIC;


--
-- Name: FUNCTION _pick_done(p_cursor jsonb, p_queue text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pick_done(p_cursor jsonb, p_queue text) FROM PUBLIC;


--
-- Name: FUNCTION _pick_end(p_cursor jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pick_end(p_cursor jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _pick_fair(p_cursor jsonb, p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pick_fair(p_cursor jsonb, p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[]) FROM PUBLIC;


--
-- Name: FUNCTION _pick_lower(p_cursor jsonb, p_queue text, p_priority integer, p_at timestamp with time zone, p_id bigint); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pick_lower(p_cursor jsonb, p_queue text, p_priority integer, p_at timestamp with time zone, p_id bigint) FROM PUBLIC;


--
-- Name: FUNCTION _pick_rows(p_marks jsonb, p_slots smallint[], p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[], p_load pgq.loads, OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT before boolean[], OUT plain boolean[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pick_rows(p_marks jsonb, p_slots smallint[], p_queue text, p_want integer, p_now timestamp with time zone, p_skip bigint[], p_load pgq.loads, OUT tids tid[], OUT slots smallint[], OUT ids bigint[], OUT before boolean[], OUT plain boolean[]) FROM PUBLIC;


--
-- Name: FUNCTION _pick_slots(p_cursor jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pick_slots(p_cursor jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _pick_swept(p_cursor jsonb, p_queues text[], p_low timestamp with time zone, p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pick_swept(p_cursor jsonb, p_queues text[], p_low timestamp with time zone, p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _pickup_checks(p_pick pgq.picked, p_base text, p_now timestamp with time zone, p_lease integer, p_worker text, p_default_tries integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pickup_checks(p_pick pgq.picked, p_base text, p_now timestamp with time zone, p_lease integer, p_worker text, p_default_tries integer) FROM PUBLIC;


--
-- Name: FUNCTION _pickup_rows(p_pick pgq.picked, p_now timestamp with time zone, p_default_tries integer, OUT jobs pgq.jobs[], OUT ords integer[], OUT checked boolean[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._pickup_rows(p_pick pgq.picked, p_now timestamp with time zone, p_default_tries integer, OUT jobs pgq.jobs[], OUT ords integer[], OUT checked boolean[]) FROM PUBLIC;


--
-- Name: FUNCTION _proc_search_path(p_proc regprocedure); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._proc_search_path(p_proc regprocedure) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._proc_search_path(p_proc regprocedure) TO pgq_worker;
GRANT ALL ON FUNCTION pgq._proc_search_path(p_proc regprocedure) TO pgq_admin;


--
-- Name: FUNCTION _record(p_job pgq.jobs, p_outcome text, p_now timestamp with time zone, p_exception text, p_delay integer, p_final boolean, p_started boolean, p_detail text, p_hint text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._record(p_job pgq.jobs, p_outcome text, p_now timestamp with time zone, p_exception text, p_delay integer, p_final boolean, p_started boolean, p_detail text, p_hint text) FROM PUBLIC;


--
-- Name: FUNCTION _record_action(p_action text, p_job uuid, p_queue text, p_detail text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._record_action(p_action text, p_job uuid, p_queue text, p_detail text) FROM PUBLIC;


--
-- Name: FUNCTION _record_ends(p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[], p_exception text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._record_ends(p_outcome text, p_uuids uuid[], p_batches uuid[], p_chains uuid[], p_steps integer[], p_exception text) FROM PUBLIC;


--
-- Name: FUNCTION _refuse_named_limit(p_kind text, p_name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._refuse_named_limit(p_kind text, p_name text) FROM PUBLIC;


--
-- Name: FUNCTION _reject(p_call text, p_uuids uuid[], p_tokens uuid[], p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._reject(p_call text, p_uuids uuid[], p_tokens uuid[], p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _release_overlap(p_uuids uuid[], p_keys text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._release_overlap(p_uuids uuid[], p_keys text[]) FROM PUBLIC;


--
-- Name: FUNCTION _release_owned(p_unique text[], p_owners uuid[], p_debounce text[], p_tokens uuid[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._release_owned(p_unique text[], p_owners uuid[], p_debounce text[], p_tokens uuid[]) FROM PUBLIC;


--
-- Name: FUNCTION _reported(p_job pgq.jobs, p_pickup pgq.pickup, p_note text, p_middleware text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._reported(p_job pgq.jobs, p_pickup pgq.pickup, p_note text, p_middleware text) FROM PUBLIC;


--
-- Name: FUNCTION _retry_failed_ids(p_ids bigint[], p_detail text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._retry_failed_ids(p_ids bigint[], p_detail text) FROM PUBLIC;


--
-- Name: FUNCTION _retry_window(p_tries integer, p_backoff integer[], p_timeout integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._retry_window(p_tries integer, p_backoff integer[], p_timeout integer) FROM PUBLIC;


--
-- Name: FUNCTION _rotate_overlap_gens(p_bytes bigint, p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._rotate_overlap_gens(p_bytes bigint, p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _schedule_grace(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._schedule_grace() FROM PUBLIC;


--
-- Name: FUNCTION _schedule_max_catch_up(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._schedule_max_catch_up() FROM PUBLIC;


--
-- Name: FUNCTION _schedule_tick_key(p_schedule text, p_tick timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._schedule_tick_key(p_schedule text, p_tick timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _schedule_unique_for(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._schedule_unique_for() FROM PUBLIC;


--
-- Name: FUNCTION _sees_payloads(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._sees_payloads() FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._sees_payloads() TO pgq_reader;


--
-- Name: FUNCTION _shrink_places(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._shrink_places() FROM PUBLIC;


--
-- Name: FUNCTION _slot(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._slot() FROM PUBLIC;


--
-- Name: FUNCTION _slot_move_max(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._slot_move_max() FROM PUBLIC;


--
-- Name: FUNCTION _slot_written_since(p_slot smallint, p_snap pg_snapshot); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._slot_written_since(p_slot smallint, p_snap pg_snapshot) FROM PUBLIC;


--
-- Name: FUNCTION _sql_job(p_uuid uuid, p_token uuid, p_grouped boolean, OUT handler regprocedure, OUT payload jsonb, OUT worker text, OUT attempt integer, OUT search_path text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._sql_job(p_uuid uuid, p_token uuid, p_grouped boolean, OUT handler regprocedure, OUT payload jsonb, OUT worker text, OUT attempt integer, OUT search_path text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._sql_job(p_uuid uuid, p_token uuid, p_grouped boolean, OUT handler regprocedure, OUT payload jsonb, OUT worker text, OUT attempt integer, OUT search_path text) TO pgq_worker;


--
-- Name: FUNCTION _staged_batch(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._staged_batch() FROM PUBLIC;


--
-- Name: FUNCTION _staged_payloads_checked(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._staged_payloads_checked() FROM PUBLIC;


--
-- Name: FUNCTION _stamp_txid(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._stamp_txid() FROM PUBLIC;


--
-- Name: FUNCTION _still_waiting(p_slot smallint, p_tid tid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._still_waiting(p_slot smallint, p_tid tid) FROM PUBLIC;


--
-- Name: FUNCTION _store(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[], p_keys jsonb[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._store(p_job pgq.jobs, p_payloads jsonb[], p_uuids uuid[], p_keys jsonb[]) FROM PUBLIC;


--
-- Name: FUNCTION _store_bulk(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._store_bulk() FROM PUBLIC;


--
-- Name: FUNCTION _sweep_from(p_cursor jsonb, p_queues text[], p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._sweep_from(p_cursor jsonb, p_queues text[], p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _sweep_leases(p_cursor jsonb, p_queues text[], p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._sweep_leases(p_cursor jsonb, p_queues text[], p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _take_chunk(p_chunk pgq.loads, p_want integer, p_now timestamp with time zone, p_lease integer, p_worker text, p_base text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._take_chunk(p_chunk pgq.loads, p_want integer, p_now timestamp with time zone, p_lease integer, p_worker text, p_base text) FROM PUBLIC;


--
-- Name: FUNCTION _take_debounce(p_key text, p_token uuid, p_job uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._take_debounce(p_key text, p_token uuid, p_job uuid) FROM PUBLIC;


--
-- Name: FUNCTION _take_rows(p_slot smallint, p_tids tid[], p_tokens uuid[], p_held text[], p_expire integer[], p_now timestamp with time zone, p_lease integer, p_worker text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._take_rows(p_slot smallint, p_tids tid[], p_tokens uuid[], p_held text[], p_expire integer[], p_now timestamp with time zone, p_lease integer, p_worker text) FROM PUBLIC;


--
-- Name: FUNCTION _take_unique(p_key text, p_owner uuid, p_job uuid, p_for interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._take_unique(p_key text, p_owner uuid, p_job uuid, p_for interval) FROM PUBLIC;


--
-- Name: FUNCTION _texts(p jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._texts(p jsonb) FROM PUBLIC;


--
-- Name: FUNCTION _timezone_problem(p_tz text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._timezone_problem(p_tz text) FROM PUBLIC;


--
-- Name: FUNCTION _token_id_mask(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._token_id_mask() FROM PUBLIC;


--
-- Name: FUNCTION _token_slot(p_token uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._token_slot(p_token uuid) FROM PUBLIC;


--
-- Name: FUNCTION _token_slots(p_tokens uuid[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._token_slots(p_tokens uuid[]) FROM PUBLIC;


--
-- Name: FUNCTION _trace_context(p_traceparent text, p_tracestate text, OUT traceparent text, OUT tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._trace_context(p_traceparent text, p_tracestate text, OUT traceparent text, OUT tracestate text) FROM PUBLIC;


--
-- Name: FUNCTION _truncate_overlap_gen(p_gen smallint, p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._truncate_overlap_gen(p_gen smallint, p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _truncate_slot(p_slot smallint, p_snap pg_snapshot); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._truncate_slot(p_slot smallint, p_snap pg_snapshot) FROM PUBLIC;


--
-- Name: FUNCTION _turn_away(p_job pgq.jobs, p_middleware text, p_note text, p_delay integer, p_drop boolean, p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._turn_away(p_job pgq.jobs, p_middleware text, p_note text, p_delay integer, p_drop boolean, p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _turn_away_slack(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._turn_away_slack() FROM PUBLIC;


--
-- Name: FUNCTION _uuid7s(p_count integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._uuid7s(p_count integer) FROM PUBLIC;


--
-- Name: FUNCTION _wait_for_places(p_slot smallint, p_adm pgq.admission[], p_uuids uuid[], p_now timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._wait_for_places(p_slot smallint, p_adm pgq.admission[], p_uuids uuid[], p_now timestamp with time zone) FROM PUBLIC;


--
-- Name: FUNCTION _wake_waiting(p_keys text[], p_counts bigint[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._wake_waiting(p_keys text[], p_counts bigint[]) FROM PUBLIC;


--
-- Name: FUNCTION _window_lock_ids(p_limits text[], p_keys text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._window_lock_ids(p_limits text[], p_keys text[]) FROM PUBLIC;


--
-- Name: FUNCTION _worker_ttl(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq._worker_ttl() FROM PUBLIC;
GRANT ALL ON FUNCTION pgq._worker_ttl() TO pgq_reader;


--
-- Name: FUNCTION add_to_batch(batch uuid, jobs jsonb, job uuid, token uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.add_to_batch(batch uuid, jobs jsonb, job uuid, token uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.add_to_batch(batch uuid, jobs jsonb, job uuid, token uuid) TO pgq_producer;
GRANT ALL ON FUNCTION pgq.add_to_batch(batch uuid, jobs jsonb, job uuid, token uuid) TO pgq_worker;


--
-- Name: FUNCTION cancel(uuid uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.cancel(uuid uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.cancel(uuid uuid) TO pgq_admin;


--
-- Name: FUNCTION cancel_batch(batch uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.cancel_batch(batch uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.cancel_batch(batch uuid) TO pgq_admin;


--
-- Name: FUNCTION cancel_requests(worker text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.cancel_requests(worker text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.cancel_requests(worker text) TO pgq_worker;


--
-- Name: FUNCTION cancelled(uuids uuid[], tokens uuid[], as_of timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.cancelled(uuids uuid[], tokens uuid[], as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.cancelled(uuids uuid[], tokens uuid[], as_of timestamp with time zone) TO pgq_worker;


--
-- Name: FUNCTION "check"(worker_timeout integer, worker_tries integer, queues text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq."check"(worker_timeout integer, worker_tries integer, queues text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq."check"(worker_timeout integer, worker_tries integer, queues text[]) TO pgq_worker;
GRANT ALL ON FUNCTION pgq."check"(worker_timeout integer, worker_tries integer, queues text[]) TO pgq_reader;


--
-- Name: FUNCTION complete(uuids uuid[], tokens uuid[], as_of timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.complete(uuids uuid[], tokens uuid[], as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.complete(uuids uuid[], tokens uuid[], as_of timestamp with time zone) TO pgq_worker;


--
-- Name: FUNCTION define_concurrency(name text, "limit" integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.define_concurrency(name text, "limit" integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.define_concurrency(name text, "limit" integer) TO pgq_admin;


--
-- Name: FUNCTION define_job(name text, queue text, handler text, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text[], isolated boolean); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.define_job(name text, queue text, handler text, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text[], isolated boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.define_job(name text, queue text, handler text, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, unique_for interval, unique_until text, unique_by text[], debounce_for interval, debounce_by text[], debounce_max_wait interval, middleware jsonb, max_tries integer, max_retry_for interval, min_backoff integer, max_timeout integer, search_path text[], isolated boolean) TO pgq_admin;


--
-- Name: FUNCTION define_limit(name text, max integer, per interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.define_limit(name text, max integer, per interval) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.define_limit(name text, max integer, per interval) TO pgq_admin;


--
-- Name: FUNCTION define_queue(name text, retry_after integer, paused boolean, fair_by text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.define_queue(name text, retry_after integer, paused boolean, fair_by text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.define_queue(name text, retry_after integer, paused boolean, fair_by text) TO pgq_admin;


--
-- Name: FUNCTION dispatch(job text, payload jsonb, queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.dispatch(job text, payload jsonb, queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.dispatch(job text, payload jsonb, queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text) TO pgq_producer;


--
-- Name: FUNCTION dispatch_batch(jobs jsonb, name text, then_job text, catch_job text, finally_job text, allow_failures boolean, queue text, traceparent text, tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.dispatch_batch(jobs jsonb, name text, then_job text, catch_job text, finally_job text, allow_failures boolean, queue text, traceparent text, tracestate text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.dispatch_batch(jobs jsonb, name text, then_job text, catch_job text, finally_job text, allow_failures boolean, queue text, traceparent text, tracestate text) TO pgq_producer;


--
-- Name: FUNCTION dispatch_chain(steps jsonb, on_failure text, queue text, traceparent text, tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.dispatch_chain(steps jsonb, on_failure text, queue text, traceparent text, tracestate text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.dispatch_chain(steps jsonb, on_failure text, queue text, traceparent text, tracestate text) TO pgq_producer;


--
-- Name: FUNCTION dispatch_many(job text, payloads jsonb[], queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.dispatch_many(job text, payloads jsonb[], queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.dispatch_many(job text, payloads jsonb[], queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text) TO pgq_producer;


--
-- Name: FUNCTION dispatch_staged(job text, queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.dispatch_staged(job text, queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.dispatch_staged(job text, queue text, delay interval, tries integer, backoff integer[], retry_until timestamp with time zone, max_exceptions integer, timeout integer, fail_on_timeout boolean, priority integer, unique_key text, unique_for interval, unique_until text, debounce_key text, debounce_for interval, debounce_max_wait interval, middleware jsonb, retry_for interval, traceparent text, tracestate text) TO pgq_producer;


--
-- Name: FUNCTION dispatch_warnings(job text, queue text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.dispatch_warnings(job text, queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.dispatch_warnings(job text, queue text) TO pgq_producer;
GRANT ALL ON FUNCTION pgq.dispatch_warnings(job text, queue text) TO pgq_reader;


--
-- Name: FUNCTION drop_concurrency(name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.drop_concurrency(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.drop_concurrency(name text) TO pgq_admin;


--
-- Name: FUNCTION drop_limit(name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.drop_limit(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.drop_limit(name text) TO pgq_admin;


--
-- Name: FUNCTION due_schedules(as_of timestamp with time zone, horizon interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.due_schedules(as_of timestamp with time zone, horizon interval) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.due_schedules(as_of timestamp with time zone, horizon interval) TO pgq_worker;


--
-- Name: FUNCTION fail(uuid uuid, token uuid, exception text, timed_out boolean, default_tries integer, default_backoff integer[], as_of timestamp with time zone, detail text, hint text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.fail(uuid uuid, token uuid, exception text, timed_out boolean, default_tries integer, default_backoff integer[], as_of timestamp with time zone, detail text, hint text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.fail(uuid uuid, token uuid, exception text, timed_out boolean, default_tries integer, default_backoff integer[], as_of timestamp with time zone, detail text, hint text) TO pgq_worker;


--
-- Name: FUNCTION fail_many(uuids uuid[], tokens uuid[], exceptions text[], timed_out boolean[], default_tries integer, default_backoff integer[], details text[], hints text[]); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.fail_many(uuids uuid[], tokens uuid[], exceptions text[], timed_out boolean[], default_tries integer, default_backoff integer[], details text[], hints text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.fail_many(uuids uuid[], tokens uuid[], exceptions text[], timed_out boolean[], default_tries integer, default_backoff integer[], details text[], hints text[]) TO pgq_worker;


--
-- Name: FUNCTION fail_setup(uuid uuid, token uuid, reason text, as_of timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.fail_setup(uuid uuid, token uuid, reason text, as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.fail_setup(uuid uuid, token uuid, reason text, as_of timestamp with time zone) TO pgq_worker;


--
-- Name: FUNCTION fire_schedule(name text, version bigint, expected timestamp with time zone, ticks timestamp with time zone[], next_run_at timestamp with time zone, skipped bigint, as_of timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.fire_schedule(name text, version bigint, expected timestamp with time zone, ticks timestamp with time zone[], next_run_at timestamp with time zone, skipped bigint, as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.fire_schedule(name text, version bigint, expected timestamp with time zone, ticks timestamp with time zone[], next_run_at timestamp with time zone, skipped bigint, as_of timestamp with time zone) TO pgq_worker;


--
-- Name: FUNCTION flush_failed(older_than interval, queue text, job text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.flush_failed(older_than interval, queue text, job text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.flush_failed(older_than interval, queue text, job text) TO pgq_admin;


--
-- Name: FUNCTION forget_failed(uuid uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.forget_failed(uuid uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.forget_failed(uuid uuid) TO pgq_admin;


--
-- Name: FUNCTION give_back(uuids uuid[], tokens uuid[], reason text, started boolean, as_of timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.give_back(uuids uuid[], tokens uuid[], reason text, started boolean, as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.give_back(uuids uuid[], tokens uuid[], reason text, started boolean, as_of timestamp with time zone) TO pgq_worker;


--
-- Name: FUNCTION give_back_group(uuids uuid[], tokens uuid[], reason text, as_of timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.give_back_group(uuids uuid[], tokens uuid[], reason text, as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.give_back_group(uuids uuid[], tokens uuid[], reason text, as_of timestamp with time zone) TO pgq_worker;


--
-- Name: FUNCTION heartbeat(uuids uuid[], tokens uuid[], as_of timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.heartbeat(uuids uuid[], tokens uuid[], as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.heartbeat(uuids uuid[], tokens uuid[], as_of timestamp with time zone) TO pgq_worker;


--
-- Name: FUNCTION job_batch(job uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.job_batch(job uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.job_batch(job uuid) TO pgq_worker;


--
-- Name: TABLE live_jobs; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.live_jobs TO pgq_reader;


--
-- Name: FUNCTION live_job(uuid uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.live_job(uuid uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.live_job(uuid uuid) TO pgq_reader;


--
-- Name: FUNCTION nap(queues text[], wait interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.nap(queues text[], wait interval) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.nap(queues text[], wait interval) TO pgq_worker;


--
-- Name: FUNCTION pause_queue(queue text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.pause_queue(queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.pause_queue(queue text) TO pgq_admin;


--
-- Name: FUNCTION pause_schedule(name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.pause_schedule(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.pause_schedule(name text) TO pgq_admin;


--
-- Name: FUNCTION plan_schedule(name text, version bigint, next_run_at timestamp with time zone, error text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.plan_schedule(name text, version bigint, next_run_at timestamp with time zone, error text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.plan_schedule(name text, version bigint, next_run_at timestamp with time zone, error text) TO pgq_worker;


--
-- Name: FUNCTION prune(older_than interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.prune(older_than interval) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.prune(older_than interval) TO pgq_admin;


--
-- Name: FUNCTION prune_all(history_older_than interval, failed_older_than interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.prune_all(history_older_than interval, failed_older_than interval) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.prune_all(history_older_than interval, failed_older_than interval) TO pgq_worker;


--
-- Name: FUNCTION release(uuid uuid, token uuid, delay integer, refund boolean, reason text, as_of timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.release(uuid uuid, token uuid, delay integer, refund boolean, reason text, as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.release(uuid uuid, token uuid, delay integer, refund boolean, reason text, as_of timestamp with time zone) TO pgq_worker;


--
-- Name: FUNCTION reserve(worker text, queues text[], max integer, default_tries integer, as_of timestamp with time zone, call uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.reserve(worker text, queues text[], max integer, default_tries integer, as_of timestamp with time zone, call uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.reserve(worker text, queues text[], max integer, default_tries integer, as_of timestamp with time zone, call uuid) TO pgq_worker;


--
-- Name: FUNCTION resume_queue(queue text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.resume_queue(queue text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.resume_queue(queue text) TO pgq_admin;


--
-- Name: FUNCTION resume_schedule(name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.resume_schedule(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.resume_schedule(name text) TO pgq_admin;


--
-- Name: FUNCTION retry_batch_failed(batch uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.retry_batch_failed(batch uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.retry_batch_failed(batch uuid) TO pgq_admin;


--
-- Name: FUNCTION retry_failed(uuid uuid, queue text, job text, older_than interval); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.retry_failed(uuid uuid, queue text, job text, older_than interval) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.retry_failed(uuid uuid, queue text, job text, older_than interval) TO pgq_admin;


--
-- Name: FUNCTION rotate(slot_bytes bigint, as_of timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.rotate(slot_bytes bigint, as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.rotate(slot_bytes bigint, as_of timestamp with time zone) TO pgq_worker;


--
-- Name: FUNCTION run_now(uuid uuid); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.run_now(uuid uuid) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.run_now(uuid uuid) TO pgq_admin;


--
-- Name: FUNCTION run_schedule(name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.run_schedule(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.run_schedule(name text) TO pgq_admin;


--
-- Name: FUNCTION run_sql_job(uuid uuid, token uuid, grouped boolean); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.run_sql_job(uuid uuid, token uuid, grouped boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.run_sql_job(uuid uuid, token uuid, grouped boolean) TO pgq_worker;


--
-- Name: FUNCTION schedule(name text, cron text, job text, payload jsonb, timezone text, queue text, catch_up text, paused boolean, priority integer, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, middleware jsonb); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.schedule(name text, cron text, job text, payload jsonb, timezone text, queue text, catch_up text, paused boolean, priority integer, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, middleware jsonb) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.schedule(name text, cron text, job text, payload jsonb, timezone text, queue text, catch_up text, paused boolean, priority integer, tries integer, backoff integer[], max_exceptions integer, timeout integer, fail_on_timeout boolean, retry_for interval, middleware jsonb) TO pgq_admin;


--
-- Name: FUNCTION set_fair_weight(queue text, key text, weight integer); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.set_fair_weight(queue text, key text, weight integer) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.set_fair_weight(queue text, key text, weight integer) TO pgq_admin;


--
-- Name: FUNCTION stage_dispatch(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.stage_dispatch() FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.stage_dispatch() TO pgq_producer;


--
-- Name: FUNCTION unreserve(call uuid, as_of timestamp with time zone); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.unreserve(call uuid, as_of timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.unreserve(call uuid, as_of timestamp with time zone) TO pgq_worker;


--
-- Name: FUNCTION unschedule(name text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.unschedule(name text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.unschedule(name text) TO pgq_admin;


--
-- Name: FUNCTION wake(); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.wake() FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.wake() TO pgq_worker;


--
-- Name: FUNCTION worker_seen(worker text, queues text[], handlers text[], version text, starting boolean); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.worker_seen(worker text, queues text[], handlers text[], version text, starting boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.worker_seen(worker text, queues text[], handlers text[], version text, starting boolean) TO pgq_worker;


--
-- Name: FUNCTION worker_stopped(worker text); Type: ACL; Schema: pgq; Owner: -
--

REVOKE ALL ON FUNCTION pgq.worker_stopped(worker text) FROM PUBLIC;
GRANT ALL ON FUNCTION pgq.worker_stopped(worker text) TO pgq_worker;


--
-- Name: TABLE actions; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.actions TO pgq_reader;


--
-- Name: TABLE job_ends; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.job_ends TO pgq_reader;


--
-- Name: TABLE batch_jobs; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.batch_jobs TO pgq_reader;


--
-- Name: TABLE batches; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.batches TO pgq_worker;
GRANT SELECT ON TABLE pgq.batches TO pgq_reader;


--
-- Name: TABLE callbacks; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.callbacks TO pgq_reader;


--
-- Name: TABLE chains; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.chains TO pgq_reader;


--
-- Name: TABLE concurrency_limits; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.concurrency_limits TO pgq_reader;


--
-- Name: TABLE failed; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.failed TO pgq_reader;


--
-- Name: TABLE failed_job_settings; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.failed_job_settings TO pgq_reader;


--
-- Name: TABLE fair_weights; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.fair_weights TO pgq_reader;


--
-- Name: TABLE fair_keys; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.fair_keys TO pgq_reader;


--
-- Name: TABLE goose_version; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.goose_version TO pgq_reader;


--
-- Name: TABLE handler_search_paths; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.handler_search_paths TO pgq_reader;


--
-- Name: TABLE job_settings; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.job_settings TO pgq_reader;


--
-- Name: TABLE job_storage; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.job_storage TO pgq_reader;


--
-- Name: TABLE rate_limits; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.rate_limits TO pgq_reader;


--
-- Name: TABLE limits; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.limits TO pgq_worker;
GRANT SELECT ON TABLE pgq.limits TO pgq_reader;


--
-- Name: TABLE live_workers; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.live_workers TO pgq_reader;


--
-- Name: TABLE locks; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.locks TO pgq_reader;


--
-- Name: TABLE queues; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.queues TO pgq_reader;


--
-- Name: TABLE queue_overview; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.queue_overview TO pgq_reader;


--
-- Name: TABLE queue_stats; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.queue_stats TO pgq_worker;
GRANT SELECT ON TABLE pgq.queue_stats TO pgq_reader;


--
-- Name: TABLE ready; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.ready TO pgq_reader;


--
-- Name: TABLE retrying; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.retrying TO pgq_reader;


--
-- Name: TABLE roles; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.roles TO pgq_reader;


--
-- Name: TABLE running; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.running TO pgq_reader;


--
-- Name: TABLE scheduled; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.scheduled TO pgq_reader;


--
-- Name: TABLE schedules; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.schedules TO pgq_reader;


--
-- Name: TABLE stalled; Type: ACL; Schema: pgq; Owner: -
--

GRANT SELECT ON TABLE pgq.stalled TO pgq_worker;
GRANT SELECT ON TABLE pgq.stalled TO pgq_reader;


--
-- PostgreSQL database dump complete
--


