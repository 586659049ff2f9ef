package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// failoverSchema adds to appSchema what the failover drain counts besides effects:
//
//	app.ticks      one row per run of a schedule's tick job, with the tick's unique key
//	               (schedule:tick, S61): a tick dispatched twice shows as two rows.
//	app.callbacks  one row per run of a batch callback: its kind and its batch.
const failoverSchema = `
CREATE TABLE app.ticks (id bigserial PRIMARY KEY, tick text NOT NULL);
CREATE FUNCTION app.tick(p jsonb) RETURNS void LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog AS $$
    INSERT INTO app.ticks (tick)
    SELECT coalesce((SELECT unique_key FROM pgq.jobs WHERE uuid = current_setting('pgq.job_uuid')::uuid), '?');
$$;
CREATE TABLE app.callbacks (id bigserial PRIMARY KEY, kind text NOT NULL, batch text NOT NULL);
CREATE FUNCTION app.then_cb(p jsonb) RETURNS void LANGUAGE sql AS $$
    INSERT INTO app.callbacks (kind, batch) VALUES ('then', p->>'name');
$$;
CREATE FUNCTION app.finally_cb(p jsonb) RETURNS void LANGUAGE sql AS $$
    INSERT INTO app.callbacks (kind, batch) VALUES ('finally', p->>'name');
$$;
`

// Ranges of app.effects.n, one per kind of job, so that one count query tells them apart.
const (
	nBacklog  = 0         // SQL jobs dispatched before the workers start: 1..backlog
	nProduced = 1_000_000 // SQL jobs dispatched by the producer during the drain
	nGo       = 2_000_000 // Go-handler jobs
	nOverlap  = 3_000_000 // without_overlapping jobs
	nBatch    = 4_000_000 // members of batches
	nAfter    = 5_000_000 // the job dispatched after the drain, to see LISTEN work
)

// producer dispatches SQL jobs one by one at a steady rate through a multi-host URL,
// each in a transaction of its own, and remembers which commits were acknowledged and
// which ended with an error (their outcome unknown: the failover may have taken the
// commit or its answer).
type producer struct {
	mu        sync.Mutex
	acked     []int
	uncertain []int
	stop      chan struct{}
	wg        sync.WaitGroup
}

func startProducer(t *testing.T, url string, every time.Duration) *producer {
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	p := &producer{stop: make(chan struct{})}
	p.wg.Go(func() {
		defer pool.Close()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for n := nProduced + 1; ; n++ {
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := pool.Exec(ctx, `SELECT pgq.dispatch('effect', jsonb_build_object('n', $1::int, 'ms', 10))`, n)
			cancel()
			p.mu.Lock()
			if err == nil {
				p.acked = append(p.acked, n)
			} else {
				p.uncertain = append(p.uncertain, n)
			}
			p.mu.Unlock()
		}
	})
	t.Cleanup(p.close)
	return p
}

func (p *producer) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.wg.Wait()
}

// failoverFigures are a failover drain's counts.
type failoverFigures struct {
	figures
	acked, uncertain  int           // producer's dispatches acknowledged, and ended in an error
	ackedLost         int           // acknowledged dispatches the new primary never ran
	commitsLost       int           // runs committed on the old primary missing on the new one
	reran             int           // of those, runs whose job ran again on the new primary
	overlaps          int           // pairs of runs of one overlap key that overlapped in time
	ticksTwice        int           // schedule ticks run more than once
	ticks             int           // schedule ticks run
	callbacksWrong    int           // batches whose then or finally callback did not run exactly once
	resumed           time.Duration // from the promotion to the first job completed on the new primary
	listenAfter       time.Duration // from a dispatch after the drain to its completion (poll 30 s)
	reconnectedLogged int           // workers' "session connection re-established" lines
}

