package dashboard_test

// The dashboard through HTTP against a real database: each screen, each action, the
// refusals (read-only, cross-origin, authentication), escaping.

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/dashboard"
	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// Every screen renders the state seeded through pgq's functions: queues with their
// counts and the paused one marked, the chart of the last hour, each list, a job's
// timeline, locks and limits, workers, the config check and the history.
func TestDashboardScreens(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	db := b.db
	db.Exec(t, `SELECT pgq.define_queue('mail', retry_after => 30)`)
	db.Exec(t, `SELECT pgq.define_limit('vendor_api', 5, '1 minute')`)
	db.Exec(t, `SELECT pgq.define_job('sync', queue => 'sync', unique_for => '1 hour', unique_by => '{account}',
		middleware => '[{"without_overlapping": {"by": ["account"]}}, {"rate_limited": {"limit": "vendor_api"}}]')`)
	failed := failJob(t, db, "default", "charge_card", `{"order": 41}`, "first: vendor 500", "second: card declined")
	ready := dispatch(t, db, `pgq.dispatch('send_invoice', '{"invoice": 7}')`)
	scheduled := dispatch(t, db, `pgq.dispatch('send_digest', '{}', queue => 'mail', delay => '10 minutes')`)
	retrying := dispatch(t, db, `pgq.dispatch('flaky', '{}', queue => 'flaky', tries => 3, backoff => '{300}')`)
	_, token := reserve(t, db, "w-1:1", "flaky")
	db.Exec(t, `SELECT pgq.fail($1::uuid, $2::uuid, 'HTTP 503 from billing')`, retrying, token)
	running := dispatch(t, db, `pgq.dispatch('sync', '{"account": 9}')`)
	reserve(t, db, "worker-a:4242", "sync")
	db.Exec(t, `SELECT pgq.define_concurrency('exports', 1)`)
	db.Exec(t, `SELECT pgq.dispatch('sync', jsonb_build_object('account', 100 + i), middleware => '[{"concurrency_limited": {"limit": "exports"}}]')
		FROM generate_series(1, 2) i`)
	reserve(t, db, "worker-b:7", "sync")
	db.Exec(t, `SELECT pgq.pause_queue('mail')`)

	t.Run("Overview", func(t *testing.T) {
		body := b.page(t, "/")
		for _, s := range []string{"<h1>Overview</h1>", `id="queue-default"`, `id="queue-mail" class="paused"`,
			`<span class="badge warn">paused</span>`, "Resume", "Pause", "<svg", "failed 3", "pause"} {
			require.Contains(t, body, s)
		}
		require.NotContains(t, body, "succeeded", "the legend names only the outcomes of the last hour")
		require.Regexp(t, `<rect x="[0-9.]+" y="[0-9.]+" width="[0-9.]+" height="[0-9.]+" fill="#c62828"><title>\d\d:\d\d UTC: 3 failed</title>`, body,
			"the three failed attempts of this minute are a red bar")
		require.Regexp(t, `(?s)queue-default.*?state=failed&amp;queue=default" class="bad">1</a>`, body, "one failed job in default")
	})
	t.Run("Lists", func(t *testing.T) {
		for state, id := range map[string]string{"ready": ready, "scheduled": scheduled, "retrying": retrying, "running": running, "failed": failed} {
			body := b.page(t, "/jobs?state="+state)
			require.Contains(t, body, "/pgq/jobs/"+id, state)
			require.Contains(t, body, `class="on">`+state+`</a>`, state)
		}
		body := b.page(t, "/jobs?state=retrying")
		require.Contains(t, body, "backoff", "the retrying list says why each waits")
		require.Contains(t, body, "HTTP 503 from billing")
		body = b.page(t, "/jobs?state=running")
		require.Contains(t, body, "worker-a:4242", "the running list names the worker")
	})
	t.Run("Job", func(t *testing.T) {
		body := b.page(t, "/jobs/"+failed)
		require.Contains(t, body, `<span class="badge bad" id="state">failed</span>`)
		require.Contains(t, body, "first: vendor 500", "the first attempt's exception is on the timeline")
		require.Contains(t, body, `<pre class="exc" id="failure">second: card declined</pre>`)
		require.Contains(t, body, "&#34;order&#34;: 41", "the payload, pretty-printed")
		require.Regexp(t, `(?s)attempt 1</strong> <span class="badge bad">failed</span>.*attempt 2</strong>.*final`, body)

		body = b.page(t, "/jobs/"+running)
		require.Contains(t, body, "Running on <strong>worker-a:4242</strong>")
		require.Contains(t, body, "sync:[9]", "the frozen unique key")
	})
	t.Run("Locks", func(t *testing.T) {
		body := b.page(t, "/locks")
		require.Contains(t, body, "sync:[9]", "the unique lock and the overlap lease")
		require.Equal(t, 2, strings.Count(body, `<td class="mono">sync:[9]</td>`), "a unique lock and an overlap lease")
		require.Contains(t, body, "worker-a:4242", "the overlap lease's worker")
		require.Contains(t, body, "vendor_api")
		require.Contains(t, body, "1</td><td class=\"r\">5", "1 of 5 used")
		require.Regexp(t, `<td>concurrency</td><td>exports</td><td class="mono">@exports</td><td class="r">1</td><td class="r">1</td>\s*<td></td><td[^>]*></td>\s*<td><span class="badge bad">full</span>`, body,
			"the concurrency limit: 1 of 1 running, the other job waiting")
	})
	t.Run("Workers", func(t *testing.T) {
		body := b.page(t, "/workers")
		require.Contains(t, body, "worker-a:4242")
		require.Contains(t, body, "test-worker:1", "finished attempts lately")
		require.Contains(t, body, "/pgq/jobs/"+running, "what the worker runs")
	})
	t.Run("Check", func(t *testing.T) {
		body := b.page(t, "/check")
		require.Contains(t, body, "queue mail")
		require.Contains(t, body, "timeout_reaches_retry_after")
		require.Contains(t, body, "queue_unserved", "jobs wait in queues no live worker serves")
		require.Contains(t, body, "job_unhandled", "and their names have no class and no live worker's handler")
		// A worker that serves those queues and has handlers for those names.
		db.Exec(t, `SELECT pgq.worker_seen('worker-b:1', '{default,flaky,mail,sync}', '{flaky,send_digest,send_invoice}')`)
		body = b.page(t, "/check?timeout=10")
		require.Contains(t, body, `id="no-findings"`, "with --timeout 10 every lease is long enough")
		status, body := b.get(t, "/check?timeout=-1")
		require.Equal(t, http.StatusBadRequest, status, body)
	})
	t.Run("History", func(t *testing.T) {
		body := b.page(t, "/history")
		require.Contains(t, body, `<span class="badge muted">pause</span>`)
		require.Contains(t, body, "mail")
	})
	t.Run("NotFound", func(t *testing.T) {
		status, body := b.get(t, "/jobs/01a2f0c6-0000-7000-8000-000000000000")
		require.Equal(t, http.StatusNotFound, status, body)
		status, _ = b.get(t, "/jobs/not-a-uuid")
		require.Equal(t, http.StatusBadRequest, status)
		status, _ = b.get(t, "/nowhere")
		require.Equal(t, http.StatusNotFound, status)
		status, _ = b.get(t, "/jobs?state=bogus")
		require.Equal(t, http.StatusBadRequest, status)
	})
	t.Run("Static", func(t *testing.T) {
		body := b.page(t, "/static/style.css")
		require.Contains(t, body, "font-family")
	})
}

