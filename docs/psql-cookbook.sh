#!/usr/bin/env bash
# Regenerates docs/psql.md: seeds a fresh pgq_cookbook database with a realistic state
# and prints each question with its query and the real output.
# Usage: docs/psql-cookbook.sh > docs/psql.md
set -euo pipefail
cd "$(dirname "$0")/.."
export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
psql "$DATABASE_URL" -qc 'DROP DATABASE IF EXISTS pgq_cookbook WITH (FORCE)' -c 'CREATE DATABASE pgq_cookbook' >&2
DB=$(psql "$DATABASE_URL" -qAtc "SELECT regexp_replace('$DATABASE_URL', '/[^/?]*(\?|$)', '/pgq_cookbook\1')")
go run ./cmd/pgq-worker migrate --database-url "$DB" >&2

psql "$DB" -q -v ON_ERROR_STOP=1 -o /dev/null <<'SQL'
CREATE FUNCTION public.sync(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT pgq.define_queue('default', retry_after => 90);
SELECT pgq.define_queue('mail', retry_after => 30);
SELECT pgq.define_limit('vendor_api', 2, '1 minute');
SELECT pgq.define_job('sync_inventory', tries => 3, backoff => '{30}', middleware =>
  '[{"without_overlapping": {"by": ["product_id"], "release_after": 5, "expire_after": 60}}, {"rate_limited": {"limit": "vendor_api"}}]');
SELECT pgq.define_job('charge_card', tries => 2, backoff => '{60}');
SELECT pgq.define_job('sync_invoices', tries => 4, backoff => '{60,300,900}', unique_for => '1 hour', unique_by => '{account_id}');
SELECT pgq.define_job('push_price', debounce_for => '30 seconds', debounce_by => '{product_id}');

-- a card that fails twice and is failed for good
SELECT pgq.dispatch('charge_card', '{"order_id": 41, "card": "4000-0000"}') AS charge \gset
SELECT uuid, lease_token FROM pgq.reserve('web-1:811', '{default}', 1) \gset r_
SELECT pgq.fail(:'r_uuid', :'r_lease_token', 'CardDeclined: issuer said do_not_honor');
UPDATE pgq.jobs SET available_at = now() WHERE uuid = :'charge';
SELECT uuid, lease_token FROM pgq.reserve('web-2:902', '{default}', 1) \gset r_
SELECT pgq.fail(:'r_uuid', :'r_lease_token', 'CardDeclined: issuer said do_not_honor');

-- a job waiting its backoff, a scheduled one, a unique one and a debounced one
SELECT pgq.dispatch('sync_invoices', '{"account_id": 7}') AS inv \gset
SELECT uuid, lease_token FROM pgq.reserve('web-1:811', '{default}', 1) \gset r_
SELECT pgq.fail(:'r_uuid', :'r_lease_token', 'HTTP 503 from billing');
SELECT pgq.dispatch('send_digest', '{"user_id": 5}', queue => 'mail', delay => '10 minutes');
SELECT pgq.dispatch('push_price', '{"product_id": 5, "price_in_cents": 1200}');

SELECT pgq.dispatch('sync_inventory', '{"product_id": 88}');
SELECT pgq.dispatch('sync_inventory', '{"product_id": 88}');

-- a batch of three import rows, one of which fails for good, and an order's chain whose
-- charge fails: the ship step never runs; the batch's catch job and the refund run
SELECT pgq.dispatch_batch('[{"job": "import_row", "payload": {"row": 1}}, {"job": "import_row", "payload": {"row": 2}},
                            {"job": "import_row", "payload": {"row": 3}}]',
                          name => 'import', catch_job => 'import_failed', allow_failures => true, queue => 'imports');
SELECT pgq.dispatch_chain('[{"job": "fetch_order", "payload": {"order_id": 42}}, {"job": "charge_order", "payload": {"order_id": 42}},
                            {"job": "ship_order", "payload": {"order_id": 42}}]', on_failure => 'refund_order', queue => 'orders');
DO $$
DECLARE
    r pgq.reservation;
BEGIN
    FOR r IN SELECT * FROM pgq.reserve('etl-1:300', '{imports}', 10) LOOP
        IF r.payload ->> 'row' = '2' THEN
            PERFORM pgq.fail(r.uuid, r.lease_token, 'RowInvalid: row 2 has no SKU');
        ELSE
            PERFORM pgq.complete(ARRAY[r.uuid], ARRAY[r.lease_token]);
        END IF;
    END LOOP;
    SELECT * INTO r FROM pgq.reserve('web-1:811', '{orders}', 1);
    PERFORM pgq.complete(ARRAY[r.uuid], ARRAY[r.lease_token]);
    SELECT * INTO r FROM pgq.reserve('web-1:811', '{orders}', 1);
    PERFORM pgq.fail(r.uuid, r.lease_token, 'CardDeclined: issuer said do_not_honor');
    -- the callbacks run: the batch's catch, the chain's refund
    PERFORM pgq.complete(array_agg(x.uuid), array_agg(x.lease_token)) FROM pgq.reserve('web-1:811', '{imports,orders}', 10) x;
END $$;
SQL

# A worker runs the first sync of product 88 (holding its overlap lease) and turns the
# second away.
psql "$DB" -q -o /dev/null <<'SQL'
SELECT uuid FROM pgq.reserve('worker-a:4242', '{default}', 1);
SELECT uuid FROM pgq.reserve('worker-a:4242', '{default}', 1);
SQL