// failoverDrain drains SQL, Go, without_overlapping, batch and schedule jobs with two SQL
// workers and one Go worker connected through a multi-host URL (primary, then the
// standby, target_session_attrs=read-write) while a producer dispatches through it. Once
// 40% of the backlog ran, the primary is stopped (-m immediate) and the standby promoted.
func failoverDrain(t *testing.T, r pgcluster.Replication) failoverFigures {
	backlog := size(600, 3000)
	goJobs := size(200, 1000)
	overlapJobs := size(30, 120)
	batches, members := 3, size(20, 100)

	c := pgcluster.Start(t)
	s := c.StartStandby(t, "standby1", r)
	db := c.CreateDB(t, "faults").Across(t, s)
	db.Exec(t, appSchema+failoverSchema+`
SELECT pgq.define_queue('default', retry_after => 12);
SELECT pgq.define_queue('go', retry_after => 12);
SELECT pgq.define_job('effect', handler => 'app.effect');
SELECT pgq.define_job('goeffect', queue => 'go');
SELECT pgq.define_job('ov', handler => 'app.effect', tries => 0, middleware => `+fmt.Sprintf(overlapMiddleware, 0)+`);
SELECT pgq.define_job('tick', handler => 'app.tick');
SELECT pgq.define_job('then_cb', handler => 'app.then_cb');
SELECT pgq.define_job('finally_cb', handler => 'app.finally_cb');
SELECT pgq.schedule('ticker', '* * * * * *', 'tick');`)
	dispatchEffects(t, db, "effect", backlog, 20)
	db.Exec(t, `SELECT pgq.dispatch_many('goeffect', ARRAY(SELECT jsonb_build_object('n', $1::int + i, 'ms', 20)
		FROM generate_series(1, $2::int) i))`, nGo, goJobs)
	db.Exec(t, `SELECT pgq.dispatch_many('ov', ARRAY(SELECT jsonb_build_object('n', $1::int + i, 'k', 'k' || i % 3, 'ms', 50)
		FROM generate_series(1, $2::int) i))`, nOverlap, overlapJobs)
	for b := range batches {
		db.Exec(t, `SELECT pgq.dispatch_batch(
			(SELECT jsonb_agg(jsonb_build_object('job', 'effect', 'payload', jsonb_build_object('n', $1::int + i, 'ms', 20)))
			 FROM generate_series(1, $2::int) i),
			name => $3, then_job => 'then_cb', finally_job => 'finally_cb')`, nBatch+b*members, members, fmt.Sprintf("b%d", b))
	}
	c.WaitReplayed(t)

	// A poll of 30 s: after the drain, a job that runs within seconds was woken by LISTEN.
	sqlFleet := startFleet(t, sqlWorker, db, 2, false, "--queue", "default", "--tries", "1", "--concurrency", "4", "--sleep", "30", "--timeout", "20")
	goFleet := startFleet(t, goWorker, db, 1, false, "--job", "goeffect", "--queues", "go", "--tries", "1", "--concurrency", "4", "--sleep", "30", "--timeout", "20")
	prod := startProducer(t, pgcluster.MultiHostURL(pgcluster.Superuser, db.Name, c, s), 20*time.Millisecond)
	start := time.Now()

	waitUntil(t, time.Minute, "40% of the backlog ran", func() bool { return effectsCount(db) >= backlog*40/100 })
	if r == pgcluster.Async {
		// On one machine an async standby keeps up with everything; across a network it
		// lags. The lag is made here: the standby stops streaming (no primary_conninfo)
		// a second before the primary goes, so it misses that second's commits.
		s.Exec(t, `ALTER SYSTEM SET primary_conninfo = ''`)
		s.Exec(t, `SELECT pg_reload_conf()`)
		time.Sleep(asyncLag)
	}
	c.Stop(t, "immediate")
	s.Promote(t)
	promoted := time.Now()
	// The producer goes on for as long again as the drain had run, then stops.
	time.Sleep(min(promoted.Sub(start), 5*time.Second))
	prod.close()

	ok := waitFor(span(90*time.Second, 3*time.Minute), func() bool { return drained(db) })
	require.True(t, ok, "the drain ended after the failover")
	var f failoverFigures
	f.drain = time.Since(start)
	f.resumed = time.Duration(pgcluster.Scalar[float64](t, db, `SELECT coalesce(extract(epoch FROM min(finished_at) - $1), -1)::float8
		FROM pgq.attempts WHERE outcome = 'succeeded' AND finished_at > $1`, promoted) * float64(time.Second))

	// LISTEN on the new primary: one more job, and the workers' poll is 30 s away.
	sent := time.Now()
	db.Exec(t, `SELECT pgq.dispatch('effect', jsonb_build_object('n', $1::int, 'ms', 0))`, nAfter+1)
	waitUntil(t, 25*time.Second, "a job dispatched after the drain ran (LISTEN)", func() bool {
		n, err := pgcluster.Try[int](db, `SELECT count(*)::int FROM app.effects WHERE n = $1`, nAfter+1)
		return err == nil && n == 1
	})
	f.listenAfter = time.Since(sent)

	prod.mu.Lock()
	acked, uncertain := append([]int(nil), prod.acked...), prod.uncertain
	prod.mu.Unlock()
	f.acked, f.uncertain = len(acked), len(uncertain)
	f.ackedLost = pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM unnest($1::int[]) a(n)
		WHERE NOT EXISTS (SELECT FROM app.effects e WHERE e.n = a.n)`, acked)
	// Every job the new primary knows of ran once: the backlog, the Go jobs, the overlap
	// jobs, the batch members, the acknowledged dispatches.
	f.figures = measure(t, db, backlog, []time.Time{promoted})
	f.drain = time.Since(start)
	f.duplicated = pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM (SELECT n FROM app.effects GROUP BY n HAVING count(*) > 1) d`)
	f.lost += pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM (
		SELECT $1::int + i FROM generate_series(1, $2::int) i UNION ALL
		SELECT $3::int + i FROM generate_series(1, $4::int) i UNION ALL
		SELECT $5::int + i FROM generate_series(1, $6::int) i) w(n)
		WHERE NOT EXISTS (SELECT FROM app.effects e WHERE e.n = w.n)`, nGo, goJobs, nOverlap, overlapJobs, nBatch, batches*members)
	f.overlaps = pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM app.effects a JOIN app.effects b
		ON a.k = b.k AND a.id < b.id AND a.started < b.finished AND b.started < a.finished WHERE a.k IS NOT NULL`)
	require.NoError(t, db.Pool.QueryRow(t.Context(), `SELECT count(*)::int, count(*) FILTER (WHERE c > 1)::int
		FROM (SELECT tick, count(*) AS c FROM app.ticks GROUP BY tick) s`).Scan(&f.ticks, &f.ticksTwice))
	f.callbacksWrong = pgcluster.Scalar[int](t, db, `SELECT count(*)::int FROM (SELECT 'b' || i AS batch FROM generate_series(0, $1::int - 1) i) b
		WHERE (SELECT count(*) FROM app.callbacks c WHERE c.batch = b.batch AND kind = 'then') <> 1
		   OR (SELECT count(*) FROM app.callbacks c WHERE c.batch = b.batch AND kind = 'finally') <> 1`, batches)
	f.exits = len(sqlFleet.exits()) + len(goFleet.exits())
	f.reconnectedLogged = sqlFleet.count("session connection re-established") + goFleet.count("session connection re-established")

	// What the old primary had committed that the new one lacks: start it again, alone
	// (the workers are stopped first, so nothing reaches it through the multi-host URL).
	for _, p := range append(sqlFleet.procs(), goFleet.procs()...) {
		p.kill()
	}
	prod.close()
	newPrimary := db.On(t, s)
	c.Start(t)
	// A run is its job's n and its start: one the new primary lacks was lost, though its
	// job may have run again there (reran).
	old := pgcluster.Scalar[[]string](t, db.On(t, c), `SELECT coalesce(array_agg(n || '@' || started), '{}') FROM app.effects`)
	require.NoError(t, newPrimary.Pool.QueryRow(t.Context(), `
		SELECT count(*)::int, count(*) FILTER (WHERE EXISTS (SELECT FROM app.effects e WHERE e.n = split_part(o.r, '@', 1)::int))::int
		FROM unnest($1::text[]) o(r)
		WHERE NOT EXISTS (SELECT FROM app.effects e WHERE e.n || '@' || e.started = o.r)`, old).Scan(&f.commitsLost, &f.reran))

	f.extra = append(f.extra, fmt.Sprintf("replication=%s acked=%d uncertain=%d acked_lost=%d commits_lost=%d reran=%d overlaps=%d ticks=%d ticks_twice=%d callbacks_wrong=%d resumed_after=%s listen_after=%s reconnect_lines=%d",
		r, f.acked, f.uncertain, f.ackedLost, f.commitsLost, f.reran, f.overlaps, f.ticks, f.ticksTwice, f.callbacksWrong,
		f.resumed.Round(time.Millisecond), f.listenAfter.Round(time.Millisecond), f.reconnectedLogged))
	f.log(t)
	if f.failed > 0 {
		t.Logf("failed jobs, by exception: %s", pgcluster.Scalar[string](t, newPrimary, `SELECT coalesce(string_agg(e || ' ×' || n, E'\n  '), '')
			FROM (SELECT job || ': ' || left(exception, 300) AS e, count(*) AS n FROM pgq.failed_jobs GROUP BY 1 ORDER BY 2 DESC LIMIT 5) s`))
	}
	return f
}

