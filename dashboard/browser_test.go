package dashboard_test

// The dashboard in headless Chromium (chromedp): what an operator does with a mouse.
// The tests skip, saying why, only when no Chromium is installed; .ci/run installs
// Debian's chromium package.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/pgq-dev/pgq/dashboard"
	"github.com/pgq-dev/pgq/internal/browser"
	"github.com/pgq-dev/pgq/internal/pgqtest"
	"github.com/pgq-dev/pgq/worker"
)

// One Chromium for the package's tests, started by the first that needs it; each test
// gets a tab of its own.
var (
	chromium struct {
		once    sync.Once
		ctx     context.Context
		stop    context.CancelFunc
		profile string
		err     error
	}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if chromium.stop != nil {
		chromium.stop()
	}
	if chromium.profile != "" {
		os.RemoveAll(chromium.profile)
	}
	os.Exit(code)
}

// tab opens a new tab of the shared headless Chromium, closed at the end of t, and
// returns its context, which ends after 60 s. It skips t when no Chromium is installed.
func tab(t *testing.T) context.Context {
	t.Helper()
	chromium.once.Do(func() {
		chromium.profile, chromium.err = os.MkdirTemp("", "pgq-chromium-")
		if chromium.err == nil {
			chromium.ctx, chromium.stop, chromium.err = browser.New(context.Background(), chromium.profile)
		}
	})
	if errors.Is(chromium.err, browser.ErrNoChromium) {
		t.Skip("browser tests skipped: no Chromium found (Debian: apt-get install -y chromium; .ci/run installs it)")
	}
	require.NoError(t, chromium.err, "start Chromium")
	ctx, closeTab := chromedp.NewContext(chromium.ctx)
	t.Cleanup(closeTab)
	require.NoError(t, chromedp.Do(ctx), "open a tab") // no timeout on a tab's first run
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err, "text of %s", sel)
	return s
}

// S20 in a browser: from the overview to a failed job's timeline, where the first
// attempt's exception is; "Retry" puts the job back on its queue, and it leaves the
// failed list.
func TestS20DashboardBrowserRetryFromTimeline(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	id := failJob(t, b.db, "billing", "charge_card", `{"order": 41}`,
		"VendorError: vendor answered 500 on the first try", "CardDeclined: issuer said do_not_honor")
	ctx := tab(t)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+base+"/"),
		chromedp.Click(chromedp.CSS(`#queue-billing a.bad`)), // the failed count of the queue
		chromedp.WaitVisible(chromedp.CSS(`#list a[href="/pgq/jobs/`+id+`"]`)),
		chromedp.Click(chromedp.CSS(`#list a[href="/pgq/jobs/`+id+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#timeline`)),
	))
	require.Equal(t, "failed", text(t, ctx, "#state"))
	first := text(t, ctx, "#timeline li:first-child")
	require.Contains(t, first, "attempt 1")
	require.Contains(t, first, "VendorError: vendor answered 500 on the first try", "the first attempt's exception")
	require.Contains(t, text(t, ctx, "#failure"), "CardDeclined")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#retry`)),
		chromedp.WaitVisible(chromedp.CSS(`p.flash`)),
	))
	require.Equal(t, "ready", text(t, ctx, "#state"))
	require.Contains(t, text(t, ctx, "p.flash"), "Retried")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`header.top nav a[href="/pgq/jobs"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#list`)),
		chromedp.Click(chromedp.CSS(`nav.tabs a[href="/pgq/jobs?state=failed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`nav.tabs a.on[href="/pgq/jobs?state=failed"]`)),
	))
	list := text(t, ctx, "#list")
	require.NotContains(t, list, id[len(id)-8:], "the job left the failed list")
	require.Contains(t, list, "No failed job")
	require.Equal(t, int64(0), failedCount(t, b.db))
}

// S41 in a browser: "Pause" on the overview stops a running worker from taking the
// queue's jobs; "Resume" lets it take them again.
func TestS41DashboardBrowserPauseStopsWorker(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	b := setupOn(t, db, dashboard.Options{})
	db.Exec(t, `SELECT pgq.define_queue('q1')`)
	ran := make(chan string, 10)
	w, err := worker.New(db.Pool, worker.WithQueues("q1"), worker.WithSleep(200*time.Millisecond),
		worker.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	worker.Handle(w, "tick", worker.Handler[map[string]any]{Run: func(_ context.Context, job *worker.Job[map[string]any]) error {
		ran <- job.UUID.String()
		return nil
	}})
	wctx, stopWorker := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(wctx) }()
	t.Cleanup(func() {
		stopWorker()
		<-stopped
	})
	waitRan := func(id string, within time.Duration) bool {
		deadline := time.After(within)
		for {
			select {
			case got := <-ran:
				if got == id {
					return true
				}
			case <-deadline:
				return false
			}
		}
	}
	require.True(t, waitRan(dispatch(t, db, `pgq.dispatch('tick', '{}', queue => 'q1')`), 10*time.Second), "the worker runs q1's jobs")

	ctx := tab(t)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+base+"/"),
		chromedp.Click(chromedp.CSS(`#queue-q1 button[name="pause"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#queue-q1.paused`)),
	))
	require.Contains(t, text(t, ctx, "#queue-q1"), "paused")
	require.Contains(t, text(t, ctx, "p.flash"), "Paused")

	paused := dispatch(t, db, `pgq.dispatch('tick', '{}', queue => 'q1')`)
	require.False(t, waitRan(paused, 2*time.Second), "a paused queue's job is not taken")
	require.Equal(t, "ready", pgqtest.Scalar[string](t, db, `SELECT state FROM pgq.job_settings WHERE uuid = $1::uuid`, paused))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#queue-q1 button[name="resume"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#queue-q1 button[name="pause"]`)),
	))
	require.True(t, waitRan(paused, 10*time.Second), "resumed, the worker takes it")
	require.False(t, strings.Contains(text(t, ctx, "#queue-q1"), "paused"))
}