section() { # title, explanation, sql
  printf '## %s\n\n%s\n\n```sql\n%s\n```\n\n```\n' "$1" "$2" "$3"
  psql "$DB" -P pager=off -c "$3" | sed 's/[[:space:]]*$//'
  printf '```\n\n'
}

cat <<'MD'
# pgq from psql: a cookbook

Every question an on-call engineer asks at 3 a.m., answered with a plain query on
pgq's tables and views. The outputs below are real: `docs/psql-cookbook.sh` seeds a
fresh database (a card charge that failed twice, an invoice sync waiting its backoff,
a scheduled digest, a debounced price push, two syncs of product 88, one running and
one turned away by `without_overlapping`, a batch with a failed row, a chain whose
charge failed) and regenerates this file.

MD
section "Why did this job fail?" \
  "A failed job carries the final exception, and \`history\` has every attempt before it." \
  "SELECT job, attempts, failed_at::time(0), exception, jsonb_pretty(history) AS history FROM pgq.failed WHERE job = 'charge_card';"
section "Every attempt of one job" \
  "\`pgq.attempts\` is append-only: who ran it, when, how it ended, the delay it then waited." \
  "SELECT attempt, outcome, worker, started_at::time(0), finished_at::time(0), delay, final, exception FROM pgq.attempts WHERE job = 'charge_card' ORDER BY id;"
section "Is it waiting a backoff, or was it scheduled?" \
  "Jobs waiting after an attempt are in \`pgq.retrying\` (with why); jobs waiting a dispatch delay are in \`pgq.scheduled\`." \
  "SELECT 'retrying' AS list, job, attempts, wait_reason, due_in::interval(0), last_exception FROM pgq.retrying
   UNION ALL
   SELECT 'scheduled', job, 0, 'dispatched', due_in::interval(0), NULL FROM pgq.scheduled;"
section "What is running where, and until when is its lease?" \
  "A live worker heartbeats its jobs, so \`lease_until\` keeps moving; a job whose lease ends goes to the next worker." \
  "SELECT job, attempts, worker, started_at::time(0), lease_until::time(0), lease_expired FROM pgq.running;"
section "Which locks are held, and by which job?" \
  "Unique locks, debounce tokens and overlap leases are rows. An overlap lease is listed until it runs out: its worker's heartbeat renews it every second, and the job's outcome ends it." \
  "SELECT kind, key, (SELECT job FROM pgq.jobs j WHERE j.uuid = l.job_uuid) AS job, worker, since::time(0), expires_at::time(0), job_exists FROM pgq.locks l ORDER BY kind, key;"
section "What turned this job away?" \
  "A turn-away is an attempt: the middleware and its note are recorded." \
  "SELECT job, attempt, worker, middleware, exception AS note, delay FROM pgq.attempts WHERE outcome = 'turned_away';"
section "Rate limits and circuit breakers" \
  "Each limit's budget in its current window, and each circuit's state." \
  "SELECT kind, name, key, used, max, per, resets_at::time(0), state FROM pgq.limits;"
section "How far behind is each queue?" \
  "Ready jobs and how long the oldest has waited; \`pgq-worker status\` prints the same." \
  "SELECT * FROM pgq.queue_stats ORDER BY queue;"
section "How much room do the jobs take, and is it given back?" \
  "\`pgq.jobs\` is four slots (S80). New jobs go to the current one; once it holds the workers' \`--slot-mb\`, they go to an empty one, and the old one drains and is truncated when its last job ends, whatever holds the xmin horizon. A draining slot that still holds a job is looked at again at \`next_try\`." \
  "SELECT slot, state, pg_size_pretty(bytes) AS size, live_rows, dead_rows, next_try::time(0) FROM pgq.job_storage;"
section "What happened to this batch?" \
  "\`pgq.batches\` has the counts and the state; \`pgq.batch_jobs\` every job of the batch, live, failed or ended; \`pgq.callbacks\` each callback queued and how it ended." \
  "SELECT name, state, total_jobs, succeeded_jobs, failed_jobs, unfinished_jobs, progress FROM pgq.batches;
   SELECT state, job, exception FROM pgq.batch_jobs WHERE batch_id = (SELECT id FROM pgq.batches WHERE name = 'import') ORDER BY state, at;
   SELECT kind, job, outcome, error FROM pgq.callbacks;"
section "Where did this chain stop?" \
  "A chain keeps its steps' names and, once queued, each step's job (\`job_uuids\`); \`exception\` says why it stopped, and the steps after it never ran. \`pgq.job_ends\` says how each of its jobs ended (chain_step 0: its on_failure job)." \
  "SELECT state, step, step_jobs, exception FROM pgq.chains;
   SELECT chain_step, outcome, exception FROM pgq.job_ends WHERE chain_id = (SELECT id FROM pgq.chains) ORDER BY id;"
section "Is the configuration safe?" \
  "The ordering linter, given the workers' --timeout and --tries (\`pgq-worker check\` prints the same and exits 1); it also names the chains and batches that stalled (\`pgq.stalled\`)." \
  "SELECT object, rule, detail FROM pgq.check(worker_timeout => 60, worker_tries => 1);"
