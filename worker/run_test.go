package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

// A database without the pgq schema stops Run at once, with an error that says so,
// rather than retrying the reserve every second; with WithStopWhenEmpty too, where the
// failed reserve must not pass for an empty queue and a clean stop.
func TestRunStopsWhenNotMigrated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []worker.Option
	}{
		{"Serving", nil},
		{"StopWhenEmpty", []worker.Option{worker.WithStopWhenEmpty()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool := emptyDatabase(t)
			logs := &lockedBuffer{}
			w, err := worker.New(pool, append([]worker.Option{worker.WithLogger(slog.New(slog.NewTextHandler(logs, nil))),
				worker.WithSleep(100 * time.Millisecond)}, tc.opts...)...)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = w.Run(ctx)
			require.ErrorIs(t, err, pgq.ErrNotMigrated)
			require.ErrorContains(t, err, "pgq-worker migrate")
			require.NoError(t, ctx.Err(), "Run returned by itself")
			require.NotContains(t, logs.String(), "retrying", "no reserve was retried")
		})
	}
}

var emptyDatabases atomic.Int64

// emptyDatabase creates a database with no pgq schema in it, dropped at cleanup, and
// returns a pool on it.
func emptyDatabase(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgqtest.AdminURL())
	require.NoError(t, err)
	defer admin.Close(ctx)
	name := fmt.Sprintf("pgq_test_empty_%d_%d", os.Getpid(), emptyDatabases.Add(1))
	_, err = admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0")
	require.NoError(t, err)
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, pgqtest.AdminURL())
		if err != nil {
			t.Logf("drop %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop %s: %v", name, err)
		}
	})
	cfg, err := pgxpool.ParseConfig(pgqtest.AdminURL())
	require.NoError(t, err)
	cfg.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}
