package main

// End-to-end tests: they build the real pgq-worker binary once, run it as a subprocess
// against a test database of their own (pgqtest.New), send it signals (SIGKILL,
// SIGSTOP/SIGCONT, SIGTERM, SIGINT), and read the outcome from pgq's tables and views and
// from the worker's log. Jobs are SQL-function handlers, so every scenario reads like
// something a user could do from psql. Each test names the SEMANTICS.md rule it covers.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// ---------------------------------------------------------------------------------------
// The binary

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// workerBinary builds ./ (the pgq-worker command) once per test run and returns its path.
func workerBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "pgq-e2e-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "pgq-worker")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// ---------------------------------------------------------------------------------------
// Processes

// syncBuffer is a bytes.Buffer safe for the writes of exec's copying goroutine and the
// reads of the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// proc is one running pgq-worker process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{}
}

// startWorker runs `pgq-worker work --database-url URL --name NAME args...`. The process
// is killed at cleanup if it is still running; its log is printed when the test failed.
func startWorker(t *testing.T, db *pgqtest.DB, name string, args ...string) *proc {
	t.Helper()
	full := append([]string{"work", "--database-url", db.WorkerURL, "--name", name}, args...)
	p := &proc{name: name, cmd: exec.Command(workerBinary(t), full...), stdout: &syncBuffer{}, stderr: &syncBuffer{},
		done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.exited() {
			_ = p.cmd.Process.Kill() // also ends a SIGSTOPped process
			<-p.done
		}
		if t.Failed() {
			t.Logf("log of worker %s (pid %d):\n%s", p.name, p.cmd.Process.Pid, p.stderr.String())
		}
	})
	return p
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) logs() string { return p.stderr.String() }

func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig), "signal %s to worker %s", sig, p.name)
}

// waitExit waits up to d for the process to exit and returns its exit code (-1 when a
// signal ended it).
func (p *proc) waitExit(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("worker %s did not exit within %s; log:\n%s", p.name, d, p.logs())
		return 0
	}
}

// waitLog waits up to d for the worker's log to contain s.
func (p *proc) waitLog(t *testing.T, d time.Duration, s string) {
	t.Helper()
	waitUntil(t, d, fmt.Sprintf("worker %s logs %q", p.name, s), func() bool {
		return strings.Contains(p.logs(), s)
	})
}

// cli runs one pgq-worker command to completion and returns its stdout, stderr and exit
// code.
func cli(t *testing.T, db *pgqtest.DB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, workerBinary(t), append(args, "--database-url", db.URL)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("pgq-worker %s: %v", strings.Join(args, " "), err)
		}
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// ---------------------------------------------------------------------------------------
// Database

// waitUntil polls cond every 50 ms until it holds, failing the test after d.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting until %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// try returns the single value of a query; for polling, where an error is not fatal.
func try[T any](db *pgqtest.DB, sql string, args ...any) (T, error) {
	var v T
	err := db.Pool.QueryRow(context.Background(), sql, args...).Scan(&v)
	return v, err
}

func scalar[T any](t *testing.T, db *pgqtest.DB, sql string, args ...any) T {
	t.Helper()
	return pgqtest.Scalar[T](t, db, sql, args...)
}

// dispatch runs a SQL expression returning a job uuid, e.g.
// `pgq.dispatch('slow', '{"n":"1"}')`, and returns the uuid as text.
func dispatch(t *testing.T, db *pgqtest.DB, call string, args ...any) string {
	t.Helper()
	id := scalar[*string](t, db, "SELECT ("+call+")::text", args...)
	require.NotNil(t, id, "dispatch returned NULL: %s", call)
	return *id
}

// attempt is one row of pgq.attempts, as the tests compare them.
type attempt struct {
	Attempt int
	Worker  string
	Outcome string
}

func attemptsOf(t *testing.T, db *pgqtest.DB, id string) []attempt {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(),
		`SELECT attempt, coalesce(worker, ''), outcome FROM pgq.attempts WHERE job_uuid = $1::uuid ORDER BY id`, id)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[attempt])
	require.NoError(t, err)
	return out
}

// reservedBy returns the worker holding job id according to pgq.running, "" when none.
func reservedBy(db *pgqtest.DB, id string) string {
	w, err := try[string](db, `SELECT coalesce((SELECT worker FROM pgq.running WHERE uuid = $1::uuid), '')`, id)
	if err != nil {
		return ""
	}
	return w
}

