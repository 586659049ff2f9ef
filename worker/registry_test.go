package worker_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

// S87: a running worker is in pgq.live_workers with the queues it serves and the job
// names of its Go handlers, from its start, so that pgq.check finds nothing unserved in
// them; a worker that stops takes its row with it.
func TestS87WorkerRecordsItsQueuesAndHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w := b.worker(t, worker.WithQueues("mail", "default"), worker.WithName("w-registry"))
	worker.Handle(w, "send_invoice", worker.Handler[order]{Run: func(context.Context, *worker.Job[order]) error { return nil }})
	worker.Handle(w, "charge", worker.Handler[order]{Run: func(context.Context, *worker.Job[order]) error { return nil }})
	stop := start(t, w)
	live := func() string {
		return pgqtest.Scalar[string](t, b.db, `SELECT coalesce(string_agg(name || ' ' || queues::text || ' ' || handlers::text, '; '), '')
			FROM pgq.live_workers`)
	}
	waitFor(t, 10*time.Second, func() bool { return live() != "" })
	require.Equal(t, "w-registry {mail,default} {charge,send_invoice}", live())
	_, err := b.client.Dispatch(context.Background(), "unknown_to_all", order{}, pgq.Queue("mail"))
	require.NoError(t, err)
	require.Equal(t, []string{"job unknown_to_all job_unhandled"}, pgqtest.Scalar[[]string](t, b.db,
		`SELECT coalesce(array_agg(object || ' ' || rule), '{}') FROM pgq.check() WHERE rule IN ('queue_unserved', 'job_unhandled')`),
		"the queue is served; that name is not handled")
	require.NoError(t, stop())
	require.Zero(t, pgqtest.Scalar[int](t, b.db, `SELECT count(*)::int FROM pgq.workers`), "gone with its worker")
}

// S88: a Go handler's error that carries a DETAIL and a HINT (a *pgconn.PgError, wrapped
// or not) keeps them with the attempt and the failed job, and the worker logs the hint.
func TestS88GoHandlerErrorKeepsDetailAndHint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var logs syncLog
	w := b.worker(t, worker.WithStopWhenEmpty(), worker.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	worker.Handle(w, "charge", worker.Handler[order]{Run: func(context.Context, *worker.Job[order]) error {
		return fmt.Errorf("charge: %w", &pgconn.PgError{Severity: "ERROR", Code: "P0001", Message: "card declined",
			Detail: "issuer said 05", Hint: "ask for another card"})
	}})
	id, err := b.client.Dispatch(context.Background(), "charge", order{OrderID: 1})
	require.NoError(t, err)
	drain(t, w)
	require.Equal(t, "issuer said 05|ask for another card", pgqtest.Scalar[string](t, b.db,
		`SELECT exception_detail || '|' || exception_hint FROM pgq.attempts WHERE job_uuid = $1`, id))
	require.Equal(t, "issuer said 05|ask for another card", pgqtest.Scalar[string](t, b.db,
		`SELECT exception_detail || '|' || exception_hint FROM pgq.failed_jobs WHERE uuid = $1`, id))
	require.Contains(t, logs.String(), `hint="ask for another card"`)
}

// A worker logs the configuration problems about the queues it serves, never about a
// class of a queue it does not, and before its first job's line: with --stop-when-empty
// before "worker stopped".
func TestWorkerChecksOnlyItsQueuesBeforeItWorks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.db.Exec(t, `SELECT pgq.define_job('slow_report', queue => 'reports', timeout => 600)`) // timeout >= retry_after
	b.db.Exec(t, `SELECT pgq.define_job('slow_mail', queue => 'ops', timeout => 600)`)
	var logs syncLog
	w := b.worker(t, worker.WithQueues("ops"), worker.WithStopWhenEmpty(), worker.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	drain(t, w)
	out := logs.String()
	require.Contains(t, out, `object="job slow_mail"`)
	require.NotContains(t, out, "slow_report", "a class of a queue this worker does not serve")
	require.Less(t, strings.Index(out, "configuration problem"), strings.Index(out, "worker stopped"), out)
}

// syncLog is a log buffer that handler goroutines and the test may use at once.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls cond every 20 ms until it holds, failing the test after d.
func waitFor(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
