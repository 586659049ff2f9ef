package faults

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
	"github.com/pgq-dev/pgq/pgq"
)

type effectArg struct {
	N  int `json:"n"`
	Ms int `json:"ms"`
}

// S103: producers and workers through PgBouncer, in transaction and in session pooling.
// Producers dispatch in their own transactions (pgq.dispatch), with DispatchMany and
// with DispatchMany ByCopy, on a pool that prepares no statement by name
// (default_query_exec_mode=exec); a rolled-back dispatch leaves nothing. Workers drain
// every job once: through a transaction pooler with their session-bound calls on a
// direct --session-url (woken by LISTEN, the poll 30 s away), or with none (they poll,
// and say so); through a session pooler as through a server.
func TestS103ThroughPgBouncer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, mode string
		args       func(direct string) []string
		listens    bool   // a dispatch after the drain is woken by LISTEN
		says       string // a line the worker logs
	}{
		{name: "TransactionWithSessionURL", mode: "transaction", listens: true,
			args: func(direct string) []string { return []string{"--transaction-pooler", "--session-url", direct} }},
		{name: "TransactionPolling", mode: "transaction", says: "it polls every --sleep",
			args: func(string) []string { return []string{"--transaction-pooler"} }},
		{name: "Session", mode: "session", listens: true, says: "they are set on each session instead",
			args: func(string) []string { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := pgcluster.Start(t)
			db := c.CreateDB(t, "faults")
			db.Exec(t, appSchema+`
SELECT pgq.define_queue('default', retry_after => 12);
SELECT pgq.define_job('effect', handler => 'app.effect');`)
			b := c.StartPgBouncer(t, tc.mode)

			// Producers through the pooler.
			cfg, err := pgxpool.ParseConfig(b.URL(pgcluster.Superuser, db.Name) + "&default_query_exec_mode=exec")
			require.NoError(t, err)
			cfg.MaxConns = 4
			producers, err := pgxpool.NewWithConfig(t.Context(), cfg)
			require.NoError(t, err)
			defer producers.Close()
			ctx := t.Context()
			n := 0
			for range 20 { // one dispatch per application transaction
				tx, err := producers.Begin(ctx)
				require.NoError(t, err)
				n++
				_, err = tx.Exec(ctx, `SELECT pgq.dispatch('effect', jsonb_build_object('n', $1::int, 'ms', 5))`, n)
				require.NoError(t, err)
				require.NoError(t, tx.Commit(ctx))
			}
			tx, err := producers.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, `SELECT pgq.dispatch('effect', jsonb_build_object('n', -1))`)
			require.NoError(t, err)
			require.NoError(t, tx.Rollback(ctx))
			client, err := pgq.NewClient(producers)
			require.NoError(t, err)
			for _, opts := range [][]pgq.Option{nil, {pgq.ByCopy()}} {
				args := make([]any, 40)
				for i := range args {
					n++
					args[i] = effectArg{N: n, Ms: 5}
				}
				ids, err := client.DispatchMany(ctx, "effect", args, opts...)
				require.NoError(t, err)
				require.Len(t, ids, len(args))
			}
			jobs := n
			require.Equal(t, jobs, pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.live_jobs`))

			// A worker through the pooler.
			pooled := &pgcluster.DB{Name: db.Name, URL: b.URL(pgcluster.WorkerLogin, db.Name), Pool: db.Pool, C: c}
			w := startWorker(t, sqlWorker, pooled, "W1", append([]string{"--concurrency", "4", "--sleep", sleepFor(tc.listens)},
				tc.args(db.URL)...)...)
			waitUntil(t, time.Minute, "the jobs dispatched through the pooler ran", func() bool { return drained(db) })
			f := measure(t, db, jobs, nil)
			require.Zero(t, f.lost)
			require.Zero(t, f.duplicated)
			require.Zero(t, f.failed)
			require.Zero(t, pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM app.effects WHERE n = -1`), "the rolled-back dispatch")
			if tc.says != "" {
				require.Equal(t, 1, w.count(tc.says), "the worker says %q once", tc.says)
			}
			if tc.listens {
				// The poll is 30 s away: a job done within 15 s was woken by LISTEN.
				sent := time.Now()
				db.Exec(t, `SELECT pgq.dispatch('effect', jsonb_build_object('n', $1::int))`, jobs+1)
				waitUntil(t, 15*time.Second, "a job dispatched after the drain ran (LISTEN)", func() bool {
					return effectsCount(db) == jobs+1
				})
				f.extra = append(f.extra, fmt.Sprintf("listen_after=%s", time.Since(sent).Round(time.Millisecond)))
			}
			require.False(t, w.exited(), "the worker runs on: %s", lastLine(w.logs()))
			f.extra = append(f.extra, "pool_mode="+tc.mode, fmt.Sprintf("log_errors=%d", w.count("level=ERROR")))
			f.log(t)
		})
	}
}

func sleepFor(listens bool) string {
	if listens {
		return "30"
	}
	return "1"
}
