package worker_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

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
			pool := pgqtest.NewEmpty(t).Pool
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

// S92: a worker's default timeout is one a SQL handler's statement_timeout can hold.
func TestS92WithTimeoutIsOneTheServerCanSet(t *testing.T) {
	t.Parallel()
	pool := pgqtest.NewEmpty(t).Pool
	_, err := worker.New(pool, worker.WithTimeout(pgq.TimeoutLimit+time.Second))
	require.ErrorContains(t, err, "WithTimeout: must be from 0 to")
	_, err = worker.New(pool, worker.WithTimeout(pgq.TimeoutLimit))
	require.NoError(t, err)
}
