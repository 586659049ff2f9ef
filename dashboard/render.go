package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// pageNames are the templates in templates/, each rendered inside layout.html.
var pageNames = []string{"overview", "jobs", "job", "batches", "batch", "chains", "chain", "locks", "fair", "workers", "schedules", "check",
	"history", "confirm", "error"}

func parsePages(s *server) (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"path":      func(p string) string { return s.base + p },
		"jobpath":   func(id uuid.UUID) string { return s.base + "/jobs/" + id.String() },
		"batchpath": func(id uuid.UUID) string { return s.base + "/batches/" + id.String() },
		"chainpath": func(id uuid.UUID) string { return s.base + "/chains/" + id.String() },
		"queuepath": func(q, action string) string { return s.base + "/queues/" + url.PathEscape(q) + "/" + action },
		"schedulepath": func(name, action string) string {
			return s.base + "/schedules/" + url.PathEscape(name) + "/" + action
		},
		"ago":     ago,
		"ts":      timestamp,
		"dur":     duration,
		"num":     thousands,
		"short":   shortUUID,
		"first":   firstLine,
		"pretty":  prettyJSON,
		"outcome": outcomeClass,
		"deref":   deref,
		"query":   func(v url.Values) template.URL { return template.URL(v.Encode()) }, //nolint:gosec // url.Values.Encode escapes every key and value
		"join":    strings.Join,
		"ints":    joinInts,
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// ago says how long before now t was ("3m ago"), or how long after ("in 40s").
func ago(t any) string {
	tt, ok := timeOf(t)
	if !ok {
		return ""
	}
	d := time.Since(tt)
	if d < 0 {
		return "in " + short(-d)
	}
	if d < time.Second {
		return "just now"
	}
	return short(d) + " ago"
}

// short is a duration to about two digits: 40s, 3m10s, 2h5m, 3d4h.
func short(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		m, s := int(d.Minutes()), int(d.Seconds())%60
		if s == 0 || m >= 10 {
			return strconv.Itoa(m) + "m"
		}
		return fmt.Sprintf("%dm%ds", m, s)
	case d < 48*time.Hour:
		h, m := int(d.Hours()), int(d.Minutes())%60
		if m == 0 || h >= 10 {
			return strconv.Itoa(h) + "h"
		}
		return fmt.Sprintf("%dh%dm", h, m)
	default:
		return strconv.Itoa(int(d.Hours()/24)) + "d"
	}
}

func duration(d any) string {
	switch v := d.(type) {
	case time.Duration:
		return short(v)
	case *time.Duration:
		if v != nil {
			return short(*v)
		}
	}
	return ""
}

func timeOf(t any) (time.Time, bool) {
	switch v := t.(type) {
	case time.Time:
		return v, !v.IsZero()
	case *time.Time:
		if v != nil {
			return *v, !v.IsZero()
		}
	}
	return time.Time{}, false
}

// timestamp is t in UTC to the millisecond.
func timestamp(t any) string {
	if tt, ok := timeOf(t); ok {
		return tt.UTC().Format("2006-01-02 15:04:05.000 UTC")
	}
	return ""
}

func thousands(n any) string {
	var v int64
	switch x := n.(type) {
	case int:
		v = int64(x)
	case int32:
		v = int64(x)
	case int64:
		v = x
	case *int64:
		if x != nil {
			v = *x
		}
	case *int32:
		if x != nil {
			v = int64(*x)
		}
	}
	s := strconv.FormatInt(v, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func firstLine(s any, max int) string {
	var str string
	switch v := s.(type) {
	case string:
		str = v
	case *string:
		if v != nil {
			str = *v
		}
	}
	if i := strings.IndexByte(str, '\n'); i >= 0 {
		str = str[:i] + " …"
	}
	if r := []rune(str); len(r) > max {
		str = string(r[:max-1]) + "…"
	}
	return str
}

func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// outcomeClass is the CSS class of an outcome or state badge.
func outcomeClass(o string) string {
	switch o {
	case "succeeded", "ready", "closed", "available":
		return "ok"
	case "failed", "exhausted", "timed_out", "open", "exhausted_budget", "not queued":
		return "bad"
	case "lease_expired", "interrupted", "retrying", "cancelling", "stalled":
		return "warn"
	case "running", "queued":
		return "run"
	default:
		return "muted"
	}
}

func deref(v any) any {
	switch x := v.(type) {
	case *string:
		if x != nil {
			return *x
		}
	case *int32:
		if x != nil {
			return *x
		}
	case *int64:
		if x != nil {
			return *x
		}
	case *bool:
		if x != nil {
			return *x
		}
	default:
		return v
	}
	return ""
}

func joinInts(v []int32) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = strconv.Itoa(int(n))
	}
	return strings.Join(parts, ", ")
}

// Flash messages: an action redirects with ?done=CODE (and &n=COUNT); only these
// texts can be shown, so a crafted link cannot put words on the page.
var flashes = map[string]string{
	"retried":    "Retried: the job is back on its queue.",
	"retried_n":  "Retried %s failed jobs.",
	"forgotten":  "Forgotten: the failed job is deleted.",
	"flushed_n":  "Flushed %s failed jobs.",
	"run_now":    "The job is available now.",
	"cancelled":  "Cancelled: the waiting job is gone.",
	"cancelling": "Cancelling: its worker cancels the handler within a second.",
	"paused":     "Paused: workers stop taking this queue's jobs; running ones finish.",
	"resumed":    "Resumed: workers take this queue's jobs again.",

	"schedule_run":     "Dispatched: the schedule's job is on its queue; its ticks go on as before.",
	"schedule_paused":  "Paused: the schedule fires no tick until it is resumed.",
	"schedule_resumed": "Resumed: the schedule fires from its next tick; ticks missed while paused do not run.",

	"batch_retried_n":   "Retried %s failed jobs of the batch: they are back on their queues.",
	"batch_cancelled_n": "Cancelled the batch: %s waiting jobs cancelled; running ones finish.",
}

func flashMessage(q url.Values) string {
	msg, ok := flashes[q.Get("done")]
	if !ok {
		return ""
	}
	if strings.Contains(msg, "%s") {
		n, _ := strconv.ParseInt(q.Get("n"), 10, 64)
		return fmt.Sprintf(msg, thousands(n))
	}
	return msg
}

// shortUUID is the end of a uuid: its random part. The start of a time-ordered (version
// 7) uuid is its timestamp, the same for every job dispatched in one millisecond.
func shortUUID(id uuid.UUID) string {
	s := id.String()
	return "…" + s[len(s)-8:]
}
