// Command pgq-worker migrates the pgq schema, runs jobs, dispatches them and operates
// failed jobs. Run `pgq-worker --help` for the commands, `pgq-worker COMMAND --help` for
// the flags of each.
//
// Exit codes: 0 success, 1 runtime failure (and `check` finding problems), 2 usage error
// (a wrong command, flag, argument or flag value; nothing was done).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, so tests can call it. It returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	a := &app{stdout: stdout, stderr: stderr}
	root := newRootCommand(a)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return a.exit(cmd, err)
}