func jobLive(t *testing.T, db *pgqtest.DB, id string) bool {
	t.Helper()
	return scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pgq.jobs WHERE uuid = $1::uuid)`, id)
}

// sqlHandlers counts the backends of the test database that are running a SQL job
// handler (pgq.run_sql_job) right now.
func sqlHandlers(db *pgqtest.DB) int {
	n, err := try[int](db, `SELECT count(*)::int FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid()
		  AND state = 'active' AND query LIKE '%run_sql_job%'`)
	if err != nil {
		return -1
	}
	return n
}

// appSchema creates schema app with the handlers most tests use:
//
//	app.slow(p)  sleeps p.secs seconds, then records p.n in app.runs with its start and
//	             end (clock_timestamp) and the worker holding the job;
//	app.rec(p)   the same without sleeping.
const appSchema = `
CREATE SCHEMA app;
CREATE TABLE app.runs (
    id       bigserial PRIMARY KEY,
    n        text,
    worker   text,
    started  timestamptz,
    finished timestamptz
);
CREATE FUNCTION app.holder(p jsonb) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT current_setting('pgq.worker')
$$;
CREATE FUNCTION app.slow(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    w  text := app.holder(p);
BEGIN
    PERFORM pg_sleep(coalesce((p->>'secs')::float, 0));
    INSERT INTO app.runs (n, worker, started, finished) VALUES (p->>'n', w, t0, clock_timestamp());
END
$$;
CREATE FUNCTION app.rec(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app.runs (n, worker, started, finished) VALUES (p->>'n', app.holder(p), clock_timestamp(), clock_timestamp());
END
$$;
`

// ---------------------------------------------------------------------------------------
// S14: lease expiry after kill -9

// S14: a worker killed with SIGKILL mid-job loses the job when its lease (retry_after)
// ends; another worker picks it up, and the history shows lease_expired then succeeded.
func TestS14E2ELeaseExpiresAfterKill9(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `
CREATE SCHEMA app;
CREATE TABLE app.flag (slow boolean NOT NULL);
INSERT INTO app.flag VALUES (true);
CREATE TABLE app.effects (n text, worker text);
-- Records which worker runs it, then waits while app.flag says slow.
CREATE FUNCTION app.hold(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app.effects VALUES (p->>'n', current_setting('pgq.worker'));
    WHILE (SELECT f.slow FROM app.flag f) LOOP
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;
SELECT pgq.define_queue('default', retry_after => 3);
SELECT pgq.define_job('hold', handler => 'app.hold', tries => 3);
`)
	a := startWorker(t, db, "A", "--sleep", "1", "--concurrency", "2")
	id := dispatch(t, db, `pgq.dispatch('hold', '{"n":"1"}')`)
	waitUntil(t, 5*time.Second, "A reserved the job", func() bool { return reservedBy(db, id) == "A" })
	waitUntil(t, 5*time.Second, "A's handler runs", func() bool { return sqlHandlers(db) == 1 })

	require.NoError(t, a.cmd.Process.Kill())
	require.Equal(t, -1, a.waitExit(t, 5*time.Second), "killed by SIGKILL")
	killed := time.Now()

	b := startWorker(t, db, "B", "--sleep", "1", "--concurrency", "2")
	// Lease 3 s (counted from A's last heartbeat, before the kill) + B's 1 s poll + slack.
	waitUntil(t, 6*time.Second, "B reserved the job after A's lease ended", func() bool { return reservedBy(db, id) == "B" })
	t.Logf("B reserved the job %s after A was killed; SQL handlers running in PostgreSQL now: %d (A's orphaned backend included when 2)",
		time.Since(killed).Round(time.Millisecond), sqlHandlers(db))
	require.Equal(t, []attempt{{1, "A", "lease_expired"}}, attemptsOf(t, db, id))
	require.Equal(t, 1, scalar[int](t, db, `SELECT lease_expiries FROM pgq.jobs WHERE uuid = $1::uuid`, id))
	require.Equal(t, 1, scalar[int](t, db, `SELECT interruptions FROM pgq.jobs WHERE uuid = $1::uuid`, id),
		"S35: A's SQL handler never committed, so its attempt was given back")

	db.Exec(t, `UPDATE app.flag SET slow = false`)
	waitUntil(t, 10*time.Second, "the job finished", func() bool { return !jobLive(t, db, id) })
	b.waitLog(t, 5*time.Second, "outcome=succeeded")

	require.Equal(t, []attempt{{1, "A", "lease_expired"}, {1, "B", "succeeded"}}, attemptsOf(t, db, id))
	require.Equal(t, "A", scalar[string](t, db,
		`SELECT worker FROM pgq.attempts WHERE job_uuid = $1::uuid AND outcome = 'lease_expired'`, id))
	// Only B's run committed: A's effects rolled back with its transaction.
	require.Equal(t, []string{"B"}, scalar[[]string](t, db, `SELECT coalesce(array_agg(worker), '{}') FROM app.effects`))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
}

// ---------------------------------------------------------------------------------------
// S14: heartbeat

// S14 (beyond): a live worker heartbeats its job, so a job running five times longer
// than retry_after is never handed to another worker (nor back to itself), while a
// second worker polls the whole time.
func TestS14E2EHeartbeatKeepsLongJob(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
SELECT pgq.define_queue('default', retry_after => 2);
SELECT pgq.define_job('slow', handler => 'app.slow', tries => 3);
`)
	startWorker(t, db, "A", "--sleep", "1", "--concurrency", "2")
	// 10 s is five leases: a heartbeat that keeps up must renew it several times. B polls
	// every 0.2 s, so any gap in the lease is swept at once.
	id := dispatch(t, db, `pgq.dispatch('slow', '{"n":"1","secs":10}')`)
	waitUntil(t, 5*time.Second, "A reserved the job", func() bool { return reservedBy(db, id) == "A" })
	b := startWorker(t, db, "B", "--sleep", "0.2", "--concurrency", "2")

	// Sample who holds the job and when its lease ends, to show the heartbeats.
	holders := map[string]bool{}
	var leases []string
	var last string
	reserved := scalar[time.Time](t, db, `SELECT reserved_at FROM pgq.jobs WHERE uuid = $1::uuid`, id)
	defer func() {
		t.Logf("lease of the job (seconds after its first reservation):\n  %s", strings.Join(leases, "\n  "))
	}()
	waitUntil(t, 20*time.Second, "the 10 s job finished", func() bool {
		var w string
		var n int
		var until time.Time
		err := db.Pool.QueryRow(context.Background(),
			`SELECT worker, attempts, lease_until FROM pgq.running WHERE uuid = $1::uuid`, id).Scan(&w, &n, &until)
		if err == nil {
			holders[w] = true
			if l := fmt.Sprintf("attempt %d held by %s until +%.2fs", n, w, until.Sub(reserved).Seconds()); l != last {
				leases = append(leases, fmt.Sprintf("at +%.2fs: %s", time.Since(reserved).Seconds(), l))
				last = l
			}
		}
		return !jobLive(t, db, id)
	})
	require.Equal(t, map[string]bool{"A": true}, holders, "only A ever held the job")
	require.Equal(t, []attempt{{1, "A", "succeeded"}}, attemptsOf(t, db, id))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'lease_expired'`))
	require.Equal(t, 1, scalar[int](t, db, `SELECT count(*)::int FROM app.runs WHERE n = '1' AND worker = 'A'`))
	require.NotContains(t, b.logs(), "outcome=", "B never ran a job")
}

// ---------------------------------------------------------------------------------------
// S15: fencing

// S15: a frozen worker (SIGSTOP) stops heartbeating, its lease ends and worker B takes
// and finishes the job. When A wakes up, its completion is rejected and recorded on its
// attempt, its handler's effects are rolled back, and it logs lease_lost. The job
// succeeds exactly once.
func TestS15E2EFencingFrozenWorker(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `
CREATE SCHEMA app;
CREATE TABLE app.effects (n text, worker text);
-- Records which worker runs it; A's run is slow, B's fast.
CREATE FUNCTION app.effect(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    w text;
BEGIN
    w := current_setting('pgq.worker');
    INSERT INTO app.effects VALUES (p->>'n', w);
    PERFORM pg_sleep(CASE WHEN w = 'A' THEN 10 ELSE 0.2 END);
END
$$;
-- A 4 s lease: with 2 s, B's own lease ran out under its 0.2 s handler on a loaded CI machine.
SELECT pgq.define_queue('default', retry_after => 4);
SELECT pgq.define_job('effect', handler => 'app.effect', tries => 3);
`)
	a := startWorker(t, db, "A", "--sleep", "1", "--concurrency", "2")
	id := dispatch(t, db, `pgq.dispatch('effect', '{"n":"1"}')`)
	waitUntil(t, 5*time.Second, "A reserved the job", func() bool { return reservedBy(db, id) == "A" })
	waitUntil(t, 5*time.Second, "A's handler runs", func() bool { return sqlHandlers(db) == 1 })
	a.signal(t, syscall.SIGSTOP)

	startWorker(t, db, "B", "--sleep", "0.5", "--concurrency", "2")
	waitUntil(t, 12*time.Second, "B took the job and finished it", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM pgq.attempts WHERE job_uuid = $1::uuid AND worker = 'B' AND outcome = 'succeeded'`, id)
		return n == 1
	})
	// A's handler (in PostgreSQL) finishes its sleep and calls complete with its stale
	// token while A is still frozen; its transaction is then aborted, waiting for A.
	waitUntil(t, 15*time.Second, "A's handler transaction ended in PostgreSQL", func() bool {
		n, err := try[int](db, `SELECT count(*)::int FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'idle in transaction (aborted)' AND query LIKE '%run_sql_job%'`)
		return err == nil && n == 1
	})
	a.signal(t, syscall.SIGCONT)
	a.waitLog(t, 10*time.Second, "outcome=lease_lost")

	// S35: A's SQL handler had not committed when its lease ran out, so its attempt was
	// given back: B's run is attempt 1 again.
	require.Equal(t, []attempt{{1, "A", "lease_expired"}, {1, "B", "succeeded"}}, attemptsOf(t, db, id))
	rejected := scalar[[]string](t, db,
		`SELECT coalesce(rejected_calls, '{}') FROM pgq.attempts WHERE job_uuid = $1::uuid AND worker = 'A'`, id)
	require.NotEmpty(t, rejected, "A's stale completion is recorded on its attempt")
	require.True(t, strings.Contains(strings.Join(rejected, "\n"), "complete"), "rejected_calls mention complete: %q", rejected)
	require.Empty(t, scalar[[]string](t, db,
		`SELECT coalesce(rejected_calls, '{}') FROM pgq.attempts WHERE job_uuid = $1::uuid AND worker = 'B'`, id))
	require.Equal(t, []string{"B"}, scalar[[]string](t, db, `SELECT coalesce(array_agg(worker), '{}') FROM app.effects`),
		"only B's effects committed")
	require.Equal(t, 1, scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))
	require.False(t, jobLive(t, db, id))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	require.False(t, a.exited(), "A keeps running after losing its lease")
}