// A job that finished keeps only its history: its page shows the timeline and says so.
func TestDashboardFinishedJob(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	id := dispatch(t, b.db, `pgq.dispatch('done', '{}')`)
	_, token := reserve(t, b.db, "w:1", "default")
	b.db.Exec(t, `SELECT pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])`, id, token)
	body := b.page(t, "/jobs/"+id)
	require.Contains(t, body, `id="state">finished</span>`)
	require.Contains(t, body, "Only its history is left")
	require.Contains(t, body, `<span class="badge ok">succeeded</span>`)
}

// Lists page by keyset: following "next page" visits every job once, in the order the
// workers take them, and the filters (queue, job, payload field) narrow every page.
func TestDashboardListsPageAndFilter(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{PageSize: 3})
	db := b.db
	var want []string
	for i := range 4 { // high priority first, then queue a before b
		want = append(want, dispatch(t, db, `pgq.dispatch('j', jsonb_build_object('n', $1::int), queue => 'a', priority => 5)`, i))
	}
	for i := range 3 {
		want = append(want, dispatch(t, db, `pgq.dispatch('j', jsonb_build_object('n', $1::int), queue => 'a')`, 10+i))
	}
	for i := range 3 {
		want = append(want, dispatch(t, db, `pgq.dispatch('k', jsonb_build_object('n', $1::int, 'customer', jsonb_build_object('id', $1::int)), queue => 'b')`, 20+i))
	}
	walk := func(path string) []string { return b.walk(t, path, nil) }
	require.Equal(t, want, walk("/jobs?state=ready"), "every ready job once, in reserve order")
	require.Equal(t, want[5:6], walk("/jobs?state=ready&queue=a&job=j&field=n&value=11"))
	require.Equal(t, want[7:], walk("/jobs?state=ready&job=k"))
	require.Equal(t, want[8:9], walk("/jobs?state=ready&field=customer.id&value=21"), "a nested payload field")
	require.Empty(t, walk("/jobs?state=ready&field=customer.id&value=99"))

	// failed jobs page newest first
	var failed []string
	for i := range 4 {
		failed = append(failed, failJob(t, db, "c", "f", fmt.Sprintf(`{"n": %d}`, i), "boom"))
		db.Exec(t, `UPDATE pgq.failed_jobs SET failed_at = now() - make_interval(hours => $2) WHERE uuid = $1::uuid`, failed[i], 10-i)
	}
	require.Equal(t, []string{failed[3], failed[2], failed[1], failed[0]}, walk("/jobs?state=failed"))
	require.Equal(t, []string{failed[1], failed[0]}, walk("/jobs?state=failed&older_than_hours=8.5"))

	// a uuid goes to its job
	resp, _ := b.client.Get(b.srv.URL + base + "/jobs?uuid=+" + want[0] + "+")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/pgq/jobs/"+want[0], resp.Header.Get("Location"))
	status, _ := b.get(t, "/jobs?uuid=nope")
	require.Equal(t, http.StatusBadRequest, status)
	status, _ = b.get(t, "/jobs?state=ready&after_at=yesterday&after_id=1")
	require.Equal(t, http.StatusBadRequest, status)
}

