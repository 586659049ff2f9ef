package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

func newJobsCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "show any job, or list jobs by state",
		Long: `Show one job, whatever became of it (waiting, running, failed, succeeded, cancelled),
with its settings, its payload, every attempt and its chain or batch; or list jobs by
state, queue and job name. A login in pgq_reader may run both; payloads show to
members of pgq_payload_reader only.`,
		Args: cobra.ArbitraryArgs, // groupRunE names an unknown subcommand
		RunE: groupRunE,
	}
	db := newDatabase(a, cmd.PersistentFlags())
	cmd.AddCommand(newJobsShowCommand(a, db), newJobsListCommand(a, db))
	return cmd
}

// jobStates are the states jobs list takes, in the order it lists them without --state.
var jobStates = []string{"ready", "scheduled", "retrying", "running", "failed", "succeeded", "cancelled"}

func newJobsListCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list [--state S] [--queue Q] [--job J] [--limit 50]",
		Short: "list jobs: waiting and running ones, failed ones, or those that ended",
		Long: `List jobs of one state, or without --state the live and failed ones, state by state:
ready (in the order workers take them), scheduled and retrying (the soonest due first),
running (the lease that ends soonest first), failed, succeeded and cancelled (the
newest first).`,
		Example: `  pgq-worker jobs list --state failed --queue mail
  pgq-worker jobs list --job refresh_report --limit 10`,
		Args: cobra.NoArgs,
	}
	state := cmd.Flags().String("state", "", "only jobs in this state: "+strings.Join(jobStates, ", "))
	queue := cmd.Flags().String("queue", "", "only jobs of this queue")
	job := cmd.Flags().String("job", "", "only jobs of this name")
	limit := cmd.Flags().Int("limit", 50, "list at most this many, >= 0")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(jobStates, cobra.ShellCompDirectiveNoFileComp))
	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		if err := checkCount("limit", *limit, 0); err != nil {
			return err
		}
		states := jobStates[:5]
		if cmd.Flags().Changed("state") {
			if !slices.Contains(jobStates, *state) {
				return usagef("--state must be one of %s, got %q", strings.Join(jobStates, ", "), *state)
			}
			states = []string{*state}
		}
		for _, name := range []string{"queue", "job"} {
			if v, _ := cmd.Flags().GetString(name); cmd.Flags().Changed(name) && v == "" {
				return usagef("--%s must not be empty", name)
			}
		}
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		q := dbsqlc.New(client.Pool())
		f := listFilter{queue: optional(*queue), job: optional(*job)}
		var rows []jobRow
		for _, s := range states {
			if len(rows) >= *limit {
				break
			}
			got, err := listJobs(cmd.Context(), q, s, f, int32(*limit-len(rows)))
			if err != nil {
				return err
			}
			rows = append(rows, got...)
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "UUID\tJOB\tQUEUE\tSTATE\tATTEMPTS\tAT\tNOTE")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.uuid, r.job, r.queue, r.state, r.attempts,
				r.at.Format(time.RFC3339), firstLine(r.note, 80))
		}
		return tw.Flush()
	})
	return cmd
}

// listFilter narrows jobs list.
type listFilter struct{ queue, job *string }

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// jobRow is a line of jobs list: at is when the job may run (waiting), when its lease
// ends (running), or when it ended; note says why it waits, where it runs or how it
// failed.
type jobRow struct {
	uuid              uuid.UUID
	job, queue, state string
	attempts          int32
	at                time.Time
	note              string
}

