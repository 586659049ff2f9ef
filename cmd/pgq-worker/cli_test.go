package main

// The command line itself, through the binary: flags each command accepts and honours,
// help, exit codes (0 ok, 1 runtime failure, 2 usage error), error messages, and that
// no password is ever shown.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// pgqWorker runs the binary with exactly args (no --database-url added, unlike cli) and
// with env added to the environment, and returns its stdout, stderr and exit code.
func pgqWorker(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, workerBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("pgq-worker %s: %v", strings.Join(args, " "), err)
		}
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// failJob dispatches job on queue with one try and fails it for good through
// pgq.reserve and pgq.fail, as a worker does. It returns the job's uuid.
func failJob(t *testing.T, db *pgqtest.DB, queue, job string) string {
	t.Helper()
	id := dispatch(t, db, `pgq.dispatch($1, '{}', queue => $2, tries => 1)`, job, queue)
	token := scalar[string](t, db,
		`SELECT lease_token::text FROM pgq.reserve('test', ARRAY[$1], 1) WHERE uuid = $2::uuid AND pickup IS NULL`, queue, id)
	require.True(t, scalar[bool](t, db, `SELECT final FROM pgq.fail($1::uuid, $2::uuid, 'boom')`, id, token))
	return id
}

// failedUUIDs returns the uuids in pgq.failed_jobs, in failure order.
func failedUUIDs(t *testing.T, db *pgqtest.DB) []string {
	t.Helper()
	return scalar[[]string](t, db, `SELECT coalesce(array_agg(uuid::text ORDER BY id), '{}') FROM pgq.failed_jobs`)
}

// Defect: `failed flush --queue other` deleted the failed jobs of every queue. flush
// honours --queue, --job and --hours together, and without a filter it deletes nothing
// unless given --all.
func TestCLIFlushHonoursQueueAndJob(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	defaultA, defaultB := failJob(t, db, "default", "a"), failJob(t, db, "default", "b")
	failJob(t, db, "other", "a")
	failJob(t, db, "other", "b")
	oldDefaultB := failJob(t, db, "default", "b")
	db.Exec(t, `UPDATE pgq.failed_jobs SET failed_at = now() - interval '2 hours' WHERE uuid = $1::uuid`, oldDefaultB)

	out, errOut, code := cli(t, db, "failed", "flush", "--queue", "other")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "2 failed jobs deleted\n", out)
	require.Equal(t, []string{defaultA, defaultB, oldDefaultB}, failedUUIDs(t, db), "only queue other's were deleted")

	out, errOut, code = cli(t, db, "failed", "flush", "--job", "b", "--queue", "default", "--hours", "1")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "1 failed jobs deleted\n", out)
	require.Equal(t, []string{defaultA, defaultB}, failedUUIDs(t, db))

	out, errOut, code = cli(t, db, "failed", "flush", "--job", "b")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "1 failed jobs deleted\n", out)
	require.Equal(t, []string{defaultA}, failedUUIDs(t, db))

	// No filter: a usage error that names --all, and nothing deleted.
	out, errOut, code = cli(t, db, "failed", "flush")
	require.Equal(t, 2, code, out+errOut)
	require.Contains(t, errOut, "--all")
	require.Equal(t, []string{defaultA}, failedUUIDs(t, db))
	for _, args := range [][]string{
		{"--all", "--queue", "default"}, // --all is every failed job: not with a filter
		{"--queue", ""},                 // an empty filter is not "any"
		{"--hours", "0"},
		{"--hours", "-1"},
		{"nonsense"},
	} {
		out, errOut, code = cli(t, db, append([]string{"failed", "flush"}, args...)...)
		require.Equal(t, 2, code, "flush %v: %s%s", args, out, errOut)
		require.Equal(t, []string{defaultA}, failedUUIDs(t, db), "flush %v deleted something", args)
	}

	out, errOut, code = cli(t, db, "failed", "flush", "--all")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "1 failed jobs deleted\n", out)
	require.Empty(t, failedUUIDs(t, db))
}

