package worker

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgq-dev/pgq/pgq"
)

// Option configures a Worker. Each mirrors a pgq-worker work flag.
type Option func(*config) error

type config struct {
	queues        []string
	concurrency   int
	tries         int
	backoff       []int32
	timeout       time.Duration
	sleep         time.Duration
	cooldown      time.Duration
	name          string
	maxJobs       int
	maxTime       time.Duration
	stopWhenEmpty bool
	shutdownGrace time.Duration
	timeoutGrace  time.Duration
	sqlGroup      time.Duration // the time budget of a group of SQL jobs; 0: no groups (S109)
	sqlGroups     int           // groups open at once, at most (S113)
	logger        *slog.Logger

	historyRetention time.Duration
	failedRetention  time.Duration
	pruneEvery       time.Duration
	vacuumAfter      int
	slotBytes        int64
	registerer       prometheus.Registerer
	schedules        bool

	transactionPooled bool          // the pool goes through a transaction pooler
	sessionPool       *pgxpool.Pool // the session's and the listener's connections; nil: the pool's

	otel otelOptions // OpenTelemetry (tracing.go)
	tel  *telemetry  // built by New from otel; nil: no spans or OTel metrics
}

func defaults() config {
	host, _ := os.Hostname()
	return config{
		queues:        []string{"default"},
		concurrency:   100,
		tries:         1,
		backoff:       []int32{0},
		timeout:       60 * time.Second,
		sleep:         3 * time.Second,
		cooldown:      5 * time.Millisecond,
		name:          fmt.Sprintf("%s:%d", host, os.Getpid()),
		shutdownGrace: 30 * time.Second,
		timeoutGrace:  5 * time.Second,
		sqlGroup:      defaultSQLGroupBudget,
		sqlGroups:     defaultSQLGroups,
		logger:        slog.Default(),

		historyRetention: 14 * 24 * time.Hour,
		pruneEvery:       time.Hour,
		vacuumAfter:      10000,
		slotBytes:        64 << 20,
		schedules:        true,
	}
}

// WithQueues sets the queues served, in priority order (S30). Default "default".
func WithQueues(queues ...string) Option {
	return func(c *config) error {
		if len(queues) == 0 {
			return errors.New("WithQueues: at least one queue")
		}
		c.queues = queues
		return nil
	}
}

// WithConcurrency sets how many handlers run at once. Default 100 (Go handlers are
// goroutines; SQL handlers are further limited by the pool, see New). A job whose
// handler has returned no longer takes a slot while its outcome waits for the next
// batched report; the worker holds at most twice this many jobs reserved.
func WithConcurrency(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("WithConcurrency: must be >= 1, got %d", n)
		}
		c.concurrency = n
		return nil
	}
}

// WithTries sets the tries of jobs that set none (S6). Default 1; 0 means unlimited.
func WithTries(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("WithTries: must be >= 0, got %d", n)
		}
		c.tries = n
		return nil
	}
}

// WithBackoff sets the backoff of jobs that set none (S7). Default 0.
func WithBackoff(d ...time.Duration) Option {
	return func(c *config) error {
		if len(d) == 0 {
			return errors.New("WithBackoff: at least one delay")
		}
		c.backoff = make([]int32, len(d))
		for i, v := range d {
			if v < 0 {
				return fmt.Errorf("WithBackoff: delays must be >= 0, got %s", v)
			}
			c.backoff[i] = int32(v / time.Second)
		}
		return nil
	}
}

// WithTimeout sets the timeout of jobs that set none (S13). Default 60 s; 0 means none.
// At most pgq.TimeoutLimit, which a SQL handler's statement_timeout can hold (S92).
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || d > pgq.TimeoutLimit {
			return fmt.Errorf("WithTimeout: must be from 0 to %s, got %s", pgq.TimeoutLimit, d)
		}
		c.timeout = d
		return nil
	}
}

// WithSleep sets the poll interval used when no notification arrives (S31). Default 3 s.
func WithSleep(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("WithSleep: must be > 0, got %s", d)
		}
		c.sleep = d
		return nil
	}
}

// WithFetchCooldown sets how long after a reserve that found fewer jobs than it asked
// for the worker waits before reserving again on a notification or a freed slot.
// Under a trickle of dispatches it gathers them into fewer, larger reserves instead of
// one transaction per notification; a reserve that came back full is followed at once,
// and an idle worker still wakes at once. Default 5 ms; 0 reserves on every wake-up.
func WithFetchCooldown(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("WithFetchCooldown: must be >= 0, got %s", d)
		}
		c.cooldown = d
		return nil
	}
}

// WithVacuumAfter sets how many dead rows pgq.jobs (with its loads) may hold before the
// worker vacuums it, and the turns of fair queues (pgq.fair_turns) with it (checked
// each second; only when the worker's role owns the tables). Default 10,000; 0 leaves
// vacuuming to autovacuum.
func WithVacuumAfter(deadRows int) Option {
	return func(c *config) error {
		if deadRows < 0 {
			return fmt.Errorf("WithVacuumAfter: must be >= 0, got %d", deadRows)
		}
		c.vacuumAfter = deadRows
		return nil
	}
}

// WithSlotSize sets the size (bytes, with indexes) at which the current slot of
// pgq.jobs takes no more new jobs: the worker calls pgq.rotate each second, which then
// sends them to an empty slot and truncates a drained one (S80). While the xmin horizon
// is held, pgq.jobs stays within about four times this size. Default 64 MiB; at least
// 64 KiB; 0 leaves the slots where they are (pgq.rotate still does the rest of its work
// each second).
func WithSlotSize(bytes int64) Option {
	return func(c *config) error {
		if bytes != 0 && bytes < 64<<10 {
			return fmt.Errorf("WithSlotSize: must be 0 or >= 65536, got %d", bytes)
		}
		c.slotBytes = bytes
		return nil
	}
}