// listJobs reads up to max jobs in state. The waiting, running and failed ones come from
// the views the dashboard's lists read, in the same order (dashboard.sql).
func listJobs(ctx context.Context, q *dbsqlc.Queries, state string, f listFilter, max int32) ([]jobRow, error) {
	var out []jobRow
	switch state {
	case "ready":
		rows, err := q.DashboardReadyList(ctx, dbsqlc.DashboardReadyListParams{Queue: f.queue, Job: f.job, Max: max})
		for _, r := range rows {
			out = append(out, jobRow{r.Uuid, r.Job, r.Queue, state, r.Attempts, r.AvailableAt, "waiting since: " + r.WaitReason})
		}
		return out, err
	case "scheduled":
		rows, err := q.DashboardScheduledList(ctx, dbsqlc.DashboardScheduledListParams{Queue: f.queue, Job: f.job, Max: max})
		for _, r := range rows {
			out = append(out, jobRow{r.Uuid, r.Job, r.Queue, state, 0, r.AvailableAt, "dispatched " + r.CreatedAt.Format(time.RFC3339)})
		}
		return out, err
	case "retrying":
		rows, err := q.DashboardRetryingList(ctx, dbsqlc.DashboardRetryingListParams{Queue: f.queue, Job: f.job, Max: max})
		for _, r := range rows {
			note := r.WaitReason
			if r.LastException != nil {
				note += ": " + *r.LastException
			}
			out = append(out, jobRow{r.Uuid, r.Job, r.Queue, state, r.Attempts, r.AvailableAt, note})
		}
		return out, err
	case "running":
		rows, err := q.DashboardRunningList(ctx, dbsqlc.DashboardRunningListParams{Queue: f.queue, Job: f.job, Max: max})
		for _, r := range rows {
			out = append(out, jobRow{r.Uuid, r.Job, r.Queue, state, r.Attempts, *r.LeaseUntil, "on " + deref(r.Worker)})
		}
		return out, err
	case "failed":
		rows, err := q.DashboardFailedList(ctx, dbsqlc.DashboardFailedListParams{Queue: f.queue, Job: f.job, Max: max})
		for _, r := range rows {
			out = append(out, jobRow{r.Uuid, r.Job, r.Queue, state, r.Attempts, r.FailedAt, r.Exception})
		}
		return out, err
	default: // succeeded, cancelled
		rows, err := q.JobFinishedList(ctx, dbsqlc.JobFinishedListParams{Outcome: state, Queue: f.queue, Job: f.job, Max: max})
		for _, r := range rows {
			out = append(out, jobRow{r.JobUuid, r.Job, r.Queue, state, r.Attempt, r.FinishedAt, "on " + deref(r.Worker)})
		}
		return out, err
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func newJobsShowCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show UUID",
		Short: "a job, whatever became of it: settings, payload, every attempt, its chain or batch",
		Args:  oneUUID,
	}
	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		id, _ := jobUUID(args[0])
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		j, err := lookupJob(cmd.Context(), client, id)
		if err != nil {
			return err
		}
		return j.print(a.stdout)
	})
	return cmd
}

// jobReport is what jobs show prints: everything pgq knows of one job.
type jobReport struct {
	uuid       uuid.UUID
	job, queue string
	state      string // ready, scheduled, retrying, running, failed, or how the last attempt ended
	live       *dbsqlc.DashboardJobGetRow
	failed     *dbsqlc.PgqFailedJobSetting
	payload    json.RawMessage
	hidden     bool // the views hid the payload from this role
	attempts   []pgq.Attempt
	batch      *pgq.Batch
	chain      *pgq.Chain
	chainStep  int32
}

// errNoJob: no job has the uuid, in any state or in the history.
type errNoJob struct{ id uuid.UUID }

func (e *errNoJob) Error() string {
	return fmt.Sprintf("no job %s: it is not waiting, running or failed, and has no attempt in the history (never dispatched, or its history was pruned: pgq-worker work --keep-history)", e.id)
}

