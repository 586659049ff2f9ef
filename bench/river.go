package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// riverVersion is the River module this binary was built with.
var riverVersion = func() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/riverqueue/river" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}()

// riverEnv is River's database: a pool for inserting and checking.
type riverEnv struct {
	cfg  *pgxpool.Config
	pool *pgxpool.Pool
}

func setupRiver(ctx context.Context, o options) (*riverEnv, error) {
	cfg, err := createDatabase(ctx, o, o.riverDB)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", o.riverDB, err)
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("rivermigrate: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		pool.Close()
		return nil, fmt.Errorf("rivermigrate up: %w", err)
	}
	return &riverEnv{cfg: cfg, pool: pool}, nil
}

func (e *riverEnv) close(ctx context.Context, o options) {
	e.pool.Close()
	if !o.keepDB {
		if err := dropDatabase(ctx, o, o.riverDB); err != nil {
			fmt.Fprintln(os.Stderr, "bench: drop", o.riverDB+":", err)
		}
	}
}

func (e *riverEnv) truncate(ctx context.Context) error {
	if _, err := e.pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return fmt.Errorf("truncate river_job: %w", err)
	}
	return nil
}

func (e *riverEnv) workerPool(ctx context.Context, o options) (*pgxpool.Pool, error) {
	cfg := e.cfg.Copy()
	cfg.MaxConns = int32(o.poolSize)
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("river worker pool: %w", err)
	}
	return p, nil
}

// The no-op job of the drain and bulk scenarios.
type riverNoopArgs struct{}

func (riverNoopArgs) Kind() string { return "noop" }

type riverNoopWorker struct {
	river.WorkerDefaults[riverNoopArgs]
	ran    atomic.Int64
	target int64
	done   chan struct{}
}

func (w *riverNoopWorker) Work(context.Context, *river.Job[riverNoopArgs]) error {
	if w.ran.Add(1) == w.target {
		close(w.done)
	}
	return nil
}

// The job of the steady and latency scenarios.
type riverSeqArgs struct {
	Seq int64 `json:"seq"`
}

func (riverSeqArgs) Kind() string { return "seq" }

type riverSeqWorker struct {
	river.WorkerDefaults[riverSeqArgs]
	onRun func(int64)
}

func (w *riverSeqWorker) Work(_ context.Context, j *river.Job[riverSeqArgs]) error {
	w.onRun(j.Args.Seq)
	return nil
}

// config is River's client configuration: tuned for throughput (FetchCooldown
// -river-fetch-cooldown) or at its defaults; maxWorkers 0 makes an insert-only client.
func (e *riverEnv) config(o options, tuned bool, maxWorkers int, workers *river.Workers, logger *slog.Logger) *river.Config {
	c := &river.Config{Workers: workers, Logger: logger}
	if maxWorkers > 0 {
		c.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: maxWorkers}}
	}
	if tuned {
		c.FetchCooldown = o.riverFetchCooldown
		c.FetchPollInterval = o.riverFetchPoll
	}
	return c
}

func warnLogger(l *logCounter) *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// countUnfinished counts jobs that are not completed yet.
func (e *riverEnv) countUnfinished(ctx context.Context) (int64, error) {
	var n int64
	err := e.pool.QueryRow(ctx, `SELECT count(*) FROM river_job
		WHERE state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`).Scan(&n)
	return n, err
}

// verify checks that the table holds exactly n jobs of kind, each completed on its
// first attempt.
func (e *riverEnv) verify(ctx context.Context, kind string, n int64) error {
	var total, ok, otherKind int64
	err := e.pool.QueryRow(ctx, `SELECT count(*),
			count(*) FILTER (WHERE state = 'completed' AND attempt = 1 AND finalized_at IS NOT NULL),
			count(*) FILTER (WHERE kind <> $1)
		FROM river_job`, kind).Scan(&total, &ok, &otherKind)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	if total != n || ok != n || otherKind != 0 {
		return fmt.Errorf("verify: want %d %s jobs completed on attempt 1, got %d jobs, %d of them completed on attempt 1, %d of another kind",
			n, kind, total, ok, otherKind)
	}
	return nil
}

// insertBacklog inserts n no-op jobs, batch per call, with InsertManyFast or InsertMany.
func insertBacklog(ctx context.Context, c *river.Client[pgx.Tx], n, batch int, fast bool) error {
	params := make([]river.InsertManyParams, min(batch, n))
	for i := range params {
		params[i] = river.InsertManyParams{Args: riverNoopArgs{}}
	}
	for done := 0; done < n; done += batch {
		k := min(n-done, batch)
		if fast {
			got, err := c.InsertManyFast(ctx, params[:k])
			if err != nil {
				return fmt.Errorf("InsertManyFast: %w", err)
			}
			if got != k {
				return fmt.Errorf("InsertManyFast inserted %d of %d jobs", got, k)
			}
		} else {
			res, err := c.InsertMany(ctx, params[:k])
			if err != nil {
				return fmt.Errorf("InsertMany: %w", err)
			}
			if len(res) != k {
				return fmt.Errorf("InsertMany inserted %d of %d jobs", len(res), k)
			}
		}
	}
	return nil
}

