package main

// What a new user meets through the binary: a SQL handler that names its table without
// its schema, typos in job and queue names, on-call readers, errors that keep their
// words, any job's story, hints, the version.

import (
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S86: the user's handler names its table without a schema, as psql let them when they
// wrote it. The worker runs it with the search_path of the session that defined the
// class, and the job succeeds.
func TestS86E2EHandlerFindsItsUnqualifiedTable(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE TABLE public.reports (account_id int PRIMARY KEY, refreshed_at timestamptz NOT NULL)`)
	db.Exec(t, `CREATE FUNCTION public.refresh_report2(payload jsonb) RETURNS void LANGUAGE sql AS $$
		INSERT INTO reports VALUES ((payload->>'account_id')::int, now())
		ON CONFLICT (account_id) DO UPDATE SET refreshed_at = now() $$`)
	db.Exec(t, `SELECT pgq.define_job('refresh_report2', handler => 'public.refresh_report2')`)
	id := dispatch(t, db, `pgq.dispatch('refresh_report2', '{"account_id": 7}')`)
	p := startWorker(t, db, "w1", "--stop-when-empty")
	require.Zero(t, p.waitExit(t, 30*time.Second), p.logs())
	require.Equal(t, []string{"succeeded"}, scalar[[]string](t, db, `SELECT array_agg(outcome) FROM pgq.attempts WHERE job_uuid = $1::uuid`, id), p.logs())
	require.Equal(t, 1, scalar[int](t, db, `SELECT count(*)::int FROM public.reports`))
}

// S87: a typo in a job or queue name is accepted (a Go worker may handle a name with no
// class), but dispatch warns, naming the nearest known name, and check lists the jobs
// nothing will run; a running worker of the queue clears both.
func TestS87E2ETyposAreFlagged(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE FUNCTION public.noop(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$`)
	db.Exec(t, `SELECT pgq.define_job('refresh_report', handler => 'public.noop')`)

	out, errOut, code := cli(t, db, "dispatch", "refresh_reprot", `{"account_id": 7}`)
	require.Zero(t, code, errOut)
	require.Regexp(t, `^[0-9a-f-]{36}\n$`, out)
	require.Contains(t, errOut, "pgq-worker: warning: no job class defines refresh_reprot, and no live worker has a handler for it")
	require.Contains(t, errOut, "(did you mean refresh_report?)")
	_, errOut, code = cli(t, db, "dispatch", "refresh_report", "--queue", "nosuchqueue")
	require.Zero(t, code, errOut)
	require.Equal(t, "pgq-worker: warning: no live worker serves queue nosuchqueue (no worker was seen in the last 60 s): the job waits until one does (pgq-worker work --queue nosuchqueue)\n", errOut)

	out, _, code = cli(t, db, "check")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "job refresh_reprot: job_unhandled")
	require.Contains(t, out, "queue nosuchqueue: queue_unserved")
	require.Contains(t, out, "queue default: queue_unserved")

	p := startWorker(t, db, "w1", "--queue", "default,nosuchqueue")
	waitUntil(t, 10*time.Second, "the worker is live", func() bool {
		return scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_workers`) == 1
	})
	_, errOut, code = cli(t, db, "dispatch", "refresh_report", "--delay", "3600")
	require.Zero(t, code)
	require.Empty(t, errOut, "nothing in the way")
	out, _, _ = cli(t, db, "check")
	require.NotContains(t, out, "queue_unserved")
	p.signal(t, syscall.SIGTERM)
	require.Zero(t, p.waitExit(t, 30*time.Second), p.logs())
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.workers`), "a stopped worker serves nothing")
}

// failSQLJob makes a job of name whose SQL handler raises with a DETAIL and a HINT, runs
// a worker until it failed for good, and returns its uuid.
func failSQLJob(t *testing.T, db *pgqtest.DB, name string) string {
	t.Helper()
	db.Exec(t, fmt.Sprintf(`CREATE FUNCTION public.%s(payload jsonb) RETURNS void LANGUAGE plpgsql SET search_path = public AS $$
		BEGIN RAISE EXCEPTION 'card declined' USING DETAIL = 'issuer said 05', HINT = 'ask for another card'; END $$`, name))
	db.Exec(t, fmt.Sprintf(`SELECT pgq.define_job('%s', handler => 'public.%s')`, name, name))
	id := dispatch(t, db, `pgq.dispatch($1, '{"card": "4000-0000"}')`, name)
	p := startWorker(t, db, "w-"+name, "--stop-when-empty")
	require.Zero(t, p.waitExit(t, 30*time.Second), p.logs())
	require.Contains(t, p.logs(), `hint="ask for another card"`, "the worker's line of the failure")
	return id
}

