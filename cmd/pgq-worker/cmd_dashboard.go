package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgq-dev/pgq/dashboard"
)

// The environment variables that hold the dashboard's basic-auth credentials: never a
// flag, which `ps` would show to every user of the machine.
const (
	envDashboardUser     = "PGQ_DASHBOARD_USER"
	envDashboardPassword = "PGQ_DASHBOARD_PASSWORD"
)

func newDashboardCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "serve the web dashboard: every job's story, and actions on it",
		Long: `Serve the web dashboard until stopped (SIGTERM/SIGINT). It shows the queues, the jobs in
each state, each job's attempts, locks, limits, workers and the config check, and
acts on jobs and queues (run now, retry, forget, flush, cancel, pause, resume), each
action recorded in pgq.actions.

It listens on loopback unless --addr says otherwise. --auth basic asks for the user
and password in $PGQ_DASHBOARD_USER and $PGQ_DASHBOARD_PASSWORD; without it, anyone
who can reach the address can use the dashboard. --read-only shows no action and
refuses them all; connect as a role that may only read (pgq_reader) to be sure.`,
		Example: `  pgq-worker dashboard
  pgq-worker dashboard --addr 127.0.0.1:8080 --base-path /pgq --read-only
  PGQ_DASHBOARD_USER=ops PGQ_DASHBOARD_PASSWORD=… pgq-worker dashboard --addr :8080 --auth basic`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	db := newDatabase(a, f)
	addr := f.String("addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0: any free port)")
	readOnly := f.Bool("read-only", false, "show no action and refuse every action")
	basePath := f.String("base-path", "", "serve the dashboard under this `PATH`, e.g. /pgq (default: the root)")
	auth := f.String("auth", "none", "authentication: none, or basic (credentials from $"+envDashboardUser+" and $"+envDashboardPassword+")")
	timeout := f.Int("timeout", 60, "the workers' --timeout in `SECONDS`, for the config check, >= 0")
	tries := f.Int("tries", 1, "the workers' --tries, for the config check, >= 0")
	_ = cmd.RegisterFlagCompletionFunc("auth", cobra.FixedCompletions([]string{"none", "basic"}, cobra.ShellCompDirectiveNoFileComp))

	cmd.RunE = a.runE(func(cmd *cobra.Command, _ []string) error {
		if err := firstErr(checkCount("timeout", *timeout, 0), checkCount("tries", *tries, 0)); err != nil {
			return err
		}
		host, _, err := net.SplitHostPort(*addr)
		if err != nil {
			return usagef("--addr must be HOST:PORT, e.g. 127.0.0.1:8080, got %q", *addr)
		}
		if *basePath != "" && (!strings.HasPrefix(*basePath, "/") || strings.ContainsAny(*basePath, "?#{} ")) {
			return usagef("--base-path must be a path starting with /, e.g. /pgq, got %q", *basePath)
		}
		var user, password string
		switch *auth {
		case "none":
		case "basic":
			user, password = os.Getenv(envDashboardUser), os.Getenv(envDashboardPassword)
			if user == "" || password == "" {
				return usagef("--auth basic needs $%s and $%s set (not empty)", envDashboardUser, envDashboardPassword)
			}
		default:
			return usagef("--auth must be none or basic, got %q", *auth)
		}

		ctx := cmd.Context()
		client, err := db.client(ctx)
		if err != nil {
			return err
		}
		pool := client.Pool()
		defer pool.Close()
		log := slog.New(slog.NewTextHandler(a.stderr, nil))
		h, err := dashboard.Handler(pool, dashboard.Options{
			BasePath: *basePath, ReadOnly: *readOnly, Logger: log,
			WorkerTimeout: time.Duration(*timeout) * time.Second, WorkerTries: *tries,
		})
		if err != nil {
			return usagef("%s", strings.TrimPrefix(err.Error(), "dashboard: "))
		}
		if *auth == "basic" {
			if h, err = dashboard.BasicAuth(user, password, "pgq dashboard", h); err != nil {
				return err
			}
		}
		mux := http.NewServeMux()
		base := strings.TrimRight(*basePath, "/")
		mux.Handle(base+"/", h)
		if base != "" {
			mux.Handle("GET /{$}", http.RedirectHandler(base+"/", http.StatusFound))
		}

		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return fmt.Errorf("--addr: %w", err)
		}
		if !isLoopback(host) && *auth == "none" {
			fmt.Fprintf(a.stderr, "pgq-worker: warning: %s is not a loopback address and --auth is none: anyone who can reach it can %s\n",
				*addr, map[bool]string{true: "read your jobs", false: "read and act on your jobs"}[*readOnly])
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		mode := ""
		if *readOnly {
			mode = " (read-only)"
		}
		fmt.Fprintf(a.stderr, "pgq-worker: dashboard%s on http://%s%s/\n", mode, ln.Addr(), base)
		select {
		case err := <-served:
			return err
		case <-ctx.Done():
		}
		stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(stop); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	})
	return cmd
}

// isLoopback tells whether host (of --addr) names a loopback interface only. An empty
// host or 0.0.0.0 listens on every interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
