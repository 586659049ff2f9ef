-- A named concurrency limit's places: how many of each key's places may be held. A key
-- whose limit is N starts new jobs in its places 1..N only, but a handler that started
-- under a higher limit keeps its place above N until it ends; so that reserves count it,
-- they look at every place up to "places" (S99).

-- +goose Up
ALTER TABLE pgq.concurrency_limits ADD COLUMN places int;

-- Every place a lease names, as the limit is now: a limit lowered before this
-- migration may have handlers running above it.
UPDATE pgq.concurrency_limits l
SET places = greatest(l."limit", (SELECT max(substring(o.key FROM '#([0-9]+)$')::int)
                                  FROM pgq.overlap_locks o
                                  WHERE starts_with(o.key, '#@' || l.name || '#') OR starts_with(o.key, '#@' || l.name || ':[')));

ALTER TABLE pgq.concurrency_limits ALTER COLUMN places SET NOT NULL;
ALTER TABLE pgq.concurrency_limits ADD CONSTRAINT concurrency_limits_places_check CHECK (places BETWEEN "limit" AND 1000);

COMMENT ON COLUMN pgq.concurrency_limits.places IS 'The places 1..places of each key that a handler may hold: the limit, or more while handlers that started under a higher limit still hold places above it (pgq.define_concurrency raises it, pgq.rotate brings it back, S99).';

-- +goose Down
ALTER TABLE pgq.concurrency_limits DROP COLUMN places;
