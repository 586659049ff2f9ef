// Command gohandlers is a worker with Go handlers, built by the faults tests: where
// pgq-worker runs SQL handlers, whose effects commit with their completion, a Go
// handler's effect happens outside PostgreSQL and its completion is a separate call, so
// a lost completion shows as a second run.
//
// Its one handler, effect, sleeps the payload's ms, then records the run in app.effects
// (n, k, worker, started, run) on a pool of its own, retrying that insert until it
// succeeds (the run happened, whatever PostgreSQL is going through), and returns nil. It
// never raises: every attempt it does not succeed is infrastructure's doing. The run's
// random id makes the retries idempotent: an insert that committed while a restart lost
// its answer is not a second run.
//
//	gohandlers --database-url URL [--name W] [--concurrency 4] [--tries 1] [--sleep 1] [--timeout 60] [--job effect] [--queues default]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pgq-dev/pgq/internal/pgcodec"
	"github.com/pgq-dev/pgq/worker"
)

type effectArgs struct {
	N  int    `json:"n"`
	K  string `json:"k"`
	Ms int    `json:"ms"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gohandlers:", err)
		os.Exit(1)
	}
}

func run() error {
	url := flag.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL")
	name := flag.String("name", fmt.Sprintf("go:%d", os.Getpid()), "worker name")
	concurrency := flag.Int("concurrency", 4, "handlers running at once")
	tries := flag.Int("tries", 1, "attempts for jobs that set none (0 = unlimited)")
	sleep := flag.Float64("sleep", 1, "seconds between polls")
	timeout := flag.Int("timeout", 60, "seconds a handler may run")
	job := flag.String("job", "effect", "the job name the handler is registered for")
	queues := flag.String("queues", "default", "queues to serve, comma-separated")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// As pgq-worker connects: min(concurrency, 32) + 3 connections, pgq's codecs.
	cfg, err := pgxpool.ParseConfig(*url)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(min(*concurrency, 32) + 3)
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		pgcodec.Register(conn.TypeMap())
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("connect: %w", err)
	}

	ecfg, err := pgxpool.ParseConfig(*url)
	if err != nil {
		return err
	}
	ecfg.MaxConns = int32(*concurrency)
	effects, err := pgxpool.NewWithConfig(ctx, ecfg)
	if err != nil {
		return err
	}
	defer effects.Close()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	w, err := worker.New(pool,
		worker.WithName(*name),
		worker.WithConcurrency(*concurrency),
		worker.WithTries(*tries),
		worker.WithSleep(time.Duration(*sleep*float64(time.Second))),
		worker.WithTimeout(time.Duration(*timeout)*time.Second),
		worker.WithLogger(log),
		worker.WithQueues(strings.Split(*queues, ",")...),
	)
	if err != nil {
		return err
	}
	worker.Handle(w, *job, worker.Handler[effectArgs]{
		Run: func(ctx context.Context, job *worker.Job[effectArgs]) error {
			started := time.Now()
			time.Sleep(time.Duration(job.Args.Ms) * time.Millisecond)
			return record(effects, log, *name, job.Args, started)
		},
	})
	if err := w.Run(ctx); err != nil {
		return err
	}
	return nil
}

// record inserts the run into app.effects, retrying until it succeeds (for up to two
// minutes, past which the test has failed anyway). A retry that finds the run's row
// there already says so: its first insert had committed.
func record(effects *pgxpool.Pool, log *slog.Logger, name string, a effectArgs, started time.Time) error {
	run := uuid.New()
	give := time.Now().Add(2 * time.Minute)
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		tag, err := effects.Exec(ctx, `INSERT INTO app.effects (n, k, worker, started, run)
			VALUES ($1, nullif($2, ''), $3, $4, $5) ON CONFLICT (run) DO NOTHING`,
			a.N, a.K, name, started, run)
		cancel()
		if err == nil {
			if tag.RowsAffected() == 0 {
				log.Warn("the effect had been recorded; the answer to that insert was lost", "n", a.N, "tries", try)
			}
			return nil
		}
		if time.Now().After(give) {
			return errors.Join(errors.New("could not record the effect"), err)
		}
		log.Warn("recording the effect failed; retrying", "n", a.N, "err", err)
		time.Sleep(100 * time.Millisecond)
	}
}