// lookupJob reads the job with uuid id: live, failed or only in the history.
func lookupJob(ctx context.Context, client *pgq.Client, id uuid.UUID) (*jobReport, error) {
	q := dbsqlc.New(client.Pool())
	j := &jobReport{uuid: id}
	var batchID, chainID *uuid.UUID
	live, err := q.DashboardJobGet(ctx, id)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return nil, pgq.MapError(err)
	default:
		j.live, j.job, j.queue, j.state = live, live.Job, live.Queue, live.State
		batchID, chainID = live.BatchID, live.ChainID
		j.chainStep = deref32(live.ChainStep)
	}
	if j.live == nil {
		failed, err := q.DashboardFailedJobGet(ctx, id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, pgq.MapError(err)
		default:
			j.failed, j.job, j.queue, j.state = failed, failed.Job, failed.Queue, "failed"
			batchID, chainID = failed.BatchID, failed.ChainID
			j.chainStep = deref32(failed.ChainStep)
		}
	}
	payloads, err := q.DashboardJobPayload(ctx, id)
	if err != nil {
		return nil, pgq.MapError(err)
	}
	if len(payloads) > 0 {
		j.payload, j.hidden = payloads[0], payloads[0] == nil
	}
	if j.attempts, err = client.Attempts(ctx, id); err != nil {
		return nil, err
	}
	if j.live == nil && j.failed == nil {
		if len(j.attempts) == 0 {
			return nil, &errNoJob{id: id}
		}
		last := j.attempts[len(j.attempts)-1]
		j.state = string(last.Outcome)
		j.job, j.queue = lastJobName(ctx, q, id)
		end, err := q.JobEndGet(ctx, id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, pgq.MapError(err)
		default:
			batchID, chainID, j.chainStep = end.BatchID, end.ChainID, deref32(end.ChainStep)
		}
	}
	if batchID != nil {
		if j.batch, err = client.Batch(ctx, *batchID); err != nil && !errors.Is(err, pgq.ErrNotFound) {
			return nil, err
		}
	}
	if chainID != nil {
		if j.chain, err = client.Chain(ctx, *chainID); err != nil && !errors.Is(err, pgq.ErrNotFound) {
			return nil, err
		}
	}
	return j, nil
}

// lastJobName is the name and queue of a job that is only in the history.
func lastJobName(ctx context.Context, q *dbsqlc.Queries, id uuid.UUID) (string, string) {
	rows, err := q.DashboardAttemptList(ctx, dbsqlc.DashboardAttemptListParams{JobUuid: id, Max: 1})
	if err != nil || len(rows) == 0 {
		return "", ""
	}
	return rows[0].Job, rows[0].Queue
}

func deref32(n *int32) int32 {
	if n == nil {
		return 0
	}
	return *n
}