// S20: retry (one, selected, all matching), forget and flush from the failed list, each
// through pgq's function and recorded in pgq.actions (S42) with the database role and
// the person the dashboard acted for. Forget, bulk retry and flush ask first. The
// dashboard connects as a login that is only a pgq_admin (S46).
func TestS20S42S46DashboardFailedJobActions(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	b := setupOn(t, &pgqtest.DB{URL: db.URL, Pool: poolAs(t, db, pgqtest.AdminRole)},
		dashboard.Options{Actor: func(*http.Request) string { return "alice" }})
	one := failJob(t, db, "default", "a", `{}`, "boom")
	sel1, sel2 := failJob(t, db, "default", "b", `{}`, "boom"), failJob(t, db, "default", "b", `{}`, "boom")
	other := failJob(t, db, "other", "c", `{}`, "boom")

	loc := b.act(t, "/jobs/"+one+"/retry", nil)
	require.Equal(t, "/pgq/jobs/"+one+"?done=retried", loc)
	require.Contains(t, b.page(t, strings.TrimPrefix(loc, base)), "Retried: the job is back on its queue.")
	require.Equal(t, "ready", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.job_settings WHERE uuid = $1::uuid`, one))
	action, actor, who := lastAction(t, db)
	require.Equal(t, []string{"retry", pgqtest.AdminRole, "dashboard:alice"}, []string{action, actor, who})
	resp, body := b.post(t, "/jobs/"+one+"/retry", nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "no longer failed: %s", body)

	loc = b.act(t, "/failed/retry", url.Values{"uuid": {sel1, sel2}, "next": {"/jobs?state=failed&queue=default"}})
	require.Equal(t, "/pgq/jobs?done=retried_n&n=2&queue=default&state=failed", loc)
	require.Equal(t, int64(1), failedCount(t, db))

	// retry all matching: a confirmation with the count, then the retry
	failJob(t, db, "other", "c", `{}`, "boom")
	resp, body = b.post(t, "/failed/retry-all", url.Values{"queue": {"other"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "Retry 2 failed jobs?")
	require.Contains(t, body, `<input type="hidden" name="queue" value="other">`)
	require.Equal(t, int64(2), failedCount(t, db), "nothing done before the confirmation")
	loc = b.act(t, "/failed/retry-all", url.Values{"queue": {"other"}, "confirm": {"yes"}})
	requireDone(t, loc, "retried_n", "2")
	require.Equal(t, int64(0), failedCount(t, db))
	_ = other

	// forget one, confirmed
	gone := failJob(t, db, "default", "d", `{}`, "boom")
	resp, body = b.post(t, "/jobs/"+gone+"/forget", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "Forget failed job "+gone+"?")
	require.Equal(t, int64(1), failedCount(t, db))
	b.act(t, "/jobs/"+gone+"/forget", url.Values{"confirm": {"yes"}})
	require.Equal(t, int64(0), failedCount(t, db))
	action, _, who = lastAction(t, db)
	require.Equal(t, []string{"forget", "dashboard:alice"}, []string{action, who})

	// flush with a filter, confirmed
	keep := failJob(t, db, "default", "e", `{}`, "boom")
	old := failJob(t, db, "default", "e", `{}`, "boom")
	db.Exec(t, `UPDATE pgq.failed_jobs SET failed_at = now() - interval '3 hours' WHERE uuid = $1::uuid`, old)
	failJob(t, db, "other", "e", `{}`, "boom")
	resp, body = b.post(t, "/failed/flush", url.Values{"queue": {"default"}, "job": {"e"}, "older_than_hours": {"2"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "Delete 1 failed jobs?")
	require.Contains(t, body, "of queue default, of job e, failed more than 2 hours ago")
	loc = b.act(t, "/failed/flush", url.Values{"queue": {"default"}, "job": {"e"}, "older_than_hours": {"2"}, "confirm": {"yes"}})
	requireDone(t, loc, "flushed_n", "1")
	require.Equal(t, int64(2), failedCount(t, db))
	require.Equal(t, keep, pgqtest.Scalar[string](t, db, `SELECT uuid::text FROM pgq.failed_jobs WHERE queue = 'default'`))
	action, _, who = lastAction(t, db)
	require.Equal(t, []string{"flush", "dashboard:alice"}, []string{action, who})

	resp, _ = b.post(t, "/failed/flush", url.Values{"older_than_hours": {"-1"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, _ = b.post(t, "/failed/retry", url.Values{"uuid": {"x"}})
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// S20, S40: run now makes a waiting job available; cancel ends a waiting job at once and
// asks a running job's worker to cancel it. Each is recorded with who did it (S42).
func TestS20S40S42DashboardRunNowAndCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	db := b.db
	later := dispatch(t, db, `pgq.dispatch('later', '{}', delay => '1 hour')`)
	body := b.page(t, "/jobs/"+later)
	require.Contains(t, body, `id="run-now"`)
	require.Contains(t, body, `id="cancel"`)
	b.act(t, "/jobs/"+later+"/run-now", nil)
	require.Equal(t, "ready", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.job_settings WHERE uuid = $1::uuid`, later))
	action, _, who := lastAction(t, db)
	require.Equal(t, []string{"run_now", "dashboard"}, []string{action, who}, "no user known: the dashboard itself")
	resp, body := b.post(t, "/jobs/"+later+"/cancel", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "Cancel job "+later+"?")
	loc := b.act(t, "/jobs/"+later+"/cancel", url.Values{"confirm": {"yes"}})
	requireDone(t, loc, "cancelled", "")
	require.Contains(t, b.page(t, strings.TrimPrefix(loc, base)), "Cancelled: the waiting job is gone.")
	require.Equal(t, "cancelled", pgqtest.Scalar[string](t, db, `SELECT outcome FROM pgq.attempts WHERE job_uuid = $1::uuid`, later))

	running := dispatch(t, db, `pgq.dispatch('long', '{}')`)
	reserve(t, db, "w:1", "default")
	resp, _ = b.post(t, "/jobs/"+running+"/run-now", nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode, "a running job does not wait")
	loc = b.act(t, "/jobs/"+running+"/cancel", url.Values{"confirm": {"yes"}})
	requireDone(t, loc, "cancelling", "")
	body = b.page(t, "/jobs/"+running)
	require.Contains(t, body, "cancel requested")
	require.NotContains(t, body, `id="cancel"`, "asked once")
	action, _, _ = lastAction(t, db)
	require.Equal(t, "cancel", action)
	resp, _ = b.post(t, "/jobs/01a2f0c6-0000-7000-8000-000000000000/cancel", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusConflict, resp.StatusCode)
}

