package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// S16 through the binary: `check` exits 1 and names each problem with its fix, `--json`
// gives the same for machines, and a clean setup exits 0. `work` logs the problems at
// start.
func TestS16E2ECheck(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	out, _, code := cli(t, db, "check", "--timeout", "60")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "0 problem(s) found")

	db.Exec(t, `SELECT pgq.define_job('report', timeout => 120, tries => 2, backoff => '{10,60}')`)
	out, _, code = cli(t, db, "check", "--timeout", "120")
	require.Equal(t, 1, code)
	require.Contains(t, out, "job report: timeout_reaches_retry_after")
	require.Contains(t, out, "queue default: timeout_reaches_retry_after")
	require.Contains(t, out, "job report: backoff_longer_than_tries")
	require.Contains(t, out, "fix: ")

	out, _, code = cli(t, db, "check", "--timeout", "120", "--json")
	require.Equal(t, 1, code)
	var findings []map[string]string
	require.NoError(t, json.Unmarshal([]byte(out), &findings))
	require.Len(t, findings, 3)
	require.Equal(t, "job report", findings[0]["object"])

	w := startWorker(t, db, "W", "--timeout", "120", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 20*time.Second))
	require.Contains(t, w.logs(), `level=WARN msg="configuration problem: timeout 120 >= retry_after 90 of queue default`)
}

// The metrics endpoint, scraped: outcomes by job and queue, handler durations, queue
// depth, and turn-aways by middleware.
func TestE2EMetrics(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `
CREATE FUNCTION public.ok(p jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
CREATE FUNCTION public.boom(p jsonb) RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom'; END $$;
SELECT pgq.define_job('ok', handler => 'public.ok');
SELECT pgq.define_job('boom', handler => 'public.boom');
SELECT pgq.define_limit('one', 1, '1 hour');
SELECT pgq.define_job('limited', handler => 'public.ok', tries => 3, middleware => '[{"rate_limited": {"limit": "one"}}]');
SELECT pgq.dispatch('ok'), pgq.dispatch('ok'), pgq.dispatch('boom'), pgq.dispatch('limited'), pgq.dispatch('limited');
SELECT pgq.dispatch('later', queue => 'mail', delay => '1 hour');`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	w := startWorker(t, db, "W", "--metrics-addr", addr, "--queue", "default,mail")
	waitUntil(t, 15*time.Second, "five outcomes", func() bool {
		return strings.Count(w.logs(), "outcome=") >= 5
	})
	scrape := func() string {
		resp, err := http.Get(fmt.Sprintf("http://%s/metrics", addr))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	body := scrape()
	for _, re := range []string{
		`pgq_jobs_total\{job="ok",outcome="succeeded",queue="default"\} 2`,
		`pgq_jobs_total\{job="boom",outcome="failed",queue="default"\} 1`,
		`pgq_jobs_total\{job="limited",outcome="turned_away",queue="default"\} 1`,
		`pgq_turn_aways_total\{middleware="rate_limited"\} 1`,
		`pgq_handler_duration_seconds_count\{job="ok",queue="default"\} 2`,
		`pgq_queue_jobs\{queue="mail",state="scheduled"\} 1`,
		`pgq_queue_jobs\{queue="default",state="failed"\} 1`,
		`pgq_queue_oldest_wait_seconds\{queue="mail"\} 0`,
		`go_goroutines \d+`,
	} {
		require.Regexp(t, regexp.MustCompile(re), body)
	}
}

// `status` prints one line per queue; `--watch` refreshes until interrupted.
func TestE2EStatus(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `SELECT pgq.dispatch('a'), pgq.dispatch('a'), pgq.dispatch('b', queue => 'mail', delay => '1 hour')`)
	out, _, code := cli(t, db, "status")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^\s+default\s+2\s+0\s+0\s+0\s+0\s+\d+s\s*$`, out)
	require.Regexp(t, `(?m)^\s+mail\s+0\s+1\s+0\s+0\s+0\s+0s\s*$`, out)
}

// --log-format json: one JSON object per line, one line per outcome with job, uuid,
// attempt, queue, duration and outcome.
func TestE2EJSONLogs(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE FUNCTION public.ok(p jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$;
	            SELECT pgq.define_job('ok', handler => 'public.ok'); SELECT pgq.dispatch('ok', '{"n": 1}');`)
	w := startWorker(t, db, "W", "--log-format", "json", "--stop-when-empty")
	require.Equal(t, 0, w.waitExit(t, 20*time.Second))
	var outcomes []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(w.logs()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if _, ok := rec["outcome"]; ok {
			outcomes = append(outcomes, rec)
		}
	}
	require.Len(t, outcomes, 1)
	o := outcomes[0]
	require.Equal(t, "job succeeded", o["msg"])
	require.Equal(t, "ok", o["job"])
	require.Equal(t, "default", o["queue"])
	require.EqualValues(t, 1, o["attempt"])
	require.Equal(t, "succeeded", o["outcome"])
	require.NotEmpty(t, o["uuid"])
	require.NotEmpty(t, o["duration"])
}
