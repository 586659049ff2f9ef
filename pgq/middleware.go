package pgq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// Middleware is a check PostgreSQL runs when it reserves a job, before the handler
// (S26-S29, S99): WithoutOverlapping, RateLimited, ThrottlesExceptions or
// ConcurrencyLimited. It is data, frozen
// into the job at dispatch, so it works the same for jobs dispatched from SQL or Go and
// for any worker.
type Middleware interface {
	middleware() (name string, settings map[string]any)
}

// WithoutOverlapping lets at most one job with the same key run at a time, across all
// workers (S26). The key is Key, or the payload fields By, scoped to the job name unless
// Shared. A job that finds the key taken is released for ReleaseAfter (default 0), or
// deleted when DontRelease (S27). ExpireAfter, when set, caps how long one holder keeps
// the lock; keep it above the job's timeout and below the queue's retry_after.
type WithoutOverlapping struct {
	Key          string
	By           []string
	ReleaseAfter time.Duration
	ExpireAfter  time.Duration
	DontRelease  bool
	Shared       bool
}

func (m WithoutOverlapping) middleware() (string, map[string]any) {
	s := map[string]any{"release_after": int(m.ReleaseAfter / time.Second)}
	keyed(s, m.Key, m.By)
	if m.ExpireAfter > 0 {
		s["expire_after"] = int(m.ExpireAfter / time.Second)
	}
	if m.DontRelease {
		s["dont_release"] = true
	}
	if m.Shared {
		s["shared"] = true
	}
	return "without_overlapping", s
}

// RateLimited spends one hit of the named limit (DefineLimit) per job; over budget the
// job is released until the window resets plus 3 s (S28). By gives each value of these
// payload fields its own budget.
type RateLimited struct {
	Limit string
	By    []string
}

func (m RateLimited) middleware() (string, map[string]any) {
	s := map[string]any{"limit": m.Limit}
	keyed(s, "", m.By)
	return "rate_limited", s
}

// ConcurrencyLimited lets at most Limit handlers of a key run at once across every
// worker (S99): the key is Key, or the payload fields By, scoped to the job name; or,
// with Named, the named limit of DefineConcurrency (per By value when given), shared by
// every class that names it. A job over the limit waits, without spending a try, until
// a job of its key ends.
type ConcurrencyLimited struct {
	Limit int
	Named string
	Key   string
	By    []string
}

func (m ConcurrencyLimited) middleware() (string, map[string]any) {
	s := map[string]any{"limit": m.Limit}
	if m.Named != "" {
		s["limit"] = m.Named
	}
	keyed(s, m.Key, m.By)
	return "concurrency_limited", s
}

// ThrottlesExceptions is a circuit breaker shared by every worker (S29): after
// MaxExceptions (default 10) exceptions within Decay (default 10 min) for the key
// (default: the job name), jobs with that key are released until it closes plus 3 s.
// While it catches an exception it releases the job after Backoff instead of failing
// it. When, a regular expression, limits it to matching exception texts.
type ThrottlesExceptions struct {
	MaxExceptions int
	Decay         time.Duration
	Backoff       time.Duration
	Key           string
	By            []string
	When          string
}

func (m ThrottlesExceptions) middleware() (string, map[string]any) {
	s := map[string]any{"backoff": int(m.Backoff / time.Second)}
	if m.MaxExceptions > 0 {
		s["max_exceptions"] = m.MaxExceptions
	}
	if m.Decay > 0 {
		s["decay"] = int(m.Decay / time.Second)
	}
	keyed(s, m.Key, m.By)
	if m.When != "" {
		s["when"] = m.When
	}
	return "throttles_exceptions", s
}

func keyed(s map[string]any, key string, by []string) {
	if key != "" {
		s["key"] = key
	}
	if len(by) > 0 {
		s["by"] = by
	}
}

// WithMiddleware sets the job's middleware, in order, replacing the class's (S1).
func WithMiddleware(mw ...Middleware) Option {
	return func(s *settings) {
		list := make([]map[string]any, len(mw))
		for i, m := range mw {
			name, cfg := m.middleware()
			list[i] = map[string]any{name: cfg}
		}
		b, _ := json.Marshal(list) // maps of strings, ints and bools always marshal
		s.middleware = b
	}
}

// MiddlewareArgs are job arguments that carry their own middleware; Dispatch applies it.
type MiddlewareArgs interface {
	Middleware() []Middleware
}

// DefineLimit creates or updates a named rate limit: max hits per window, one budget
// for every worker (S28).
func (c *Client) DefineLimit(ctx context.Context, name string, max int, per time.Duration) error {
	if _, err := c.q.LimitDefine(ctx, dbsqlc.LimitDefineParams{Name: name, Max: int32(max), Per: per}); err != nil {
		return fmt.Errorf("define limit %s: %w", name, MapError(err))
	}
	return nil
}

// DefineConcurrency creates or updates a named concurrency limit: at most limit
// handlers of a key at once, across every worker (S99).
func (c *Client) DefineConcurrency(ctx context.Context, name string, limit int) error {
	if _, err := c.q.ConcurrencyDefine(ctx, dbsqlc.ConcurrencyDefineParams{Name: name, Max: int32(limit)}); err != nil {
		return fmt.Errorf("define concurrency %s: %w", name, MapError(err))
	}
	return nil
}
