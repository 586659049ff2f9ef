package worker

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S39: pgq.prune_all lets one caller at a time prune and returns NULL to the others at
// once. A worker whose prune finds another one at work says nothing; before, it warned
// "retention prune failed: cannot scan NULL into *int64" whenever two workers pruned
// together.
func TestS39PruneWhileAnotherWorkerPrunes(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	ctx := context.Background()
	other, err := db.Pool.Begin(ctx)
	require.NoError(t, err)
	defer other.Rollback(ctx)
	_, err = other.Exec(ctx, `SELECT pgq.prune_all(interval '1 day')`) // holds the prune lock until it ends
	require.NoError(t, err)
	var logs bytes.Buffer
	cfg := defaults()
	m := &maintenance{q: dbsqlc.New(db.WorkerPool), cfg: &cfg, log: slog.New(slog.NewTextHandler(&logs, nil))}
	m.retainOnce(ctx)
	require.Empty(t, logs.String())
}

// A vacuum under load leaves the rows that died while it ran; that is not a held
// horizon, and must not make the worker vacuum less often (S47, S77). What a held
// horizon leaves grows past them. Figures from a benchmark at 20,000 jobs/s, where the
// rule before this one (vacuumAfter dead rows left) took load for a hold every 10 s.
func TestS47S77HorizonHeldOnlyWhenTheVacuumLeftMoreThanDiedMeanwhile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		left, died int64
		held       bool
	}{
		{"held: idle queue, nothing died meanwhile", 12_000, 0, true},
		{"held: 5 s of 20,000 jobs/s, a 0.5 s vacuum", 200_000, 20_000, true},
		{"load: 20,000 jobs/s, a 0.5 s vacuum", 19_787, 20_004, false},
		{"load: a backend's report came in just after the vacuum", 19_787, 8_000, false},
		{"clean: fewer left than vacuumAfter", 500, 0, false},
	} {
		if got := horizonHeld(c.left, c.died, 10_000); got != c.held {
			t.Errorf("%s: horizonHeld(%d, %d) = %v, want %v", c.name, c.left, c.died, got, c.held)
		}
	}
}
