package dashboard

import (
	"net/http"
	"strconv"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

type historyData struct {
	Actions []*dbsqlc.PgqAction
	First   bool
	Next    int64 // the id the next page starts before; 0 on the last page
}

// history: GET /history?before=ID. Operators' actions (pgq.actions), newest first.
func (s *server) history(r *http.Request) (view, error) {
	var before *int64
	if v := r.URL.Query().Get("before"); v != "" {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return view{}, badRequest("before: an action id, got %q", v)
		}
		before = &id
	}
	rows, err := s.q.DashboardActionList(r.Context(), dbsqlc.DashboardActionListParams{Before: before, Max: int32(s.opts.PageSize + 1)})
	if err != nil {
		return view{}, err
	}
	d := historyData{First: before == nil}
	var n int
	d.Actions, n = trim(rows, s.opts.PageSize)
	if n < len(rows) {
		d.Next = d.Actions[n-1].ID
	}
	return view{name: "history", title: "History", data: d}, nil
}
