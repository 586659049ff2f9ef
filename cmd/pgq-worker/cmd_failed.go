package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgq-dev/pgq/pgq"
)

func newFailedCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "failed",
		Short: "list, show, retry, forget or flush failed jobs",
		Long: `Operate the jobs that failed for good (pgq.failed_jobs): list them, show one with its
attempt history, put them back on their queue, or delete them.`,
		Args: cobra.ArbitraryArgs, // groupRunE names an unknown subcommand
		RunE: groupRunE,
	}
	db := newDatabase(a, cmd.PersistentFlags())
	cmd.AddCommand(newFailedListCommand(a, db), newFailedShowCommand(a, db), newFailedRetryCommand(a, db),
		newFailedForgetCommand(a, db), newFailedFlushCommand(a, db))
	return cmd
}

// notFailed is the error for a uuid that names no failed job: what became of the job
// instead, if anything did.
func notFailed(ctx context.Context, client *pgq.Client, id uuid.UUID) error {
	j, err := lookupJob(ctx, client, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("job %s (%s) is not a failed job: it is %s; pgq-worker jobs show %s tells its story", id, j.job, j.state, id)
}

// jobUUID parses a job uuid argument.
func jobUUID(arg string) (uuid.UUID, error) {
	id, err := uuid.Parse(arg)
	if err != nil {
		return uuid.Nil, usagef("invalid job uuid %q", arg)
	}
	return id, nil
}

// oneUUID is the Args of a command taking one job uuid.
func oneUUID(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one job uuid, got %d arguments", cmd.CommandPath(), len(args))
	}
	_, err := jobUUID(args[0])
	return err
}

// filterFlags are --queue and --job, which narrow retry all and flush.
type filterFlags struct{ queue, job *string }

func newFilterFlags(f *pflag.FlagSet, what string) filterFlags {
	return filterFlags{
		queue: f.String("queue", "", "only "+what+" of this queue"),
		job:   f.String("job", "", "only "+what+" of this job name"),
	}
}

func (ff filterFlags) given(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("queue") || cmd.Flags().Changed("job")
}

// filter returns the filter of the flags given; an empty value given is an error, not
// "any".
func (ff filterFlags) filter(cmd *cobra.Command) (pgq.FailedFilter, error) {
	for _, name := range []string{"queue", "job"} {
		if v, _ := cmd.Flags().GetString(name); cmd.Flags().Changed(name) && v == "" {
			return pgq.FailedFilter{}, usagef("--%s must not be empty", name)
		}
	}
	return pgq.FailedFilter{Queue: *ff.queue, Job: *ff.job}, nil
}

func newFailedListCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list failed jobs, newest first",
		Args:  cobra.NoArgs,
	}
	queue := cmd.Flags().String("queue", "", "only failed jobs of this queue")
	limit := cmd.Flags().Int("limit", 50, "list at most this many, >= 0")
	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		if err := checkCount("limit", *limit, 0); err != nil {
			return err
		}
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		jobs, err := client.FailedJobs(cmd.Context(), *queue, *limit)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "UUID\tJOB\tQUEUE\tATTEMPTS\tFAILED AT\tEXCEPTION")
		for _, j := range jobs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", j.UUID, j.Job, j.Queue, j.Attempts,
				j.FailedAt.Format(time.RFC3339), firstLine(j.Exception, 80))
		}
		return tw.Flush()
	})
	return cmd
}

func newFailedShowCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show UUID",
		Short: "a failed job and its attempt history",
		Args:  oneUUID,
	}
	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		id, _ := jobUUID(args[0])
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		j, err := client.FailedJob(cmd.Context(), id)
		if errors.Is(err, pgq.ErrNotFound) {
			return notFailed(cmd.Context(), client, id)
		}
		if err != nil {
			return err
		}
		payload := string(j.Payload)
		if j.Payload == nil {
			payload = "hidden (needs pgq_payload_reader)"
		}
		fmt.Fprintf(a.stdout, "uuid:      %s\njob:       %s\nqueue:     %s\nattempts:  %d\nfailed at: %s\npayload:   %s\nexception: %s\n",
			j.UUID, j.Job, j.Queue, j.Attempts, j.FailedAt.Format(time.RFC3339), payload, j.Exception)
		if j.Detail != "" {
			fmt.Fprintf(a.stdout, "detail:    %s\n", j.Detail)
		}
		if j.Hint != "" {
			fmt.Fprintf(a.stdout, "hint:      %s\n", j.Hint)
		}
		fmt.Fprint(a.stdout, "\nattempts:\n")
		history, err := client.Attempts(cmd.Context(), id)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tOUTCOME\tWORKER\tFINISHED AT\tDELAY\tEXCEPTION")
		for _, at := range history {
			delay := "-"
			if at.Delay != nil {
				delay = fmt.Sprintf("%ds", *at.Delay)
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\n", at.Attempt, at.Outcome, at.Worker,
				at.FinishedAt.Format(time.RFC3339), delay, firstLine(at.Exception, 80))
			if at.Hint != "" {
				fmt.Fprintf(tw, "\t\t\t\t\thint: %s\n", at.Hint)
			}
		}
		return tw.Flush()
	})
	return cmd
}

func newFailedRetryCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "retry UUID|all",
		Short: "put failed jobs back on their queue, attempts reset",
		Long: `Put one failed job, or all of them (narrowed by --queue and --job), back on their queue
with their attempts reset and their settings as dispatched. Their attempt history is kept.`,
		Example: `  pgq-worker failed retry 0f8e2c1a-5b7d-4e8f-9a3b-2c1d0e9f8a7b
  pgq-worker failed retry all --queue mail --job send_invoice`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("%s takes one job uuid or all, got %d arguments", cmd.CommandPath(), len(args))
			}
			if args[0] == "all" {
				return nil
			}
			_, err := jobUUID(args[0])
			return err
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []cobra.Completion{"all"}, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
	}
	filters := newFilterFlags(cmd.Flags(), "with all: failed jobs")
	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		if args[0] != "all" {
			if filters.given(cmd) {
				return usagef("--queue and --job narrow `retry all`; a uuid names one job already")
			}
			id, _ := jobUUID(args[0])
			client, err := db.client(cmd.Context())
			if err != nil {
				return err
			}
			defer client.Pool().Close()
			err = client.RetryFailed(cmd.Context(), id)
			if errors.Is(err, pgq.ErrNotFound) {
				return notFailed(cmd.Context(), client, id)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%s put back on its queue\n", id)
			return nil
		}
		filter, err := filters.filter(cmd)
		if err != nil {
			return err
		}
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		n, err := client.RetryAllFailed(cmd.Context(), filter)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%d failed jobs put back on their queues\n", n)
		return nil
	})
	return cmd
}

func newFailedForgetCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "forget UUID",
		Short: "delete one failed job",
		Args:  oneUUID,
	}
	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		id, _ := jobUUID(args[0])
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		err = client.ForgetFailed(cmd.Context(), id)
		if errors.Is(err, pgq.ErrNotFound) {
			return notFailed(cmd.Context(), client, id)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%s forgotten\n", id)
		return nil
	})
	return cmd
}

func newFailedFlushCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "flush [--queue Q] [--job J] [--hours N] | --all",
		Short: "delete failed jobs: those matching every filter given, or --all",
		Long: `Delete the failed jobs matching every filter given: of a queue, of a job name, failed
more than some hours ago. Without a filter, --all is required: it deletes every failed
job of every queue.`,
		Example: `  pgq-worker failed flush --queue mail --hours 48
  pgq-worker failed flush --all`,
		Args: cobra.NoArgs,
	}
	filters := newFilterFlags(cmd.Flags(), "failed jobs")
	hours := cmd.Flags().Float64("hours", 0, "only failed jobs that failed more than this many hours ago, > 0")
	all := cmd.Flags().Bool("all", false, "delete every failed job of every queue (no filter)")
	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		filtered := filters.given(cmd) || cmd.Flags().Changed("hours")
		switch {
		case *all && filtered:
			return usagef("--all deletes every failed job: give it alone, or filters without it")
		case !*all && !filtered:
			return usagef("flush deletes every failed job of every queue: narrow it with --queue, --job or --hours, or pass --all")
		}
		filter, err := filters.filter(cmd)
		if err != nil {
			return err
		}
		if cmd.Flags().Changed("hours") {
			if filter.OlderThan, err = checkSeconds("hours", *hours*3600, false); err != nil {
				return usagef("--hours must be a number of hours > 0, got %v", *hours)
			}
		}
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		n, err := client.FlushFailed(cmd.Context(), filter)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "%d failed jobs deleted\n", n)
		return nil
	})
	return cmd
}
