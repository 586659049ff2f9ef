package faults

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// ---------------------------------------------------------------------------------------
// Sizes

// full is set by PGQ_FAULTS_FULL=1: the sizes of the issue, for the figures of
// bench/RESULTS.md. The default sizes keep the package within CI's budget.
var full = os.Getenv("PGQ_FAULTS_FULL") == "1"

// showLogs prints the warnings and errors of every fleet's workers, failed or not.
var showLogs = os.Getenv("PGQ_FAULTS_LOGS") == "1"

func size(def, fullSize int) int {
	if full {
		return fullSize
	}
	return def
}

func span(def, fullSpan time.Duration) time.Duration {
	if full {
		return fullSpan
	}
	return def
}

// ---------------------------------------------------------------------------------------
// Binaries

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// kind is which binary a worker runs.
type kind string

const (
	sqlWorker kind = "pgq-worker" // cmd/pgq-worker: SQL-function handlers
	goWorker  kind = "gohandlers" // faults/internal/gohandlers: Go handlers
)

// binary builds both binaries once per test run (without -race: they are the programs
// under test, not the test) and returns the path of k's.
func binary(t *testing.T, k kind) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "pgq-faults-")
		if binErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", binDir+string(filepath.Separator),
			"../cmd/pgq-worker", "./internal/gohandlers").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return filepath.Join(binDir, string(k))
}

// ---------------------------------------------------------------------------------------
// Processes

// syncBuffer is a bytes.Buffer safe for exec's copying goroutine and the test's reads.
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

// proc is one running worker process.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *syncBuffer // stdout and stderr
	done chan struct{}
}

// launch starts worker name of kind k on db with args; it does not fail the test, so a
// supervisor goroutine may call it.
func launch(t *testing.T, k kind, db *pgcluster.DB, name string, args ...string) (*proc, error) {
	var full []string
	if k == sqlWorker {
		full = append(full, "work")
	}
	full = append(full, "--database-url", db.URL, "--name", name)
	full = append(full, args...)
	p := &proc{name: name, cmd: exec.Command(binary(t, k), full...), log: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// startWorker starts one worker, killed at cleanup; its log's tail is printed when the
// test failed.
func startWorker(t *testing.T, k kind, db *pgcluster.DB, name string, args ...string) *proc {
	t.Helper()
	p, err := launch(t, k, db, name, args...)
	require.NoError(t, err)
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("log of worker %s (pid %d), last lines:\n%s", p.name, p.cmd.Process.Pid, tail(p.logs(), 40))
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

// kill ends the process (a SIGSTOPped one too) and waits for it.
func (p *proc) kill() {
	if !p.exited() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) logs() string { return p.log.String() }

// count returns how many lines of the log contain s.
func (p *proc) count(s string) int { return strings.Count(p.logs(), s) }

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// fleet is n workers of one kind, started together. With restart set, a supervisor
// starts a worker again a second after it exits, as systemd or Kubernetes would; every
// exit is counted either way.
type fleet struct {
	t    *testing.T
	mu   sync.Mutex
	all  []*proc // every process started, in order
	exit []string
	stop chan struct{}
	wg   sync.WaitGroup
}

func startFleet(t *testing.T, k kind, db *pgcluster.DB, n int, restart bool, args ...string) *fleet {
	t.Helper()
	binary(t, k) // build before starting the clock of anyone's drain
	f := &fleet{t: t, stop: make(chan struct{})}
	for i := range n {
		name := fmt.Sprintf("W%d", i+1)
		p, err := launch(t, k, db, name, args...)
		require.NoError(t, err)
		f.add(p)
		f.wg.Go(func() {
			for {
				select {
				case <-p.done:
				case <-f.stop:
					return
				}
				f.mu.Lock()
				f.exit = append(f.exit, fmt.Sprintf("%s exited with %d: %s", p.name, p.cmd.ProcessState.ExitCode(),
					lastLine(p.logs())))
				f.mu.Unlock()
				if !restart {
					return
				}
				select {
				case <-time.After(time.Second):
				case <-f.stop:
					return
				}
				np, err := launch(t, k, db, name, args...)
				if err != nil {
					t.Errorf("restart worker %s: %v", name, err)
					return
				}
				f.add(np)
				p = np
			}
		})
	}
	t.Cleanup(f.close)
	return f
}

func (f *fleet) add(p *proc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all = append(f.all, p)
}

func (f *fleet) procs() []*proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*proc(nil), f.all...)
}

// exits returns one line per worker exit so far.
func (f *fleet) exits() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.exit...)
}

// count returns how many log lines of all its processes contain s.
func (f *fleet) count(s string) int {
	n := 0
	for _, p := range f.procs() {
		n += p.count(s)
	}
	return n
}

