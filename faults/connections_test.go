package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// S35: idle connections of other clients are held against the server (max_connections
// 400) while two workers drain SQL-handler jobs at --tries 1, then closed. A worker may
// slow down, or exit with a clear message (a supervisor starts it again a second later,
// as systemd or Kubernetes would), but a full server is not the handlers' fault: no job
// fails for it, and the drain completes once the connections are closed.
//
// Hold300 holds 300 of the 400 slots, as in the issue; AllButTwo holds all of them but
// two, so the workers cannot open the connections they want.
func TestS35DrainRecoversFromIdleConnectionsHeld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		hold int // connections to hold; -2: all but two
	}{{"Hold300", 300}, {"AllButTwo", -2}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			jobs := size(500, 2000)
			holdFor := span(8*time.Second, 20*time.Second)
			c := pgcluster.Start(t, pgcluster.MaxConnections(400))
			db := c.CreateDB(t, "faults")
			// A short lease, so that a job a worker lost track of comes back within the test.
			db.Exec(t, appSchema+`
SELECT pgq.define_queue('default', retry_after => 5);
SELECT pgq.define_job('effect', handler => 'app.effect');`)
			dispatchEffects(t, db, "effect", jobs, 20)
			// The test's own pool keeps three connections open, so it can watch a full server.
			var conns []*pgxpool.Conn
			for range 3 {
				cn, err := db.Pool.Acquire(t.Context())
				require.NoError(t, err)
				conns = append(conns, cn)
			}
			for _, cn := range conns {
				cn.Release()
			}

			idle := holdConnections(t, c, tc.hold)
			held := len(idle.conns)
			fl := startFleet(t, sqlWorker, db, 2, true, "--tries", "1", "--concurrency", "4", "--sleep", "1", "--timeout", "4")
			start := time.Now()
			heldDone := waitFor(holdFor, func() bool { return drained(db) })
			duringHold := effectsCount(db)
			idle.close()
			released := time.Now()
			ok := waitFor(time.Minute, func() bool { return drained(db) })

			var faultsEnded []time.Time // recovery means something only when jobs were left at the release
			if !heldDone {
				faultsEnded = []time.Time{released}
			}
			f := measure(t, db, jobs, faultsEnded)
			f.faults = 1
			f.drain = time.Since(start)
			exits := fl.exits()
			f.exits = len(exits)
			for i, e := range exits {
				if i < 5 {
					t.Logf("worker exit: %s", e)
				}
			}
			f.extra = append(f.extra, fmt.Sprintf("held=%d drained_while_held=%t runs_while_held=%d too_many_clients_logged=%d log_errors=%d",
				held, heldDone, duringHold, fl.count("too many clients"), fl.count("level=ERROR")))
			f.log(t)
			if f.failed > 0 {
				t.Logf("failed jobs, by exception: %s", pgcluster.Scalar[string](t, db, `SELECT coalesce(string_agg(e || ' ×' || n, E'\n  '), '')
					FROM (SELECT left(exception, 200) AS e, count(*) AS n FROM pgq.failed_jobs GROUP BY 1 ORDER BY 2 DESC LIMIT 5) s`))
			}

			require.True(t, ok, "the drain completed once the connections were closed: %d left", f.left)
			require.Zero(t, f.failed, "jobs in pgq.failed_jobs (S35: a full server is not the handler's fault)")
			require.Zero(t, f.lost)
			require.Zero(t, f.duplicated)
			require.Equal(t, jobs, f.done)
		})
	}
}

// idleConns are connections held open, doing nothing.
type idleConns struct {
	conns []*pgx.Conn
	once  sync.Once
}

func (ic *idleConns) close() {
	ic.once.Do(func() {
		for _, cn := range ic.conns {
			cn.Close(context.Background())
		}
	})
}

// holdConnections opens n idle connections to database postgres (n < 0: as many as the
// server accepts, less -n), closed at cleanup if not before.
func holdConnections(t *testing.T, c *pgcluster.Cluster, n int) *idleConns {
	t.Helper()
	ic := &idleConns{}
	t.Cleanup(ic.close)
	var mu sync.Mutex
	var full error
	want := n
	if n < 0 {
		want = 1 << 20
	}
	started := 0 // connections opened or being opened
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				mu.Lock()
				if started >= want || full != nil {
					mu.Unlock()
					return
				}
				started++
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				cn, err := pgx.Connect(ctx, c.URL("postgres")+"&application_name=idle")
				cancel()
				mu.Lock()
				if err != nil {
					full = err
				} else {
					ic.conns = append(ic.conns, cn)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if n >= 0 {
		require.NoError(t, full, "opening %d idle connections", n)
		require.Len(t, ic.conns, n)
		return ic
	}
	require.Error(t, full, "the server refused a connection at last")
	if !errors.Is(full, context.DeadlineExceeded) {
		t.Logf("the server is full after %d idle connections: %v", len(ic.conns), full)
	}
	for range -n {
		last := ic.conns[len(ic.conns)-1]
		ic.conns = ic.conns[:len(ic.conns)-1]
		last.Close(context.Background())
	}
	return ic
}
