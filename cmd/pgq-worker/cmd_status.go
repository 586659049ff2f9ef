package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/internal/version"
)

func newStatusCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "jobs per queue: ready, scheduled, retrying, running, failed",
		Args:  cobra.NoArgs,
	}
	db := newDatabase(a, cmd.Flags())
	watch := cmd.Flags().Float64("watch", 0, "refresh every this many `SECONDS` until interrupted (0 = print once)")
	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		every, err := checkSeconds("watch", *watch, true)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		client, err := db.client(ctx)
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		// The last migration applied; a schema that a release before pgq.goose_version
		// migrated has none to show until it is migrated again.
		schema := "unknown (pgq.goose_version is missing: run pgq-worker migrate)"
		if v, err := dbsqlc.New(client.Pool()).SchemaVersion(ctx); err == nil {
			schema = fmt.Sprint(v)
		}
		for {
			rows, err := client.Status(ctx)
			if err != nil {
				return err
			}
			if every > 0 {
				fmt.Fprintf(a.stdout, "\033[H\033[2J%s  (every %gs, Ctrl-C to stop)\n\n", time.Now().Format(time.TimeOnly), *watch)
			}
			fmt.Fprintf(a.stdout, "pgq-worker %s, schema version %s\n\n", version.String(), schema)
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "QUEUE\tREADY\tSCHEDULED\tRETRYING\tRUNNING\tFAILED\tOLDEST WAIT\t")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Queue, r.Ready, r.Scheduled, r.Retrying,
					r.Running, r.Failed, r.OldestWait.Round(time.Second))
			}
			if err := tw.Flush(); err != nil || every == 0 {
				return err
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(every):
			}
		}
	})
	return cmd
}
