package pgq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// CatchUp says what a schedule does with the ticks that passed while no worker ran
// (S62). A tick up to 30 s late is not missed and always fires.
type CatchUp string

// The catch-up policies.
const (
	CatchUpLatest CatchUp = "latest" // one run for the most recent missed tick (the default)
	CatchUpNone   CatchUp = "none"   // missed ticks are skipped
	CatchUpAll    CatchUp = "all"    // every missed tick runs, the latest 100 at most
)

// ScheduleDefinition declares a schedule (pgq.schedule, S60): Job is dispatched with
// Args as its payload at every tick of Cron in TimeZone.
type ScheduleDefinition struct {
	Name string
	// Cron is a cron expression of 5 fields (minute hour day-of-month month
	// day-of-week), or 6 with seconds first, or a macro: @yearly, @annually, @monthly,
	// @weekly, @daily, @midnight, @hourly, @every <duration> (e.g. @every 30s).
	Cron string
	// TimeZone is an IANA zone name such as Europe/Berlin; "" means UTC. Ticks follow
	// its daylight saving rules (S63).
	TimeZone string
	Job      string
	// Args is encoded as the JSON payload, as by Dispatch; nil is {}.
	Args    any
	CatchUp CatchUp // "" means CatchUpLatest
	Paused  bool
}

// ScheduleState is where a schedule stands.
type ScheduleState string

// The states of a schedule.
const (
	ScheduleActive  ScheduleState = "active"  // its next tick is known
	SchedulePending ScheduleState = "pending" // a worker computes its next tick within a second
	SchedulePaused  ScheduleState = "paused"  // its ticks do not fire
)

// Schedule is a schedule and the state of its ticks (pgq.schedules).
type Schedule struct {
	Name     string
	Cron     string
	TimeZone string
	Job      string
	Queue    string // "" means the job class's queue
	Payload  json.RawMessage
	CatchUp  CatchUp
	State    ScheduleState
	// NextRunAt is the next tick, nil unless State is ScheduleActive.
	NextRunAt *time.Time
	// LastTick is the latest tick handled (fired, or skipped by CatchUp); LastRunAt and
	// LastJob the last job dispatched, by a tick or RunSchedule.
	LastTick     *time.Time
	LastRunAt    *time.Time
	LastJob      uuid.UUID
	SkippedTicks int64
	// LastError says why the last dispatch of a tick was refused (the job class changed
	// since the schedule was defined), "" when it was not.
	LastError string
}

func scheduleFrom(r *dbsqlc.PgqSchedule) Schedule {
	s := Schedule{
		Name: r.Name, Cron: r.Cron, TimeZone: r.Timezone, Job: r.Job, Queue: deref(r.Queue), Payload: r.Payload,
		CatchUp: CatchUp(r.CatchUp), State: ScheduleState(r.State), NextRunAt: r.NextRunAt, LastTick: r.LastTick,
		LastRunAt: r.LastRunAt, SkippedTicks: r.SkippedTicks, LastError: deref(r.LastError),
	}
	if r.LastJobUuid != nil {
		s.LastJob = *r.LastJobUuid
	}
	return s
}

