package dashboard_test

// Batches and chains in the dashboard (S95-S97) through HTTP: their lists and pages, the
// job page's link to its batch or chain, the overview's running and stalled ones, the
// actions on a batch, and the refusals.

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/dashboard"
	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// reserveNamed reserves the oldest ready job named job of queue and returns its uuid
// and lease token: a priority above any other (set on the table, as failJob does) puts
// it first in the queue.
func reserveNamed(t *testing.T, db *pgqtest.DB, queue, job string) (id, token string) {
	t.Helper()
	db.Exec(t, `UPDATE pgq.jobs SET priority = $3 WHERE uuid = (SELECT uuid FROM pgq.jobs
		WHERE queue = $1 AND job = $2 AND reserved_at IS NULL AND available_at <= now() ORDER BY id LIMIT 1)`,
		queue, job, 1000+failJobs.Add(1))
	id, token = reserve(t, db, "test-worker:1", queue)
	require.Equal(t, job, pgqtest.Scalar[string](t, db, `SELECT job FROM pgq.jobs WHERE uuid = $1::uuid`, id))
	return id, token
}

// runJob reserves the job named job on queue and completes it, or fails it for good
// with exception when one is given. Returns its uuid.
func runJob(t *testing.T, db *pgqtest.DB, queue, job, exception string) string {
	t.Helper()
	id, token := reserveNamed(t, db, queue, job)
	if exception == "" {
		require.True(t, pgqtest.Scalar[bool](t, db, `SELECT count(*) = 1 FROM pgq.complete(ARRAY[$1::uuid], ARRAY[$2::uuid])`, id, token))
	} else {
		db.Exec(t, `SELECT pgq.fail($1::uuid, $2::uuid, $3)`, id, token, exception)
	}
	return id
}

// workflows seeds a batch with a failed member and a chain whose second step failed,
// as the browser test and the screens test use them: it returns the batch's id, the
// failed member's uuid, the chain's id and its on_failure job's uuid.
type workflows struct {
	batch, failedMember, chain, onFailure, chainStep2 string
}

func seedWorkflows(t *testing.T, db *pgqtest.DB) workflows {
	t.Helper()
	var w workflows
	w.batch = pgqtest.Scalar[string](t, db, `SELECT pgq.dispatch_batch(
		'[{"job": "import_row", "payload": {"row": 1}}, {"job": "import_row", "payload": {"row": 2}},
		  {"job": "import_bad_row", "payload": {"row": 3}}, {"job": "import_row", "payload": {"row": 4}, "delay": 3600}]',
		name => 'catalog import', then_job => 'import_done', catch_job => 'import_alert', finally_job => 'import_cleanup',
		allow_failures => true, queue => 'imports')::text`)
	runJob(t, db, "imports", "import_row", "")
	w.failedMember = runJob(t, db, "imports", "import_bad_row", "RowInvalid: row 3 has no SKU")
	runJob(t, db, "imports", "import_alert", "")

	w.chain = pgqtest.Scalar[string](t, db, `SELECT pgq.dispatch_chain(
		'[{"job": "fetch_order"}, {"job": "charge_order"}, {"job": "ship_order"}]', on_failure => 'refund_order', queue => 'orders')::text`)
	runJob(t, db, "orders", "fetch_order", "")
	w.chainStep2 = runJob(t, db, "orders", "charge_order", "CardDeclined: do_not_honor")
	w.onFailure = runJob(t, db, "orders", "refund_order", "")
	return w
}