// Defect (the same one, for retry): `failed retry all` takes --queue and --job and puts
// back only the failed jobs matching both; a single uuid takes neither.
func TestCLIRetryAllHonoursQueueAndJob(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	defaultA, defaultB := failJob(t, db, "default", "a"), failJob(t, db, "default", "b")
	otherA, otherB := failJob(t, db, "other", "a"), failJob(t, db, "other", "b")
	waiting := func() []string {
		return scalar[[]string](t, db, `SELECT coalesce(array_agg(uuid::text ORDER BY uuid), '{}') FROM pgq.jobs`)
	}

	out, errOut, code := cli(t, db, "failed", "retry", "all", "--job", "b")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "2 failed jobs put back on their queues\n", out)
	require.Equal(t, []string{defaultA, otherA}, failedUUIDs(t, db))
	require.ElementsMatch(t, []string{defaultB, otherB}, waiting())

	out, errOut, code = cli(t, db, "failed", "retry", "all", "--queue", "other", "--job", "a")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "1 failed jobs put back on their queues\n", out)
	require.Equal(t, []string{defaultA}, failedUUIDs(t, db))

	out, errOut, code = cli(t, db, "failed", "retry", defaultA, "--queue", "other")
	require.Equal(t, 2, code, out+errOut)
	require.Contains(t, errOut, "retry all")
	require.Equal(t, []string{defaultA}, failedUUIDs(t, db), "not retried")

	out, errOut, code = cli(t, db, "failed", "retry", "all", "--queue", "default")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "1 failed jobs put back on their queues\n", out)
	require.Empty(t, failedUUIDs(t, db))
	require.ElementsMatch(t, []string{defaultA, defaultB, otherA, otherB}, waiting())
}

