package dashboard

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// schedules: GET /schedules. Every schedule (pgq.schedules, S60-S66): its expression and
// time zone, state, next tick, the last run and its job, the ticks catch_up skipped, and
// why the last dispatch was refused, if it was.
func (s *server) schedules(r *http.Request) (view, error) {
	rows, err := s.q.ScheduleList(r.Context())
	if err != nil {
		return view{}, err
	}
	return view{name: "schedules", title: "Schedules", data: rows}, nil
}

// runSchedule: POST /schedules/{name}/run-now. Dispatches the schedule's job once, now,
// outside its ticks (pgq.run_schedule); the ticks go on as before.
func (s *server) runSchedule(r *http.Request) (view, error) {
	name := r.PathValue("name")
	var id uuid.UUID
	err := s.act(r, func(ctx context.Context, q *dbsqlc.Queries) (err error) {
		id, err = q.ScheduleRunNow(ctx, name)
		return err
	})
	if err != nil {
		return view{}, err
	}
	if id == uuid.Nil {
		return view{}, notFound("no schedule %q", name)
	}
	return done(r, "/schedules", "schedule_run", -1), nil
}

// pauseSchedule: POST /schedules/{name}/pause (pgq.pause_schedule, S65).
func (s *server) pauseSchedule(r *http.Request) (view, error) {
	return s.scheduleSwitch(r, (*dbsqlc.Queries).SchedulePause, "schedule_paused")
}

// resumeSchedule: POST /schedules/{name}/resume (pgq.resume_schedule, S65): its next
// tick is the first after now; ticks missed while paused do not run.
func (s *server) resumeSchedule(r *http.Request) (view, error) {
	return s.scheduleSwitch(r, (*dbsqlc.Queries).ScheduleResume, "schedule_resumed")
}

// scheduleSwitch pauses or resumes the schedule named in the path with call, which
// answers "" when there is no such schedule.
func (s *server) scheduleSwitch(r *http.Request, call func(*dbsqlc.Queries, context.Context, string) (string, error), code string) (view, error) {
	name := r.PathValue("name")
	var was string
	err := s.act(r, func(ctx context.Context, q *dbsqlc.Queries) (err error) {
		was, err = call(q, ctx, name)
		return err
	})
	if err != nil {
		return view{}, err
	}
	if was == "" {
		return view{}, notFound("no schedule %q", name)
	}
	return done(r, "/schedules", code, -1), nil
}
