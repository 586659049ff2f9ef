package dashboard

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// fairQueue is one section of the fair queues page: a queue defined with fair_by, its
// keys with live jobs in the page's order (at most the page size), and its figures over
// every key that matched.
type fairQueue struct {
	Queue, FairBy string
	Paused        bool
	Keys          []*dbsqlc.DashboardFairKeyListRow
	Total         int64 // keys with live jobs that matched
	Ready         int64
	Running       int64
}

type fairData struct {
	Queues []fairQueue
	By     string // ready (most ready first) or wait (longest oldest wait first)
	Queue  string // only this queue; "" for all
	Key    string // only this key; "" for all
	Max    int    // keys shown per queue at most
}

// fairOrders are the orders of the fair queues page's keys, the first the default.
var fairOrders = []string{"ready", "wait"}

// fair: GET /fair. Each fair queue (S114) with its keys that have live jobs (S119):
// weight, ready jobs and the oldest one's wait, jobs waiting later, running. A queue
// may have very many keys, so each shows the page size's first by ?by=ready (most
// ready jobs) or ?by=wait (the longest oldest wait), with how many there are;
// ?queue=Q shows one queue, and ?key=K finds one key in it.
func (s *server) fair(r *http.Request) (view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	d := fairData{By: q.Get("by"), Queue: q.Get("queue"), Key: q.Get("key"), Max: s.opts.PageSize}
	switch d.By {
	case "":
		d.By = fairOrders[0]
	case "ready", "wait":
	default:
		return view{}, badRequest("by must be ready or wait, got %q", d.By)
	}
	if d.Key != "" && d.Queue == "" {
		return view{}, badRequest("key needs queue: a key is a key of one queue")
	}
	queues, err := s.q.DashboardFairQueueList(ctx)
	if err != nil {
		return view{}, err
	}
	keys, err := s.q.DashboardFairKeyList(ctx, dbsqlc.DashboardFairKeyListParams{
		ByWait: d.By == "wait", Queue: optional(d.Queue), Key: optional(d.Key), Max: int32(d.Max)})
	if err != nil {
		return view{}, err
	}
	byQueue := map[string][]*dbsqlc.DashboardFairKeyListRow{}
	for _, k := range keys {
		byQueue[k.Queue] = append(byQueue[k.Queue], k)
	}
	for _, fq := range queues {
		if d.Queue != "" && fq.Queue != d.Queue {
			continue
		}
		sec := fairQueue{Queue: fq.Queue, FairBy: fq.FairBy, Paused: fq.Paused, Keys: byQueue[fq.Queue]}
		if len(sec.Keys) > 0 {
			sec.Total, sec.Ready, sec.Running = sec.Keys[0].QueueKeys, sec.Keys[0].QueueReady, sec.Keys[0].QueueRunning
		}
		d.Queues = append(d.Queues, sec)
	}
	if d.Queue != "" && len(d.Queues) == 0 {
		return view{}, notFound("queue %q is not a fair queue (pgq.define_queue with fair_by makes one)", d.Queue)
	}
	return view{name: "fair", title: "Fair queues", data: d}, nil
}

// ByLink is the page's query in the order by.
func (d fairData) ByLink(by string) url.Values {
	v := url.Values{"by": {by}}
	if d.Queue != "" {
		v.Set("queue", d.Queue)
	}
	if d.Key != "" {
		v.Set("key", d.Key)
	}
	return v
}

// QueueLink is the page's query for queue alone ("": every fair queue), in its order.
func (d fairData) QueueLink(queue string) url.Values {
	v := url.Values{}
	if d.By != fairOrders[0] {
		v.Set("by", d.By)
	}
	if queue != "" {
		v.Set("queue", queue)
	}
	return v
}

// JobsLink is the query of the ready jobs of queue whose payload field fairBy is key,
// for the jobs page's payload filter; nil when that filter cannot say it: the key ”
// (jobs without the field), or a field name with a dot (the filter reads a dot as a
// nested field).
func (d fairData) JobsLink(queue, fairBy, key string) url.Values {
	if key == "" || strings.Contains(fairBy, ".") {
		return nil
	}
	return url.Values{"state": {"ready"}, "queue": {queue}, "field": {fairBy}, "value": {key}}
}