// S41, S42: pause and resume a queue from the overview; pgq.actions records the login
// role and, under basic authentication, the dashboard user.
func TestS41S42DashboardPauseResume(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	h, err := dashboard.Handler(db.Pool, dashboard.Options{BasePath: base})
	require.NoError(t, err)
	h, err = dashboard.BasicAuth("alice", "s3cret", "pgq", h)
	require.NoError(t, err)
	srv := newServer(t, h)
	dispatch(t, db, `pgq.dispatch('j', '{}', queue => 'q1')`)

	post := func(path string) *http.Response {
		req, err := http.NewRequest(http.MethodPost, srv.URL+base+path, nil)
		require.NoError(t, err)
		req.SetBasicAuth("alice", "s3cret")
		resp, err := noRedirects.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	resp := post("/queues/q1/pause")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Equal(t, "/pgq/?done=paused", resp.Header.Get("Location"))
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT paused FROM pgq.queues WHERE name = 'q1'`))
	action, actor, who := lastAction(t, db)
	require.Equal(t, []string{"pause", "postgres", "dashboard:alice"}, []string{action, actor, who})

	resp = post("/queues/q1/resume")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.False(t, pgqtest.Scalar[bool](t, db, `SELECT paused FROM pgq.queues WHERE name = 'q1'`))
	action, _, who = lastAction(t, db)
	require.Equal(t, []string{"resume", "dashboard:alice"}, []string{action, who})

	resp = post("/queues/" + url.PathEscape("bad name!") + "/pause")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "pgq.pause_queue refuses the name (22023)")
}

var noRedirects = &http.Client{Timeout: 20 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(base+"/", h)
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// requireDone checks the redirect of an action: its flash code, and its count unless n is "".
func requireDone(t *testing.T, loc, code, n string) {
	t.Helper()
	u, err := url.Parse(loc)
	require.NoError(t, err)
	require.Equal(t, code, u.Query().Get("done"), loc)
	require.Equal(t, n, u.Query().Get("n"), loc)
}

// Refusals: a read-only dashboard shows no action and refuses every POST; a POST a
// browser sends from another origin is refused whatever the mode (CSRF); basic
// authentication refuses a missing or wrong password; actions are POST only.
func TestDashboardRefusals(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	failed := failJob(t, db, "default", "a", `{}`, "boom")
	later := dispatch(t, db, `pgq.dispatch('later', '{}', delay => '1 hour')`)

	t.Run("ReadOnly", func(t *testing.T) {
		b := setupOn(t, db, dashboard.Options{ReadOnly: true})
		for _, path := range []string{"/", "/jobs?state=failed", "/jobs?state=scheduled", "/jobs/" + failed, "/jobs/" + later} {
			body := b.page(t, path)
			require.NotContains(t, body, `method="post"`, "%s shows no action", path)
			require.Contains(t, body, ">read-only</span>")
		}
		for _, path := range []string{"/jobs/" + failed + "/retry", "/jobs/" + failed + "/forget", "/failed/retry",
			"/failed/flush", "/failed/retry-all", "/jobs/" + later + "/run-now", "/jobs/" + later + "/cancel", "/queues/default/pause"} {
			resp, body := b.post(t, path, url.Values{"confirm": {"yes"}, "uuid": {failed}})
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: %s", path, body)
			require.Contains(t, body, "read-only")
		}
		require.Equal(t, int64(1), failedCount(t, db), "nothing was done")
		require.Equal(t, int64(0), pgqtest.Scalar[int64](t, db, `SELECT count(*) FROM pgq.actions`))
	})
	t.Run("CrossOrigin", func(t *testing.T) {
		b := setupOn(t, db, dashboard.Options{})
		for _, header := range [][]string{
			{"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
			{"Sec-Fetch-Site", "same-site", "Origin", "https://other.example.com"},
			{"Sec-Fetch-Site", "", "Origin", "https://evil.example"}, // a browser without Sec-Fetch-Site
		} {
			resp, body := b.post(t, "/jobs/"+failed+"/retry", nil, header...)
			require.Equal(t, http.StatusForbidden, resp.StatusCode, "%v: %s", header, body)
		}
		require.Equal(t, int64(1), failedCount(t, db), "no cross-origin request retried the job")
		// A link from another site still opens pages.
		req, _ := http.NewRequest(http.MethodGet, b.srv.URL+base+"/jobs/"+failed, nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := b.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		// Actions are POST only.
		status, _ := b.get(t, "/jobs/"+failed+"/retry")
		require.Equal(t, http.StatusMethodNotAllowed, status)
	})
	t.Run("BasicAuth", func(t *testing.T) {
		h, err := dashboard.Handler(db.Pool, dashboard.Options{BasePath: base})
		require.NoError(t, err)
		_, err = dashboard.BasicAuth("alice", "", "pgq", h)
		require.Error(t, err, "an empty password is refused")
		h, err = dashboard.BasicAuth("alice", "s3cret", "pgq", h)
		require.NoError(t, err)
		srv := newServer(t, h)
		for _, creds := range [][]string{nil, {"alice", "wrong"}, {"bob", "s3cret"}, {"alice", "s3cret!"}} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+base+"/", nil)
			if creds != nil {
				req.SetBasicAuth(creds[0], creds[1])
			}
			resp, err := noRedirects.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%v", creds)
			require.Equal(t, `Basic realm="pgq", charset="UTF-8"`, resp.Header.Get("WWW-Authenticate"))
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+base+"/jobs/"+failed+"/retry", nil)
		resp, err := noRedirects.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		req, _ = http.NewRequest(http.MethodGet, srv.URL+base+"/", nil)
		req.SetBasicAuth("alice", "s3cret")
		resp, err = noRedirects.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, int64(1), failedCount(t, db))
	})
	t.Run("Options", func(t *testing.T) {
		for _, opts := range []dashboard.Options{{BasePath: "pgq"}, {PageSize: 5000}, {PageSize: -1}, {WorkerTries: -1}} {
			_, err := dashboard.Handler(db.Pool, opts)
			require.Error(t, err, "%+v", opts)
		}
		_, err := dashboard.Handler(nil, dashboard.Options{})
		require.Error(t, err)
	})
}

// What a job carries is printed as text: a payload, an exception or a key holding markup
// cannot run script in the page, and no page holds a connection string.
func TestDashboardEscapesEverything(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	db := b.db
	xss := `<script>alert(1)</script>`
	id := failJob(t, db, "default", "j", `{"note": "<script>alert(1)</script>", "img": "<img src=x onerror=alert(2)>"}`,
		`boom <img src=x onerror=alert(3)>`)
	db.Exec(t, `SELECT pgq.dispatch('u', '{}', unique_key => '<b>key</b>', unique_for => '1 hour')`)
	for _, path := range []string{"/", "/jobs?state=failed", "/jobs/" + id, "/locks", "/jobs?state=ready&queue=" + url.QueryEscape("q<i>"),
		"/jobs?state=ready&field=" + url.QueryEscape(xss) + "&value=" + url.QueryEscape(xss), "/history"} {
		body := b.page(t, path)
		for _, raw := range []string{xss, "<img src=x", "<b>key</b>", "q<i>"} {
			require.NotContains(t, body, raw, "%s prints %q as markup", path, raw)
		}
		require.NotContains(t, body, db.URL, "%s shows the connection string", path)
		require.NotContains(t, body, "postgres://", path)
	}
	body := b.page(t, "/jobs/"+id)
	require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;", "the payload's markup, as text")
	require.Contains(t, body, "boom &lt;img src=x onerror=alert(3)&gt;")
	require.Contains(t, b.page(t, "/locks"), "&lt;b&gt;key&lt;/b&gt;")

	resp, err := b.client.Get(b.srv.URL + base + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'", "no script may run even if one slipped in")
	require.Equal(t, "DENY", resp.Header.Get("X-Frame-Options"))

	// A flash message comes from a fixed set: a crafted link cannot write on the page.
	body = b.page(t, "/?done="+url.QueryEscape("Your session expired, log in at evil.example"))
	require.NotContains(t, body, "evil.example")
}

// S45, S46: a login that is only a pgq_reader serves every page of a read-only
// dashboard, with every payload hidden; one that is also a pgq_payload_reader sees
// them. Neither can read the tables themselves.
func TestS45S46DashboardReaderRoles(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	failed := failJob(t, db, "default", "a", `{"secret": "s"}`, "boom")
	later := dispatch(t, db, `pgq.dispatch('later', '{"secret": "t"}', delay => '1 hour')`)
	running := dispatch(t, db, `pgq.dispatch('sync', '{}', queue => 's', unique_key => 'k', unique_for => '1 hour')`)
	reserve(t, db, "w:1", "s")

	reader := poolAs(t, db, pgqtest.ReaderRole)
	b := setupOn(t, &pgqtest.DB{URL: db.URL, Pool: reader}, dashboard.Options{ReadOnly: true})
	for _, path := range []string{"/", "/jobs?state=ready", "/jobs?state=scheduled", "/jobs?state=retrying",
		"/jobs?state=running", "/jobs?state=failed", "/jobs?state=ready&field=secret&value=s", "/jobs/" + failed,
		"/jobs/" + later, "/jobs/" + running, "/locks", "/workers", "/check", "/history"} {
		b.page(t, path)
	}
	for _, id := range []string{later, failed} {
		body := b.page(t, "/jobs/"+id)
		require.Contains(t, body, `id="payload-hidden">hidden (needs pgq_payload_reader)`)
		require.NotContains(t, body, "secret")
	}
	_, err := reader.Exec(ctx, "SELECT 1 FROM pgq.jobs LIMIT 1")
	require.Error(t, err, "the role cannot read the tables themselves")

	payloads := setupOn(t, &pgqtest.DB{URL: db.URL, Pool: poolAs(t, db, pgqtest.PayloadReaderRole)}, dashboard.Options{ReadOnly: true})
	require.Contains(t, payloads.page(t, "/jobs/"+later), "&#34;secret&#34;")
	require.Contains(t, payloads.page(t, "/jobs/"+failed), "&#34;secret&#34;")
}

// The jobs of bulk dispatches still in chunks of pgq.loads (S85) list, page and show as
// any waiting job: the ready list visits each once in reserve order, also when a
// reserve takes jobs from the chunk of the last page's last row before the next page
// is read, and a chunk job has its page, to a reader without its payload too.
func TestS85DashboardListsAndShowsLoadJobs(t *testing.T) {
	t.Parallel()
	db := pgqtest.NewWithLoads(t, 100)
	b := setupOn(t, db, dashboard.Options{PageSize: 100})
	first := dispatch(t, db, `pgq.dispatch('j', '{"n": 0}')`)
	load := pgqtest.Scalar[[]string](t, db,
		`SELECT array_agg(u::text) FROM pgq.dispatch_many('j', ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 1500) i)) u`)
	last := dispatch(t, db, `pgq.dispatch('j', '{"n": 1501}')`)
	want := append(append([]string{first}, load...), last)
	require.Equal(t, 2, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.loads`))
	require.Equal(t, want, b.walk(t, "/jobs?state=ready", nil))

	taken := 0
	got := b.walk(t, "/jobs?state=ready", func(page int) {
		if page == 1 { // the front of the chunk, past the 100 jobs the first page showed
			taken = len(pgqtest.Scalar[[]string](t, db, `SELECT array_agg(uuid::text) FROM pgq.reserve('w', '{default}', 150)`))
		}
	})
	require.Equal(t, 150, taken)
	require.Equal(t, append(append([]string{}, want[:100]...), want[150:]...), got, "each job once, the taken ones after the first page gone")

	body := b.page(t, "/jobs/"+load[700])
	require.Contains(t, body, `id="state">ready</span>`)
	require.Contains(t, body, "&#34;n&#34;: 701")
	reader := setupOn(t, &pgqtest.DB{URL: db.URL, Pool: poolAs(t, db, pgqtest.ReaderRole)}, dashboard.Options{ReadOnly: true})
	body = reader.page(t, "/jobs/"+load[1400])
	require.Contains(t, body, `id="state">ready</span>`)
	require.Contains(t, body, `id="payload-hidden">hidden (needs pgq_payload_reader)`)
}