// drain inserts a backlog of o.jobs no-op jobs and times River, tuned, working it off.
func (e *riverEnv) drain(ctx context.Context, o options) runOut {
	d := drainResult{jobs: o.jobs, client: "bench"}
	fail := func(err error) runOut {
		r := d.out("drain", "drain-insert")
		r.figs, r.err = nil, err
		return r
	}
	if err := e.truncate(ctx); err != nil {
		return fail(err)
	}
	wpool, err := e.workerPool(ctx, o)
	if err != nil {
		return fail(err)
	}
	defer wpool.Close()
	logs := &logCounter{}
	w := &riverNoopWorker{target: int64(o.jobs), done: make(chan struct{})}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err := river.NewClient(riverpgxv5.New(wpool), e.config(o, true, o.conc, workers, warnLogger(logs)))
	if err != nil {
		return fail(fmt.Errorf("river.NewClient: %w", err))
	}
	producer, err := river.NewClient(riverpgxv5.New(e.pool), e.config(o, true, 0, workers, warnLogger(logs)))
	if err != nil {
		return fail(fmt.Errorf("river.NewClient (insert-only): %w", err))
	}

	start := time.Now()
	if err := insertBacklog(ctx, producer, o.jobs, o.batch, true); err != nil {
		return fail(fmt.Errorf("insert: %w", err))
	}
	d.insert = time.Since(start)
	if d.note, err = prepare(ctx, o, e.pool, "river_job"); err != nil {
		return fail(err)
	}

	dctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	m, err := startMeter(ctx, e.pool)
	if err != nil {
		return fail(err)
	}
	smp := startSampler(ctx, e.pool, m.start, o.jobs, "SELECT count(*) FROM river_job WHERE state = 'completed'")
	var stopOnce sync.Once
	stop := func() error {
		var err error
		stopOnce.Do(func() {
			sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer scancel()
			err = client.Stop(sctx)
		})
		return err
	}
	defer func() { _ = stop() }()
	stopVacuum := startVacuumer(ctx, e.pool, "river_job", o.riverVacuumAfter)
	defer stopVacuum()
	if err := client.Start(dctx); err != nil {
		smp.stop()
		return fail(fmt.Errorf("river Start: %w", err))
	}
	var runErr error
	select {
	case <-w.done:
		runErr = waitFor(dctx, o.timeout, 2*time.Millisecond, "every job to be completed", func() (bool, error) {
			n, err := e.countUnfinished(dctx)
			return n == 0, err
		})
	case <-dctx.Done():
		runErr = fmt.Errorf("drain did not finish within -timeout %s (%d of %d jobs ran)", o.timeout, w.ran.Load(), o.jobs)
	}
	d.drain = time.Since(m.start)
	d.u, err = m.stop(ctx)
	smp.stop()
	if err != nil {
		return fail(err)
	}
	d.othersMax, d.othersPct = smp.others()
	d.half1, d.half2 = smp.halves(d.drain)
	if err := stop(); err != nil {
		return fail(fmt.Errorf("river Stop: %w", err))
	}
	d.warnings = logs.count()
	if runErr != nil {
		return fail(fmt.Errorf("%w (first log lines: %s)", runErr, logs.first()))
	}
	if ran := w.ran.Load(); ran != int64(o.jobs) {
		return fail(fmt.Errorf("verify: handler ran %d times for %d jobs", ran, o.jobs))
	}
	if err := e.verify(ctx, "noop", int64(o.jobs)); err != nil {
		return fail(err)
	}
	return d.out("drain", "drain-insert")
}

// bulk times InsertMany or InsertManyFast of o.jobs jobs into an empty table.
func (e *riverEnv) bulk(ctx context.Context, o options, fast bool) runOut {
	row, api := "bulk-many", "InsertMany"
	if fast {
		row, api = "bulk-fast", "InsertManyFast"
	}
	r := runOut{rows: []string{row}}
	if err := e.truncate(ctx); err != nil {
		r.err = err
		return r
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverNoopWorker{})
	logs := &logCounter{}
	producer, err := river.NewClient(riverpgxv5.New(e.pool), e.config(o, false, 0, workers, warnLogger(logs)))
	if err != nil {
		r.err = fmt.Errorf("river.NewClient (insert-only): %w", err)
		return r
	}
	note, err := prepare(ctx, o, e.pool, "")
	if err != nil {
		r.err = err
		return r
	}
	m, err := startMeter(ctx, e.pool)
	if err != nil {
		r.err = err
		return r
	}
	if err := insertBacklog(ctx, producer, o.jobs, o.batch, fast); err != nil {
		r.err = err
		return r
	}
	u, err := m.stop(ctx)
	if err != nil {
		r.err = err
		return r
	}
	r.otherCores = u.otherCores
	rate := float64(o.jobs) / u.elapsed.Seconds()
	r.line = fmt.Sprintf("%s %d jobs in %s = %.0f jobs/s | %s", api, o.jobs,
		u.elapsed.Round(time.Millisecond), rate, u.cores("bench", int64(o.jobs)))
	if note != "" {
		r.line += " | " + note
	}
	r.line += fmt.Sprintf(" | warnings logged %d", logs.count())
	var n int64
	if err := e.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE kind = 'noop' AND state = 'available'").Scan(&n); err != nil {
		r.err = err
		return r
	}
	if n != int64(o.jobs) {
		r.err = fmt.Errorf("verify: want %d available jobs in river_job, got %d", o.jobs, n)
		return r
	}
	r.add(row, rate)
	return r
}

