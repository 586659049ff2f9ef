package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgq-dev/pgq/pgq"
)

func newCheckCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check",
		Short: "the ordering linter: exit 1 on a problem",
		Long: `Check every queue and job class against the workers' --timeout and --tries: print each
problem with its fix, and exit 1 when there is one.`,
		Args: cobra.NoArgs,
	}
	db := newDatabase(a, cmd.Flags())
	timeout := cmd.Flags().Int("timeout", 60, "the workers' --timeout in `SECONDS`, >= 0")
	tries := cmd.Flags().Int("tries", 1, "the workers' --tries, >= 0")
	asJSON := cmd.Flags().Bool("json", false, "print the findings as JSON")
	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		if err := firstErr(checkCount("timeout", *timeout, 0), checkCount("tries", *tries, 0)); err != nil {
			return err
		}
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		findings, err := client.Check(cmd.Context(), time.Duration(*timeout)*time.Second, *tries)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(a.stdout)
			enc.SetIndent("", "  ")
			if findings == nil {
				findings = []pgq.Finding{}
			}
			if err := enc.Encode(findings); err != nil {
				return err
			}
		} else {
			for _, f := range findings {
				fmt.Fprintf(a.stdout, "%s: %s\n  %s\n  fix: %s\n", f.Object, f.Rule, f.Detail, f.Fix)
			}
			fmt.Fprintf(a.stdout, "%d problem(s) found\n", len(findings))
		}
		if len(findings) > 0 {
			return errProblems
		}
		return nil
	})
	return cmd
}
