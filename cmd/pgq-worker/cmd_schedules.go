package main

import (
	"fmt"
	"text/tabwriter"
	"time"
	// Workers load schedules' time zones by name (S63): the binary carries the zone
	// database, so that a host without one (a scratch container) still knows them.
	_ "time/tzdata"

	"github.com/spf13/cobra"

	"github.com/pgq-dev/pgq/pgq"
)

func newSchedulesCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "list schedules, run one now, pause or resume one",
		Long: `Operate the schedules (pgq.schedules): periodic jobs that workers dispatch at every
tick of a cron expression, exactly once per tick however many workers run. Define them
from SQL with pgq.schedule(name, cron, job, payload, timezone => ..., catch_up => ...).`,
		Args: cobra.ArbitraryArgs, // groupRunE names an unknown subcommand
		RunE: groupRunE,
	}
	db := newDatabase(a, cmd.PersistentFlags())
	cmd.AddCommand(newSchedulesListCommand(a, db),
		newScheduleActionCommand(a, db, "run-now", "dispatch a schedule's job now, once, without moving its ticks",
			func(c *pgq.Client, cmd *cobra.Command, name string) (string, error) {
				id, err := c.RunSchedule(cmd.Context(), name)
				return fmt.Sprintf("%s dispatched job %s", name, id), err
			}),
		newScheduleActionCommand(a, db, "pause", "stop a schedule: ticks that pass while it is paused never fire",
			func(c *pgq.Client, cmd *cobra.Command, name string) (string, error) {
				was, err := c.PauseSchedule(cmd.Context(), name)
				if !was {
					return name + " was already paused", err
				}
				return name + " paused", err
			}),
		newScheduleActionCommand(a, db, "resume", "let a paused schedule fire again from its next tick",
			func(c *pgq.Client, cmd *cobra.Command, name string) (string, error) {
				was, err := c.ResumeSchedule(cmd.Context(), name)
				if !was {
					return name + " was not paused", err
				}
				return name + " resumed", err
			}))
	return cmd
}

func newSchedulesListCommand(a *app, db *database) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "every schedule: its expression, zone, state, next and last run",
		Long: `List every schedule. Times are shown in the schedule's own time zone; NEXT RUN is
"-" while a schedule is paused, and "pending" until a worker has computed it.`,
		Args: cobra.NoArgs,
	}
	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		list, err := client.Schedules(cmd.Context())
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tCRON\tTIMEZONE\tJOB\tCATCH UP\tSTATE\tNEXT RUN\tLAST RUN\tLAST JOB\tSKIPPED\tLAST ERROR")
		for _, s := range list {
			loc, err := time.LoadLocation(s.TimeZone)
			if err != nil {
				loc = time.UTC
			}
			next := "-"
			switch {
			case s.State == pgq.SchedulePending:
				next = "pending"
			case s.NextRunAt != nil:
				next = s.NextRunAt.In(loc).Format("2006-01-02 15:04:05 MST")
			}
			last, job := "-", "-"
			if s.LastRunAt != nil {
				last = s.LastRunAt.In(loc).Format("2006-01-02 15:04:05 MST")
				job = s.LastJob.String()
			}
			lastErr := "-"
			if s.LastError != "" {
				lastErr = firstLine(s.LastError, 60)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, s.Cron, s.TimeZone, s.Job, s.CatchUp,
				s.State, next, last, job, s.SkippedTicks, lastErr)
		}
		return tw.Flush()
	})
	return cmd
}

// newScheduleActionCommand is a command taking one schedule name: run-now, pause,
// resume. act returns the line to print.
func newScheduleActionCommand(a *app, db *database, use, short string,
	act func(*pgq.Client, *cobra.Command, string) (string, error)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   use + " NAME",
		Short: short,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] == "" {
				return usagef("%s takes one schedule name, got %d arguments", cmd.CommandPath(), len(args))
			}
			return nil
		},
	}
	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		line, err := act(client, cmd, args[0])
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, line)
		return nil
	})
	return cmd
}