// riverLive runs a River client for the steady and latency scenarios, with a separate
// insert-only client for dispatching (as pgq dispatches through its own pool).
type riverLive struct {
	e          *riverEnv
	o          options
	tuned      bool
	maxWorkers int
	logs       *logCounter           // warnings of the workers and of the producer
	producer   *river.Client[pgx.Tx] // made by the first dispatch, which may come before start
}

func (e *riverEnv) live(o options, tuned bool, maxWorkers int) *riverLive {
	return &riverLive{e: e, o: o, tuned: tuned, maxWorkers: maxWorkers, logs: &logCounter{}}
}

func (l *riverLive) name() string                    { return "river" }
func (l *riverLive) pool() *pgxpool.Pool             { return l.e.pool }
func (l *riverLive) reset(ctx context.Context) error { return l.e.truncate(ctx) }

func (l *riverLive) start(ctx context.Context, o options, onRun func(seq int64)) (func() (int, error), error) {
	wpool, err := l.e.workerPool(ctx, o)
	if err != nil {
		return nil, err
	}
	logs := l.logs
	workers := river.NewWorkers()
	river.AddWorker(workers, &riverSeqWorker{onRun: onRun})
	client, err := river.NewClient(riverpgxv5.New(wpool), l.e.config(o, l.tuned, l.maxWorkers, workers, warnLogger(logs)))
	if err != nil {
		wpool.Close()
		return nil, fmt.Errorf("river.NewClient: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		wpool.Close()
		return nil, fmt.Errorf("river Start: %w", err)
	}
	stopVacuum := startVacuumer(ctx, l.e.pool, "river_job", o.riverVacuumAfter)
	return func() (int, error) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err := client.Stop(sctx)
		stopVacuum()
		wpool.Close()
		if err != nil {
			return logs.count(), fmt.Errorf("river Stop: %w", err)
		}
		return logs.count(), nil
	}, nil
}

// client is the insert-only client the dispatches go through, made by the first one,
// which may come before start.
func (l *riverLive) client() (*river.Client[pgx.Tx], error) {
	if l.producer == nil {
		workers := river.NewWorkers()
		river.AddWorker(workers, &riverSeqWorker{}) // the job kind the inserts name; it runs nothing here
		p, err := river.NewClient(riverpgxv5.New(l.e.pool), l.e.config(l.o, l.tuned, 0, workers, warnLogger(l.logs)))
		if err != nil {
			return nil, fmt.Errorf("river.NewClient (insert-only): %w", err)
		}
		l.producer = p
	}
	return l.producer, nil
}

func (l *riverLive) dispatch(ctx context.Context, seqs []int64) error {
	p, err := l.client()
	if err != nil {
		return err
	}
	if len(seqs) == 1 {
		_, err := p.Insert(ctx, riverSeqArgs{seqs[0]}, nil)
		return err
	}
	params := make([]river.InsertManyParams, len(seqs))
	for i, s := range seqs {
		params[i] = river.InsertManyParams{Args: riverSeqArgs{s}}
	}
	_, err = p.InsertMany(ctx, params)
	return err
}

// prepare empties river_job; River has no fair queue.
func (l *riverLive) prepare(ctx context.Context, fair bool) error {
	if fair {
		return errors.New("river has no fair queue")
	}
	return l.e.truncate(ctx)
}

func (l *riverLive) jobsTable() string { return "river_job" }

// dispatchStarv inserts one job, or many by InsertManyFast (COPY), River's fastest.
func (l *riverLive) dispatchStarv(ctx context.Context, args []starvArgs) error {
	p, err := l.client()
	if err != nil {
		return err
	}
	if len(args) == 1 {
		_, err := p.Insert(ctx, args[0], nil)
		return err
	}
	params := make([]river.InsertManyParams, len(args))
	for i, a := range args {
		params[i] = river.InsertManyParams{Args: a}
	}
	_, err = p.InsertManyFast(ctx, params)
	return err
}

func (l *riverLive) completed(ctx context.Context) (int64, error) {
	var n int64
	err := l.e.pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&n)
	return n, err
}

func (l *riverLive) verifyDone(ctx context.Context, n int64) error { return l.e.verify(ctx, "seq", n) }
