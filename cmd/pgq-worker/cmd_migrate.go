package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pgq-dev/pgq/pgq"
)

func newMigrateCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "create or update the pgq schema",
		Long: `Create or update the pgq schema: apply the migrations this pgq-worker carries that
the database lacks. Concurrent migrators are safe: an advisory lock serialises them.`,
		Args: cobra.NoArgs,
	}
	db := newDatabase(a, cmd.Flags())
	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		pool, err := db.connect(cmd.Context(), 0, nil)
		if err != nil {
			return err
		}
		defer pool.Close()
		n, err := pgq.Migrate(cmd.Context(), pool)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "pgq schema up to date (%d migrations applied)\n", n)
		return nil
	})
	return cmd
}
