package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"

	"github.com/pgq-dev/pgq/internal/version"
	"github.com/pgq-dev/pgq/pgq"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // a runtime failure, or `check` finding problems
	exitUsage   = 2 // a wrong command line: nothing was done
)

// app is one run of pgq-worker: where it writes, and what its error report needs.
type app struct {
	stdout, stderr io.Writer
	// running is set when a command's RunE starts: cobra has parsed and checked the
	// command line by then, so an error from before is a usage error.
	running bool
	// urls are the connection strings given (flag or $DATABASE_URL): wherever one appears
	// in an error message, it is shown with its password masked.
	urls []string
}

// usageError is a wrong command line found by a command itself (a flag value out of
// range, a malformed argument): exit 2, nothing done.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errNoCommand: a command that only groups others was run without one.
var errNoCommand = errors.New("no command given")

// errProblems makes check exit 1 without printing an error line.
var errProblems = errors.New("problems found")

// exit reports err on stderr and returns the exit code for it. cmd is the command cobra
// ran or was about to run.
func (a *app) exit(cmd *cobra.Command, err error) int {
	var usage *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errProblems):
		return exitFailure
	case errors.Is(err, errNoCommand):
		fmt.Fprint(a.stderr, cmd.UsageString())
		return exitUsage
	case errors.Is(err, pgq.ErrNotMigrated):
		fmt.Fprintln(a.stderr, "pgq-worker: database is not migrated: run `pgq-worker migrate`")
		return exitFailure
	case errors.As(err, &usage) || !a.running:
		fmt.Fprintf(a.stderr, "pgq-worker: %s\nRun '%s --help' for usage.\n",
			strings.TrimRight(a.redact(err.Error()), "\n"), cmd.CommandPath())
		return exitUsage
	default:
		fmt.Fprintln(a.stderr, "pgq-worker:", a.redact(err.Error()))
		// PostgreSQL's hint says how to fix what it refused: pgq's functions give one
		// wherever there is a fix to name.
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Hint != "" {
			fmt.Fprintln(a.stderr, "hint:", a.redact(pgErr.Hint))
		}
		return exitFailure
	}
}

// redact masks the password of every connection string in s: a connection string given
// to this run wherever it appears, and, in whatever else looks like one, the password of
// a URL's user info and every password=… value. Only those spans change: the password
// is never searched for as a bare substring, which would garble the rest of the message
// (a password "r" would turn "permission" into "pexxxxxmission").
func (a *app) redact(s string) string {
	for _, u := range a.urls {
		if u != "" {
			s = strings.ReplaceAll(s, u, maskConnString(u))
		}
	}
	return maskConnString(s)
}

// runE wraps a command's work: from here on errors are runtime failures unless they are
// usageErrors.
func (a *app) runE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.running = true
		return fn(cmd, args)
	}
}

func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "pgq-worker",
		Short: "a PostgreSQL job queue worker",
		Long: `pgq-worker: a PostgreSQL job queue worker.

It migrates the pgq schema, runs jobs, dispatches them and operates failed jobs.
Every command that uses the database takes --database-url (default $DATABASE_URL).

Exit codes: 0 success, 1 runtime failure (check: problems found), 2 usage error.`,
		// Only for no arguments: with Args unset cobra rejects an unknown command itself,
		// suggesting the nearest.
		RunE:          groupRunE,
		SilenceErrors: true, // exit prints them
		SilenceUsage:  true,
		Version:       version.String(),
	}
	root.SetVersionTemplate("pgq-worker {{.Version}}\n")
	cobra.EnableCommandSorting = false // the order below: the order of use
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetUsageTemplate(usageTemplate)
	root.AddCommand(newMigrateCommand(a), newWorkCommand(a), newDispatchCommand(a), newJobsCommand(a), newFailedCommand(a),
		newSchedulesCommand(a), newBatchesCommand(a), newStatusCommand(a), newCheckCommand(a), newDashboardCommand(a))
	return root
}

// groupRunE is the RunE of a command that only groups others: it runs when none was
// named (usage, exit 2) or, below the root, when an unknown one was.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return errNoCommand
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return &usageError{msg: msg}
}

// usageTemplate is cobra's, except that a command grouping others shows only
// "CMD [command]" (its RunE merely reports a missing or unknown command).
var usageTemplate = strings.Replace((&cobra.Command{}).UsageTemplate(),
	"Usage:{{if .Runnable}}", "Usage:{{if and .Runnable (not .HasAvailableSubCommands)}}", 1)
