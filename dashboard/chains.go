package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// chainStates are the filters of GET /chains: pgq.chains's state.
var chainStates = []string{"running", "succeeded", "failed", "cancelled"}

type chainsData struct {
	State     string
	States    []string
	Chains    []*dbsqlc.DashboardChainListRow
	First     bool
	Next      url.Values
	FirstPage url.Values
}

// chains: GET /chains. Chains newest first, of one state (?state=), a page at a time.
func (s *server) chains(r *http.Request) (view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	state := q.Get("state")
	if state != "" && !contains(chainStates, state) {
		return view{}, badRequest("state must be one of %s, got %q", strings.Join(chainStates, ", "), state)
	}
	p := dbsqlc.DashboardChainListParams{State: optional(state), Max: int32(s.opts.PageSize + 1)}
	if q.Get("after_at") != "" {
		at, err := time.Parse(time.RFC3339Nano, q.Get("after_at"))
		if err != nil {
			return view{}, badRequest("bad page cursor: after_at %q", q.Get("after_at"))
		}
		id, err := uuid.Parse(q.Get("after_id"))
		if err != nil {
			return view{}, badRequest("bad page cursor: after_id %q", q.Get("after_id"))
		}
		p.AfterAt, p.AfterID = &at, &id
	}
	rows, err := s.q.DashboardChainList(ctx, p)
	if err != nil {
		return view{}, err
	}
	d := chainsData{State: state, States: chainStates, First: p.AfterAt == nil, FirstPage: url.Values{}}
	var n int
	d.Chains, n = trim(rows, s.opts.PageSize)
	if state != "" {
		d.FirstPage.Set("state", state)
	}
	if n < len(rows) {
		last := d.Chains[n-1]
		d.Next = url.Values{"after_at": {last.CreatedAt.UTC().Format(time.RFC3339Nano)}, "after_id": {last.ID.String()}}
		if state != "" {
			d.Next.Set("state", state)
		}
	}
	title := "Chains"
	if state != "" {
		title += ": " + state
	}
	return view{name: "chains", title: title, data: d}, nil
}

// stepView is one step of a chain as its page shows it.
type stepView struct {
	N         int
	Job       string
	UUID      *uuid.UUID // its job, once queued
	State     string     // succeeded, ready, scheduled, retrying, running, failed, cancelled, not queued, waiting, never ran
	Exception string
	At        *time.Time // when it ended
	Note      string
}

type chainData struct {
	Chain     *dbsqlc.DashboardChainGetRow
	Steps     []stepView
	OnFailure []callbackView
	Batch     *dbsqlc.PgqBatch               // the batch the chain is a member of
	Stalled   *dbsqlc.DashboardStalledGetRow // nil unless the chain stalled (S95)
}

// chain: GET /chains/{id}. The chain's steps in order, each with its job and what became
// of it (done, running or waiting, failed, never ran because a step before stopped the
// chain), and its on_failure job.
func (s *server) chain(r *http.Request) (view, error) {
	ctx := r.Context()
	id, err := pathID(r, "chain")
	if err != nil {
		return view{}, err
	}
	c, err := s.q.DashboardChainGet(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) {
		return view{}, notFound("no chain %s (pruned, or never dispatched)", id)
	}
	if err != nil {
		return view{}, err
	}
	d := chainData{Chain: c}
	ends, err := s.q.DashboardChainEndList(ctx, id)
	if err != nil {
		return view{}, err
	}
	lastEnd := map[int32]*dbsqlc.DashboardChainEndListRow{}
	for _, e := range ends {
		if e.ChainStep != nil {
			lastEnd[*e.ChainStep] = e
		}
	}
	for i, job := range c.StepJobs {
		n := int32(i + 1)
		st := stepView{N: i + 1, Job: job}
		if i < len(c.JobUuids) && c.JobUuids[i] != uuid.Nil {
			u := c.JobUuids[i]
			st.UUID = &u
		}
		if e := lastEnd[n]; e != nil {
			st.At = &e.EndedAt
			st.State = e.Outcome
			if e.Exception != nil {
				st.Exception = *e.Exception
			}
		}
		switch {
		case n < c.Step:
			st.State = "succeeded"
		case n == c.Step:
			switch {
			case c.State == "running" && st.UUID != nil:
				st.State, st.At, st.Exception = "running", nil, ""
				live, err := s.q.DashboardJobGet(ctx, *st.UUID)
				switch {
				case errors.Is(err, pgx.ErrNoRows):
				case err != nil:
					return view{}, err
				default:
					st.State = live.State
				}
			case c.State == "failed" && st.UUID == nil:
				st.State, st.Note = "not queued", "the chain stopped here"
			case c.State == "failed" || c.State == "cancelled":
				st.State = c.State
			default:
				st.State = c.State
			}
			if st.Exception == "" && c.Exception != nil && c.State != "running" {
				st.Exception = *c.Exception
			}
		case c.State == "running":
			st.State, st.Note = "waiting", "queued once step "+itoa(int(n-1))+" succeeds"
		default:
			st.State = "never ran"
			if c.State == "failed" {
				st.Note = "step " + itoa(int(c.Step)) + " failed"
			} else {
				st.Note = "the chain was cancelled at step " + itoa(int(c.Step))
			}
		}
		d.Steps = append(d.Steps, st)
	}
	cbs, err := s.q.DashboardCallbackListByChain(ctx, id)
	if err != nil {
		return view{}, err
	}
	for _, cb := range cbs {
		d.OnFailure = append(d.OnFailure, callbackView{Kind: cb.Kind, Job: cb.Job, Row: cb, State: callbackState(cb)})
	}
	if len(d.OnFailure) == 0 && c.OnFailure != nil {
		d.OnFailure = []callbackView{{Kind: "on_failure", Job: *c.OnFailure, State: "not run"}}
	}
	if d.Stalled, err = s.stalledOf(ctx, id); err != nil {
		return view{}, err
	}
	if c.BatchID != nil {
		b, err := s.q.BatchGet(ctx, *c.BatchID)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return view{}, err
		}
		d.Batch = b
	}
	return view{name: "chain", title: "Chain " + shortUUID(id), data: d}, nil
}

func itoa(n int) string { return thousands(n) }