// WithName sets the worker name recorded on reservations. Default host:pid.
func WithName(name string) Option {
	return func(c *config) error {
		if name == "" {
			return errors.New("WithName: empty name")
		}
		c.name = name
		return nil
	}
}

// WithMaxJobs stops the worker after it has reserved n jobs and they have finished.
func WithMaxJobs(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("WithMaxJobs: must be >= 0, got %d", n)
		}
		c.maxJobs = n
		return nil
	}
}

// WithMaxTime stops the worker gracefully after d.
func WithMaxTime(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("WithMaxTime: must be >= 0, got %s", d)
		}
		c.maxTime = d
		return nil
	}
}

// WithStopWhenEmpty stops the worker once no job is ready and none is running.
func WithStopWhenEmpty() Option {
	return func(c *config) error { c.stopWhenEmpty = true; return nil }
}

// WithShutdownGrace sets how long running handlers may finish after a stop request
// before they are cancelled and their jobs released (S32). Default 30 s.
func WithShutdownGrace(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("WithShutdownGrace: must be >= 0, got %s", d)
		}
		c.shutdownGrace = d
		return nil
	}
}

// WithSQLGroupBudget sets the time budget of a group of SQL jobs (S109): the worker runs
// short SQL jobs several to a transaction, each in its own savepoint, and commits the
// group once it has run this long, once its subtransactions near PostgreSQL's cache of 64
// per backend, or once no job waits, whichever comes first; a job whose recent runs took
// more than half of it runs alone. 0 runs every SQL job in a transaction of its own.
// Default 5 ms.
func WithSQLGroupBudget(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("WithSQLGroupBudget: must be >= 0, got %s", d)
		}
		c.sqlGroup = d
		return nil
	}
}

// WithSQLGroups sets how many groups of SQL jobs (S109) run at once, at most: while
// that many are open, the SQL jobs that come wait for them instead of opening groups of
// their own (S113), so that they share commits rather than compete for the server's
// CPU with a transaction each. Jobs run alone (long, isolated or first of their class)
// do not count. Default 4.
func WithSQLGroups(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("WithSQLGroups: must be >= 1, got %d", n)
		}
		c.sqlGroups = n
		return nil
	}
}

// WithTimeoutGrace sets how long a cancelled handler has to return before the worker
// gives up on it, stops and Run returns ErrHandlerStuck (S13). Default 5 s.
func WithTimeoutGrace(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("WithTimeoutGrace: must be > 0, got %s", d)
		}
		c.timeoutGrace = d
		return nil
	}
}

// WithLogger sets the structured logger; one info line per job outcome.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithRetention sets how long the attempt history of finished jobs (default 14 days;
// 0 keeps it) and failed jobs (default 0: kept until flushed) are kept. Workers prune
// hourly; one at a time does the work.
func WithRetention(history, failed time.Duration) Option {
	return func(c *config) error {
		if history < 0 || failed < 0 {
			return fmt.Errorf("WithRetention: must be >= 0, got %s and %s", history, failed)
		}
		c.historyRetention, c.failedRetention = history, failed
		return nil
	}
}

// WithMetrics registers the worker's Prometheus metrics with reg: jobs by outcome, job
// and queue; handler duration; leases extended and lost; turn-aways by middleware; and,
// read at scrape time, queue depth and oldest wait, batches by state with the members of
// unfinished ones by state, and stalled chains and batches.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(c *config) error {
		if reg == nil {
			return errors.New("WithMetrics: nil registerer")
		}
		c.registerer = reg
		return nil
	}
}

// WithSchedules turns the firing of schedules (pgq.schedules, S66) on or off. Default on:
// every worker evaluates them once a second, and with any number of workers each tick
// is dispatched once (S61). Off, the worker leaves them to others, or to pg_cron.
func WithSchedules(on bool) Option {
	return func(c *config) error { c.schedules = on; return nil }
}

// WithTransactionPooler says that the pool given to New reaches PostgreSQL through a
// transaction-mode pooler (PgBouncer pool_mode = transaction), where consecutive
// transactions of one client connection may run on different server sessions. The
// worker then sets nothing on those connections' sessions (its protocol bounds of S37
// come from the role, or from a pool that sends them at connect where the pooler passes
// them on), and needs its session-bound calls elsewhere: the reserve, the nap's advisory
// locks and LISTEN go over WithSessionPool's connections. Without WithSessionPool the
// worker neither naps nor listens: it reserves through the pooler and polls every
// WithSleep, and says so once in its log. The pool's connections must not use named
// prepared statements: configure it with pgx.QueryExecModeExec (the URL parameter
// default_query_exec_mode=exec does it).
func WithTransactionPooler() Option {
	return func(c *config) error {
		c.transactionPooled = true
		return nil
	}
}

// WithSessionPool gives the worker a pool, of at least 2 connections, reaching the same
// database directly or through a session-mode pooler, for what is bound to a session:
// the reserve and the nap (pgq.nap's advisory locks, the reserve's marks) on one
// connection, LISTEN on another. Everything else uses the pool given to New.
func WithSessionPool(pool *pgxpool.Pool) Option {
	return func(c *config) error {
		if pool == nil {
			return errors.New("WithSessionPool: pool is nil")
		}
		c.sessionPool = pool
		return nil
	}
}