// Defect: every `failed` subcommand accepted every other's flags (--queue on flush,
// --hours on list) and ignored them. A command rejects a flag it does not use: exit 2,
// nothing done.
func TestCLICommandsRejectFlagsTheyDoNotUse(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	id := failJob(t, db, "default", "a")
	for _, args := range [][]string{
		{"failed", "list", "--hours", "1"},
		{"failed", "list", "--all"},
		{"failed", "show", id, "--limit", "5"},
		{"failed", "forget", id, "--queue", "default"},
		{"failed", "retry", "all", "--hours", "1"},
		{"failed", "flush", "--all", "--limit", "1"},
		{"status", "--queue", "default"},
		{"check", "--watch", "1"},
		{"migrate", "--queue", "default"},
		{"dispatch", "j", "--hours", "1"},
	} {
		out, errOut, code := cli(t, db, args...)
		require.Equal(t, 2, code, "%v: %s%s", args, out, errOut)
		require.Contains(t, errOut, "unknown flag", "%v", args)
	}
	require.Equal(t, []string{id}, failedUUIDs(t, db))
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs`))
}

// Defect: with a password in DATABASE_URL, `status --help` and any mistyped flag
// printed it as the flag's default. No password in help, usage errors, connection
// errors or a malformed URL's error, whether it comes from DATABASE_URL or the flag.
func TestCLINeverPrintsPassword(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-pw-7f3a"
	// Nothing listens on port 1: connecting fails.
	unreachable := "postgres://pgq:" + secret + "@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=5"
	check := func(t *testing.T, want int, env []string, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := pgqWorker(t, env, args...)
		require.NotContains(t, out+errOut, secret, "%v", args)
		require.NotContains(t, out+errOut, "s3cr3t", "%v", args)
		require.Equal(t, want, code, "%v: %s%s", args, out, errOut)
		return out, errOut
	}
	env := []string{"DATABASE_URL=" + unreachable}
	t.Run("Help", func(t *testing.T) {
		t.Parallel()
		for _, args := range [][]string{
			{"status", "--help"}, {"work", "--help"}, {"migrate", "-h"}, {"dispatch", "--help"}, {"check", "--help"},
			{"failed", "--help"}, {"failed", "flush", "--help"}, {"failed", "list", "--help"}, {"help", "work"},
		} {
			out, _ := check(t, 0, env, args...)
			require.Regexp(t, `--database-url URL\s+PostgreSQL URL \(default \$DATABASE_URL\)\n`, out, "%v", args)
		}
	})
	t.Run("UsageErrors", func(t *testing.T) {
		t.Parallel()
		for _, args := range [][]string{
			{"status", "--wtach", "1"}, {"work", "--concurrency", "many"}, {"failed", "flush", "--bogus"},
			{"dispatch"}, {"failed", "retry", "nope"}, {"work", "--tries", "-1"},
			{"status", "--database-url", unreachable, "--wtach", "1"},
		} {
			_, errOut := check(t, 2, env, args...)
			require.NotEmpty(t, errOut)
		}
	})
	t.Run("ConnectionFailure", func(t *testing.T) {
		t.Parallel()
		for _, args := range [][]string{
			{"status"}, {"migrate"}, {"work", "--stop-when-empty"}, {"failed", "list"}, {"dispatch", "j"},
			{"check", "--database-url", unreachable},
		} {
			_, errOut := check(t, 1, env, args...)
			require.Contains(t, errOut, "failed to connect to `user=pgq database=postgres`", "%v", args)
		}
	})
	t.Run("MalformedURL", func(t *testing.T) {
		t.Parallel()
		for _, url := range []string{
			"postgres://pgq:" + secret + "@127.0.0.1:notaport/postgres",
			"postgres://pgq:" + secret + "@[::1/postgres",
			"postgres://127.0.0.1:notaport/postgres?password=" + secret,
			"host=127.0.0.1 port=notaport password=" + secret,
			"host=127.0.0.1 port=notaport password='" + secret + " x'",
		} {
			_, errOut := check(t, 2, []string{"DATABASE_URL=" + url}, "status")
			require.Contains(t, errOut, "database url: ", url)
			check(t, 2, nil, "failed", "list", "--database-url", url)
		}
	})
}

// Defect: `dispatch --tries -5` and `--timeout -3` were accepted and the class's values
// used instead. Every numeric flag of every command is checked as the SQL (or the
// worker) would: exit 2 naming the flag, and nothing done.
func TestCLIRejectsOutOfRangeNumbers(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.define_job('j', tries => 5, timeout => 30, backoff => '{7}')`)
	for _, tc := range []struct {
		flag string
		args []string
	}{
		{"--tries", []string{"dispatch", "j", "--tries", "-5"}},
		{"--timeout", []string{"dispatch", "j", "--timeout", "-3"}},
		{"--timeout", []string{"dispatch", "j", "--timeout", "0"}},       // S43: only a class may say "no timeout"
		{"--timeout", []string{"dispatch", "j", "--timeout", "2147484"}}, // S92: past what statement_timeout holds
		{"--delay", []string{"dispatch", "j", "--delay", "-1"}},
		{"--backoff", []string{"dispatch", "j", "--backoff", "10,-1"}},
		{"--backoff", []string{"dispatch", "j", "--backoff", ""}},
		{"--priority", []string{"dispatch", "j", "--priority", "2147483648"}},
		{"--priority", []string{"dispatch", "j", "--priority", "101"}}, // S43: -100 to 100
		{"--tries", []string{"dispatch", "j", "--tries", "2147483648"}},
		{"--concurrency", []string{"work", "--concurrency", "0"}},
		{"--tries", []string{"work", "--tries", "-1"}},
		{"--backoff", []string{"work", "--backoff", "-1"}},
		{"--timeout", []string{"work", "--timeout", "-1"}},
		{"--timeout", []string{"work", "--timeout", "2147484"}}, // S92
		{"--sleep", []string{"work", "--sleep", "0"}},
		{"--sleep", []string{"work", "--sleep", "-1"}},
		{"--sleep", []string{"work", "--sleep", "NaN"}},
		{"--sleep", []string{"work", "--sleep", "Inf"}},
		{"--fetch-cooldown", []string{"work", "--fetch-cooldown", "-1ms"}},
		{"--max-jobs", []string{"work", "--max-jobs", "-1"}},
		{"--max-time", []string{"work", "--max-time", "-1"}},
		{"--shutdown-grace", []string{"work", "--shutdown-grace", "-1"}},
		{"--keep-history", []string{"work", "--keep-history", "-1h"}},
		{"--vacuum-after", []string{"work", "--vacuum-after", "-1"}},
		{"--keep-failed", []string{"work", "--keep-failed", "-1h"}},
		{"--log-format", []string{"work", "--log-format", "xml"}},
		{"--max-jobs", []string{"work", "--once", "--max-jobs", "3"}},
		{"--limit", []string{"failed", "list", "--limit", "-1"}},
		{"--hours", []string{"failed", "flush", "--hours", "-2"}},
		{"--watch", []string{"status", "--watch", "-1"}},
		{"--timeout", []string{"check", "--timeout", "-1"}},
		{"--tries", []string{"check", "--tries", "-1"}},
	} {
		out, errOut, code := cli(t, db, tc.args...)
		require.Equal(t, 2, code, "%v: %s%s", tc.args, out, errOut)
		require.Contains(t, errOut, tc.flag, "%v names the flag", tc.args)
	}
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs`), "nothing dispatched")
	require.Zero(t, scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts`), "no worker ran")

	// A flag given is passed even when zero; one not given leaves the class's value.
	out, errOut, code := cli(t, db, "dispatch", "j", "--tries", "0", "--timeout", "1", "--priority", "-3")
	require.Equal(t, 0, code, errOut)
	var tries, timeout, priority int
	var backoff []int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		`SELECT tries, timeout, priority, backoff FROM pgq.jobs WHERE uuid = $1::uuid`, strings.TrimSpace(out)).
		Scan(&tries, &timeout, &priority, &backoff))
	require.Equal(t, []int{0, 1, -3}, []int{tries, timeout, priority})
	require.Equal(t, []int{7}, backoff, "the class's backoff")
}