// S100: a failover to a synchronous standby loses nothing and runs nothing twice, and
// the workers carry on without a restart.
func TestS100FailoverToSyncStandby(t *testing.T) {
	t.Parallel()
	f := failoverDrain(t, pgcluster.Sync)
	require.Zero(t, f.ackedLost, "acknowledged dispatches lost")
	// A commit the old primary made while it waited for the standby is its alone, never
	// acknowledged: its worker was told the connection broke, and the job runs again.
	require.Equal(t, f.commitsLost, f.reran, "every run the new primary lacks ran again there")
	require.Zero(t, f.lost, "jobs that never ran")
	require.Zero(t, f.duplicated, "jobs run twice")
	require.Zero(t, f.failed, "jobs failed")
	require.Zero(t, f.overlaps, "runs of one overlap key that overlapped")
	require.Zero(t, f.ticksTwice, "schedule ticks run twice")
	require.Positive(t, f.ticks, "schedule ticks run")
	require.Zero(t, f.callbacksWrong, "batches whose callbacks did not run exactly once")
	require.Zero(t, f.exits, "worker processes that exited")
	require.Positive(t, f.reconnectedLogged, "a worker says it reconnected")
	require.Less(t, f.resumed, failoverResumeBound, "the workers resumed on the new primary")
	require.Positive(t, f.resumed)
}

