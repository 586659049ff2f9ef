package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// states are the lists of GET /jobs, in the order of the tabs.
var states = []string{"ready", "scheduled", "retrying", "running", "failed"}

// jobFilter is what GET /jobs and the bulk actions select by: the form's fields.
type jobFilter struct {
	State     string
	Queue     string
	Job       string
	Worker    string // running only
	Field     string // a payload field, dotted for nested ones: customer.id
	Value     string // the field's value, compared as text (88 matches 88 and "88")
	OlderThan string // failed only: hours since the failure, as typed
}

func (f jobFilter) values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("state", f.State)
	set("queue", f.Queue)
	set("job", f.Job)
	set("worker", f.Worker)
	set("field", f.Field)
	set("value", f.Value)
	set("older_than_hours", f.OlderThan)
	return v
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// payloadPath is the field as a jsonb path (NULL when no field is given).
func (f jobFilter) payloadPath() ([]string, *string) {
	if f.Field == "" {
		return nil, nil
	}
	return strings.Split(f.Field, "."), &f.Value
}

// olderThan parses the older-than filter: whole or fractional hours >= 0.
func (f jobFilter) olderThan() (*time.Duration, error) {
	if f.OlderThan == "" {
		return nil, nil
	}
	h, err := strconv.ParseFloat(f.OlderThan, 64)
	if err != nil || h < 0 || h > 24*365*100 {
		return nil, badRequest("older than: a number of hours >= 0, got %q", f.OlderThan)
	}
	d := time.Duration(h * float64(time.Hour))
	return &d, nil
}

func filterFrom(form url.Values) (jobFilter, error) {
	f := jobFilter{
		State: form.Get("state"), Queue: strings.TrimSpace(form.Get("queue")), Job: strings.TrimSpace(form.Get("job")),
		Worker: form.Get("worker"), Field: strings.TrimSpace(form.Get("field")), Value: form.Get("value"),
		OlderThan: strings.TrimSpace(form.Get("older_than_hours")),
	}
	if f.State == "" {
		f.State = "ready"
	}
	valid := false
	for _, s := range states {
		valid = valid || s == f.State
	}
	if !valid {
		return f, badRequest("state must be one of %s, got %q", strings.Join(states, ", "), f.State)
	}
	if f.Field != "" && strings.Contains(f.Field, "..") {
		return f, badRequest("payload field: names separated by single dots, got %q", f.Field)
	}
	_, err := f.olderThan()
	return f, err
}

// cursor is the sort key of the last row of a page: the next page starts after it.
// The ready list's also has the row's queue, priority and sort_id (pgq.ready).
type cursor struct {
	Queue    string
	Priority int32
	At       time.Time
	ID       int64
	SortID   int64
}

func (c cursor) values() url.Values {
	v := url.Values{"after_at": {c.At.UTC().Format(time.RFC3339Nano)}, "after_id": {strconv.FormatInt(c.ID, 10)}}
	if c.Queue != "" {
		v.Set("after_queue", c.Queue)
		v.Set("after_priority", strconv.Itoa(int(c.Priority)))
		v.Set("after_sort", strconv.FormatInt(c.SortID, 10))
	}
	return v
}

// cursorFrom reads the cursor of a next-page link; nil on the first page.
func cursorFrom(q url.Values, withQueue bool) (*cursor, error) {
	if q.Get("after_at") == "" {
		return nil, nil
	}
	var c cursor
	var err error
	if c.At, err = time.Parse(time.RFC3339Nano, q.Get("after_at")); err != nil {
		return nil, badRequest("bad page cursor: after_at %q", q.Get("after_at"))
	}
	if c.ID, err = strconv.ParseInt(q.Get("after_id"), 10, 64); err != nil {
		return nil, badRequest("bad page cursor: after_id %q", q.Get("after_id"))
	}
	if withQueue {
		c.Queue = q.Get("after_queue")
		p, err := strconv.ParseInt(q.Get("after_priority"), 10, 32)
		if err != nil || c.Queue == "" {
			return nil, badRequest("bad page cursor: after_queue %q, after_priority %q", c.Queue, q.Get("after_priority"))
		}
		c.Priority = int32(p)
		// A link from before sort_id has none: 0 skips nothing, and the page is the same.
		if v := q.Get("after_sort"); v != "" {
			if c.SortID, err = strconv.ParseInt(v, 10, 64); err != nil {
				return nil, badRequest("bad page cursor: after_sort %q", v)
			}
		}
	}
	return &c, nil
}

type jobsData struct {
	Filter    jobFilter
	States    []string
	Queues    []string
	JobNames  []string
	Ready     []*dbsqlc.DashboardReadyListRow
	Scheduled []*dbsqlc.DashboardScheduledListRow
	Retrying  []*dbsqlc.DashboardRetryingListRow
	Running   []*dbsqlc.DashboardRunningListRow
	Failed    []*dbsqlc.DashboardFailedListRow
	Rows      int
	First     bool       // the first page
	Next      url.Values // the next page's query, nil on the last page
	FirstPage url.Values // the first page's query
	Filtered  bool       // any filter besides the state
}

