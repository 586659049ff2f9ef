package pgq

import (
	"fmt"
	"math"
	"time"
)

// Option sets one job setting at dispatch (overriding the job class, S1) or in a job
// class declaration (DefineJob). Options that do not apply to a call are rejected by it.
type Option func(*settings)

type settings struct {
	queue         *string
	handler       *string
	isolated      bool
	delay         *time.Duration
	tries         *int32
	backoff       []int32
	retryUntil    *time.Time
	retryFor      *time.Duration
	maxExceptions *int32
	timeout       *int32
	failOnTimeout *bool
	priority      int32

	uniqueKey       *string
	uniqueFor       *time.Duration
	uniqueUntil     *string
	uniqueBy        []string
	debounceKey     *string
	debounceFor     *time.Duration
	debounceBy      []string
	debounceMaxWait *time.Duration
	middleware      []byte
	byCopy          bool
	trace           traceContext // set by a client with a TracerProvider (S105)

	maxTries    *int32
	maxRetryFor *time.Duration
	minBackoff  *int32
	maxTimeout  *int32
}

func collect(opts []Option) settings {
	var s settings
	for _, o := range opts {
		o(&s)
	}
	return s
}

// keyed tells whether the settings give a unique or debounce key, which belongs to a
// dispatch as a whole.
func (s settings) keyed() bool {
	return s.uniqueKey != nil || s.uniqueFor != nil || s.uniqueUntil != nil || s.uniqueBy != nil ||
		s.debounceKey != nil || s.debounceFor != nil || s.debounceBy != nil || s.debounceMaxWait != nil
}

func ptr[T any](v T) *T { return &v }

// Queue sends the job to the named queue instead of its class's (default "default").
func Queue(name string) Option { return func(s *settings) { s.queue = &name } }

// Handler names a SQL function taking one jsonb argument that runs the job (DefineJob only).
func Handler(function string) Option { return func(s *settings) { s.handler = &function } }

// Isolated has the worker run each SQL job of the class in a transaction of its own,
// never grouped with other SQL jobs (S112): for handlers that must commit alone, such as
// ones that take session locks. DefineJob only.
func Isolated() Option { return func(s *settings) { s.isolated = true } }

// Delay keeps the job from being reserved until d has passed (S3). Dispatch only.
func Delay(d time.Duration) Option { return func(s *settings) { s.delay = &d } }

// Tries caps the attempts of the job (S5); 0 means unlimited. Unset, the worker's
// --tries applies (default 1, S6). At dispatch, more tries than the class's own are
// refused beyond its ceiling (MaxTries, S90).
func Tries(n int) Option { return func(s *settings) { s.tries = ptr(int32Of(int64(n))) } }

// int32Of saturates v to an int32, so that a value out of range reaches PostgreSQL,
// which refuses it naming it, rather than wrapping to another.
func int32Of(v int64) int32 { return int32(max(min(v, math.MaxInt32), math.MinInt32)) }

// Backoff sets the delays after exceptions, one per retry, the last repeating (S7).
func Backoff(d ...time.Duration) Option {
	return func(s *settings) {
		s.backoff = make([]int32, len(d))
		for i, v := range d {
			s.backoff[i] = int32Of(int64(v / time.Second))
		}
	}
}

// RetryUntil replaces the tries count with a deadline (S9). Dispatch only.
func RetryUntil(t time.Time) Option { return func(s *settings) { s.retryUntil = &t } }

// RetryFor is a deadline relative to dispatch: PostgreSQL sets retry_until to its own
// now() + d when the job is dispatched (S9).
func RetryFor(d time.Duration) Option { return func(s *settings) { s.retryFor = &d } }

// MaxExceptions fails the job at its n-th exception (S10).
func MaxExceptions(n int) Option {
	return func(s *settings) { s.maxExceptions = ptr(int32Of(int64(n))) }
}

// MaxTries is the ceiling of the tries a dispatch may set beyond the class's own, and of
// its max_exceptions (S90); 0 lets a dispatch set unlimited tries. Unset, the
// database's applies (setting pgq.max_tries, 25 by default, S91). DefineJob only.
func MaxTries(n int) Option { return func(s *settings) { s.maxTries = ptr(int32Of(int64(n))) } }

// MaxRetryFor is the ceiling of a deadline a dispatch may set beyond the class's own,
// from the dispatch (S90). Unset, the database's applies (pgq.max_retry_for, 1 day by
// default, S91). DefineJob only.
func MaxRetryFor(d time.Duration) Option { return func(s *settings) { s.maxRetryFor = &d } }

// MinBackoff is the shortest backoff entry a dispatch may set, in whole seconds (S90).
// Unset, the database's applies (pgq.min_backoff, 0 by default, S91). DefineJob only.
func MinBackoff(d time.Duration) Option {
	return func(s *settings) { s.minBackoff = ptr(int32Of(int64(d / time.Second))) }
}

// MaxTimeout is the ceiling of a timeout a dispatch may set beyond the class's own, in
// whole seconds (S90). Unset, the database's applies (pgq.max_timeout, 3600 s by
// default, S91). DefineJob only.
func MaxTimeout(d time.Duration) Option {
	return func(s *settings) { s.maxTimeout = ptr(int32Of(int64(d / time.Second))) }
}