// ---------------------------------------------------------------------------------------
// S32: graceful stop

// S32: SIGTERM or SIGINT lets a handler that finishes within --shutdown-grace complete,
// releases the one that does not (no delay, attempt refunded) and exits 0.
func TestS32E2EGracefulStop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		sig  os.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"SIGINT", syscall.SIGINT}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := pgqtest.New(t)
			db.Exec(t, appSchema+`SELECT pgq.define_job('slow', handler => 'app.slow', tries => 3);`)
			// The short job needs a fraction of the grace, even on a loaded machine; the
			// long one outlives it.
			const grace = 2 * time.Second
			w := startWorker(t, db, "W", "--shutdown-grace", "2", "--sleep", "1", "--concurrency", "2")
			long := dispatch(t, db, `pgq.dispatch('slow', '{"n":"long","secs":20}')`)
			waitUntil(t, 5*time.Second, "the long job runs", func() bool { return reservedBy(db, long) == "W" && sqlHandlers(db) == 1 })
			short := dispatch(t, db, `pgq.dispatch('slow', '{"n":"short","secs":0.3}')`)
			waitUntil(t, 5*time.Second, "the short job runs", func() bool { return reservedBy(db, short) == "W" })

			w.signal(t, tc.sig)
			sent := time.Now()
			require.Equal(t, 0, w.waitExit(t, 15*time.Second), "clean exit")
			// Past the grace, the worker gives cancelled handlers its timeout grace (5 s)
			// to return, then writes their releases and exits.
			require.Less(t, time.Since(sent), grace+5*time.Second, "exits soon after the grace")

			// The short job finished within the grace.
			require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, short))
			require.False(t, jobLive(t, db, short))
			require.Equal(t, 1, scalar[int](t, db, `SELECT count(*)::int FROM app.runs WHERE n = 'short'`))

			// The long job is waiting again, at once, with its attempt given back.
			require.True(t, scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pgq.ready WHERE uuid = $1::uuid)`, long),
				"the released job is ready")
			require.True(t, scalar[bool](t, db, `SELECT reserved_at IS NULL AND reserved_by IS NULL FROM pgq.jobs WHERE uuid = $1::uuid`, long))
			require.Equal(t, 0, scalar[int](t, db, `SELECT attempts FROM pgq.jobs WHERE uuid = $1::uuid`, long), "attempt refunded")
			require.Equal(t, []attempt{{1, "W", "released"}}, attemptsOf(t, db, long))
			require.Equal(t, 0, scalar[int](t, db, `SELECT delay FROM pgq.attempts WHERE job_uuid = $1::uuid`, long))
			require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.running`), "nothing left reserved")
			require.Contains(t, w.logs(), "outcome=released")
		})
	}
}

