// Command pgq-worker migrates the pgq schema, runs jobs, dispatches them and operates
// failed jobs. Run `pgq-worker help` for the commands.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pgq-dev/pgq/internal/pgcodec"
	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

const usage = `pgq-worker: a PostgreSQL job queue worker

Usage:
  pgq-worker migrate                          create or update the pgq schema
  pgq-worker work [flags]                     run jobs (see pgq-worker work -h)
  pgq-worker dispatch JOB [PAYLOAD] [flags]   queue a job, print its uuid
  pgq-worker failed list [--queue Q] [--limit N]
  pgq-worker failed show UUID                 a failed job and its attempt history
  pgq-worker failed retry UUID|all            put failed jobs back on their queue
  pgq-worker failed forget UUID               delete a failed job
  pgq-worker failed flush [--hours N]         delete failed jobs (older than N hours)
  pgq-worker status [--watch SECONDS]         jobs per queue
  pgq-worker check [--timeout 60] [--tries 1] [--json]
                                              the ordering linter: exit 1 on a problem

Every command takes --database-url (default: $DATABASE_URL).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, so tests can call it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "migrate":
		err = cmdMigrate(ctx, rest, stdout)
	case "work":
		err = cmdWork(ctx, rest, stderr)
	case "dispatch":
		err = cmdDispatch(ctx, rest, stdout)
	case "failed":
		err = cmdFailed(ctx, rest, stdout)
	case "status":
		err = cmdStatus(ctx, rest, stdout)
	case "check":
		err = cmdCheck(ctx, rest, stdout)
	default:
		err = fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if errors.Is(err, errProblems) {
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "pgq-worker:", err)
		return 1
	}
	return 0
}

// command is a flag set with the --database-url every command takes.
type command struct {
	*flag.FlagSet
	databaseURL *string
}

func newCommand(name string) command {
	fs := flag.NewFlagSet("pgq-worker "+name, flag.ContinueOnError)
	return command{FlagSet: fs, databaseURL: fs.String("database-url", os.Getenv("DATABASE_URL"),
		"PostgreSQL URL (default $DATABASE_URL)")}
}

// parse parses flags wherever they stand among the positional arguments.
func (c command) parse(args []string) ([]string, error) {
	var positional []string
	for {
		if err := c.Parse(args); err != nil {
			return nil, err
		}
		if c.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, c.Arg(0))
		args = c.Args()[1:]
	}
}

func (c command) connect(ctx context.Context, maxConns int32) (*pgxpool.Pool, error) {
	if *c.databaseURL == "" {
		return nil, errors.New("no database: set DATABASE_URL or pass --database-url")
	}
	cfg, err := pgxpool.ParseConfig(*c.databaseURL)
	if err != nil {
		return nil, fmt.Errorf("database url: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	cfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		pgcodec.Register(conn.TypeMap()) // uuids as bytes: the worker's heartbeats and failures too
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return pool, nil
}

// open parses args and connects a client: the start of every command but work and
// migrate. It returns the positional arguments and a func that closes the pool.
func (c command) open(ctx context.Context, args []string) ([]string, *pgq.Client, func(), error) {
	pos, err := c.parse(args)
	if err != nil {
		return nil, nil, nil, err
	}
	pool, err := c.connect(ctx, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	client, err := pgq.NewClient(pool)
	if err != nil {
		pool.Close()
		return nil, nil, nil, err
	}
	return pos, client, pool.Close, nil
}

func cmdMigrate(ctx context.Context, args []string, stdout io.Writer) error {
	c := newCommand("migrate")
	if _, err := c.parse(args); err != nil {
		return err
	}
	pool, err := c.connect(ctx, 0)
	if err != nil {
		return err
	}
	defer pool.Close()
	n, err := pgq.Migrate(ctx, pool)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "pgq schema up to date (%d migrations applied)\n", n)
	return nil
}

func cmdWork(ctx context.Context, args []string, stderr io.Writer) error {
	c := newCommand("work")
	queues := c.String("queue", "default", "queues to serve, in priority order (comma separated)")
	concurrency := c.Int("concurrency", 100, "handlers running at once (SQL handlers: at most 32, one connection each)")
	tries := c.Int("tries", 1, "attempts for jobs that set none (0 = unlimited)")
	backoff := c.String("backoff", "0", "seconds to wait after an exception, for jobs that set none (e.g. 10,60,300)")
	timeout := c.Int("timeout", 60, "seconds a handler may run, for jobs that set none (0 = none)")
	sleep := c.Float64("sleep", 3, "seconds between polls when no notification arrives")
	cooldown := c.Duration("fetch-cooldown", 5*time.Millisecond, "after a reserve that found fewer jobs than free slots, wait this long before the next")
	once := c.Bool("once", false, "run a single job, then stop")
	stopWhenEmpty := c.Bool("stop-when-empty", false, "stop when no job is ready and none runs")
	maxJobs := c.Int("max-jobs", 0, "stop after this many jobs (0 = no limit)")
	maxTime := c.Int("max-time", 0, "stop after this many seconds (0 = no limit)")
	name := c.String("name", "", "worker name recorded on reservations (default host:pid)")
	grace := c.Int("shutdown-grace", 30, "seconds running handlers may finish after SIGTERM/SIGINT")
	logFormat := c.String("log-format", "text", "log format: text or json")
	metricsAddr := c.String("metrics-addr", "", "serve Prometheus metrics on this address (e.g. :9090)")
	keepHistory := c.Duration("keep-history", 14*24*time.Hour, "prune attempt history of finished jobs older than this (0: keep)")
	vacuumAfter := c.Int("vacuum-after", 10000, "vacuum pgq.jobs once it holds this many dead rows (0: leave it to autovacuum)")
	keepFailed := c.Duration("keep-failed", 0, "prune failed jobs older than this (0: keep until flushed)")
	if _, err := c.parse(args); err != nil {
		return err
	}

	var h slog.Handler
	switch *logFormat {
	case "text":
		h = slog.NewTextHandler(stderr, nil)
	case "json":
		h = slog.NewJSONHandler(stderr, nil)
	default:
		return fmt.Errorf("--log-format must be text or json, got %q", *logFormat)
	}
	backoffs, err := parseSeconds(*backoff)
	if err != nil {
		return fmt.Errorf("--backoff: %w", err)
	}
	opts := []worker.Option{
		worker.WithQueues(splitList(*queues)...),
		worker.WithConcurrency(*concurrency),
		worker.WithTries(*tries),
		worker.WithBackoff(backoffs...),
		worker.WithTimeout(time.Duration(*timeout) * time.Second),
		worker.WithSleep(time.Duration(*sleep * float64(time.Second))),
		worker.WithFetchCooldown(*cooldown),
		worker.WithMaxJobs(*maxJobs),
		worker.WithMaxTime(time.Duration(*maxTime) * time.Second),
		worker.WithShutdownGrace(time.Duration(*grace) * time.Second),
		worker.WithLogger(slog.New(h)),
		worker.WithRetention(*keepHistory, *keepFailed),
		worker.WithVacuumAfter(*vacuumAfter),
	}
	if *metricsAddr != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		opts = append(opts, worker.WithMetrics(reg))
		stopMetrics, err := serveMetrics(*metricsAddr, reg, stderr)
		if err != nil {
			return err
		}
		defer stopMetrics()
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
	pool, err := c.connect(ctx, int32(min(*concurrency, 32)+3))
	if err != nil {
		return err
	}
	defer pool.Close()
	w, err := worker.New(pool, opts...)
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

func cmdDispatch(ctx context.Context, args []string, stdout io.Writer) error {
	c := newCommand("dispatch")
	queue := c.String("queue", "", "queue (default: the job class's, else default)")
	delay := c.Int("delay", 0, "seconds before the job may run")
	tries := c.Int("tries", -1, "attempts (0 = unlimited; default: class, else worker)")
	backoff := c.String("backoff", "", "seconds after each exception, e.g. 10,60,300")
	timeout := c.Int("timeout", -1, "seconds the handler may run")
	priority := c.Int("priority", 0, "higher runs first within the queue")
	pos, client, closeFn, err := c.open(ctx, args)
	if err != nil {
		return err
	}
	defer closeFn()
	if len(pos) < 1 || len(pos) > 2 {
		return errors.New("usage: pgq-worker dispatch JOB [PAYLOAD-JSON] [flags]")
	}
	payload := json.RawMessage("{}")
	if len(pos) == 2 {
		payload = json.RawMessage(pos[1])
	}
	opts := []pgq.Option{pgq.Priority(*priority)}
	if *queue != "" {
		opts = append(opts, pgq.Queue(*queue))
	}
	if *delay != 0 {
		opts = append(opts, pgq.Delay(time.Duration(*delay)*time.Second))
	}
	if *tries >= 0 {
		opts = append(opts, pgq.Tries(*tries))
	}
	if *timeout >= 0 {
		opts = append(opts, pgq.Timeout(time.Duration(*timeout)*time.Second))
	}
	if *backoff != "" {
		b, err := parseSeconds(*backoff)
		if err != nil {
			return fmt.Errorf("--backoff: %w", err)
		}
		opts = append(opts, pgq.Backoff(b...))
	}
	id, err := client.Dispatch(ctx, pos[0], payload, opts...)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, id)
	return nil
}

func cmdFailed(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: pgq-worker failed list|show|retry|forget|flush")
	}
	sub := args[0]
	c := newCommand("failed " + sub)
	queue := c.String("queue", "", "only this queue")
	limit := c.Int("limit", 50, "list at most this many")
	hours := c.Float64("hours", 0, "flush only failed jobs older than this many hours")
	pos, client, closeFn, err := c.open(ctx, args[1:])
	if err != nil {
		return err
	}
	defer closeFn()
	arg := func() (uuid.UUID, error) {
		if len(pos) != 1 {
			return uuid.Nil, fmt.Errorf("usage: pgq-worker failed %s UUID", sub)
		}
		return uuid.Parse(pos[0])
	}
	switch sub {
	case "list":
		jobs, err := client.FailedJobs(ctx, *queue, *limit)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "UUID\tJOB\tQUEUE\tATTEMPTS\tFAILED AT\tEXCEPTION")
		for _, j := range jobs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", j.UUID, j.Job, j.Queue, j.Attempts,
				j.FailedAt.Format(time.RFC3339), firstLine(j.Exception, 80))
		}
		return tw.Flush()
	case "show":
		id, err := arg()
		if err != nil {
			return err
		}
		j, err := client.FailedJob(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "uuid:      %s\njob:       %s\nqueue:     %s\nattempts:  %d\nfailed at: %s\npayload:   %s\nexception: %s\n\nattempts:\n",
			j.UUID, j.Job, j.Queue, j.Attempts, j.FailedAt.Format(time.RFC3339), j.Payload, j.Exception)
		history, err := client.Attempts(ctx, id)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tOUTCOME\tWORKER\tFINISHED AT\tDELAY\tEXCEPTION")
		for _, a := range history {
			delay := "-"
			if a.Delay != nil {
				delay = fmt.Sprintf("%ds", *a.Delay)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\n", a.Attempt, a.Outcome, a.Worker,
				a.FinishedAt.Format(time.RFC3339), delay, firstLine(a.Exception, 80))
		}
		return tw.Flush()
	case "retry":
		if len(pos) == 1 && pos[0] == "all" {
			n, err := client.RetryAllFailed(ctx, pgq.FailedFilter{Queue: *queue})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%d failed jobs put back on their queues\n", n)
			return nil
		}
		id, err := arg()
		if err != nil {
			return err
		}
		if err := client.RetryFailed(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s put back on its queue\n", id)
		return nil
	case "forget":
		id, err := arg()
		if err != nil {
			return err
		}
		if err := client.ForgetFailed(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s forgotten\n", id)
		return nil
	case "flush":
		n, err := client.FlushFailed(ctx, pgq.FailedFilter{OlderThan: time.Duration(*hours * float64(time.Hour))})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d failed jobs deleted\n", n)
		return nil
	}
	return fmt.Errorf("unknown failed subcommand %q: use list, show, retry, forget or flush", sub)
}

func cmdStatus(ctx context.Context, args []string, stdout io.Writer) error {
	c := newCommand("status")
	watch := c.Float64("watch", 0, "refresh every this many seconds until interrupted")
	_, client, closeFn, err := c.open(ctx, args)
	if err != nil {
		return err
	}
	defer closeFn()
	for {
		rows, err := client.Status(ctx)
		if err != nil {
			return err
		}
		if *watch > 0 {
			fmt.Fprintf(stdout, "\033[H\033[2J%s  (every %gs, Ctrl-C to stop)\n\n", time.Now().Format(time.TimeOnly), *watch)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "QUEUE\tREADY\tSCHEDULED\tRETRYING\tRUNNING\tFAILED\tOLDEST WAIT\t")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Queue, r.Ready, r.Scheduled, r.Retrying,
				r.Running, r.Failed, r.OldestWait.Round(time.Second))
		}
		if err := tw.Flush(); err != nil || *watch <= 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Duration(*watch * float64(time.Second))):
		}
	}
}

// errProblems makes check exit 1 without printing an error line.
var errProblems = errors.New("problems found")

func cmdCheck(ctx context.Context, args []string, stdout io.Writer) error {
	c := newCommand("check")
	timeout := c.Int("timeout", 60, "the workers' --timeout in seconds")
	tries := c.Int("tries", 1, "the workers' --tries")
	asJSON := c.Bool("json", false, "print the findings as JSON")
	_, client, closeFn, err := c.open(ctx, args)
	if err != nil {
		return err
	}
	defer closeFn()
	findings, err := client.Check(ctx, time.Duration(*timeout)*time.Second, *tries)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if findings == nil {
			findings = []pgq.Finding{}
		}
		if err := enc.Encode(findings); err != nil {
			return err
		}
	} else {
		for _, f := range findings {
			fmt.Fprintf(stdout, "%s: %s\n  %s\n  fix: %s\n", f.Object, f.Rule, f.Detail, f.Fix)
		}
		fmt.Fprintf(stdout, "%d problem(s) found\n", len(findings))
	}
	if len(findings) > 0 {
		return errProblems
	}
	return nil
}

// serveMetrics serves reg on addr until the returned stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, stderr io.Writer) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
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

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseSeconds(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("want whole seconds >= 0, got %q", p)
		}
		out = append(out, time.Duration(n)*time.Second)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

func firstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > max {
		s = s[:max-1] + "…"
	}
	return s
}
