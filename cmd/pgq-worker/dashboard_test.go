package main

import (
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// `pgq-worker dashboard` refuses a wrong command line before it connects (exit 2): basic
// authentication without its credentials, an unknown mode, a malformed address or path.
func TestCLIDashboardUsage(t *testing.T) {
	t.Parallel()
	out, errOut, code := pgqWorker(t, nil, "dashboard", "--help")
	require.Equal(t, 0, code, errOut)
	for _, s := range []string{"--addr", "127.0.0.1:8080", "--read-only", "--base-path", "--auth", "PGQ_DASHBOARD_USER", "PGQ_DASHBOARD_PASSWORD"} {
		require.Contains(t, out, s)
	}
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--auth", "basic"}, "--auth basic needs $PGQ_DASHBOARD_USER and $PGQ_DASHBOARD_PASSWORD"},
		{[]string{"PGQ_DASHBOARD_USER=ops", "PGQ_DASHBOARD_PASSWORD="}, []string{"--auth", "basic"}, "needs $PGQ_DASHBOARD_USER"},
		{nil, []string{"--auth", "magic"}, "--auth must be none or basic"},
		{nil, []string{"--addr", "8080"}, "--addr must be HOST:PORT"},
		{nil, []string{"--base-path", "pgq"}, "--base-path must be a path starting with /"},
		{nil, []string{"--timeout", "-1"}, "--timeout must be >= 0"},
	} {
		args := append([]string{"dashboard", "--database-url", "postgres://nobody@127.0.0.1:1/none"}, tc.args...)
		_, errOut, code := pgqWorker(t, tc.env, args...)
		require.Equal(t, 2, code, "%v: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}

// `pgq-worker dashboard --auth basic` serves the dashboard under --base-path to the user
// named in the environment only, records the actions taken through it on that user's
// behalf (S42), never prints the password, warns when it listens beyond loopback without
// authentication, and stops cleanly on SIGTERM.
func TestS42CLIDashboardServes(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.dispatch('j', '{}', queue => 'q1')`)
	const password = "pa55-w0rd-xyz"
	cmd := exec.Command(workerBinary(t), "dashboard", "--database-url", db.URL, "--addr", "127.0.0.1:0",
		"--base-path", "/pgq", "--auth", "basic")
	cmd.Env = append(cmd.Environ(), "PGQ_DASHBOARD_USER=ops", "PGQ_DASHBOARD_PASSWORD="+password)
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("dashboard's output:\n%s", stderr.String())
		}
	})
	listening := regexp.MustCompile(`dashboard on (http://127\.0\.0\.1:\d+/pgq)/`)
	waitUntil(t, 15*time.Second, "the dashboard listens", func() bool { return listening.MatchString(stderr.String()) })
	url := listening.FindStringSubmatch(stderr.String())[1]

	client := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	request := func(method, path, user, pass string) *http.Response {
		req, err := http.NewRequest(method, url+path, nil)
		require.NoError(t, err)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	require.Equal(t, http.StatusUnauthorized, request("GET", "/", "", "").StatusCode)
	require.Equal(t, http.StatusUnauthorized, request("GET", "/", "ops", "wrong").StatusCode)
	require.Equal(t, http.StatusOK, request("GET", "/", "ops", password).StatusCode)
	require.Equal(t, http.StatusOK, request("GET", "/jobs?state=ready&queue=q1", "ops", password).StatusCode)
	root, err := client.Get(strings.TrimSuffix(url, "/pgq") + "/")
	require.NoError(t, err)
	root.Body.Close()
	require.Equal(t, http.StatusFound, root.StatusCode, "the root leads to the base path")
	require.Equal(t, "/pgq/", root.Header.Get("Location"))

	resp := request("POST", "/queues/q1/pause", "ops", password)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "dashboard:ops", pgqtest.Scalar[string](t, db, `SELECT on_behalf_of FROM pgq.actions WHERE action = 'pause'`))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-done:
		require.NoError(t, err, "exit 0 on SIGTERM")
	case <-time.After(10 * time.Second):
		t.Fatal("the dashboard did not stop on SIGTERM")
	}
	require.NotContains(t, stderr.String(), password)

	// Beyond loopback without authentication: a warning.
	_, errOut, code := pgqWorkerFor(t, 3*time.Second, "dashboard", "--database-url", db.URL, "--addr", "0.0.0.0:0", "--read-only")
	require.Equal(t, -1, code, "still serving when stopped: %s", errOut)
	require.Contains(t, errOut, "warning: 0.0.0.0:0 is not a loopback address and --auth is none: anyone who can reach it can read your jobs")
	require.Contains(t, errOut, "dashboard (read-only) on http://")
}

// pgqWorkerFor runs the binary with args for d, then kills it, and returns its output
// and exit code (-1 when it was still running).
func pgqWorkerFor(t *testing.T, d time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(workerBinary(t), args...)
	var out, errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
	}
	return out.String(), strings.TrimSpace(errOut.String()), cmd.ProcessState.ExitCode()
}