// S32 (with S13's "never at the same time as its own retry"): after a graceful stop has
// released a job whose handler did not finish within the grace, that handler must not
// still be running in PostgreSQL. Otherwise the released job can be picked up and run
// again while its first run continues (holding its row locks) until statement_timeout.
func TestS13S32E2EGracefulStopStopsSQLHandler(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`SELECT pgq.define_job('slow', handler => 'app.slow', tries => 3);`)
	w := startWorker(t, db, "W", "--shutdown-grace", "1", "--sleep", "1", "--concurrency", "2")
	long := dispatch(t, db, `pgq.dispatch('slow', '{"n":"long","secs":20}')`)
	waitUntil(t, 5*time.Second, "the long job runs", func() bool { return reservedBy(db, long) == "W" && sqlHandlers(db) == 1 })
	w.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, w.waitExit(t, 10*time.Second))
	require.Equal(t, []attempt{{1, "W", "released"}}, attemptsOf(t, db, long))

	deadline := time.Now().Add(3 * time.Second)
	for sqlHandlers(db) != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	require.Zero(t, sqlHandlers(db),
		"the released job's handler still runs in PostgreSQL 3 s after the worker exited (orphaned backend)")
}

// ---------------------------------------------------------------------------------------
// S13: timeout

// S13: a SQL handler that runs past its timeout is cut off there; the attempt is
// timed_out and the job retried while tries remain, then failed with TimeoutExceeded.
// With fail_on_timeout the first timeout fails the job.
func TestS13E2ETimeout(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
SELECT pgq.define_job('nap', handler => 'app.slow', timeout => 1, tries => 2, backoff => '{0}');
SELECT pgq.define_job('nap_fot', handler => 'app.slow', timeout => 1, tries => 3, backoff => '{0}', fail_on_timeout => true);
`)
	nap := dispatch(t, db, `pgq.dispatch('nap', '{"n":"nap","secs":5}')`)
	fot := dispatch(t, db, `pgq.dispatch('nap_fot', '{"n":"fot","secs":5}')`)
	w := startWorker(t, db, "W", "--sleep", "1", "--concurrency", "2", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 20*time.Second))

	require.Equal(t, []attempt{{1, "W", "timed_out"}, {2, "W", "timed_out"}}, attemptsOf(t, db, nap))
	require.Equal(t, []attempt{{1, "W", "timed_out"}}, attemptsOf(t, db, fot))
	for _, id := range []string{nap, fot} {
		exc := scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1::uuid`, id)
		require.True(t, strings.HasPrefix(exc, "TimeoutExceeded"), "exception %q", exc)
		// Cut off at its 1 s timeout, not after its 5 s sleep.
		longest := scalar[float64](t, db, `SELECT max(extract(epoch FROM finished_at - reserved_at))::float8
			FROM pgq.attempts WHERE job_uuid = $1::uuid`, id)
		require.Less(t, longest, 3.0, "attempt ended %.1fs after its reservation", longest)
	}
	require.Equal(t, 2, scalar[int](t, db, `SELECT attempts FROM pgq.failed_jobs WHERE uuid = $1::uuid`, nap))
	require.Equal(t, 1, scalar[int](t, db, `SELECT attempts FROM pgq.failed_jobs WHERE uuid = $1::uuid`, fot))
	require.Equal(t, []bool{false, true}, scalar[[]bool](t, db,
		`SELECT array_agg(final ORDER BY id) FROM pgq.attempts WHERE job_uuid = $1::uuid`, nap))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM app.runs`), "no timed-out run committed")
	require.Contains(t, w.logs(), "outcome=timed_out")
}

// ---------------------------------------------------------------------------------------
// S33: bad input

// S33: an unknown job name, a SQL handler that raises, a handler whose function was
// dropped and a payload the handler cannot decode each fail their attempt with a clear
// exception, and the same worker process goes on to complete a good job.
func TestS33E2EBadJobsDoNotKillWorker(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
CREATE FUNCTION app.boom(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'boom: cannot sync product %', p->>'n';
END
$$;
CREATE FUNCTION app.gone(p jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
SELECT pgq.define_job('boom', handler => 'app.boom');
SELECT pgq.define_job('gone', handler => 'app.gone');
SELECT pgq.define_job('rec', handler => 'app.rec');
SELECT pgq.define_job('slow', handler => 'app.slow');
DROP FUNCTION app.gone(jsonb);
`)
	w := startWorker(t, db, "W", "--sleep", "1", "--concurrency", "1")
	bad := map[string]string{
		dispatch(t, db, `pgq.dispatch('nosuch', '{"n":"1"}')`):                `no handler for job "nosuch"`,
		dispatch(t, db, `pgq.dispatch('boom', '{"n":"88"}')`):                 "boom: cannot sync product 88",
		dispatch(t, db, `pgq.dispatch('gone', '{"n":"3"}')`):                  "was dropped since",
		dispatch(t, db, `pgq.dispatch('slow', '{"n":"4","secs":"a while"}')`): "invalid input syntax",
	}
	waitUntil(t, 10*time.Second, "the four bad jobs failed", func() bool {
		n, _ := try[int](db, `SELECT count(*)::int FROM pgq.failed_jobs`)
		return n == len(bad)
	})
	for id, want := range bad {
		exc := scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE uuid = $1::uuid`, id)
		require.Contains(t, exc, want)
		require.Equal(t, []attempt{{1, "W", "failed"}}, attemptsOf(t, db, id))
	}
	gone := scalar[string](t, db, `SELECT exception FROM pgq.failed_jobs WHERE job = 'gone'`)
	require.Contains(t, gone, "does not exist")

	good := dispatch(t, db, `pgq.dispatch('rec', '{"n":"good"}')`)
	waitUntil(t, 5*time.Second, "the good job ran", func() bool { return !jobLive(t, db, good) })
	require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, good))
	require.Equal(t, 1, scalar[int](t, db, `SELECT count(*)::int FROM app.runs WHERE n = 'good'`))
	require.False(t, w.exited(), "the worker is still alive")
	require.Equal(t, 4, strings.Count(w.logs(), "outcome=failed"))
}

// S33 (and S15): a SQL handler's exception fails the attempt whatever its SQLSTATE. A
// handler whose error happens to carry pgq's own lease-lost code PQ001 (for instance
// because it calls a pgq function that raises it) must not be taken for a lost lease,
// let alone completed as a success with its effects rolled back.
func TestS15S33E2ESQLHandlerRaisingPQ001Fails(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
CREATE FUNCTION app.odd(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO app.runs (n) VALUES (p->>'n');
    RAISE EXCEPTION 'odd failure' USING ERRCODE = 'PQ001';
END
$$;
SELECT pgq.define_job('odd', handler => 'app.odd');
`)
	id := dispatch(t, db, `pgq.dispatch('odd', '{"n":"1"}')`)
	w := startWorker(t, db, "W", "--sleep", "1", "--concurrency", "1", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 10*time.Second))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM app.runs`), "the handler's effects rolled back")
	require.Equal(t, []attempt{{1, "W", "failed"}}, attemptsOf(t, db, id), "the raising handler's attempt failed")
	require.Contains(t, scalar[string](t, db, `SELECT coalesce((SELECT exception FROM pgq.failed_jobs WHERE uuid = $1::uuid), '')`, id),
		"odd failure")
}

// ---------------------------------------------------------------------------------------
// S20: failed jobs through the CLI

// S20: pgq-worker failed list / show / retry UUID / retry all / forget / flush.
func TestS20E2EFailedCLI(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `
CREATE SCHEMA app;
CREATE FUNCTION app.boom(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'vendor 500 for %', p->>'n';
END
$$;
SELECT pgq.define_job('boom', handler => 'app.boom');
`)
	var ids []string
	for _, n := range []string{"1", "2", "3"} {
		out, errOut, code := cli(t, db, "dispatch", "boom", `{"n":"`+n+`"}`)
		require.Equal(t, 0, code, errOut)
		ids = append(ids, strings.TrimSpace(out))
	}
	runAll := func() {
		t.Helper()
		w := startWorker(t, db, "W", "--sleep", "1", "--stop-when-empty")
		require.Equal(t, 0, w.waitExit(t, 15*time.Second))
	}
	runAll()
	require.Equal(t, 3, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))

	// list
	out, errOut, code := cli(t, db, "failed", "list")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Contains(t, lines[0], "UUID")
	require.Contains(t, lines[0], "EXCEPTION")
	for _, id := range ids {
		require.Contains(t, out, id)
	}
	require.Contains(t, out, "vendor 500 for 2")
	require.Contains(t, out, "boom")

	// show
	out, errOut, code = cli(t, db, "failed", "show", ids[0])
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, ids[0])
	require.Contains(t, out, "vendor 500 for 1")
	require.Contains(t, out, `{"n": "1"}`)
	require.Regexp(t, `(?m)^\s+1\s+failed\s+W\s`, out, "the attempt history is printed")

	_, _, code = cli(t, db, "failed", "show", "00000000-0000-0000-0000-000000000000")
	require.NotEqual(t, 0, code, "show of an unknown uuid fails")

	// retry UUID
	out, errOut, code = cli(t, db, "failed", "retry", ids[0])
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, ids[0])
	require.False(t, scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pgq.failed_jobs WHERE uuid = $1::uuid)`, ids[0]))
	require.Equal(t, 0, scalar[int](t, db, `SELECT attempts FROM pgq.jobs WHERE uuid = $1::uuid`, ids[0]))
	require.True(t, scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pgq.ready WHERE uuid = $1::uuid)`, ids[0]))
	require.Equal(t, []attempt{{1, "W", "failed"}}, attemptsOf(t, db, ids[0]), "history kept")
	_, _, code = cli(t, db, "failed", "retry", ids[0])
	require.NotEqual(t, 0, code, "retrying a job that is no longer failed fails")

	// retry all
	out, errOut, code = cli(t, db, "failed", "retry", "all")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "2 failed jobs put back")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	require.Equal(t, 3, scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE attempts = 0`))

	// They fail again; the history now has two attempts each.
	runAll()
	require.Equal(t, 3, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	require.Equal(t, []attempt{{1, "W", "failed"}, {1, "W", "failed"}}, attemptsOf(t, db, ids[1]))
	out, errOut, code = cli(t, db, "failed", "show", ids[1])
	require.Equal(t, 0, code, errOut)
	require.Len(t, regexpLines(out, `^\s+1\s+failed\s+W\s`), 2, out)

	// forget
	out, errOut, code = cli(t, db, "failed", "forget", ids[1])
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, ids[1]+" forgotten")
	require.Equal(t, 2, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	_, _, code = cli(t, db, "failed", "forget", ids[1])
	require.NotEqual(t, 0, code, "forgetting twice fails")

	// flush --hours keeps recent failures; flush --all deletes them all.
	out, errOut, code = cli(t, db, "failed", "flush", "--hours", "1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "0 failed jobs deleted")
	require.Equal(t, 2, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	db.Exec(t, `UPDATE pgq.failed_jobs SET failed_at = now() - interval '2 hours' WHERE uuid = $1::uuid`, ids[2])
	out, errOut, code = cli(t, db, "failed", "flush", "--hours", "1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "1 failed jobs deleted")
	require.Equal(t, []string{ids[0]}, scalar[[]string](t, db, `SELECT array_agg(uuid::text) FROM pgq.failed_jobs`))
	out, errOut, code = cli(t, db, "failed", "flush", "--all")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "1 failed jobs deleted")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`))
	out, _, code = cli(t, db, "failed", "list")
	require.Equal(t, 0, code)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 1, "only the header: %s", out)
}

func regexpLines(s, re string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if ok, _ := regexp.MatchString(re, l); ok {
			out = append(out, l)
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------
// S30: queue priority

// S30: with --queue high,low --concurrency 1 every job of high runs before any of low,
// even when the low jobs were dispatched first.
func TestS30E2EQueuePriority(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`
SELECT pgq.define_queue('high');
SELECT pgq.define_queue('low');
SELECT pgq.define_job('rec', handler => 'app.slow');
`)
	for i := range 3 {
		dispatch(t, db, `pgq.dispatch('rec', jsonb_build_object('n', $1::text, 'secs', 0.1), queue => 'low')`, fmt.Sprint("low", i))
	}
	for i := range 3 {
		dispatch(t, db, `pgq.dispatch('rec', jsonb_build_object('n', $1::text, 'secs', 0.1), queue => 'high')`, fmt.Sprint("high", i))
	}
	w := startWorker(t, db, "W", "--queue", "high,low", "--concurrency", "1", "--sleep", "1", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 15*time.Second))

	require.Equal(t, 6, scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`))
	require.Equal(t, 6, scalar[int](t, db, `SELECT count(*)::int FROM app.runs`))
	// By the handlers' own clocks: the last high run ended before the first low run began.
	require.True(t, scalar[bool](t, db, `SELECT (SELECT max(finished) FROM app.runs WHERE n LIKE 'high%')
		< (SELECT min(started) FROM app.runs WHERE n LIKE 'low%')`))
	// And by the attempt history: every high attempt was reserved before any low one.
	require.True(t, scalar[bool](t, db, `SELECT (SELECT max(started_at) FROM pgq.attempts WHERE queue = 'high')
		< (SELECT min(started_at) FROM pgq.attempts WHERE queue = 'low')`))
	require.Equal(t, []string{"high", "high", "high", "low", "low", "low"}, scalar[[]string](t, db,
		`SELECT array_agg(queue ORDER BY started_at, id) FROM pgq.attempts`))
}

