package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

func newDispatchCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dispatch JOB [PAYLOAD]",
		Short: "queue a job, print its uuid",
		Long: `Queue a job named JOB with the JSON payload PAYLOAD (default {}) and print its uuid:
the nil uuid (all zeros) when a unique lock dropped it as a duplicate. A flag given
overrides the job class's setting; a flag not given leaves it to the class, then to the
worker. It warns (on stderr, exit 0) when no job class defines JOB and no running
worker has a handler for it, or when no running worker serves the job's queue.`,
		Example: `  pgq-worker dispatch send_invoice '{"invoice": 7}' --queue mail --tries 4 --backoff 10,60,300`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usagef("dispatch takes JOB and an optional PAYLOAD, got %d arguments", len(args))
			}
			return nil
		},
	}
	f := cmd.Flags()
	db := newDatabase(a, f)
	queue := f.String("queue", "", "queue (default: the job class's, else default)")
	delay := f.Int("delay", 0, "`SECONDS` before the job may run, >= 0")
	tries := f.Int("tries", 0, "attempts, >= 0 (0 = unlimited; default: the class's, else the worker's)")
	backoff := f.String("backoff", "", "`SECONDS` to wait after each exception, e.g. 10,60,300 (default: the class's, else the worker's)")
	timeout := f.Int("timeout", 0, "`SECONDS` the handler may run, 1 to 2147483 (default: the class's, else the worker's; only a class may say 0, no limit)")
	priority := f.Int("priority", 0, "higher runs first within the queue; -100 to 100")

	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		given := cmd.Flags().Changed
		payload := json.RawMessage("{}")
		if len(args) == 2 {
			if !json.Valid([]byte(args[1])) {
				return usagef("invalid payload %q: not JSON", args[1])
			}
			payload = json.RawMessage(args[1])
		}
		minTimeout := 0 // not given: the class's applies
		if given("timeout") {
			minTimeout = 1 // S43: only a class may say 0, no limit
		}
		if err := firstErr(
			checkCount("delay", *delay, 0),
			checkCount("tries", *tries, 0),
			checkInt("timeout", *timeout, minTimeout, int(pgq.TimeoutLimit/time.Second)),
			checkInt("priority", *priority, -100, 100),
		); err != nil {
			return err
		}
		opts := []pgq.Option{pgq.Priority(*priority)}
		if given("queue") {
			opts = append(opts, pgq.Queue(*queue))
		}
		if given("delay") {
			opts = append(opts, pgq.Delay(time.Duration(*delay)*time.Second))
		}
		if given("tries") {
			opts = append(opts, pgq.Tries(*tries))
		}
		if given("timeout") {
			opts = append(opts, pgq.Timeout(time.Duration(*timeout)*time.Second))
		}
		if given("backoff") {
			b, err := parseBackoff("backoff", *backoff)
			if err != nil {
				return err
			}
			opts = append(opts, pgq.Backoff(b...))
		}
		client, err := db.client(cmd.Context())
		if err != nil {
			return err
		}
		defer client.Pool().Close()
		id, err := client.Dispatch(cmd.Context(), args[0], payload, opts...)
		if errors.Is(err, pgq.ErrInvalidArgument) {
			return &usageError{msg: err.Error()} // PostgreSQL named the bad value; nothing was written
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, id)
		// A job name without a class is allowed (a Go worker's handler may run it), so
		// a name or queue that nothing serves is a warning, not an error (S87).
		var q *string
		if given("queue") {
			q = queue
		}
		warnings, err := dbsqlc.New(client.Pool()).DispatchWarningList(cmd.Context(), dbsqlc.DispatchWarningListParams{Job: args[0], Queue: q})
		if err != nil {
			return nil // the job is queued; the warnings are a courtesy
		}
		for _, w := range warnings {
			fmt.Fprintln(a.stderr, "pgq-worker: warning:", w)
		}
		return nil
	})
	return cmd
}