// S88: the DETAIL and HINT of a handler's exception reach the CLI: failed show and jobs
// show print them with the failure and the attempt.
func TestS88E2EHintAndDetailInTheCLI(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	id := failSQLJob(t, db, "charge_card")
	for _, args := range [][]string{{"failed", "show", id}, {"jobs", "show", id}} {
		out, errOut, code := cli(t, db, args...)
		require.Zero(t, code, errOut)
		require.Regexp(t, `(?m)^detail: +issuer said 05$`, out, args)
		require.Regexp(t, `(?m)^hint: +ask for another card$`, out, args)
		require.Regexp(t, `(?m)^ +hint: ask for another card$`, out, "%v: the attempt's", args)
	}
}

// Defect: a login in pgq_reader, the role for people on call, could not list or show
// failed jobs ("permission denied for table failed_jobs"). Every read of the CLI works
// for it; payloads stay hidden without pgq_payload_reader.
func TestCLIReaderReadsFailedAndAnyJob(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	id := failJob(t, db, "default", "charge_card")
	done := dispatch(t, db, `pgq.dispatch('later', '{"secret": 1}', delay => '1 hour')`)
	reader := []string{"DATABASE_URL=" + withLogin(t, db.URL, pgqtest.ReaderRole, "")}
	for _, args := range [][]string{
		{"failed", "list"}, {"failed", "show", id}, {"jobs", "list"}, {"jobs", "show", id}, {"jobs", "show", done},
		{"jobs", "list", "--state", "succeeded"}, {"status"}, {"check"},
	} {
		out, errOut, code := pgqWorker(t, reader, args...)
		require.NotContains(t, errOut, "permission denied", "%v", args)
		require.Contains(t, []int{0, 1}, code, "%v: %s", args, errOut)
		if args[0] != "check" {
			require.Zero(t, code, "%v: %s", args, errOut)
		}
		require.NotContains(t, out, "secret", "%v: payloads are hidden from a reader", args)
	}
	out, _, _ := pgqWorker(t, reader, "jobs", "show", done)
	require.Contains(t, out, "payload:    hidden (needs pgq_payload_reader)")
}

// withLogin is url with its user and password replaced.
func withLogin(t *testing.T, url, user, password string) string {
	t.Helper()
	re := regexp.MustCompile(`^(postgres(?:ql)?://)[^@/]*@`)
	require.Regexp(t, re, url)
	userinfo := user
	if password != "" {
		userinfo += ":" + password
	}
	return re.ReplaceAllString(url, "${1}"+userinfo+"@")
}

// Defect: with the password "r", an error read "xxxxxetxxxxxy failed …: pexxxxxmission
// denied": the password was masked wherever its letters appeared. Only the connection
// string's password is masked, where a connection string appears.
func TestCLIRedactsThePasswordNotItsLetters(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	id := failJob(t, db, "default", "charge_card")
	url := withLogin(t, db.URL, pgqtest.ReaderRole, "r") // trust authentication: any password will do
	_, errOut, code := pgqWorker(t, []string{"DATABASE_URL=" + url}, "failed", "retry", id)
	require.Equal(t, 1, code, errOut)
	require.Equal(t, "pgq-worker: retry failed "+id+": permission denied for function retry_failed\n", errOut)

	for _, tc := range []struct{ in, want string }{
		{"retry failed: permission denied", "retry failed: permission denied"},
		{"cannot parse `postgres://u:r@h:x/db`: invalid port", "cannot parse `postgres://u:xxxxx@h:x/db`: invalid port"},
		{"host=h password=r dbname=d", "host=h password=xxxxx dbname=d"},
		{"host=h password='r x' dbname=d", "host=h password=xxxxx dbname=d"},
		{"postgres://h/db?sslmode=disable&password=r", "postgres://h/db?sslmode=disable&password=xxxxx"},
		{"postgres://u:p@ss/w@rd@h/db", "postgres://u:xxxxx@h/db"},
	} {
		require.Equal(t, tc.want, maskConnString(tc.in), tc.in)
	}
}

