-- Unique jobs (S21-S23) and debounced jobs (S24): lock rows and tokens written in the
-- dispatching transaction, so a rolled-back dispatch leaves none behind.

-- pgq._take_unique: takes the unique lock of key for a new job, or takes over one that
-- expired (S21). Returns false when a live holder has the key: the dispatch is dropped.
-- A concurrent dispatch of the same key waits here for this transaction, then sees its
-- lock row. Hazard: the WHERE may only read the lock row itself. A subquery (say, "is
-- the owner job gone?") reads this statement's snapshot, which cannot see the job the
-- other transaction just committed, and lets duplicates in.
CREATE OR REPLACE FUNCTION pgq._take_unique(p_key text, p_owner uuid, p_job uuid, p_for interval) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
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

COMMENT ON FUNCTION pgq._take_unique(text, uuid, uuid, interval) IS
    'Takes (or takes over, when expired) the unique lock of a key for a new job; false when a live holder has it (S21).';

-- pgq._take_debounce: makes token the current debounce token of key, for a new job
-- (S24); every older job of the key is dropped at its pickup. Returns when the key's
-- burst began (the first dispatch since a job of the key last started), which
-- debounce_max_wait counts from.
CREATE OR REPLACE FUNCTION pgq._take_debounce(p_key text, p_token uuid, p_job uuid) RETURNS timestamptz
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
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

COMMENT ON FUNCTION pgq._take_debounce(text, uuid, uuid) IS
    'Makes a new job''s token the current debounce token of its key (S24); returns when the key''s burst began.';

-- pgq._release_owned: the unique locks (keys, owner tokens) and debounce tokens (keys,
-- tokens) of jobs, each only where the job still owns it (S22, S24): a newer dispatch's
-- lock or token stays. NULL keys release nothing.
CREATE OR REPLACE FUNCTION pgq._release_owned(p_unique text[], p_owners uuid[], p_debounce text[], p_tokens uuid[]) RETURNS void
LANGUAGE plpgsql VOLATILE  -- (plpgsql: its statements' plans are kept across calls; a SQL function's are not)
SET search_path = pg_catalog, pg_temp
SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off  -- by key only, as pgq.complete
AS $$
BEGIN
    DELETE FROM pgq.unique_locks u USING unnest(p_unique, p_owners) AS l(key, owner)
    WHERE u.key = l.key AND u.owner = l.owner;
    DELETE FROM pgq.debounce_tokens d USING unnest(p_debounce, p_tokens) AS t(key, token)
    WHERE d.key = t.key AND d.token = t.token;
END;
$$;

COMMENT ON FUNCTION pgq._release_owned(text[], uuid[], text[], uuid[]) IS
    'Deletes the unique locks and debounce tokens of ended jobs that they still own (S22, S24).';
