package dashboard

import (
	"net/http"
	"net/url"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// lockKinds are the sections of the locks page: pgq.locks' kinds.
var lockKinds = []struct{ Kind, Title, About string }{
	{"unique", "Unique locks", "One waiting-or-running copy per key: the job holding each, until when."},
	{"debounce", "Debounce tokens", "The current dispatch of each key: only the job carrying the token runs."},
	{"overlap", "Overlap leases", "without_overlapping keys and concurrency_limited places (#key#n) held: the worker and since when; the lease ends unless the worker's heartbeat renews it."},
}

type lockSection struct {
	Kind, Title, About string
	Rows               []*dbsqlc.DashboardLockListRow
	First              bool
	Next               url.Values // the query of the section's next page; nil on its last
}

type locksData struct {
	Sections []lockSection
	Limits   []*dbsqlc.DashboardLimitListRow
	MoreLim  bool
}

// maxLimits caps the limits table: a rate limit with "by" has a window per key.
const maxLimits = 500

// locks: GET /locks. Each kind of lock by key, a page each (?unique=KEY continues the
// unique locks after KEY, and so on), then the rate limits and circuits.
func (s *server) locks(r *http.Request) (view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	var d locksData
	for _, k := range lockKinds {
		after := optional(q.Get(k.Kind))
		rows, err := s.q.DashboardLockList(ctx, dbsqlc.DashboardLockListParams{Kind: k.Kind, After: after,
			Max: int32(s.opts.PageSize + 1)})
		if err != nil {
			return view{}, err
		}
		sec := lockSection{Kind: k.Kind, Title: k.Title, About: k.About, First: after == nil}
		var n int
		sec.Rows, n = trim(rows, s.opts.PageSize)
		if n < len(rows) {
			sec.Next = url.Values{}
			for key, v := range q {
				sec.Next[key] = v
			}
			sec.Next.Set(k.Kind, sec.Rows[n-1].Key)
		}
		d.Sections = append(d.Sections, sec)
	}
	limits, err := s.q.DashboardLimitList(ctx, maxLimits+1)
	if err != nil {
		return view{}, err
	}
	d.Limits, _ = trim(limits, maxLimits)
	d.MoreLim = len(limits) > maxLimits
	return view{name: "locks", title: "Locks & limits", data: d}, nil
}