// ---------------------------------------------------------------------------------------
// S19: attempt times of SQL handlers

// S19: the attempt history says when an attempt finished. For a SQL handler the
// attempt's finished_at must not be earlier than the moment its handler returned.
func TestS19E2ESQLAttemptFinishedAt(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`SELECT pgq.define_job('slow', handler => 'app.slow');`)
	id := dispatch(t, db, `pgq.dispatch('slow', '{"n":"1","secs":1.5}')`)
	w := startWorker(t, db, "W", "--sleep", "1", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 10*time.Second))
	require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, id))
	var handlerEnd, finishedAt time.Time
	var took float64
	require.NoError(t, db.Pool.QueryRow(context.Background(), `
		SELECT r.finished, a.finished_at, extract(epoch FROM a.finished_at - a.started_at)::float8
		FROM app.runs r, pgq.attempts a WHERE a.job_uuid = $1::uuid`, id).Scan(&handlerEnd, &finishedAt, &took))
	require.False(t, finishedAt.Before(handlerEnd),
		"attempt finished_at %s is before its handler returned at %s (attempt took %.3fs by the history, the handler slept 1.5s)",
		finishedAt.Format(time.RFC3339Nano), handlerEnd.Format(time.RFC3339Nano), took)
}

// ---------------------------------------------------------------------------------------
// S31: wake-up