// Timeout cancels the handler after d, rounded down to whole seconds (S13); 0 means
// none (DefineJob only, S43). Unset, the worker's --timeout applies (default 60 s). At
// most 2,147,483 s, the longest statement_timeout PostgreSQL can set (S92).
func Timeout(d time.Duration) Option {
	return func(s *settings) { s.timeout = ptr(int32Of(int64(d / time.Second))) }
}

// TimeoutLimit is the longest timeout of a job: 2,147,483 s, the longest
// statement_timeout PostgreSQL can set for a SQL handler's transaction
// (pgq._max_timeout(), S92). A longer one is refused with ErrInvalidArgument.
const TimeoutLimit = 2147483 * time.Second

// FailOnTimeout fails the job at its first timeout (S13).
func FailOnTimeout() Option { return func(s *settings) { s.failOnTimeout = ptr(true) } }

// Priority orders jobs within a queue, higher first (default 0). Dispatch only.
func Priority(p int) Option { return func(s *settings) { s.priority = int32(p) } }

// ByCopy makes DispatchMany and DispatchManyTx send the payloads by COPY into the
// session's staging table (pgq.stage_dispatch, COPY, pgq.dispatch_staged, in one
// transaction) instead of as one jsonb[] parameter (S68). The jobs are checked and
// written exactly as without it, and the uuids come back in order. It cannot be
// combined with unique or debounce options (ErrInvalidArgument). The jsonb[] path is
// the default: bench/RESULTS.md compares the two.
func ByCopy() Option { return func(s *settings) { s.byCopy = true } }

// UniqueKey makes the dispatch unique (S21): while a job of the same name holds key,
// another dispatch with it is dropped. Dispatch only; classes use UniqueBy.
func UniqueKey(key string) Option { return func(s *settings) { s.uniqueKey = &key } }

// UniqueFor bounds how long a unique lock is held (it is never extended, S21). Without
// it a lock is held until its job succeeds or fails for good.
func UniqueFor(d time.Duration) Option { return func(s *settings) { s.uniqueFor = &d } }

// UniqueUntilProcessing releases the unique lock right before the handler first runs
// (S23) instead of after the job succeeds.
func UniqueUntilProcessing() Option {
	return func(s *settings) { s.uniqueUntil = ptr("processing") }
}

// UniqueBy makes a class unique per the values of these payload fields (DefineJob only).
func UniqueBy(fields ...string) Option { return func(s *settings) { s.uniqueBy = fields } }

// DebounceKey debounces the dispatch (S24): only the newest job per key runs. Dispatch
// only; classes use DebounceBy.
func DebounceKey(key string) Option { return func(s *settings) { s.debounceKey = &key } }

// DebounceFor is how long a debounced job waits for a newer dispatch (its delay, S24).
func DebounceFor(d time.Duration) Option { return func(s *settings) { s.debounceFor = &d } }

// DebounceBy debounces a class per the values of these payload fields (DefineJob only).
func DebounceBy(fields ...string) Option { return func(s *settings) { s.debounceBy = fields } }

// DebounceMaxWait caps the debounce: with dispatches arriving forever, the newest copy
// still runs no later than d after the first dispatch of the burst.
func DebounceMaxWait(d time.Duration) Option { return func(s *settings) { s.debounceMaxWait = &d } }

// UniqueArgs are job arguments that make their dispatch unique (Laravel's
// ShouldBeUnique): Dispatch uses UniqueID as the key and UniqueFor as the lock's
// lifetime (0: until released).
type UniqueArgs interface {
	UniqueID() string
	UniqueFor() time.Duration
}

// DebouncedArgs are job arguments whose dispatches debounce each other per DebounceID.
type DebouncedArgs interface {
	DebounceID() string
	DebounceFor() time.Duration
}

// argOptions returns the options a job's arguments carry.
func argOptions(args any) []Option {
	var opts []Option
	if u, ok := args.(UniqueArgs); ok {
		opts = append(opts, UniqueKey(u.UniqueID()))
		if d := u.UniqueFor(); d > 0 {
			opts = append(opts, UniqueFor(d))
		}
	}
	if d, ok := args.(DebouncedArgs); ok {
		opts = append(opts, DebounceKey(d.DebounceID()), DebounceFor(d.DebounceFor()))
	}
	if m, ok := args.(MiddlewareArgs); ok {
		opts = append(opts, WithMiddleware(m.Middleware()...))
	}
	return opts
}

func (s settings) dispatchOnly(call string) error {
	if s.handler != nil || s.isolated || s.uniqueBy != nil || s.debounceBy != nil ||
		s.maxTries != nil || s.maxRetryFor != nil || s.minBackoff != nil || s.maxTimeout != nil {
		return fmt.Errorf("%w: %s: Handler, Isolated, UniqueBy, DebounceBy, MaxTries, MaxRetryFor, MinBackoff and MaxTimeout apply to DefineJob only",
			ErrInvalidArgument, call)
	}
	return nil
}

func (s settings) classOnly() error {
	if s.delay != nil || s.retryUntil != nil || s.priority != 0 || s.uniqueKey != nil || s.debounceKey != nil || s.byCopy {
		return fmt.Errorf("%w: DefineJob: Delay, RetryUntil, Priority, UniqueKey, DebounceKey and ByCopy apply to dispatch only", ErrInvalidArgument)
	}
	return nil
}
