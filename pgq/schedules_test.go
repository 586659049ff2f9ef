package pgq_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/pgq"
)

// S60, S65: a schedule declared from Go is the one pgq.schedule() stores; a bad
// expression is ErrInvalidArgument with PostgreSQL's reason, and options that make no
// sense for a tick's job are refused; run now, pause and resume answer ErrNotFound for
// an unknown name.
func TestS60S65ClientSchedules(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	ctx := context.Background()
	client, err := pgq.NewClient(db.Pool)
	require.NoError(t, err)

	s, err := client.DefineSchedule(ctx, pgq.ScheduleDefinition{
		Name: "nightly", Cron: "30 2 * * *", TimeZone: "Europe/Berlin", Job: "report",
		Args: map[string]int{"account": 7}, CatchUp: pgq.CatchUpAll,
	}, pgq.Queue("reports"), pgq.Tries(3), pgq.Timeout(time.Minute), pgq.Priority(2))
	require.NoError(t, err)
	require.Equal(t, pgq.SchedulePending, s.State)
	require.Equal(t, "reports", s.Queue)
	require.JSONEq(t, `{"account": 7}`, string(s.Payload))
	require.Equal(t, 3, pgqtest.Scalar[int](t, db, `SELECT tries FROM pgq.schedules WHERE name = 'nightly'`))

	s, err = client.DefineSchedule(ctx, pgq.ScheduleDefinition{Name: "often", Cron: "@every 30s", Job: "ping"})
	require.NoError(t, err)
	require.Equal(t, "UTC", s.TimeZone)
	require.Equal(t, pgq.CatchUpLatest, s.CatchUp)
	require.JSONEq(t, `{}`, string(s.Payload))

	_, err = client.DefineSchedule(ctx, pgq.ScheduleDefinition{Name: "bad", Cron: "0 0 30 2 *", Job: "x"})
	require.ErrorIs(t, err, pgq.ErrInvalidArgument)
	require.ErrorContains(t, err, "never fires")
	_, err = client.DefineSchedule(ctx, pgq.ScheduleDefinition{Name: "bad", Cron: "@daily", Job: "x"}, pgq.UniqueKey("k"))
	require.ErrorIs(t, err, pgq.ErrInvalidArgument)
	_, err = client.DefineSchedule(ctx, pgq.ScheduleDefinition{Name: "bad", Cron: "@daily", Job: "x", Args: json.RawMessage(`{`)})
	require.ErrorIs(t, err, pgq.ErrInvalidArgument)

	list, err := client.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "nightly", list[0].Name)

	was, err := client.PauseSchedule(ctx, "nightly")
	require.NoError(t, err)
	require.True(t, was)
	id, err := client.RunSchedule(ctx, "nightly")
	require.NoError(t, err)
	require.NotEqual(t, uuid.Nil, id)
	got, err := client.GetSchedule(ctx, "nightly")
	require.NoError(t, err)
	require.Equal(t, pgq.SchedulePaused, got.State)
	require.Equal(t, id, got.LastJob)
	was, err = client.ResumeSchedule(ctx, "nightly")
	require.NoError(t, err)
	require.True(t, was)

	_, err = client.RunSchedule(ctx, "nope")
	require.ErrorIs(t, err, pgq.ErrNotFound)
	_, err = client.PauseSchedule(ctx, "nope")
	require.ErrorIs(t, err, pgq.ErrNotFound)
	_, err = client.ResumeSchedule(ctx, "nope")
	require.ErrorIs(t, err, pgq.ErrNotFound)
	_, err = client.GetSchedule(ctx, "nope")
	require.ErrorIs(t, err, pgq.ErrNotFound)
	require.NoError(t, client.Unschedule(ctx, "often"))
	require.ErrorIs(t, client.Unschedule(ctx, "often"), pgq.ErrNotFound)
}
