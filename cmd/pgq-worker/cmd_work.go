package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

// poolCloseWait bounds how long the worker waits for its pool to close once Run has
// returned. A connection whose call the stop cancelled (the listener's wait, a SQL
// handler past the grace) closes in the background: pgx first sends PostgreSQL a cancel
// request, on a new connection, and reads until the server hangs up, which a loaded
// server can take seconds to do. Every outcome is committed by the time Run returns, so
// the process need not wait for that.
const poolCloseWait = time.Second

// closeWithin closes pool, waiting for at most wait.
func closeWithin(pool *pgxpool.Pool, wait time.Duration) {
	closed := make(chan struct{})
	go func() {
		pool.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(wait):
	}
}

func newWorkCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "work",
		Short: "run jobs until stopped (SIGTERM/SIGINT: a graceful stop)",
		Long: `Run jobs of the given queues until stopped. On SIGTERM or SIGINT the worker stops
reserving, lets running handlers finish for --shutdown-grace, then gives the rest back
without using up their attempt, and exits 0.

--tries, --backoff and --timeout apply to jobs whose class and dispatch set none.`,
		Example: `  pgq-worker work --queue high,default --concurrency 20
  pgq-worker work --stop-when-empty --log-format json
  pgq-worker work --metrics-addr 127.0.0.1:9090
  OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 pgq-worker work --otel`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	db := newDatabase(a, f)
	queues := f.String("queue", "default", "`QUEUES` to serve, in priority order, comma separated")
	concurrency := f.Int("concurrency", 100, "handlers running at once, >= 1 (SQL handlers: at most 32, one connection each)")
	tries := f.Int("tries", 1, "attempts for jobs that set none, >= 0 (0 = unlimited)")
	backoff := f.String("backoff", "0", "`SECONDS` to wait after an exception, for jobs that set none, e.g. 10,60,300")
	timeout := f.Int("timeout", 60, "`SECONDS` a handler may run, for jobs that set none, 0 to 2147483 (0 = no limit)")
	sleep := f.Float64("sleep", 3, "`SECONDS` between polls when no notification arrives, > 0")
	cooldown := f.Duration("fetch-cooldown", 5*time.Millisecond, "after a reserve that found fewer jobs than free slots, wait this long before the next")
	groupBudget := f.Duration("sql-group-budget", 5*time.Millisecond, "run short SQL jobs several to a transaction, each in its own savepoint, committing a group after this long at most (0: every SQL job alone)")
	groups := f.Int("sql-groups", 4, "groups of SQL jobs open at once, at most, >= 1: past them, SQL jobs wait to join one")
	once := f.Bool("once", false, "run a single job, then stop")
	stopWhenEmpty := f.Bool("stop-when-empty", false, "stop when no job is ready and none runs")
	maxJobs := f.Int("max-jobs", 0, "stop after this many jobs (0 = no limit)")
	maxTime := f.Int("max-time", 0, "stop after this many `SECONDS` (0 = no limit)")
	name := f.String("name", "", "worker name recorded on reservations (default host:pid)")
	grace := f.Int("shutdown-grace", 30, "`SECONDS` running handlers may finish after SIGTERM/SIGINT")
	logFormat := f.String("log-format", "text", "log format: text or json")
	metricsAddr := f.String("metrics-addr", "", "serve Prometheus metrics at http://`ADDRESS`/metrics, e.g. 127.0.0.1:9090 (default: not served)")
	keepHistory := f.Duration("keep-history", 14*24*time.Hour, "prune attempt history of finished jobs older than this (0: keep)")
	vacuumAfter := f.Int("vacuum-after", 10000, "vacuum pgq.jobs, and pgq.fair_turns with it, once it holds this many dead rows (0: leave them to autovacuum)")
	slotMB := f.Int("slot-mb", 64, "`MIB` a slot of pgq.jobs holds before new jobs go to the next, and a drained one is truncated (0: the slots stay)")
	keepFailed := f.Duration("keep-failed", 0, "prune failed jobs older than this (0: keep until flushed)")
	sessionURL := f.String("session-url", "", "PostgreSQL `URL` for what is bound to a session (the reserve and its nap, LISTEN): direct or session-pooled, when --database-url goes through a transaction pooler")
	txPooler := f.Bool("transaction-pooler", false, "--database-url goes through a transaction-mode pooler (PgBouncer pool_mode = transaction): nothing is set on its sessions, no statement is prepared by name; without --session-url the worker polls")
	noSchedules := f.Bool("no-schedules", false, "do not fire schedules (pgq.schedules): leave them to other workers, or to pg_cron")
	otelOn := f.Bool("otel", false, "export OpenTelemetry traces and metrics by OTLP http/protobuf, configured by the OTEL_EXPORTER_OTLP_* and OTEL_SERVICE_NAME variables (docs/tracing.md)")
	otelChild := f.Bool("otel-child", false, "with --otel: each attempt's span is a child of its dispatch's span, not linked to it")
	otelNoClient := f.Bool("otel-no-client-spans", false, "with --otel: no spans for pgq's own calls (reserve, complete, fail, heartbeat)")
	_ = cmd.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions([]string{"text", "json"}, cobra.ShellCompDirectiveNoFileComp))

	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		sleepFor, err := checkSeconds("sleep", *sleep, false)
		if err != nil {
			return err
		}
		backoffs, err := parseBackoff("backoff", *backoff)
		if err != nil {
			return err
		}
		if err := firstErr(
			checkCount("concurrency", *concurrency, 1),
			checkCount("tries", *tries, 0),
			checkInt("timeout", *timeout, 0, int(pgq.TimeoutLimit/time.Second)),
			checkDuration("fetch-cooldown", *cooldown),
			checkDuration("sql-group-budget", *groupBudget),
			checkCount("sql-groups", *groups, 1),
			checkCount("max-jobs", *maxJobs, 0),
			checkCount("max-time", *maxTime, 0),
			checkCount("shutdown-grace", *grace, 0),
			checkDuration("keep-history", *keepHistory),
			checkCount("vacuum-after", *vacuumAfter, 0),
			checkCount("slot-mb", *slotMB, 0),
			checkDuration("keep-failed", *keepFailed),
		); err != nil {
			return err
		}
		if *once && cmd.Flags().Changed("max-jobs") {
			return usagef("--once runs one job: give --once or --max-jobs, not both")
		}
		if len(splitList(*queues)) == 0 {
			return usagef("--queue names no queue")
		}
		if cmd.Flags().Changed("name") && *name == "" {
			return usagef("--name must not be empty")
		}
		var h slog.Handler
		switch *logFormat {
		case "text":
			h = slog.NewTextHandler(a.stderr, nil)
		case "json":
			h = slog.NewJSONHandler(a.stderr, nil)
		default:
			return usagef("--log-format must be text or json, got %q", *logFormat)
		}
		opts := []worker.Option{
			worker.WithQueues(splitList(*queues)...),
			worker.WithConcurrency(*concurrency),
			worker.WithTries(*tries),
			worker.WithBackoff(backoffs...),
			worker.WithTimeout(time.Duration(*timeout) * time.Second),
			worker.WithSleep(sleepFor),
			worker.WithFetchCooldown(*cooldown),
			worker.WithSQLGroupBudget(*groupBudget),
			worker.WithSQLGroups(*groups),
			worker.WithMaxJobs(*maxJobs),
			worker.WithMaxTime(time.Duration(*maxTime) * time.Second),
			worker.WithShutdownGrace(time.Duration(*grace) * time.Second),
			worker.WithLogger(slog.New(h)),
			worker.WithRetention(*keepHistory, *keepFailed),
			worker.WithVacuumAfter(*vacuumAfter),
			worker.WithSlotSize(int64(*slotMB) << 20),
			worker.WithSchedules(!*noSchedules),
		}
		if *name != "" {
			opts = append(opts, worker.WithName(*name))
		}
		if *once {
			opts = append(opts, worker.WithMaxJobs(1), worker.WithStopWhenEmpty())
		}
		if *stopWhenEmpty {
			opts = append(opts, worker.WithStopWhenEmpty())
		}
		if (*otelChild || *otelNoClient) && !*otelOn {
			return usagef("--otel-child and --otel-no-client-spans need --otel")
		}

		ctx := cmd.Context()
		// The worker's own timeouts, sent as each connection starts: they then override
		// the role's and the database's settings from the first statement on (S37).
		params := worker.RuntimeParams()
		if *txPooler {
			// PgBouncer refuses startup parameters it does not track ("unsupported
			// startup parameter: lock_timeout"), and a SET would reach other clients.
			params = nil
			opts = append(opts, worker.WithTransactionPooler())
		}
		pool, err := db.connectURL(ctx, db.url, int32(min(*concurrency, 32)+3), params, *txPooler)
		if err != nil {
			return err
		}
		defer closeWithin(pool, poolCloseWait)
		if *sessionURL != "" {
			sessions, err := db.connectURL(ctx, *sessionURL, 2, worker.RuntimeParams(), false)
			if err != nil {
				return fmt.Errorf("--session-url: %w", err)
			}
			defer closeWithin(sessions, poolCloseWait)
			opts = append(opts, worker.WithSessionPool(sessions))
		}
		client, err := pgq.NewClient(pool)
		if err != nil {
			return err
		}
		if err := client.CheckSchema(ctx); err != nil {
			return err
		}
		if *metricsAddr != "" {
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			opts = append(opts, worker.WithMetrics(reg))
			stopMetrics, err := serveMetrics(*metricsAddr, reg, a.stderr)
			if err != nil {
				return err
			}
			defer stopMetrics()
		}
		if *otelOn {
			otelOpts, stopOTel, err := startOTel(ctx, a.stderr)
			if err != nil {
				return err
			}
			defer stopOTel()
			opts = append(opts, otelOpts...)
			if *otelChild {
				opts = append(opts, worker.WithTraceChild())
			}
			if *otelNoClient {
				opts = append(opts, worker.WithoutClientSpans())
			}
		}
		w, err := worker.New(pool, opts...)
		if err != nil {
			return err
		}
		return w.Run(ctx)
	})
	return cmd
}

// serveMetrics serves reg on addr until the returned stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, stderr io.Writer) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		fmt.Fprintf(stderr, "pgq-worker: warning: metrics are served on %s without authentication, beyond this machine (README, Security)\n", ln.Addr())
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(stderr, "pgq-worker: metrics server:", err)
		}
	}()
	fmt.Fprintf(stderr, "pgq-worker: metrics on http://%s/metrics\n", ln.Addr())
	return func() { _ = srv.Close() }, nil
}
