package dashboard_test

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

// seedFair makes 'exports' fair by tenant, with keys: acme (weight 3, 5 ready, the
// oldest waiting 20 minutes), globex (2 ready, waiting 12 minutes, and one running),
// initech (one job due in an hour) and a job without the field (the key ”, waiting
// 15 minutes). 'mail'
// stays a plain queue.
func seedFair(t *testing.T, db *pgqtest.DB) {
	t.Helper()
	db.Exec(t, `SELECT pgq.define_queue('exports', fair_by => 'tenant')`)
	db.Exec(t, `SELECT pgq.set_fair_weight('exports', 'acme', 3)`)
	db.Exec(t, `SELECT pgq.dispatch('export', '{"tenant": "globex"}', queue => 'exports')`)
	reserve(t, db, "w-1:1", "exports")
	db.Exec(t, `SELECT pgq.dispatch_many('export', ARRAY(SELECT jsonb_build_object('tenant', 'acme', 'n', i) FROM generate_series(1, 5) i),
		queue => 'exports')`)
	db.Exec(t, `SELECT pgq.dispatch_many('export', ARRAY(SELECT jsonb_build_object('tenant', 'globex', 'n', i) FROM generate_series(1, 2) i),
		queue => 'exports')`)
	db.Exec(t, `SELECT pgq.dispatch('export', '{"tenant": "initech"}', queue => 'exports', delay => '1 hour')`)
	db.Exec(t, `SELECT pgq.dispatch('export', '{"n": 0}', queue => 'exports')`)
	db.Exec(t, `UPDATE pgq.jobs SET available_at = now() - interval '20 minutes' WHERE fair_key = 'acme'`)
	db.Exec(t, `UPDATE pgq.jobs SET available_at = now() - interval '12 minutes' WHERE fair_key = 'globex' AND reserved_at IS NULL`)
	db.Exec(t, `UPDATE pgq.jobs SET available_at = now() - interval '15 minutes' WHERE fair_key = ''`)
	db.Exec(t, `SELECT pgq.dispatch('send_digest', '{}', queue => 'mail')`)
}

// fairRow matches one key's row of the fair queues page: key, weight, ready, oldest
// wait, later, running.
var fairRow = regexp.MustCompile(`<tr><td class="mono key">(.*?)</td>\s*<td class="r weight">(\d+)</td>\s*<td class="r ready">([\d,]+)</td>\s*` +
	`<td class="r wait">(.*?)</td>\s*<td class="r later">([\d,]+)</td>\s*<td class="r running">([\d,]+)</td>`)

func fairRows(body string) [][]string {
	var rows [][]string
	for _, m := range fairRow.FindAllStringSubmatch(body, -1) {
		rows = append(rows, m[1:])
	}
	return rows
}

// S119 on the dashboard: the fair queues page lists each fair queue's keys with live
// jobs (weight, ready, the oldest wait, later, running), the most ready first or the
// longest waiting first, at most a page of them with how many there are, finds one key,
// and the overview marks the fair queues with a link to it.
func TestS119DashboardFairQueues(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{PageSize: 3})
	seedFair(t, b.db)

	body := b.page(t, "/")
	require.Contains(t, body, `href="/pgq/fair?queue=exports"`, "the overview links a fair queue to its keys")
	require.Contains(t, body, "fair by tenant")
	require.Equal(t, 1, strings.Count(body, "fair by "), "only the fair queue is marked")

	body = b.page(t, "/fair")
	require.Contains(t, body, `<a href="/pgq/fair" class="on">Fair queues</a>`)
	require.Contains(t, body, `id="fair-exports"`)
	require.NotContains(t, body, `id="fair-mail"`)
	require.Contains(t, body, `<span class="keys">4 keys</span> with live jobs · 8 ready · 1 running`)
	require.Equal(t, [][]string{
		{"acme", "3", "5", "20m", "0", "0"},
		{"globex", "1", "2", "12m", "0", "1"},
		{`<span class="muted">(none: no tenant field)</span>`, "1", "1", "15m", "0", "0"},
	}, fairRows(body), "the most ready first, a page of 3")
	require.Contains(t, body, "The 3 keys with the most ready jobs of 4")
	require.Contains(t, body, `href="/pgq/jobs?field=tenant&amp;queue=exports&amp;state=ready&amp;value=acme"`, "acme's ready jobs")

	body = b.page(t, "/fair?by=wait")
	rows := fairRows(body)
	require.Len(t, rows, 3)
	require.Equal(t, []string{"acme", `<span class="muted">(none: no tenant field)</span>`, "globex"},
		[]string{rows[0][0], rows[1][0], rows[2][0]}, "the longest waiting first")
	require.Contains(t, body, "The 3 keys with the longest oldest wait of 4")

	body = b.page(t, "/fair?queue=exports&key=initech")
	require.Equal(t, [][]string{{"initech", "1", "0", `<span class="muted">–</span>`, "1", "0"}}, fairRows(body), "one key, found")
	require.Contains(t, body, `<span class="keys">1 matching key</span>`)
	require.Contains(t, b.page(t, "/fair?queue=exports&key=nobody"), "Key nobody has no live job.")

	status, body := b.get(t, "/fair?by=size")
	require.Equal(t, http.StatusBadRequest, status, body)
	status, body = b.get(t, "/fair?key=acme")
	require.Equal(t, http.StatusBadRequest, status, body)
	status, body = b.get(t, "/fair?queue=mail")
	require.Equal(t, http.StatusNotFound, status, body)
	require.Contains(t, body, "not a fair queue")

	// A login that is only a pgq_reader sees the same (pgq.fair_keys, pgq.queues).
	reader := setupOn(t, &pgqtest.DB{URL: b.db.URL, Pool: poolAs(t, b.db, pgqtest.ReaderRole)}, dashboard.Options{ReadOnly: true})
	require.Len(t, fairRows(reader.page(t, "/fair")), 4)
}

// The fair queues page with no fair queue says how to make one; a key holding markup
// prints as text.
func TestDashboardFairQueuesEmptyAndEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	require.Contains(t, b.page(t, "/fair"), `id="no-fair"`)
	b.db.Exec(t, `SELECT pgq.define_queue('exports', fair_by => 'tenant')`)
	b.db.Exec(t, `SELECT pgq.dispatch('export', '{"tenant": "<script>alert(1)</script>"}', queue => 'exports')`)
	for _, path := range []string{"/fair", "/fair?queue=exports&key=" + url.QueryEscape("<script>alert(1)</script>")} {
		body := b.page(t, path)
		require.NotContains(t, body, "<script>alert(1)</script>", path)
		require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;", path)
	}
}