// S96 in a browser: from the overview's failed count to a batch's failed job, whose page
// names its batch; on the batch's page "Retry 1 failed…" asks first, then puts the job
// back on its queue, and the batch no longer counts it failed.
func TestS96DashboardBrowserRetryBatchFromOverview(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	w := seedWorkflows(t, b.db)
	ctx := tab(t)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+base+"/"),
		chromedp.Click(chromedp.CSS(`#queue-imports a.bad`)),
		chromedp.WaitVisible(chromedp.CSS(`#list a[href="/pgq/jobs/`+w.failedMember+`"]`)),
		chromedp.Click(chromedp.CSS(`#list a[href="/pgq/jobs/`+w.failedMember+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#workflow`)),
	))
	require.Equal(t, "Member of batch catalog import.", strings.TrimSpace(text(t, ctx, "#workflow")))
	require.Contains(t, text(t, ctx, "#failure"), "RowInvalid: row 3 has no SKU")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#workflow a`)),
		chromedp.WaitVisible(chromedp.CSS(`#retry-batch`)),
	))
	require.Equal(t, "1", text(t, ctx, "#failed-members"))
	require.Contains(t, text(t, ctx, "#list"), "RowInvalid: row 3 has no SKU", "the failed jobs' tab first, with their exceptions")
	require.Contains(t, text(t, ctx, "#callback-catch"), "succeeded")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#retry-batch`)),
		chromedp.WaitVisible(chromedp.CSS(`#confirm`)),
	))
	require.Contains(t, text(t, ctx, "section.confirm h1"), `Retry the 1 failed jobs of batch "catalog import"`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#confirm`)),
		chromedp.WaitVisible(chromedp.CSS(`p.flash`)),
	))
	require.Contains(t, text(t, ctx, "p.flash"), "Retried 1 failed jobs of the batch")
	require.Equal(t, "0", text(t, ctx, "#failed-members"))
	require.Contains(t, text(t, ctx, "#tab-failed"), "0")
	require.Equal(t, "ready", pgqtest.Scalar[string](t, b.db, `SELECT state FROM pgq.job_settings WHERE uuid = $1::uuid`, w.failedMember))
}