// The workers page: workers running jobs and those that finished one lately, and idle
// sessions napping on a queue. Its query spells out two of pgq's private values (a
// reader may not call the functions); they must stay equal.
func TestDashboardWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	db := b.db
	require.Equal(t, int64(776776852), pgqtest.Scalar[int64](t, db, `SELECT pgq._lock_space('nap')`))
	require.Equal(t, int64(90), pgqtest.Scalar[int64](t, db, `SELECT pgq._default_retry_after()`))

	db.Exec(t, `SELECT pgq.define_queue('idle')`)
	conn, err := db.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SELECT pgq.nap('{idle,default}')`)
	require.NoError(t, err)
	defer conn.Exec(ctx, `SELECT pgq.wake()`) //nolint:errcheck

	// A session napping in another database is not this one's.
	other := pgqtest.New(t)
	otherConn, err := other.Pool.Acquire(ctx)
	require.NoError(t, err)
	defer otherConn.Release()
	_, err = otherConn.Exec(ctx, `SELECT pgq.nap('{idle}')`)
	require.NoError(t, err)

	id := dispatch(t, db, `pgq.dispatch('long', '{}')`)
	reserve(t, db, "busy:1", "default")
	body := b.page(t, "/workers")
	require.Contains(t, body, "busy:1")
	require.Contains(t, body, "/pgq/jobs/"+id)
	require.Regexp(t, `<td>idle</td><td class="r">1</td>`, body, "one session naps on queue idle")
	require.Regexp(t, `last lease renewal`, body)
	require.Regexp(t, `<td title="[^"]+">(just now|\ds ago)</td>`, body, "the lease was renewed at reserve: just now")
}