// listenerPID returns the pid of the worker's LISTEN connection, 0 when there is none.
func listenerPID(db *pgqtest.DB) int {
	pid, err := try[int](db, `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '-- name: ListenJobs%'`)
	if err != nil {
		return 0
	}
	return pid
}

// S31: an idle worker (--sleep 30, so no poll can help) starts a newly committed job
// within 2 s: NOTIFY woke it. After its LISTEN connection is killed it reconnects, and a
// job dispatched meanwhile still runs (the reconnect wakes the loop); with --sleep 1 a
// job that no NOTIFY announces (a delayed one) is found by polling.
func TestS31E2EWakeUp(t *testing.T) {
	t.Parallel()
	t.Run("notify and reconnect", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		db.Exec(t, appSchema+`SELECT pgq.define_job('rec', handler => 'app.rec');`)
		w := startWorker(t, db, "W", "--sleep", "30", "--concurrency", "2")
		// A worker's start, on a machine busy with the rest of the suite, is not what S31 times.
		waitUntil(t, 15*time.Second, "the worker listens", func() bool { return listenerPID(db) != 0 })
		time.Sleep(500 * time.Millisecond) // past its first reserve: idle

		start := time.Now()
		id := dispatch(t, db, `pgq.dispatch('rec', '{"n":"1"}')`)
		waitUntil(t, 2*time.Second, "the job ran, woken by NOTIFY", func() bool { return !jobLive(t, db, id) })
		t.Logf("woken job done %s after dispatch", time.Since(start).Round(time.Millisecond))
		require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, id))

		old := listenerPID(db)
		require.True(t, scalar[bool](t, db, `SELECT pg_terminate_backend($1)`, old))
		id2 := dispatch(t, db, `pgq.dispatch('rec', '{"n":"2"}')`) // its NOTIFY may reach no one
		start = time.Now()
		waitUntil(t, 5*time.Second, "the job dispatched while the listener was down ran", func() bool { return !jobLive(t, db, id2) })
		t.Logf("job dispatched during the listener outage done %s later", time.Since(start).Round(time.Millisecond))
		waitUntil(t, 5*time.Second, "the listener reconnected", func() bool { p := listenerPID(db); return p != 0 && p != old })
		w.waitLog(t, time.Second, "listener connection lost")

		time.Sleep(300 * time.Millisecond)
		start = time.Now()
		id3 := dispatch(t, db, `pgq.dispatch('rec', '{"n":"3"}')`)
		waitUntil(t, 2*time.Second, "a job after the reconnect is woken by NOTIFY", func() bool { return !jobLive(t, db, id3) })
		t.Logf("after reconnect: done %s after dispatch", time.Since(start).Round(time.Millisecond))
		require.Equal(t, 3, scalar[int](t, db, `SELECT count(*)::int FROM app.runs`))
		require.False(t, w.exited())
	})
	t.Run("poll", func(t *testing.T) {
		t.Parallel()
		db := pgqtest.New(t)
		db.Exec(t, appSchema+`SELECT pgq.define_job('rec', handler => 'app.rec');`)
		w := startWorker(t, db, "W", "--sleep", "1", "--concurrency", "2")
		// A worker's start, on a machine busy with the rest of the suite, is not what S31 times.
		waitUntil(t, 15*time.Second, "the worker listens", func() bool { return listenerPID(db) != 0 })
		require.True(t, scalar[bool](t, db, `SELECT pg_terminate_backend($1)`, listenerPID(db)))
		// A delayed job sends no NOTIFY: only the poll can find it once it is due.
		id := dispatch(t, db, `pgq.dispatch('rec', '{"n":"1"}', delay => interval '1 second')`)
		due := time.Now().Add(time.Second)
		waitUntil(t, 5*time.Second, "the delayed job ran", func() bool { return !jobLive(t, db, id) })
		require.Less(t, time.Since(due), 2500*time.Millisecond, "found by the 1 s poll")
		require.Equal(t, []attempt{{1, "W", "succeeded"}}, attemptsOf(t, db, id))
		require.False(t, w.exited())
	})
}