// S71, S97 in a browser: from the failed step of a chain to the chain's page, where step
// 3 never ran because step 2 failed, and the on_failure job is done.
func TestS71S97DashboardBrowserChainStoppedAtStep(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	w := seedWorkflows(t, b.db)
	ctx := tab(t)

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+base+"/"),
		chromedp.Click(chromedp.CSS(`#queue-orders a.bad`)),
		chromedp.WaitVisible(chromedp.CSS(`#list a[href="/pgq/jobs/`+w.chainStep2+`"]`)),
		chromedp.Click(chromedp.CSS(`#list a[href="/pgq/jobs/`+w.chainStep2+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#workflow`)),
	))
	require.Contains(t, text(t, ctx, "#workflow"), "Step 2 of 3 of chain")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#workflow a`)),
		chromedp.WaitVisible(chromedp.CSS(`#steps`)),
	))
	require.Equal(t, "failed", text(t, ctx, "#chain-state"))
	require.Contains(t, text(t, ctx, "#step-1"), "succeeded")
	step2 := text(t, ctx, "#step-2")
	require.Contains(t, step2, "failed")
	require.Contains(t, step2, "CardDeclined: do_not_honor")
	step3 := text(t, ctx, "#step-3")
	require.Contains(t, step3, "ship_order")
	require.Contains(t, step3, "never ran")
	require.Contains(t, step3, "step 2 failed")
	onFailure := text(t, ctx, "#on-failure")
	require.Contains(t, onFailure, "refund_order")
	require.Contains(t, onFailure, "succeeded")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#on-failure a[href="/pgq/jobs/`+w.onFailure+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#workflow`)),
	))
	require.Contains(t, text(t, ctx, "#workflow"), "The on_failure job of chain")
	require.Equal(t, "finished", text(t, ctx, "#state"))
}

// S119 in a browser: from the overview's "fair by" mark of a queue to its keys, the
// most ready first with their weight, ready jobs and oldest wait; "longest wait" orders
// them by the oldest wait, and the key box finds one key.
func TestS119DashboardBrowserFairKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, dashboard.Options{})
	seedFair(t, b.db)
	ctx := tab(t)
	row := func(n int) string {
		return strings.Join(strings.Fields(text(t, ctx, fmt.Sprintf(`#fair-exports table.fairkeys tbody tr:nth-child(%d)`, n))), " ")
	}

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(b.srv.URL+base+"/"),
		chromedp.Click(chromedp.CSS(`#queue-exports a.fair`)),
		chromedp.WaitVisible(chromedp.CSS(`#fair-exports table.fairkeys`)),
	))
	require.Contains(t, text(t, ctx, "#fair-exports h2"), "fair by tenant")
	require.Contains(t, text(t, ctx, "#fair-exports h2"), "4 keys with live jobs · 8 ready · 1 running")
	require.Equal(t, "acme 3 5 20m 0 0 ready jobs", row(1), "key, weight, ready, oldest wait, later, running")
	require.Equal(t, "globex 1 2 12m 0 1 ready jobs", row(2))
	require.Equal(t, "(none: no tenant field) 1 1 15m 0 0", row(3))
	require.Equal(t, "initech 1 0 – 1 0", row(4))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`nav.tabs a[href$="by=wait&queue=exports"]`)),
		chromedp.WaitVisible(chromedp.CSS(`nav.tabs a.on[href$="by=wait&queue=exports"]`)),
	))
	require.True(t, strings.HasPrefix(row(2), "(none: no tenant field)"), "the longest oldest wait first: %s", row(2))
	require.True(t, strings.HasPrefix(row(3), "globex"), row(3))

	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#fair-exports input[name="key"]`), "globex"),
		chromedp.Submit(chromedp.CSS(`#fair-exports input[name="key"]`)),
		// "clear", in the form only when a key is found; the heading's link to the queue has the same address
		chromedp.WaitVisible(chromedp.CSS(`#fair-exports form a[href$="by=wait&queue=exports"]`)),
	))
	require.Equal(t, "globex 1 2 12m 0 1 ready jobs", row(1))
	require.Contains(t, text(t, ctx, "#fair-exports h2"), "1 matching key with live jobs")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(`#fair-exports td.act a`)),
		chromedp.WaitVisible(chromedp.CSS(`#list`)),
	))
	require.Equal(t, 2, strings.Count(text(t, ctx, "#list tbody"), "exports"), "globex's two ready jobs, a row each")
}