// Defect: `failed show` of a job that succeeded printed `pgq: not found: no rows in
// result set`, and no command showed a job that did not fail. jobs show tells any job's
// story; jobs list lists by state, queue and name; no driver text reaches the user.
func TestCLIJobsShowAndList(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE FUNCTION public.noop(payload jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$`)
	db.Exec(t, `SELECT pgq.define_job('refresh_report', handler => 'public.noop', tries => 4, backoff => '{10,60}')`)
	ok := dispatch(t, db, `pgq.dispatch('refresh_report', '{"account_id": 7}')`)
	p := startWorker(t, db, "w1", "--stop-when-empty")
	require.Zero(t, p.waitExit(t, 30*time.Second), p.logs())
	waiting := dispatch(t, db, `pgq.dispatch('refresh_report', '{"account_id": 8}', queue => 'reports', delay => '1 hour')`)
	failed := failJob(t, db, "mail", "send_invoice")

	out, errOut, code := cli(t, db, "jobs", "show", ok)
	require.Zero(t, code, errOut)
	require.Regexp(t, `(?m)^state: +succeeded$`, out)
	require.Regexp(t, `(?m)^ +1 +succeeded +w1 `, out)
	out, errOut, code = cli(t, db, "jobs", "show", waiting)
	require.Zero(t, code, errOut)
	require.Regexp(t, `(?m)^state: +scheduled$`, out)
	require.Regexp(t, `(?m)^settings: +handler public.noop\(jsonb\), tries 4, backoff 10,60$`, out)
	require.Regexp(t, `(?m)^payload: +\{"account_id": 8\}$`, out)
	require.Contains(t, out, "  none yet")

	// A job of a batch says so.
	member := scalar[string](t, db, `SELECT b::text FROM pgq.dispatch_batch('[{"job": "refresh_report", "payload": {}, "queue": "batched"}]', name => 'nightly') b`)
	inBatch := scalar[string](t, db, `SELECT uuid::text FROM pgq.job_settings WHERE queue = 'batched'`)
	out, errOut, code = cli(t, db, "jobs", "show", inBatch)
	require.Zero(t, code, errOut)
	require.Regexp(t, `(?m)^batch: +`+member+` "nightly": 0 of 1 finished, 0 failed$`, out)

	_, errOut, code = cli(t, db, "failed", "show", ok)
	require.Equal(t, 1, code)
	require.Equal(t, "pgq-worker: job "+ok+" (refresh_report) is not a failed job: it is succeeded; pgq-worker jobs show "+ok+" tells its story\n", errOut)
	const nobody = "0f8e2c1a-5b7d-4e8f-9a3b-2c1d0e9f8a7b"
	for _, args := range [][]string{{"failed", "show", nobody}, {"jobs", "show", nobody}, {"failed", "retry", nobody}, {"failed", "forget", nobody}} {
		_, errOut, code = cli(t, db, args...)
		require.Equal(t, 1, code, "%v", args)
		require.Contains(t, errOut, "no job "+nobody+": it is not waiting, running or failed", "%v", args)
		require.NotContains(t, errOut, "no rows", "%v", args)
	}

	uuids := func(args ...string) []string {
		t.Helper()
		out, errOut, code := cli(t, db, append([]string{"jobs", "list"}, args...)...)
		require.Zero(t, code, errOut)
		var ids []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
			ids = append(ids, strings.Fields(line)[0])
		}
		return ids
	}
	require.Equal(t, []string{inBatch, waiting, failed}, uuids(), "live and failed ones, state by state: ready, scheduled, …, failed")
	require.Equal(t, []string{ok}, uuids("--state", "succeeded"))
	require.Equal(t, []string{failed}, uuids("--queue", "mail"))
	require.Equal(t, []string{inBatch, waiting}, uuids("--job", "refresh_report"))
	require.Empty(t, uuids("--state", "running"))
	_, errOut, code = cli(t, db, "jobs", "list", "--state", "done")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--state must be one of ready, scheduled, retrying, running, failed, succeeded, cancelled")
}

// The binary says which it is: --version, and status with the schema's version.
func TestCLIVersion(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	out, errOut, code := pgqWorker(t, nil, "--version")
	require.Zero(t, code, errOut)
	require.Regexp(t, `^pgq-worker \S.*\n$`, out)
	out, errOut, code = cli(t, db, "status")
	require.Zero(t, code, errOut)
	require.Regexp(t, `^pgq-worker \S.*, schema version \d+\n`, out)
}