// Every page of batches and chains renders what pgq recorded: the batch list with its
// progress and callbacks, a batch's figures, callbacks, chains and jobs by state with
// the failed one's exception, the chain list, a chain's steps (step 3 never ran, step 2
// failed) and its on_failure job, and each job's page says what it belongs to.
func TestS97DashboardBatchAndChainPages(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	db := b.db
	w := seedWorkflows(t, db)

	t.Run("Batches", func(t *testing.T) {
		body := b.page(t, "/batches")
		require.Contains(t, body, `<a href="/pgq/batches/`+w.batch+`">catalog import</a>`)
		require.Contains(t, body, `<span class="badge run">running</span>`)
		require.Regexp(t, `<title>2 of 4 members finished: 1 succeeded, 1 failed, 0 cancelled, 2 unfinished</title>`, body)
		require.Contains(t, body, `<a class="bad" href="/pgq/batches/`+w.batch+`?state=failed">1</a>`)
		require.Regexp(t, `(?s)id="cb-catch"><span class="muted">catch</span> <a href="/pgq/jobs/[0-9a-f-]{36}">import_alert</a> <span class="badge ok">succeeded</span>`, body)
		require.Regexp(t, `(?s)id="cb-then"><span class="muted">then</span> import_done <span class="badge muted">not run</span>`, body)
		require.Contains(t, b.page(t, "/batches?state=running"), w.batch)
		require.NotContains(t, b.page(t, "/batches?state=succeeded"), w.batch)
		status, _ := b.get(t, "/batches?state=bogus")
		require.Equal(t, http.StatusBadRequest, status)
	})
	t.Run("Batch", func(t *testing.T) {
		body := b.page(t, "/batches/"+w.batch)
		require.Contains(t, body, "<h1>catalog import")
		require.Contains(t, body, `id="retry-batch">Retry 1 failed…</button>`)
		require.Contains(t, body, `id="cancel-batch"`)
		require.Contains(t, body, `class="on" id="tab-failed">failed <span class="muted">1</span>`, "the failed jobs first")
		require.Contains(t, body, "RowInvalid: row 3 has no SKU")
		require.Contains(t, body, "/pgq/jobs/"+w.failedMember)
		require.Regexp(t, `(?s)id="callback-catch"><td>catch</td>\s*<td><a href="/pgq/jobs/[0-9a-f-]{36}">import_alert</a></td>\s*<td><span class="badge ok">succeeded</span>`, body)
		require.Regexp(t, `(?s)id="callback-finally"><td>finally</td>\s*<td>import_cleanup</td>\s*<td><span class="badge muted">not run</span>`, body)
		for state, n := range map[string]string{"succeeded": "1", "ready": "1", "scheduled": "1", "running": "0", "cancelled": "0"} {
			require.Contains(t, body, `id="tab-`+state+`">`+state+` <span class="muted">`+n+`</span>`, state)
		}
		body = b.page(t, "/batches/"+w.batch+"?state=scheduled")
		require.Regexp(t, `(?s)<td><a href="/pgq/jobs/[0-9a-f-]{36}">import_row</a></td>`, body)
		body = b.page(t, "/batches/"+w.batch+"?state=succeeded")
		require.Contains(t, body, ">import_row</a>", "an ended job's name, from its history")

		status, _ := b.get(t, "/batches/01a2f0c6-0000-7000-8000-000000000000")
		require.Equal(t, http.StatusNotFound, status)
		status, _ = b.get(t, "/batches/nope")
		require.Equal(t, http.StatusBadRequest, status)
		status, _ = b.get(t, "/batches/"+w.batch+"?state=nope")
		require.Equal(t, http.StatusBadRequest, status)
	})
	t.Run("Chains", func(t *testing.T) {
		body := b.page(t, "/chains")
		require.Contains(t, body, `href="/pgq/chains/`+w.chain+`"`)
		require.Contains(t, body, "fetch_order → charge_order → ship_order")
		require.Contains(t, body, "CardDeclined: do_not_honor")
		require.Contains(t, b.page(t, "/chains?state=failed"), w.chain)
		require.NotContains(t, b.page(t, "/chains?state=running"), w.chain)
		status, _ := b.get(t, "/chains?state=bogus")
		require.Equal(t, http.StatusBadRequest, status)
	})
	t.Run("Chain", func(t *testing.T) {
		body := b.page(t, "/chains/"+w.chain)
		require.Contains(t, body, `id="chain-state">failed</span>`)
		require.Regexp(t, `(?s)id="step-1">.*?<strong>fetch_order</strong> <span class="badge ok">succeeded</span>`, body)
		require.Regexp(t, `(?s)id="step-2">.*?<strong>charge_order</strong> <span class="badge bad">failed</span>\s*<a class="mono" href="/pgq/jobs/`+w.chainStep2+`">`, body)
		require.Regexp(t, `(?s)id="step-3">.*?<strong>ship_order</strong> <span class="badge muted">never ran</span>.*?step 2 failed`, body)
		require.Regexp(t, `(?s)id="on-failure">.*?<a href="/pgq/jobs/`+w.onFailure+`">refund_order</a></td>\s*<td><span class="badge ok">succeeded</span>`, body)
		status, _ := b.get(t, "/chains/01a2f0c6-0000-7000-8000-000000000000")
		require.Equal(t, http.StatusNotFound, status)
	})
	t.Run("JobLinks", func(t *testing.T) {
		require.Regexp(t, `id="workflow">Member of batch <a href="/pgq/batches/`+w.batch+`">catalog import</a>.`, b.page(t, "/jobs/"+w.failedMember))
		require.Regexp(t, `id="workflow">Step 2 of 3 of chain <a class="mono" href="/pgq/chains/`+w.chain+`">`, b.page(t, "/jobs/"+w.chainStep2))
		require.Regexp(t, `id="workflow">The <strong>on_failure</strong> job of chain <a class="mono" href="/pgq/chains/`+w.chain+`">`, b.page(t, "/jobs/"+w.onFailure))
		alert := pgqtest.Scalar[string](t, db, `SELECT job_uuid::text FROM pgq.callbacks WHERE kind = 'catch'`)
		require.Regexp(t, `id="workflow">The <strong>catch</strong> job of batch <a href="/pgq/batches/`+w.batch+`">catalog import</a>.`, b.page(t, "/jobs/"+alert))
		succeeded := pgqtest.Scalar[string](t, db, `SELECT job_uuid::text FROM pgq.job_ends WHERE chain_id = $1::uuid AND chain_step = 1`, w.chain)
		require.Regexp(t, `id="workflow">Step 1 of 3 of chain`, b.page(t, "/jobs/"+succeeded), "a finished step, from pgq.job_ends")
		plain := dispatch(t, db, `pgq.dispatch('plain', '{}')`)
		require.NotContains(t, b.page(t, "/jobs/"+plain), `id="workflow"`)
	})
	t.Run("Overview", func(t *testing.T) {
		body := b.page(t, "/")
		require.Regexp(t, `(?s)id="running-batches">.*?catalog import`, body)
		require.NotContains(t, body, `id="stalled"`)
		db.Exec(t, `UPDATE pgq.jobs SET available_at = now() - interval '1 hour' WHERE job = 'import_row' AND reserved_at IS NULL`)
		db.Exec(t, `UPDATE pgq.job_ends SET ended_at = now() - interval '1 hour'`)
		db.Exec(t, `UPDATE pgq.jobs SET reserved_at = NULL, reserved_until = NULL, reserved_by = NULL WHERE reserved_at IS NOT NULL`)
		body = b.page(t, "/")
		require.Regexp(t, `(?s)id="stalled">.*?id="stalled-`+w.batch+`">\s*<td>batch <a href="/pgq/batches/`+w.batch+`">catalog import</a>.*?imports.*?90 s`, body)
		require.Contains(t, b.page(t, "/check"), "batch_stalled")
		require.Regexp(t, `(?s)id="stalled"><h2>Stalled</h2>\s*<p>Job <a href="/pgq/jobs/[0-9a-f-]{36}">import_row</a> has been ready in queue <strong>imports</strong>`,
			b.page(t, "/batches/"+w.batch))
		require.NotContains(t, b.page(t, "/chains/"+w.chain), `id="stalled"`)
		waiting := pgqtest.Scalar[string](t, db, `SELECT pgq.dispatch_chain('[{"job": "slow_step"}, {"job": "next"}]')::text`)
		db.Exec(t, `UPDATE pgq.jobs SET available_at = now() - interval '1 hour' WHERE chain_id = $1::uuid`, waiting)
		require.Regexp(t, `(?s)id="stalled">.*?slow_step</a> has been ready in queue <strong>default</strong>.*?no job of the chain ran since`,
			b.page(t, "/chains/"+waiting))
		require.Contains(t, b.page(t, "/"), `id="stalled-`+waiting+`"`)
	})
}