// Defect: `pgq-worker failed --help` was an error, and `pgq-worker` alone exited 0.
// --help (and `help`) works at every level with exit 0; no command, an unknown command
// and wrong arguments print usage and exit 2.
func TestCLIHelpAndUsageExitCodes(t *testing.T) {
	t.Parallel()
	for _, path := range [][]string{
		{}, {"migrate"}, {"work"}, {"dispatch"}, {"status"}, {"check"}, {"completion"},
		{"failed"}, {"failed", "list"}, {"failed", "show"}, {"failed", "retry"}, {"failed", "forget"}, {"failed", "flush"},
	} {
		for _, args := range [][]string{append(path[:len(path):len(path)], "--help"), append([]string{"help"}, path...)} {
			out, errOut, code := pgqWorker(t, nil, args...)
			require.Equal(t, 0, code, "%v: %s", args, errOut)
			require.Contains(t, out, "Usage:", "%v", args)
			require.Contains(t, out, "pgq-worker "+strings.Join(path, " "), "%v", args)
		}
	}
	out, _, _ := pgqWorker(t, nil, "--help")
	for _, cmd := range []string{"migrate", "work", "dispatch", "failed", "status", "check", "completion"} {
		require.Regexp(t, `(?m)^  `+cmd+`\s`, out)
	}
	out, _, _ = pgqWorker(t, nil, "failed", "--help")
	for _, cmd := range []string{"list", "show", "retry", "forget", "flush"} {
		require.Regexp(t, `(?m)^  `+cmd+`\s`, out)
	}
	out, _, _ = pgqWorker(t, nil, "work", "--help")
	require.Contains(t, out, "127.0.0.1:9090", "a loopback example for --metrics-addr")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Usage:\n  pgq-worker [command]"},
		{[]string{"failed"}, "Usage:\n  pgq-worker failed [command]"},
		{[]string{"statsu"}, `unknown command "statsu" for "pgq-worker"`},
		{[]string{"failed", "lsit"}, `unknown command "lsit" for "pgq-worker failed"`},
		{[]string{"status", "extra"}, `unknown command "extra" for "pgq-worker status"`},
		{[]string{"dispatch"}, "dispatch takes JOB and an optional PAYLOAD"},
		{[]string{"dispatch", "j", "{not json"}, `invalid payload "{not json": not JSON`},
		{[]string{"failed", "show"}, "takes one job uuid"},
		{[]string{"--database-url", "x"}, "unknown flag: --database-url"},
	} {
		out, errOut, code := pgqWorker(t, nil, tc.args...)
		require.Equal(t, 2, code, "%v: %s%s", tc.args, out, errOut)
		require.Empty(t, out, "%v: usage goes to stderr", tc.args)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}

	out, errOut, code := pgqWorker(t, nil, "completion", "bash")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "bash completion")
	for _, shell := range []string{"zsh", "fish"} {
		out, errOut, code = pgqWorker(t, nil, "completion", shell)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "pgq-worker")
	}
}