func (f *fleet) close() {
	close(f.stop)
	f.wg.Wait()
	for _, p := range f.procs() {
		p.kill()
		if f.t.Failed() || showLogs {
			f.t.Logf("log of worker %s (pid %d), warnings and errors, last lines:\n%s", p.name, p.cmd.Process.Pid,
				tail(grepLines(p.logs(), "level=WARN", "level=ERROR", "gohandlers:", "pgq-worker:", "panic"), 25))
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// grepLines returns the lines of s containing any of subs.
func grepLines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

// ---------------------------------------------------------------------------------------
// Waiting

// waitFor polls cond every 50 ms until it holds or d has passed, and says which.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// waitUntil is waitFor that fails the test on timeout.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !waitFor(d, cond) {
		t.Fatalf("timed out after %s waiting until %s", d, what)
	}
}

// ---------------------------------------------------------------------------------------
// The application under test

// appSchema is the schema every scenario uses:
//
//	app.effects    one row per committed run of a job: its number n, overlap key k, the
//	               worker (when the payload asks, "who": true) and the handler's start and
//	               end (clock_timestamp). No unique constraint on n: a second run of a job
//	               is a second row, to be counted, not an error that would hide it. A Go
//	               run carries its own id (run), unique, so that a Go handler retrying an
//	               insert whose commit landed but whose answer a restart lost records its
//	               one run once.
//	app.effect(p)  the SQL handler: sleeps p.ms milliseconds, then records its run.
//
// The Go handler of faults/internal/gohandlers writes the same rows.
const appSchema = `
CREATE SCHEMA app;
CREATE TABLE app.effects (
    id       bigserial PRIMARY KEY,
    n        int NOT NULL,
    k        text,
    worker   text,
    started  timestamptz NOT NULL,
    finished timestamptz NOT NULL DEFAULT clock_timestamp(),
    run      uuid UNIQUE
);
CREATE INDEX ON app.effects (n);
CREATE FUNCTION app.effect(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM pg_sleep(coalesce((p->>'ms')::float8, 0) / 1000);
    INSERT INTO app.effects (n, k, worker, started)
    VALUES ((p->>'n')::int, p->>'k',
            CASE WHEN (p->>'who')::boolean THEN current_setting('pgq.worker') END,
            t0);
END
$$;
`

// dispatchEffects dispatches jobs n = 1..jobs of class job, each sleeping ms.
func dispatchEffects(t *testing.T, db *pgcluster.DB, job string, jobs, ms int) {
	t.Helper()
	require.Equal(t, jobs, pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.dispatch_many($1,
		ARRAY(SELECT jsonb_build_object('n', i, 'ms', $3::int) FROM generate_series(1, $2::int) i))`, job, jobs, ms))
}

// effectsCount is the number of committed runs; -1 while the database does not answer.
func effectsCount(db *pgcluster.DB) int {
	n, err := pgcluster.Try[int](db, `SELECT count(*)::int FROM app.effects`)
	if err != nil {
		return -1
	}
	return n
}

// drained tells whether no live job is left (each succeeded or failed for good).
func drained(db *pgcluster.DB) bool {
	empty, err := pgcluster.Try[bool](db, `SELECT NOT EXISTS (SELECT FROM pgq.live_jobs)`)
	return err == nil && empty
}

// ---------------------------------------------------------------------------------------
// Figures

// figures are one run's counts, logged in one line for bench/RESULTS.md.
type figures struct {
	jobs       int           // dispatched
	faults     int           // faults injected
	done       int           // jobs with at least one committed run
	lost       int           // jobs with no committed run
	duplicated int           // jobs with two or more committed runs
	failed     int           // rows in pgq.failed_jobs
	burned     int           // attempts charged to infrastructure: failed, timed_out, lease_expired, exhausted (no handler here raises)
	left       int           // live jobs at the end
	recovery   time.Duration // longest wait, after a fault ended, for the next job to succeed (-1: none did)
	recovered  bool          // recovery was measured
	drain      time.Duration // from the workers' start to the end of the drain (or the give-up)
	exits      int           // worker processes that exited
	extra      []string      // scenario-specific key=value
}

// measure reads the counts of jobs 1..jobs from app.effects and pgq's tables, and the
// recovery after each fault from the runs' end times.
func measure(t *testing.T, db *pgcluster.DB, jobs int, faultsEnded []time.Time) figures {
	t.Helper()
	f := figures{jobs: jobs, faults: len(faultsEnded)}
	require.NoError(t, db.Pool.QueryRow(t.Context(), `
		SELECT count(*) FILTER (WHERE c >= 1)::int, count(*) FILTER (WHERE c = 0)::int, count(*) FILTER (WHERE c > 1)::int
		FROM (SELECT i, count(e.id) AS c FROM generate_series(1, $1::int) i LEFT JOIN app.effects e ON e.n = i GROUP BY i) s`,
		jobs).Scan(&f.done, &f.lost, &f.duplicated))
	f.failed = pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.failed_jobs`)
	f.burned = pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.attempts
		WHERE outcome IN ('failed', 'timed_out', 'lease_expired', 'exhausted')`)
	f.left = pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs`)
	// Recovery is read from the completions, not the effects: a Go handler that retries
	// its insert records an effect the moment the server is back, worker or no worker.
	ends := pgcluster.Scalar[[]time.Time](t, db, `SELECT coalesce(array_agg(finished_at ORDER BY finished_at), '{}')
		FROM pgq.attempts WHERE outcome = 'succeeded'`)
	f.recovered = len(faultsEnded) > 0
	for _, at := range faultsEnded {
		i := sort.Search(len(ends), func(i int) bool { return ends[i].After(at) })
		if i == len(ends) {
			f.recovery = -1
			break
		}
		f.recovery = max(f.recovery, ends[i].Sub(at))
	}
	return f
}

func (f figures) log(t *testing.T) {
	t.Helper()
	rec, drain := "n/a", "n/a"
	switch {
	case !f.recovered:
	case f.recovery < 0:
		rec = "never"
	default:
		rec = f.recovery.Round(time.Millisecond).String()
	}
	if f.drain > 0 {
		drain = f.drain.Round(time.Millisecond).String()
	}
	size := "default"
	if full {
		size = "full"
	}
	t.Logf("FIGURES %s (%s size): jobs=%d faults=%d done=%d lost=%d duplicated=%d failed=%d burned_attempts=%d left=%d recovery_max=%s drain=%s worker_exits=%d %s",
		t.Name(), size, f.jobs, f.faults, f.done, f.lost, f.duplicated, f.failed, f.burned, f.left, rec,
		drain, f.exits, strings.Join(f.extra, " "))
}

// head returns the first n lines of s.
func head(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("… (%d lines more)", len(lines)-n))
	}
	return strings.Join(lines, "\n")
}