// A batch's jobs page by keyset in each state, and the batch list pages newest first:
// following "next page" visits each once.
func TestDashboardBatchPaging(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{PageSize: 3})
	db := b.db
	batch := pgqtest.Scalar[string](t, db, `SELECT pgq.dispatch_batch(
		(SELECT jsonb_agg(jsonb_build_object('job', 'j', 'payload', jsonb_build_object('n', g))) FROM generate_series(1, 8) g),
		queue => 'p', allow_failures => true)::text`)
	want := pgqtest.Scalar[[]string](t, db, `SELECT array_agg(uuid::text ORDER BY available_at, id) FROM pgq.jobs WHERE batch_id = $1::uuid`, batch)
	link := regexp.MustCompile(`<td class="mono id"><a href="/pgq/jobs/([0-9a-f-]{36})">`)
	next := regexp.MustCompile(`<a href="/pgq(/batches/[^"]*)" id="next">`)
	walk := func(path string) []string {
		var got []string
		for pages := 0; path != ""; pages++ {
			require.Less(t, pages, 10)
			body := b.page(t, path)
			for _, m := range link.FindAllStringSubmatch(body, -1) {
				got = append(got, m[1])
			}
			path = ""
			if m := next.FindStringSubmatch(body); m != nil {
				path = strings.ReplaceAll(m[1], "&amp;", "&")
			}
		}
		return got
	}
	require.Equal(t, want, walk("/batches/"+batch+"?state=ready"))
	var ended []string
	for range 5 {
		ended = append(ended, runJob(t, db, "p", "j", ""))
	}
	require.ElementsMatch(t, ended, walk("/batches/"+batch+"?state=succeeded"))
	require.Len(t, walk("/batches/"+batch+"?state=ready"), 3)

	var batches []string
	for range 4 {
		batches = append([]string{pgqtest.Scalar[string](t, db, `SELECT pgq.dispatch_batch('[{"job": "x"}]', queue => 'q')::text`)}, batches...)
	}
	batches = append(batches, batch)
	rowLink := regexp.MustCompile(`<tr id="batch-([0-9a-f-]{36})">`)
	listNext := regexp.MustCompile(`<a href="/pgq(/batches\?[^"]*)" id="next">`)
	var got []string
	for path, pages := "/batches", 0; path != ""; pages++ {
		require.Less(t, pages, 10)
		body := b.page(t, path)
		for _, m := range rowLink.FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		path = ""
		if m := listNext.FindStringSubmatch(body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	require.Equal(t, batches, got, "newest first, each once")
	status, _ := b.get(t, "/batches?after_at=yesterday&after_id=x")
	require.Equal(t, http.StatusBadRequest, status)
}

// S96, S74: retry a batch's failed jobs and cancel a batch from its page: each asks
// first, goes through pgq's function and is recorded with the person the dashboard
// acted for (S42). A cancelled batch refuses a retry (409); an unknown one is 404.
func TestS42S74S96DashboardBatchActions(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	b := setupOn(t, &pgqtest.DB{URL: db.URL, Pool: poolAs(t, db, pgqtest.AdminRole)},
		dashboard.Options{Actor: func(*http.Request) string { return "alice" }})
	w := seedWorkflows(t, db)

	resp, body := b.post(t, "/batches/"+w.batch+"/retry", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "Retry the 1 failed jobs of batch &#34;catalog import&#34;")
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pgq.failed_jobs WHERE uuid = $1::uuid)`, w.failedMember),
		"nothing done before the confirmation")
	loc := b.act(t, "/batches/"+w.batch+"/retry", url.Values{"confirm": {"yes"}})
	requireDone(t, loc, "batch_retried_n", "1")
	require.Contains(t, b.page(t, strings.TrimPrefix(loc, base)), "Retried 1 failed jobs of the batch")
	require.Equal(t, "ready", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.job_settings WHERE uuid = $1::uuid`, w.failedMember))
	action, actor, who := lastAction(t, db)
	require.Equal(t, []string{"retry", pgqtest.AdminRole, "dashboard:alice"}, []string{action, actor, who})

	reserveNamed(t, db, "imports", "import_row") // runs through the cancel
	resp, body = b.post(t, "/batches/"+w.batch+"/cancel", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, "Cancel batch &#34;catalog import&#34;")
	loc = b.act(t, "/batches/"+w.batch+"/cancel", url.Values{"confirm": {"yes"}})
	requireDone(t, loc, "batch_cancelled_n", "2")
	require.Equal(t, "cancelling", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.batches WHERE id = $1::uuid`, w.batch),
		"its running job finishes")
	action, _, who = lastAction(t, db)
	require.Equal(t, []string{"cancel", "dashboard:alice"}, []string{action, who})
	body = b.page(t, "/batches/"+w.batch)
	require.NotContains(t, body, `id="cancel-batch"`)
	require.Contains(t, body, `class="on" id="tab-running"`, "nothing failed now: the running job first")

	cancelled := pgqtest.Scalar[string](t, db, `SELECT pgq.dispatch_batch('[{"job": "f"}, {"job": "g"}]', queue => 'c')::text`)
	runJob(t, db, "c", "f", "boom")
	body = b.page(t, "/batches/"+cancelled)
	require.NotContains(t, body, `id="retry-batch"`)
	require.Contains(t, body, "cannot be retried in it")
	resp, body = b.post(t, "/batches/"+cancelled+"/retry", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusConflict, resp.StatusCode, body)
	require.Contains(t, body, "was cancelled")
	for _, path := range []string{"/batches/01a2f0c6-0000-7000-8000-000000000000/retry", "/batches/01a2f0c6-0000-7000-8000-000000000000/cancel"} {
		resp, _ = b.post(t, path, url.Values{"confirm": {"yes"}})
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		resp, _ = b.post(t, path, nil)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
	resp, _ = b.post(t, "/batches/x/cancel", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// Read-only: the batch and chain pages show no action, and their POSTs are refused; a
// pgq_reader login serves every page. A batch's name with markup is printed as text.
func TestS45DashboardBatchesReadOnlyAndEscaped(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	w := seedWorkflows(t, db)
	xss := `<script>alert(1)</script>`
	evil := pgqtest.Scalar[string](t, db, `SELECT pgq.dispatch_batch('[{"job": "e"}]', name => $1)::text`, xss)
	db.Exec(t, `UPDATE pgq.jobs SET available_at = now() - interval '1 hour' WHERE batch_id = $1::uuid`, evil)

	ro := setupOn(t, &pgqtest.DB{URL: db.URL, Pool: poolAs(t, db, pgqtest.ReaderRole)}, dashboard.Options{ReadOnly: true})
	for _, path := range []string{"/", "/batches", "/batches?state=running", "/batches/" + w.batch, "/batches/" + w.batch + "?state=succeeded",
		"/batches/" + evil, "/chains", "/chains/" + w.chain, "/jobs/" + w.failedMember, "/jobs/" + w.onFailure, "/check"} {
		body := ro.page(t, path)
		require.NotContains(t, body, `method="post"`, "%s shows no action", path)
		require.NotContains(t, body, xss, "%s prints the name as markup", path)
	}
	require.Contains(t, ro.page(t, "/batches"), "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.Contains(t, ro.page(t, "/"), "&lt;script&gt;alert(1)&lt;/script&gt;", "the stalled batch, by name")
	for _, path := range []string{"/batches/" + w.batch + "/retry", "/batches/" + w.batch + "/cancel"} {
		resp, body := ro.post(t, path, url.Values{"confirm": {"yes"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s: %s", path, body)
	}
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pgq.failed_jobs WHERE uuid = $1::uuid)`, w.failedMember))
	require.Nil(t, pgqtest.Scalar[*string](t, db, `SELECT cancelled_at::text FROM pgq.job_batches WHERE id = $1::uuid`, w.batch))

	rw := setupOn(t, db, dashboard.Options{})
	resp, body := rw.post(t, "/batches/"+evil+"/cancel", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NotContains(t, body, xss, "the confirmation prints the name as text")
	require.Contains(t, body, "&lt;script&gt;")
}

// A callback queued before pgq recorded callbacks (an upgraded installation) has no
// row in pgq.callbacks: the batch says it was queued, from then_at, catch_at and
// finally_at, and not that it never ran.
func TestDashboardBatchCallbackQueuedBeforeRecords(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	w := seedWorkflows(t, b.db)
	b.db.Exec(t, `DELETE FROM pgq.callbacks WHERE batch_id = $1::uuid`, w.batch)
	body := b.page(t, "/batches/"+w.batch)
	require.Regexp(t, `(?s)id="callback-catch"><td>catch</td>\s*<td>import_alert</td>\s*<td><span class="badge run">queued</span>`, body)
	require.Regexp(t, `(?s)id="callback-then"><td>then</td>\s*<td>import_done</td>\s*<td><span class="badge muted">not run</span>`, body)
}