// Defect: `failed retry not-a-uuid` said "invalid UUID length: 10". A malformed uuid is
// a usage error that quotes the argument.
func TestCLIInvalidUUIDNamesArgument(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	for _, sub := range []string{"show", "retry", "forget"} {
		out, errOut, code := cli(t, db, "failed", sub, "not-a-uuid")
		require.Equal(t, 2, code, "%s: %s%s", sub, out, errOut)
		require.Contains(t, errOut, `invalid job uuid "not-a-uuid"`, sub)
	}
}

// Defect: a worker pointed at an unmigrated database logged `schema "pgq" does not
// exist` every second, and with --stop-when-empty exited 0. Every command that needs the
// schema says to migrate and exits 1; after `migrate` they work.
func TestCLIUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `DROP SCHEMA pgq CASCADE`)
	const id = "0f8e2c1a-5b7d-4e8f-9a3b-2c1d0e9f8a7b"
	for _, args := range [][]string{
		{"work", "--sleep", "0.2"}, {"work", "--stop-when-empty"}, {"work", "--once"},
		{"dispatch", "j"}, {"status"}, {"check"},
		{"failed", "list"}, {"failed", "show", id}, {"failed", "retry", id}, {"failed", "retry", "all"},
		{"failed", "forget", id}, {"failed", "flush", "--all"}, {"jobs", "list"}, {"jobs", "show", id},
		{"batches", "list"}, {"batches", "show", id}, {"batches", "retry", id}, {"batches", "cancel", id},
	} {
		out, errOut, code := cli(t, db, args...)
		require.Equal(t, 1, code, "%v: %s%s", args, out, errOut)
		require.Equal(t, "pgq-worker: database is not migrated: run `pgq-worker migrate`\n", errOut, "%v", args)
	}
	out, errOut, code := cli(t, db, "migrate")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "pgq schema up to date")
	out, errOut, code = cli(t, db, "status")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "QUEUE")
}

// The metrics endpoint has no authentication: served beyond loopback, it says so.
func TestMetricsAddrBeyondLoopbackWarns(t *testing.T) {
	for addr, warns := range map[string]bool{"127.0.0.1:0": false, "0.0.0.0:0": true} {
		var stderr bytes.Buffer
		stop, err := serveMetrics(addr, prometheus.NewRegistry(), &stderr)
		require.NoError(t, err)
		stop()
		require.Equal(t, warns, strings.Contains(stderr.String(), "without authentication"), "%s: %q", addr, stderr.String())
	}
}
