package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/schedule"
)

// schedules fires the schedules of pgq.schedules (S60-S66), in the maintenance loop of
// every worker that has them on (WithSchedules). Each round asks PostgreSQL for the
// pending and due schedules, computes ticks with the cron library in each schedule's
// time zone, and hands them to pgq.plan_schedule and pgq.fire_schedule, which fence on
// the tick and version the worker read: with any number of workers, each tick is
// dispatched once (S61). Ticks are computed by the database's clock, never this
// process's, so workers on hosts whose clocks differ agree.
type schedules struct {
	// Set by New; read-only.
	q   *dbsqlc.Queries
	log *slog.Logger

	// Owned by the loop's goroutine (or a test calling runOnce).
	specs map[specKey]*schedule.Spec // parsed expressions, by expression and zone
}

type specKey struct{ cron, timezone string }

// scheduleRound is the longest wait between two rounds: a schedule defined, changed or
// resumed from psql is planned within it.
const scheduleRound = time.Second

func newSchedules(q *dbsqlc.Queries, log *slog.Logger) *schedules {
	return &schedules{q: q, log: log, specs: map[specKey]*schedule.Spec{}}
}

// run fires schedules until ctx is done: a round every second, or sooner when a tick
// is due, so a tick fires within milliseconds of its time. It stops when the database
// has no schedules yet (not migrated to them), saying so once.
func (s *schedules) run(ctx context.Context) {
	for {
		wait, err := s.runOnce(ctx, time.Time{})
		switch {
		case ctx.Err() != nil:
			return
		case missingSchema(err):
			s.log.Warn("schedules are off: the database has no pgq.due_schedules; run `pgq-worker migrate`", "err", err)
			return
		case err != nil:
			s.log.Warn("schedules round failed", "err", err)
			wait = scheduleRound
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// runOnce is one round as of now (the zero time: the database's clock). It plans the
// pending schedules, fires the due ones, and returns how long to wait before the next
// round: until the next tick due within a second, or a second. A schedule whose round
// fails is logged and left to the next round; the error returned is the first one.
func (s *schedules) runOnce(ctx context.Context, now time.Time) (time.Duration, error) {
	started := time.Now()
	var asOf *time.Time
	if !now.IsZero() {
		asOf = &now
	}
	rows, err := s.q.ScheduleDue(ctx, dbsqlc.ScheduleDueParams{AsOf: asOf, Horizon: scheduleRound})
	if err != nil {
		return scheduleRound, fmt.Errorf("due schedules: %w", err)
	}
	wait := scheduleRound
	var first error
	for _, r := range rows {
		var err error
		switch {
		case r.NextRunAt == nil:
			err = s.plan(ctx, r)
		case !r.NextRunAt.After(r.AsOf):
			err = s.fire(ctx, r)
		default: // due within the round: wake up for it
			wait = min(wait, r.NextRunAt.Sub(r.AsOf)-time.Since(started)+5*time.Millisecond)
		}
		if err != nil && ctx.Err() == nil {
			s.log.Warn("schedule round failed", "schedule", r.Name, "err", err)
			if first == nil {
				first = err
			}
		}
	}
	return max(wait, 0), first
}

// spec returns the parsed expression of r, cached.
func (s *schedules) spec(r *dbsqlc.ScheduleDueRow) (*schedule.Spec, error) {
	k := specKey{r.Cron, r.Timezone}
	if sp, ok := s.specs[k]; ok {
		return sp, nil
	}
	sp, err := schedule.New(r.Cron, r.Timezone)
	if err != nil {
		return nil, err
	}
	if len(s.specs) > 10_000 { // expressions come and go: keep the cache bounded
		clear(s.specs)
	}
	s.specs[k] = sp
	return sp, nil
}

// plan sets a pending schedule's first tick: the first after now, and after its last
// tick, so that no tick fires twice across a change of definition (S64).
func (s *schedules) plan(ctx context.Context, r *dbsqlc.ScheduleDueRow) error {
	sp, err := s.spec(r)
	if err != nil {
		// pgq.schedule() accepts only what the parser accepts (a test keeps them in step),
		// so this is a time zone this process's zone database lacks: say so on the row.
		msg := err.Error()
		_, perr := s.q.SchedulePlan(ctx, dbsqlc.SchedulePlanParams{Name: r.Name, Version: r.Version, Error: &msg})
		return errors.Join(err, perr)
	}
	from := r.AsOf
	if r.LastTick != nil && r.LastTick.After(from) {
		from = *r.LastTick
	}
	next := sp.Next(from)
	if next.IsZero() {
		msg := "the expression has no tick within five years"
		_, err := s.q.SchedulePlan(ctx, dbsqlc.SchedulePlanParams{Name: r.Name, Version: r.Version, Error: &msg})
		return err
	}
	if _, err := s.q.SchedulePlan(ctx, dbsqlc.SchedulePlanParams{Name: r.Name, Version: r.Version, NextRunAt: &next}); err != nil {
		return fmt.Errorf("plan schedule %s: %w", r.Name, err)
	}
	return nil
}

// fire hands a due schedule's ticks to pgq.fire_schedule, which keeps those its
// catch_up policy fires (S62) and dispatches them if no other worker was first (S61).
func (s *schedules) fire(ctx context.Context, r *dbsqlc.ScheduleDueRow) error {
	sp, err := s.spec(r)
	if err != nil {
		return err
	}
	ticks, left, next := sp.Due(*r.NextRunAt, r.AsOf, schedule.MaxCatchUp)
	if next.IsZero() {
		// No tick within five years: park the schedule until its definition changes.
		next = r.AsOf.AddDate(100, 0, 0)
	}
	jobs, err := s.q.ScheduleFire(ctx, dbsqlc.ScheduleFireParams{
		Name: r.Name, Version: r.Version, Expected: *r.NextRunAt, Ticks: ticks, NextRunAt: next,
		Skipped: left, AsOf: r.AsOf,
	})
	if err != nil {
		return fmt.Errorf("fire schedule %s: %w", r.Name, err)
	}
	// The losers of the race get no jobs back; so does a catch_up that fires nothing.
	if len(jobs) > 0 {
		s.log.Info("schedule fired", "schedule", r.Name, "job", r.Job, "tick", ticks[len(ticks)-1], "jobs", len(jobs),
			"due", int64(len(ticks))+left, "catch_up", r.CatchUp, "next", next)
	}
	return nil
}

// missingSchema tells whether err says that the database lacks the schedules' tables or
// functions (migrated before them).
func missingSchema(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42883" || pgErr.Code == "42P01" || pgErr.Code == "3F000")
}
