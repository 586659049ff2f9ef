-- One call to give back the overlap locks of a batch of finished jobs (issue 6).
--
-- The worker gave back each without_overlapping job's advisory locks with its own
-- pgq.unlock_overlap call on the session connection: a round trip and a commit per job,
-- serialised with the reserves on that connection. In the benchmark's 20,000-job drain
-- with a per-job overlap key, that was 20,288 transactions and 1,426 jobs/s. The worker
-- now unlocks the jobs of a completion or failure batch in one call.

-- +goose Up
-- +goose StatementBegin
-- pgq.unlock_overlap_many: pgq.unlock_overlap for many jobs at once. The locks are given
-- as pairs, uuids[i] holding keys[i] (a job with two keys comes twice). Each goes only if
-- that job still owns it on this session (after expire_after freed a job's lock, another
-- job may hold the key now). Returns how many advisory locks were released.
CREATE FUNCTION pgq.unlock_overlap_many(uuids uuid[], keys text[]) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_count int;
BEGIN
    IF cardinality(unlock_overlap_many.uuids) IS DISTINCT FROM cardinality(unlock_overlap_many.keys) THEN
        RAISE EXCEPTION 'pgq: unlock_overlap_many needs one key per uuid, got % uuids and % keys',
            cardinality(unlock_overlap_many.uuids), cardinality(unlock_overlap_many.keys) USING ERRCODE = '22023';
    END IF;
    WITH gone AS (
        DELETE FROM pgq.overlap_locks o
        USING unnest(unlock_overlap_many.uuids, unlock_overlap_many.keys) AS l(uuid, key)
        WHERE o.key = l.key AND o.job_uuid = l.uuid AND o.pid = pg_backend_pid()
        RETURNING o.key
    )
    SELECT count(*) FILTER (WHERE pg_advisory_unlock(pgq._overlap_lock_id(g.key)))::int INTO v_count
    FROM gone g;
    RETURN v_count;
END;
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION pgq.unlock_overlap_many(uuid[], text[]) IS
    'Worker protocol: pgq.unlock_overlap for a batch of finished jobs, as (uuids[i], keys[i]) pairs, on the session that reserved them (S26).';

-- +goose StatementBegin
-- pgq.unlock_overlap: one job's locks, now through unlock_overlap_many, so the owner and
-- session checks are written once.
CREATE OR REPLACE FUNCTION pgq.unlock_overlap(uuid uuid, keys text[]) RETURNS int
LANGUAGE sql VOLATILE AS $$
    SELECT pgq.unlock_overlap_many(
        array_fill(unlock_overlap.uuid, ARRAY[cardinality(coalesce(unlock_overlap.keys, '{}'))]),
        coalesce(unlock_overlap.keys, '{}'));
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION pgq.unlock_overlap(uuid uuid, keys text[]) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_key   text;
    v_count int := 0;
BEGIN
    FOREACH v_key IN ARRAY coalesce(unlock_overlap.keys, '{}') LOOP
        DELETE FROM pgq.overlap_locks o
        WHERE o.key = v_key AND o.job_uuid = unlock_overlap.uuid AND o.pid = pg_backend_pid();
        IF FOUND AND pg_advisory_unlock(pgq._overlap_lock_id(v_key)) THEN
            v_count := v_count + 1;
        END IF;
    END LOOP;
    RETURN v_count;
END;
$$;
-- +goose StatementEnd
DROP FUNCTION pgq.unlock_overlap_many(uuid[], text[]);