// DefineSchedule creates or replaces a schedule (S60). Queue, Priority, Tries, Backoff,
// MaxExceptions, Timeout, FailOnTimeout, RetryFor and WithMiddleware apply to the jobs
// it dispatches; the other options are refused. A new Cron or TimeZone restarts the
// ticks from now; other changes apply from the next tick (S64). Errors wrap
// ErrInvalidArgument, with PostgreSQL's reason, for a bad expression, time zone or
// option. Workers fire schedules unless started WithSchedules(false).
func (c *Client) DefineSchedule(ctx context.Context, def ScheduleDefinition, opts ...Option) (Schedule, error) {
	s := collect(opts)
	if s.handler != nil || s.delay != nil || s.retryUntil != nil || s.uniqueKey != nil || s.uniqueFor != nil ||
		s.uniqueUntil != nil || s.uniqueBy != nil || s.debounceKey != nil || s.debounceFor != nil ||
		s.debounceBy != nil || s.debounceMaxWait != nil {
		return Schedule{}, fmt.Errorf("%w: define schedule %s: Handler, Delay, RetryUntil, Unique* and Debounce* do not apply to schedules (each tick's job is unique on schedule and tick)",
			ErrInvalidArgument, def.Name)
	}
	payload, err := encodePayload(def.Args)
	if err != nil {
		return Schedule{}, fmt.Errorf("define schedule %s: %w", def.Name, err)
	}
	tz, catchUp := def.TimeZone, def.CatchUp
	if tz == "" {
		tz = "UTC"
	}
	if catchUp == "" {
		catchUp = CatchUpLatest
	}
	var r *dbsqlc.PgqSchedule
	err = pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error { // the schedule as this definition left it
		q := dbsqlc.New(tx)
		if _, err := q.ScheduleDefine(ctx, dbsqlc.ScheduleDefineParams{
			Name: def.Name, Cron: def.Cron, Job: def.Job, Payload: payload, Timezone: tz, Queue: s.queue,
			CatchUp: string(catchUp), Paused: def.Paused, Priority: s.priority, Tries: s.tries, Backoff: s.backoff,
			MaxExceptions: s.maxExceptions, Timeout: s.timeout, FailOnTimeout: s.failOnTimeout, RetryFor: s.retryFor,
			Middleware: s.middleware,
		}); err != nil {
			return err
		}
		r, err = q.ScheduleGet(ctx, def.Name)
		if err == nil && r.Payload == nil {
			r.Payload = payload // the view shows payloads to payload readers only (S45); this one is the caller's
		}
		return err
	})
	if err != nil {
		return Schedule{}, fmt.Errorf("define schedule %s: %w", def.Name, MapError(err))
	}
	return scheduleFrom(r), nil
}

// Unschedule deletes a schedule; jobs it dispatched stay. ErrNotFound when there is
// none of that name.
func (c *Client) Unschedule(ctx context.Context, name string) error {
	ok, err := c.q.ScheduleDelete(ctx, name)
	if err != nil {
		return fmt.Errorf("unschedule %s: %w", name, MapError(err))
	}
	if !ok {
		return fmt.Errorf("unschedule %s: %w", name, ErrNotFound)
	}
	return nil
}

// Schedules lists every schedule by name.
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	rows, err := c.q.ScheduleList(ctx)
	if err != nil {
		return nil, fmt.Errorf("schedules: %w", MapError(err))
	}
	out := make([]Schedule, len(rows))
	for i, r := range rows {
		out[i] = scheduleFrom(r)
	}
	return out, nil
}

// GetSchedule returns one schedule; ErrNotFound when there is none of that name.
func (c *Client) GetSchedule(ctx context.Context, name string) (Schedule, error) {
	r, err := c.q.ScheduleGet(ctx, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return Schedule{}, fmt.Errorf("schedule %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %s: %w", name, MapError(err))
	}
	return scheduleFrom(r), nil
}

// RunSchedule dispatches the schedule's job now, once, paused or not, without moving
// its ticks (S65), and returns the job's uuid. It is recorded as the schedule's last
// run and in pgq.actions. ErrNotFound when there is no schedule of that name.
func (c *Client) RunSchedule(ctx context.Context, name string) (uuid.UUID, error) {
	id, err := c.q.ScheduleRunNow(ctx, name)
	if err != nil {
		return uuid.Nil, fmt.Errorf("run schedule %s: %w", name, MapError(err))
	}
	if id == uuid.Nil {
		return uuid.Nil, fmt.Errorf("run schedule %s: %w", name, ErrNotFound)
	}
	return id, nil
}

// PauseSchedule stops a schedule: ticks that pass while it is paused never fire (S65).
// It reports whether the schedule was running. ErrNotFound when there is none.
func (c *Client) PauseSchedule(ctx context.Context, name string) (bool, error) {
	was, err := c.q.SchedulePause(ctx, name)
	return scheduleFlag("pause schedule", name, was, err)
}

// ResumeSchedule lets a paused schedule fire again from its first tick after now
// (S65). It reports whether the schedule was paused. ErrNotFound when there is none.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (bool, error) {
	was, err := c.q.ScheduleResume(ctx, name)
	return scheduleFlag("resume schedule", name, was, err)
}

// scheduleFlag reads the answer of pause or resume: "true", "false", or empty when
// there is no such schedule.
func scheduleFlag(call, name, flag string, err error) (bool, error) {
	switch {
	case err != nil:
		return false, fmt.Errorf("%s %s: %w", call, name, MapError(err))
	case flag == "":
		return false, fmt.Errorf("%s %s: %w", call, name, ErrNotFound)
	}
	return flag == "true", nil
}