// ---------------------------------------------------------------------------------------
// --once, --max-jobs, --stop-when-empty

// --once runs exactly one job and exits 0; --max-jobs 3 runs three; --stop-when-empty
// runs the rest and exits 0 when the queue is empty.
func TestE2EStopFlags(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, appSchema+`SELECT pgq.define_job('rec', handler => 'app.slow');`)
	for i := range 6 {
		dispatch(t, db, `pgq.dispatch('rec', jsonb_build_object('n', $1::text, 'secs', 0.05))`, fmt.Sprint(i))
	}
	done := func() int {
		return scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts WHERE outcome = 'succeeded'`)
	}

	w := startWorker(t, db, "once", "--once", "--sleep", "1")
	require.Equal(t, 0, w.waitExit(t, 10*time.Second))
	require.Equal(t, 1, done())
	require.Equal(t, 5, scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs`))

	w = startWorker(t, db, "max3", "--max-jobs", "3", "--sleep", "1")
	require.Equal(t, 0, w.waitExit(t, 10*time.Second))
	require.Equal(t, 4, done())
	require.Equal(t, 3, strings.Count(w.logs(), "outcome=succeeded"))
	require.Equal(t, 2, scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs`))

	w = startWorker(t, db, "max3-one-by-one", "--max-jobs", "3", "--concurrency", "1", "--sleep", "1", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 10*time.Second))
	require.Equal(t, 6, done(), "stops when empty before reaching max-jobs")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs`))

	w = startWorker(t, db, "empty", "--stop-when-empty", "--sleep", "30")
	require.Equal(t, 0, w.waitExit(t, 5*time.Second), "exits on an empty queue without waiting for a poll")
	w = startWorker(t, db, "once-empty", "--once", "--sleep", "30")
	require.Equal(t, 0, w.waitExit(t, 5*time.Second))
	require.Equal(t, 6, done())
	require.Equal(t, 6, scalar[int](t, db, `SELECT count(*)::int FROM app.runs`))
}