// jobs: GET /jobs. One state's jobs, filtered, a page at a time. A uuid in ?uuid= goes
// to that job's page.
func (s *server) jobs(r *http.Request) (view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	if id := strings.TrimSpace(q.Get("uuid")); id != "" {
		u, err := uuid.Parse(id)
		if err != nil {
			return view{}, badRequest("not a uuid: %q", id)
		}
		return view{redirect: "/jobs/" + u.String()}, nil
	}
	f, err := filterFrom(q)
	if err != nil {
		return view{}, err
	}
	after, err := cursorFrom(q, f.State == "ready")
	if err != nil {
		return view{}, err
	}
	d := jobsData{Filter: f, States: states, First: after == nil, FirstPage: f.values()}
	d.Filtered = f.Queue != "" || f.Job != "" || f.Field != "" || f.Worker != "" || f.OlderThan != ""
	if d.Queues, err = s.q.DashboardQueueNames(ctx); err != nil {
		return view{}, err
	}
	if d.JobNames, err = s.q.DashboardJobNames(ctx); err != nil {
		return view{}, err
	}
	path, value := f.payloadPath()
	limit := int32(s.opts.PageSize + 1) // one more: is there a next page?
	var afterAt *time.Time
	var afterID *int64
	if after != nil {
		afterAt, afterID = &after.At, &after.ID
	}
	var last *cursor
	switch f.State {
	case "ready":
		p := dbsqlc.DashboardReadyListParams{Queue: optional(f.Queue), Job: optional(f.Job), Path: path, Value: value,
			AfterAt: afterAt, AfterID: afterID, Max: limit}
		if after != nil {
			p.AfterQueue, p.AfterPriority, p.AfterSort = &after.Queue, &after.Priority, &after.SortID
		}
		rows, err := s.q.DashboardReadyList(ctx, p)
		if err != nil {
			return view{}, err
		}
		d.Ready, d.Rows = trim(rows, s.opts.PageSize)
		if d.Rows < len(rows) {
			r := d.Ready[d.Rows-1]
			last = &cursor{Queue: r.Queue, Priority: r.Priority, At: r.AvailableAt, ID: r.ID, SortID: r.SortID}
		}
	case "scheduled":
		rows, err := s.q.DashboardScheduledList(ctx, dbsqlc.DashboardScheduledListParams{Queue: optional(f.Queue),
			Job: optional(f.Job), Path: path, Value: value, AfterAt: afterAt, AfterID: afterID, Max: limit})
		if err != nil {
			return view{}, err
		}
		d.Scheduled, d.Rows = trim(rows, s.opts.PageSize)
		if d.Rows < len(rows) {
			last = &cursor{At: d.Scheduled[d.Rows-1].AvailableAt, ID: d.Scheduled[d.Rows-1].ID}
		}
	case "retrying":
		rows, err := s.q.DashboardRetryingList(ctx, dbsqlc.DashboardRetryingListParams{Queue: optional(f.Queue),
			Job: optional(f.Job), Path: path, Value: value, AfterAt: afterAt, AfterID: afterID, Max: limit})
		if err != nil {
			return view{}, err
		}
		d.Retrying, d.Rows = trim(rows, s.opts.PageSize)
		if d.Rows < len(rows) {
			last = &cursor{At: d.Retrying[d.Rows-1].AvailableAt, ID: d.Retrying[d.Rows-1].ID}
		}
	case "running":
		rows, err := s.q.DashboardRunningList(ctx, dbsqlc.DashboardRunningListParams{Queue: optional(f.Queue),
			Job: optional(f.Job), Worker: optional(f.Worker), Path: path, Value: value, AfterAt: afterAt, AfterID: afterID, Max: limit})
		if err != nil {
			return view{}, err
		}
		d.Running, d.Rows = trim(rows, s.opts.PageSize)
		if d.Rows < len(rows) && d.Running[d.Rows-1].LeaseUntil != nil {
			last = &cursor{At: *d.Running[d.Rows-1].LeaseUntil, ID: d.Running[d.Rows-1].ID}
		}
	case "failed":
		older, _ := f.olderThan()
		rows, err := s.q.DashboardFailedList(ctx, dbsqlc.DashboardFailedListParams{Queue: optional(f.Queue),
			Job: optional(f.Job), Path: path, Value: value, OlderThan: older, AfterAt: afterAt, AfterID: afterID, Max: limit})
		if err != nil {
			return view{}, err
		}
		d.Failed, d.Rows = trim(rows, s.opts.PageSize)
		if d.Rows < len(rows) {
			last = &cursor{At: d.Failed[d.Rows-1].FailedAt, ID: d.Failed[d.Rows-1].ID}
		}
	}
	if last != nil {
		d.Next = f.values()
		for k, v := range last.values() {
			d.Next[k] = v
		}
	}
	return view{name: "jobs", title: "Jobs: " + f.State, data: d}, nil
}

// trim keeps the first n rows; it returns them and how many there are.
func trim[T any](rows []T, n int) ([]T, int) {
	if len(rows) > n {
		rows = rows[:n]
	}
	return rows, len(rows)
}
