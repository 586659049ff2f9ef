package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/pgq-dev/pgq/pgq"
)

func newBatchesCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "batches",
		Short: "list, show, retry or cancel batches",
		Long: `Read and operate batches (pgq.dispatch_batch): list them with their progress, show one
with its counters, callbacks and chains, retry its failed jobs (pgq.retry_batch_failed),
or cancel one (its waiting jobs are cancelled, running ones finish, only its finally job
still runs).`,
		Args: cobra.ArbitraryArgs, // groupRunE names an unknown subcommand
		RunE: groupRunE,
	}
	db := newDatabase(a, cmd.PersistentFlags())
	cmd.AddCommand(newBatchesListCommand(a, db), newBatchesShowCommand(a, db), newBatchesRetryCommand(a, db),
		newBatchesCancelCommand(a, db))
	return cmd
}

// oneBatch is the Args of a command taking one batch id.
func oneBatch(cmd *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usagef("%s takes one batch id, got %d arguments", cmd.CommandPath(), len(args))
	}
	if _, err := uuid.Parse(args[0]); err != nil {
		return usagef("invalid batch id %q", args[0])
	}
	return nil
}

func batchState(b *pgq.Batch) string {
	switch {
	case b.FinishedAt != nil && b.CancelledAt != nil:
		return "cancelled, finished"
	case b.FinishedAt != nil:
		return "finished"
	case b.CancelledAt != nil:
		return "cancelling"
	default:
		return "running"
	}
}

func newBatchesListCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "list batches, newest first",
		Args:  cobra.NoArgs,
	}
	limit := cmd.Flags().Int("limit", 50, "list at most this many, >= 0")
	running := cmd.Flags().Bool("running", false, "only batches that have not finished")
	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		if err := checkCount("limit", *limit, 0); err != nil {
			return err
		}
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		batches, err := client.Batches(cmd.Context(), *limit, *running)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSTATE\tTOTAL\tPENDING\tFAILED\tPROGRESS\tCREATED AT")
		for _, b := range batches {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%.1f%%\t%s\n", b.ID, b.Name, batchState(b), b.TotalJobs,
				b.PendingJobs, b.FailedJobs, b.Progress, b.CreatedAt.Format(time.RFC3339))
		}
		return tw.Flush()
	})
	return cmd
}

func newBatchesShowCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "a batch: counters, callbacks, failed jobs and chains",
		Args:  oneBatch,
	}
	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		id, _ := uuid.Parse(args[0])
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		b, err := client.Batch(cmd.Context(), id)
		if err != nil {
			return err
		}
		at := func(t *time.Time) string {
			if t == nil {
				return "-"
			}
			return t.Format(time.RFC3339)
		}
		ids := make([]string, len(b.FailedJobIDs))
		for i, f := range b.FailedJobIDs {
			ids[i] = f.String()
		}
		fmt.Fprintf(a.stdout, "id:           %s\nname:         %s\nstate:        %s\nprogress:     %.1f%%\n"+
			"total:        %d\nsucceeded:    %d\nunfinished:   %d\nfailed:       %d\ncancelled:    %d\npending:      %d (Laravel's pending_jobs: not yet succeeded)\n"+
			"options:      %s\ncreated at:   %s\ncancelled at: %s\nfinished at:  %s\n"+
			"then at:      %s\ncatch at:     %s\nfinally at:   %s\nfailed jobs:  %s\n",
			b.ID, b.Name, batchState(b), b.Progress, b.TotalJobs, b.SucceededJobs, b.UnfinishedJobs, b.FailedJobs,
			b.CancelledJobs, b.PendingJobs, b.Options, at(&b.CreatedAt), at(b.CancelledAt), at(b.FinishedAt),
			at(b.ThenAt), at(b.CatchAt), at(b.FinallyAt), strings.Join(ids, ", "))
		chains, err := client.BatchChains(cmd.Context(), id)
		if err != nil {
			return err
		}
		if len(chains) == 0 {
			return nil
		}
		fmt.Fprintln(a.stdout, "\nchains:")
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  ID\tSTATE\tSTEP\tJOB\tEXCEPTION")
		for _, c := range chains {
			fmt.Fprintf(tw, "  %s\t%s\t%d/%d\t%s\t%s\n", c.ID, c.State, c.Step, c.TotalSteps, c.Job, firstLine(c.Exception, 80))
		}
		return tw.Flush()
	})
	return cmd
}

func newBatchesRetryCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "retry ID",
		Short: "put every failed job of a batch back on its queue (S96)",
		Long: `Retry every failed job of a batch, its chains' failed steps included, as pgq-worker failed
retry does each (pgq.retry_batch_failed): the batch counts them pending again, a chain
resumes at its failed step, and the batch's then job runs if they all succeed. Exit 1
when there is no such batch or it was cancelled (its retried jobs would be cancelled
before they run).`,
		Args: oneBatch,
	}
	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		id, _ := uuid.Parse(args[0])
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		ids, err := client.RetryBatchFailed(cmd.Context(), id)
		if err != nil {
			return err
		}
		for _, j := range ids {
			fmt.Fprintln(a.stdout, j)
		}
		fmt.Fprintf(a.stdout, "batch %s: %d failed jobs retried\n", id, len(ids))
		return nil
	})
	return cmd
}

func newBatchesCancelCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "cancel a batch: waiting jobs now, running ones finish, only finally still runs",
		Args:  oneBatch,
	}
	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		id, _ := uuid.Parse(args[0])
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		n, err := client.CancelBatch(cmd.Context(), id)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "batch %s cancelled: %d waiting jobs cancelled\n", id, n)
		return nil
	})
	return cmd
}