// S60, S65: the schedules page lists each schedule with its state, next tick and last
// run; run now dispatches its job once, pause and resume switch it, each through pgq's
// function and recorded (S42); read-only shows no button and refuses the POSTs.
func TestS42S60S65DashboardSchedules(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	b := setupOn(t, &pgqtest.DB{URL: db.URL, Pool: poolAs(t, db, pgqtest.AdminRole)},
		dashboard.Options{Actor: func(*http.Request) string { return "alice" }})
	require.Contains(t, b.page(t, "/schedules"), "No schedules")
	db.Exec(t, `SELECT pgq.schedule('nightly/report', '30 2 * * *', 'report', timezone => 'Europe/Berlin', queue => 'reports')`)
	db.Exec(t, `SELECT pgq.schedule('sync', '@every 15m', 'sync_inventory', catch_up => 'none')`)

	body := b.page(t, "/schedules")
	for _, s := range []string{`id="schedule-nightly/report"`, "30 2 * * *", "Europe/Berlin", "report <span class=\"muted\">on reports</span>",
		`<span class="badge muted">pending</span>`, "@every 15m", "none", "never"} {
		require.Contains(t, body, s)
	}

	loc := b.act(t, "/schedules/sync/run-now", nil)
	require.Equal(t, "/pgq/schedules?done=schedule_run", loc)
	require.Contains(t, b.page(t, "/schedules?done=schedule_run"), "Dispatched: the schedule&#39;s job is on its queue")
	require.Equal(t, 1, pgqtest.Scalar[int](t, db, `SELECT count(*)::int FROM pgq.jobs WHERE job = 'sync_inventory'`))
	body = b.page(t, "/schedules")
	require.Regexp(t, `(?s)id="schedule-sync".*?just now</span> <a class="mono" href="/pgq/jobs/`, body, "the last run and its job")

	b.act(t, "/schedules/"+url.PathEscape("nightly/report")+"/pause", nil)
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT paused FROM pgq.schedules WHERE name = 'nightly/report'`))
	require.Contains(t, b.page(t, "/schedules"), `<span class="badge warn">paused</span>`)
	b.act(t, "/schedules/"+url.PathEscape("nightly/report")+"/resume", nil)
	require.False(t, pgqtest.Scalar[bool](t, db, `SELECT paused FROM pgq.schedules WHERE name = 'nightly/report'`))
	require.Equal(t, []string{"run_now sync", "pause nightly/report", "resume nightly/report"},
		pgqtest.Scalar[[]string](t, db, `SELECT array_agg(action || ' ' || schedule ORDER BY id) FROM pgq.actions WHERE on_behalf_of = 'dashboard:alice'`))

	resp, _ := b.post(t, "/schedules/nope/pause", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	ro := setupOn(t, &pgqtest.DB{URL: db.URL, Pool: poolAs(t, db, pgqtest.ReaderRole)}, dashboard.Options{ReadOnly: true})
	require.NotContains(t, ro.page(t, "/schedules"), "Run now")
	resp, _ = ro.post(t, "/schedules/sync/run-now", nil)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// S87, S88: what a new user needs to see: the workers running now with what they serve,
// a banner for the jobs nothing will run and the queue with no worker, an exception's
// DETAIL and HINT with the failure and the attempt; and no rule ids of SEMANTICS.md,
// which mean nothing to a user.
func TestS87S88DashboardShowsWorkersStuckJobsAndHints(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	db := b.db
	id := dispatch(t, db, `pgq.dispatch('charge', '{}', tries => 1)`)
	_, token := reserve(t, db, "test-worker:1", "default")
	db.Exec(t, `SELECT pgq.fail($1::uuid, $2::uuid, 'card declined', detail => 'issuer said 05', hint => 'ask for another card')`, id, token)
	dispatch(t, db, `pgq.dispatch('refresh_reprot', '{}', queue => 'reports')`)
	db.Exec(t, `SELECT pgq.define_job('sync', middleware => '[{"without_overlapping": {"key": "k"}}]', unique_for => '1 hour', unique_by => '{a}')`)

	body := b.page(t, "/jobs/"+id)
	require.Contains(t, body, `<p class="exc-detail" id="failure-detail"><strong>Detail:</strong> issuer said 05</p>`)
	require.Contains(t, body, `<p class="exc-hint" id="failure-hint"><strong>Hint:</strong> ask for another card</p>`)
	require.Equal(t, 2, strings.Count(body, "ask for another card"), "the failure's and the attempt's")

	body = b.page(t, "/")
	require.Contains(t, body, `id="stuck"`)
	require.Contains(t, body, "1 job named refresh_reprot waits in queue reports, but no job class defines refresh_reprot")
	require.Contains(t, body, `title="no live worker serves this queue">no worker</span>`)

	db.Exec(t, `SELECT pgq.worker_seen('host:7', '{reports}', '{refresh_reprot}', 'v9')`)
	body = b.page(t, "/")
	require.NotContains(t, body, `id="stuck"`, "a worker serves the queue and handles the name")
	body = b.page(t, "/workers")
	require.Contains(t, body, `<td class="mono">host:7</td><td>reports</td><td class="mono">refresh_reprot</td>`)

	for _, path := range []string{"/", "/locks", "/workers", "/check", "/jobs?state=failed", "/jobs/" + id, "/schedules", "/history"} {
		require.NotRegexp(t, `\bS\d{1,2}\b`, b.page(t, path), path)
	}
}