// print writes the report: a header of fields, then the attempts.
func (j *jobReport) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	field := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t%s\n", name, fmt.Sprintf(format, args...))
	}
	at := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format(time.RFC3339)
	}
	field("uuid", "%s", j.uuid)
	field("job", "%s", j.job)
	field("queue", "%s", j.queue)
	field("state", "%s", j.state)
	switch {
	case j.live != nil:
		l := j.live
		field("dispatched", "%s", l.DispatchedAt.Format(time.RFC3339))
		field("available", "%s (%s)", l.AvailableAt.Format(time.RFC3339), l.WaitReason)
		if l.Worker != nil {
			field("running on", "%s, lease until %s", *l.Worker, at(l.LeaseUntil))
		}
		if l.CancelRequestedAt != nil {
			field("cancel", "requested at %s by %s", at(l.CancelRequestedAt), deref(l.CancelRequestedBy))
		}
		field("settings", "%s", settings(handlerName(l.Handler), l.Tries, l.Backoff, l.MaxExceptions, l.Timeout, l.FailOnTimeout, l.RetryUntil, l.Priority, l.Middleware))
		field("attempts", "%d (exceptions %d, lease expiries %d, given back %d)", l.Attempts, l.Exceptions, l.LeaseExpiries, l.Interruptions)
		if l.LastException != nil {
			field("last exception", "attempt %d: %s", deref32(l.LastExceptionAttempt), *l.LastException)
		}
	case j.failed != nil:
		f := j.failed
		field("dispatched", "%s", f.DispatchedAt.Format(time.RFC3339))
		field("failed", "%s, at attempt %d", f.FailedAt.Format(time.RFC3339), f.Attempts)
		field("settings", "%s", settings(handlerName(f.Handler), f.Tries, f.Backoff, f.MaxExceptions, f.Timeout, f.FailOnTimeout, f.RetryUntil, f.Priority, f.Middleware))
		field("exception", "%s", f.Exception)
		if f.ExceptionDetail != nil {
			field("detail", "%s", *f.ExceptionDetail)
		}
		if f.ExceptionHint != nil {
			field("hint", "%s", *f.ExceptionHint)
		}
	}
	switch {
	case j.hidden:
		field("payload", "hidden (needs pgq_payload_reader)")
	case j.payload != nil:
		field("payload", "%s", j.payload)
	case j.live == nil && j.failed == nil:
		field("payload", "- (a job that ended keeps only its history)")
	}
	if j.chain != nil {
		field("chain", "%s: step %d of %d, chain %s%s", j.chain.ID, j.chainStep, j.chain.TotalSteps, j.chain.State,
			map[bool]string{true: " (" + firstLine(j.chain.Exception, 80) + ")", false: ""}[j.chain.Exception != ""])
	}
	if j.batch != nil {
		b := j.batch
		field("batch", "%s %q: %d of %d finished, %d failed%s", b.ID, b.Name, b.TotalJobs-b.UnfinishedJobs, b.TotalJobs,
			b.FailedJobs, map[bool]string{true: ", cancelled", false: ""}[b.CancelledAt != nil])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nattempts:")
	if len(j.attempts) == 0 {
		fmt.Fprintln(w, "  none yet")
		return nil
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tOUTCOME\tWORKER\tFINISHED AT\tDELAY\tEXCEPTION")
	for _, at := range j.attempts {
		delay := "-"
		if at.Delay != nil {
			delay = fmt.Sprintf("%ds", *at.Delay)
		}
		outcome := string(at.Outcome)
		if at.Final {
			outcome += " (final)"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\n", at.Attempt, outcome, at.Worker,
			at.FinishedAt.Format(time.RFC3339), delay, firstLine(at.Exception, 100))
		if at.Detail != "" {
			fmt.Fprintf(tw, "\t\t\t\t\tdetail: %s\n", firstLine(at.Detail, 100))
		}
		if at.Hint != "" {
			fmt.Fprintf(tw, "\t\t\t\t\thint: %s\n", at.Hint)
		}
		for _, c := range at.RejectedCalls {
			fmt.Fprintf(tw, "\t\t\t\t\t%s\n", c)
		}
	}
	return tw.Flush()
}

// handlerName is a regprocedure as pgx reads it (text), nil for none.
func handlerName(h any) *string {
	if h == nil {
		return nil
	}
	s := fmt.Sprint(h)
	return &s
}

// settings is a job's frozen settings (S1) in a line; what it did not set says "-".
func settings(handler *string, tries *int32, backoff []int32, maxExceptions, timeout *int32, failOnTimeout bool,
	retryUntil *time.Time, priority int32, middleware json.RawMessage) string {
	var parts []string
	if handler != nil {
		parts = append(parts, "handler "+*handler)
	}
	if tries != nil {
		parts = append(parts, fmt.Sprintf("tries %d", *tries))
	}
	if len(backoff) > 0 {
		parts = append(parts, "backoff "+strings.Trim(strings.Join(strings.Fields(fmt.Sprint(backoff)), ","), "[]"))
	}
	if maxExceptions != nil {
		parts = append(parts, fmt.Sprintf("max_exceptions %d", *maxExceptions))
	}
	if timeout != nil {
		parts = append(parts, fmt.Sprintf("timeout %ds", *timeout))
	}
	if failOnTimeout {
		parts = append(parts, "fail_on_timeout")
	}
	if retryUntil != nil {
		parts = append(parts, "retry_until "+retryUntil.Format(time.RFC3339))
	}
	if priority != 0 {
		parts = append(parts, fmt.Sprintf("priority %d", priority))
	}
	if len(middleware) > 0 && string(middleware) != "null" {
		parts = append(parts, "middleware "+string(middleware))
	}
	if len(parts) == 0 {
		return "- (the worker's --tries, --backoff and --timeout apply)"
	}
	return strings.Join(parts, ", ")
}
