-- The keys of a named concurrency limit start with '@' (pgq._middleware_keys,
-- sql/functions/31_middleware.sql), so that they never equal a class's own
-- concurrency_limited key, which starts with its job name (S99). The live jobs that
-- name such a limit get their keys in the new form: the keys dispatch stored, the key a
-- waiting job waits on, and the places a running job holds, in pgq.jobs.overlap_keys
-- and in pgq.overlap_locks together (heartbeats and ends find a job's places through
-- its overlap_keys). Down gives them the old form back.
--
-- A job's key for a named limit, in either form, is computed here as pgq._keys_or_null
-- computes it (no function is called: on a new installation the functions come after
-- the migrations): the limit's name, then ':' and the JSON array of the by fields'
-- values when it has by.

-- +goose Up
-- +goose StatementBegin
CREATE TEMP TABLE pgq_named_keys ON COMMIT DROP AS
SELECT j.uuid, (m.n - 1)::int AS pos, k.key AS old, '@' || k.key AS new
FROM pgq.jobs j
CROSS JOIN LATERAL jsonb_array_elements(j.middleware) WITH ORDINALITY m(entry, n)
CROSS JOIN LATERAL (
    SELECT (m.entry #>> '{concurrency_limited,limit}')
           || coalesce(':' || (SELECT jsonb_agg(j.payload -> b.f ORDER BY b.i)
                               FROM jsonb_array_elements_text(m.entry #> '{concurrency_limited,by}') WITH ORDINALITY b(f, i))::text,
                       '') AS key
) k
WHERE jsonb_typeof(j.middleware) = 'array'
  AND jsonb_typeof(m.entry #> '{concurrency_limited,limit}') = 'string';
-- +goose StatementEnd

-- +goose StatementBegin
UPDATE pgq.overlap_locks o
SET key = '#' || n.new || substr(o.key, length(n.old) + 2)
FROM pgq_named_keys n
WHERE o.job_uuid = n.uuid
  AND left(o.key, length(n.old) + 2) = '#' || n.old || '#'
  AND substr(o.key, length(n.old) + 3) ~ '^[0-9]+$';
-- +goose StatementEnd

-- +goose StatementBegin
UPDATE pgq.jobs j
SET middleware_keys = CASE WHEN j.middleware_keys IS NOT NULL THEN (
        SELECT jsonb_agg(coalesce(to_jsonb(n.new), e.v) ORDER BY e.i)
        FROM jsonb_array_elements(j.middleware_keys) WITH ORDINALITY e(v, i)
        LEFT JOIN pgq_named_keys n ON n.uuid = j.uuid AND n.pos = e.i - 1 AND n.old = e.v #>> '{}') END,
    waits_on = coalesce((SELECT n.new FROM pgq_named_keys n WHERE n.uuid = j.uuid AND n.old = j.waits_on LIMIT 1), j.waits_on),
    overlap_keys = CASE WHEN j.overlap_keys IS NOT NULL THEN ARRAY(
        SELECT coalesce((SELECT '#' || n.new || substr(e.k, length(n.old) + 2)
                         FROM pgq_named_keys n
                         WHERE n.uuid = j.uuid AND left(e.k, length(n.old) + 2) = '#' || n.old || '#'
                           AND substr(e.k, length(n.old) + 3) ~ '^[0-9]+$'
                         LIMIT 1), e.k)
        FROM unnest(j.overlap_keys) WITH ORDINALITY e(k, i)
        ORDER BY e.i) END
WHERE j.uuid IN (SELECT n.uuid FROM pgq_named_keys n);
-- +goose StatementEnd

-- +goose Down
-- Every key that starts with '@' is a named limit's: the '@' goes; a lease whose old
-- name a class's own limit holds now keeps its name (the old functions do not count
-- it: up to twice that limit may run until it ends).
UPDATE pgq.overlap_locks o SET key = '#' || substr(o.key, 3)
WHERE o.key LIKE '#@%' AND NOT EXISTS (SELECT FROM pgq.overlap_locks x WHERE x.key = '#' || substr(o.key, 3));

-- +goose StatementBegin
UPDATE pgq.jobs j
SET middleware_keys = CASE WHEN j.middleware_keys IS NOT NULL THEN (
        SELECT jsonb_agg(CASE WHEN e.v #>> '{}' LIKE '@%' THEN to_jsonb(substr(e.v #>> '{}', 2)) ELSE e.v END ORDER BY e.i)
        FROM jsonb_array_elements(j.middleware_keys) WITH ORDINALITY e(v, i)) END,
    waits_on = CASE WHEN j.waits_on LIKE '@%' THEN substr(j.waits_on, 2) ELSE j.waits_on END,
    overlap_keys = CASE WHEN j.overlap_keys IS NOT NULL THEN ARRAY(
        SELECT CASE WHEN e.k LIKE '#@%' THEN '#' || substr(e.k, 3) ELSE e.k END
        FROM unnest(j.overlap_keys) WITH ORDINALITY e(k, i) ORDER BY e.i) END
WHERE j.middleware @? '$[*].concurrency_limited.limit ? (@.type() == "string")';
-- +goose StatementEnd
