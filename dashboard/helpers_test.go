package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/dashboard"
	"github.com/pgq-dev/pgq/internal/pgqtest"
)

var ctx = context.Background()

// failJobs counts the jobs failJob made.
var failJobs atomic.Int32

// bundle is one test's database and a dashboard on it, mounted at /pgq as an
// application would mount it.
type bundle struct {
	db     *pgqtest.DB
	srv    *httptest.Server
	client *http.Client // follows no redirect: tests look at them
}

const base = "/pgq"

func setup(t *testing.T, opts dashboard.Options) *bundle {
	t.Helper()
	return setupOn(t, pgqtest.New(t), opts)
}

func setupOn(t *testing.T, db *pgqtest.DB, opts dashboard.Options) *bundle {
	t.Helper()
	if opts.BasePath == "" {
		opts.BasePath = base
	}
	h, err := dashboard.Handler(db.Pool, opts)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(base+"/", h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "the application's own page", http.StatusTeapot)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := &http.Client{
		Timeout:       20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &bundle{db: db, srv: srv, client: client}
}

// poolAs is a pool on db as login, one of pgqtest's test logins.
func poolAs(t *testing.T, db *pgqtest.DB, login string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.ConnConfig.User = login
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// get fetches base+path and returns the status and body.
func (b *bundle) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := b.client.Get(b.srv.URL + base + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// page fetches base+path, requires 200, and returns the body.
func (b *bundle) page(t *testing.T, path string) string {
	t.Helper()
	status, body := b.get(t, path)
	require.Equal(t, http.StatusOK, status, "GET %s: %s", path, body)
	return body
}

// post submits form to base+path as the dashboard's own page would (same origin) and
// returns the response, its body read.
func (b *bundle) post(t *testing.T, path string, form url.Values, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.srv.URL+base+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// act posts an action and requires it to be done: a 303 to the page that says so.
func (b *bundle) act(t *testing.T, path string, form url.Values) string {
	t.Helper()
	resp, body := b.post(t, path, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "POST %s: %s", path, body)
	loc := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(loc, base+"/"), "redirects inside the dashboard: %s", loc)
	return loc
}

var (
	jobLink  = regexp.MustCompile(`<td class="mono id"><a href="/pgq/jobs/([0-9a-f-]{36})">`)
	nextLink = regexp.MustCompile(`<a href="/pgq(/jobs\?[^"]*)" id="next">`)
)

// walk follows a list's "next page" links from path and returns the uuids of the jobs
// listed, in order; between, if given, runs after each page with its number (from 1).
func (b *bundle) walk(t *testing.T, path string, between func(page int)) []string {
	t.Helper()
	var got []string
	for pages := 0; path != ""; pages++ {
		require.Less(t, pages, 30)
		body := b.page(t, strings.TrimPrefix(path, base))
		for _, m := range jobLink.FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		path = ""
		if m := nextLink.FindStringSubmatch(body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
		if between != nil {
			between(pages + 1)
		}
	}
	return got
}

// dispatch runs a pgq.dispatch call (SQL, e.g. `pgq.dispatch('j', '{}')`) and returns the uuid.
func dispatch(t *testing.T, db *pgqtest.DB, call string, args ...any) string {
	t.Helper()
	return pgqtest.Scalar[string](t, db, "SELECT ("+call+")::text", args...)
}

// reserve reserves the next job of queue for worker and returns its uuid and lease token.
func reserve(t *testing.T, db *pgqtest.DB, worker, queue string) (id, token string) {
	t.Helper()
	err := db.Pool.QueryRow(ctx, `SELECT uuid::text, lease_token::text FROM pgq.reserve($1, ARRAY[$2], 1) WHERE pickup IS NULL`,
		worker, queue).Scan(&id, &token)
	require.NoError(t, err, "reserve %s", queue)
	return id, token
}

// failJob dispatches job on queue with one try per exception, and fails each attempt
// with the next exception, as a worker would: the job ends failed. Returns its uuid.
// Each has a higher priority than the last, so that the reserves take it before any
// other job waiting on the queue (a job failed before and retried, say): set on the
// table, beyond the -100..100 a dispatch may give (S43), so no other job has it.
func failJob(t *testing.T, db *pgqtest.DB, queue, job, payload string, exceptions ...string) string {
	t.Helper()
	id := dispatch(t, db, `pgq.dispatch($1, $2::jsonb, queue => $3, tries => $4, backoff => '{0}')`,
		job, payload, queue, len(exceptions))
	db.Exec(t, `UPDATE pgq.jobs SET priority = $2 WHERE uuid = $1::uuid`, id, 1000+failJobs.Add(1))
	for _, exc := range exceptions {
		got, token := reserve(t, db, "test-worker:1", queue)
		require.Equal(t, id, got)
		db.Exec(t, `SELECT pgq.fail($1::uuid, $2::uuid, $3)`, id, token, exc)
	}
	require.True(t, pgqtest.Scalar[bool](t, db, `SELECT EXISTS (SELECT FROM pgq.failed_jobs WHERE uuid = $1::uuid)`, id))
	return id
}

func failedCount(t *testing.T, db *pgqtest.DB) int64 {
	t.Helper()
	return pgqtest.Scalar[int64](t, db, `SELECT count(*) FROM pgq.failed_jobs`)
}

// lastAction is the newest row of pgq.actions: action, actor, on_behalf_of.
func lastAction(t *testing.T, db *pgqtest.DB) (action, actor, onBehalfOf string) {
	t.Helper()
	err := db.Pool.QueryRow(ctx, `SELECT action, actor, coalesce(on_behalf_of, '') FROM pgq.actions ORDER BY id DESC LIMIT 1`).
		Scan(&action, &actor, &onBehalfOf)
	require.NoError(t, err)
	return action, actor, onBehalfOf
}
