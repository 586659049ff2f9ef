package faults

import (
	"bufio"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/internal/pgcluster"
)

// S102: the reading commands, every view and the read-only dashboard work on a hot
// standby: nothing they run writes, so their reads can go to a replica.
func TestS102ReadsOnHotStandby(t *testing.T) {
	t.Parallel()
	c := pgcluster.Start(t)
	s := c.StartStandby(t, "replica1", pgcluster.Async)
	db := c.CreateDB(t, "faults")
	db.Exec(t, appSchema+`
CREATE FUNCTION app.boom(p jsonb) RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom %', p->>'n'; END $$;
SELECT pgq.define_queue('default', retry_after => 12);
SELECT pgq.define_job('effect', handler => 'app.effect');
SELECT pgq.define_job('boom', handler => 'app.boom');
SELECT pgq.schedule('nightly', '0 3 * * *', 'effect');
SELECT pgq.dispatch_batch('[{"job": "effect", "payload": {"n": 100}}]', name => 'b1');`)
	dispatchEffects(t, db, "effect", 5, 0)
	db.Exec(t, `SELECT pgq.dispatch('boom', '{"n": 1}')`)
	bin := binary(t, sqlWorker)
	out, err := exec.Command(bin, "work", "--database-url", db.URL, "--stop-when-empty", "--no-schedules").CombinedOutput()
	require.NoError(t, err, "%s", out)
	db.Exec(t, `SELECT pgq.dispatch('effect', '{"n": 6}', delay => '1 hour')`) // one waiting
	failed := pgcluster.Scalar[string](t, db, `SELECT uuid::text FROM pgq.failed_jobs LIMIT 1`)
	done := pgcluster.Scalar[string](t, db, `SELECT job_uuid::text FROM pgq.attempts WHERE outcome = 'succeeded' LIMIT 1`)
	c.WaitReplayed(t)

	replica := db.On(t, s)
	require.True(t, pgcluster.Scalar[bool](t, replica, `SELECT pg_is_in_recovery()`))
	url := s.URL(db.Name)

	for _, args := range [][]string{
		{"status"},
		{"failed", "list"},
		{"failed", "show", failed},
		{"jobs", "list"},
		{"jobs", "show", failed},
		{"jobs", "show", done},
		{"schedules", "list"},
		{"batches", "list"},
	} {
		t.Run(strings.Join(args[:min(2, len(args))], " "), func(t *testing.T) {
			out, err := exec.Command(bin, append(args, "--database-url", url)...).CombinedOutput()
			require.NoError(t, err, "pgq-worker %s on the standby:\n%s", strings.Join(args, " "), out)
			require.NotEmpty(t, strings.TrimSpace(string(out)))
		})
	}

	t.Run("Views", func(t *testing.T) {
		views := pgcluster.Scalar[[]string](t, replica, `SELECT array_agg(format('%I.%I', schemaname, viewname) ORDER BY viewname)
			FROM pg_views WHERE schemaname = 'pgq'`)
		require.NotEmpty(t, views)
		for _, v := range views {
			_, err := replica.Pool.Exec(t.Context(), `SELECT * FROM `+v+` LIMIT 10`)
			require.NoError(t, err, "SELECT from %s on the standby", v)
		}
	})

	t.Run("Dashboard", func(t *testing.T) {
		cmd := exec.Command(bin, "dashboard", "--read-only", "--addr", "127.0.0.1:0", "--database-url", url)
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		addr := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stderr)
			re := regexp.MustCompile(`on (http://\S+)/`)
			for sc.Scan() {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					addr <- m[1]
				}
				t.Log("dashboard: " + sc.Text())
			}
		}()
		var base string
		select {
		case base = <-addr:
		case <-time.After(30 * time.Second):
			t.Fatal("the dashboard did not say where it listens")
		}
		for _, path := range []string{"/", "/jobs", "/jobs?state=failed", "/jobs/" + failed, "/jobs/" + done, "/batches",
			"/chains", "/locks", "/workers", "/schedules", "/check", "/history"} {
			resp, err := http.Get(base + path)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode, "GET %s on the standby:\n%s", path, tail(string(body), 20))
		}
	})
}