// failoverResumeBound: the workers complete a job on the promoted standby within this
// long of the promotion (S100).
const failoverResumeBound = 15 * time.Second

// asyncLag is how far behind the async standby is made to fall before the failover.
const asyncLag = time.Second

// S100: a failover to an asynchronous standby may lose what the standby had not received
// (counted, for the figures), and the workers carry on.
func TestS100FailoverToAsyncStandby(t *testing.T) {
	t.Parallel()
	f := failoverDrain(t, pgcluster.Async)
	require.Zero(t, f.exits, "worker processes that exited")
	require.Positive(t, f.resumed)
	require.Less(t, f.resumed, failoverResumeBound, "the workers resumed on the new primary")
	t.Logf("async failover, standby %s behind: %d acknowledged dispatches lost, %d runs committed on the old primary lost (%d of their jobs ran again)",
		asyncLag, f.ackedLost, f.commitsLost, f.reran)
}

// S101: a worker whose URL reaches only a hot standby says the server is read-only and
// tries again with a doubling pause: it neither exits nor spins, and once the standby is
// promoted it drains the queue without a restart.
func TestS101WorkerOnReadOnlyServer(t *testing.T) {
	t.Parallel()
	jobs := 50
	c := pgcluster.Start(t)
	s := c.StartStandby(t, "standby1", pgcluster.Async)
	db := c.CreateDB(t, "faults")
	db.Exec(t, appSchema+`
SELECT pgq.define_queue('default', retry_after => 12);
SELECT pgq.define_job('effect', handler => 'app.effect');`)
	dispatchEffects(t, db, "effect", jobs, 0)
	c.WaitReplayed(t)
	onStandby := db.On(t, s)

	w := startWorker(t, sqlWorker, onStandby, "W1", "--tries", "1", "--concurrency", "4", "--sleep", "1")
	const readOnly = "the server is read-only (a hot standby, or a primary demoted"
	waitUntil(t, 30*time.Second, "the worker says the server is read-only", func() bool { return w.count(readOnly) > 0 })
	first := time.Now()
	time.Sleep(8 * time.Second)
	lines, said := strings.Count(w.logs(), "\n"), w.count(readOnly)
	require.False(t, w.exited(), "the worker is still running: %s", lastLine(w.logs()))
	require.Zero(t, effectsCount(onStandby), "nothing ran on the standby")
	// Reserves refused at 0, 1, 3 and 7 s: at most 5 in 8 s, where a retry each second
	// would say it 9 times.
	require.LessOrEqual(t, said, 5, "read-only answers in 8 s (a doubling pause)")
	if showLogs {
		t.Logf("worker log:\n%s", w.logs())
	}
	t.Logf("FIGURES %s: read_only_lines=%d log_lines=%d in %s", t.Name(), said, lines, time.Since(first).Round(time.Millisecond))

	c.Stop(t, "immediate")
	s.Promote(t)
	waitUntil(t, 45*time.Second, "the worker drained the promoted standby", func() bool { return drained(onStandby) })
	require.Equal(t, jobs, effectsCount(onStandby))
	require.False(t, w.exited())
}
