package dashboard

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

type checkData struct {
	Timeout, Tries int
	Findings       []*dbsqlc.PgqCheckFinding
}

// check: GET /check?timeout=60&tries=1. The ordering linter (pgq.check, S16) for the
// workers' --timeout and --tries.
func (s *server) check(r *http.Request) (view, error) {
	q := r.URL.Query()
	d := checkData{Timeout: int(s.opts.WorkerTimeout / time.Second), Tries: s.opts.WorkerTries}
	var err error
	if v := q.Get("timeout"); v != "" {
		if d.Timeout, err = strconv.Atoi(v); err != nil || d.Timeout < 0 || d.Timeout > math.MaxInt32 {
			return view{}, badRequest("timeout: whole seconds >= 0, got %q", v)
		}
	}
	if v := q.Get("tries"); v != "" {
		if d.Tries, err = strconv.Atoi(v); err != nil || d.Tries < 0 || d.Tries > math.MaxInt32 {
			return view{}, badRequest("tries: a whole number >= 0, got %q", v)
		}
	}
	d.Findings, err = s.q.CheckList(r.Context(), dbsqlc.CheckListParams{WorkerTimeout: int32(d.Timeout), WorkerTries: int32(d.Tries)})
	if err != nil {
		return view{}, err
	}
	return view{name: "check", title: "Config check", data: d}, nil
}
