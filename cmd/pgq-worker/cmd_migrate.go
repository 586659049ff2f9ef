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
the database lacks, then re-create pgq's functions and views and its roles' grants.
The roles (pgq_owner, pgq_producer, pgq_worker, pgq_reader, pgq_payload_reader,
pgq_admin) are created NOLOGIN when missing, which needs CREATEROLE; --role-prefix puts
a prefix before each name, for a cluster with several pgq installations. Concurrent
migrators are safe: an advisory lock serialises them.`,
		Args: cobra.NoArgs,
	}
	db := newDatabase(a, cmd.Flags())
	prefix := cmd.Flags().String("role-prefix", "", "put this before the name of each pgq role (e.g. app1_ gives app1_pgq_worker)")
	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		pool, err := db.connect(cmd.Context(), 0, nil)
		if err != nil {
			return err
		}
		defer pool.Close()
		n, err := pgq.Migrate(cmd.Context(), pool, pgq.WithRoles(pgq.DefaultRoles(*prefix)))
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "pgq schema up to date (%d migrations applied)\n", n)
		return nil
	})
	return cmd
}
