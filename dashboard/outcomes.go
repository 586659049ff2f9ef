package dashboard

import (
	"context"
	"sync"
	"time"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
)

// settleTime: a minute is settled, its counts final, once it ended this long ago. An
// attempt's finished_at is the time its outcome was reported, a moment before that
// report commits; for a SQL handler it is when the handler's transaction began (the
// completion shares the transaction), up to the job's timeout (60 s by default) before
// the commit. Three minutes covers both.
const settleTime = 3 * time.Minute

// outcomeCounts counts the overview chart's attempts per minute and outcome over the
// last hour without reading the whole hour on every request: the counts of settled
// minutes are kept, so a request reads only the minutes that settled since the last
// one and the unsettled few. The first request of a process reads the whole hour. An
// attempt that commits more than settleTime after its finished_at (a SQL handler that
// ran longer) is missed by a dashboard that already counted its minute.
type outcomeCounts struct {
	mu      sync.Mutex
	from    time.Time                      // the first minute kept
	settled time.Time                      // minutes before this are kept; zero: none
	counts  map[time.Time]map[string]int64 // minute -> outcome -> attempts
}

// since returns the attempts per minute and outcome from start (a minute) to now.
func (c *outcomeCounts) since(ctx context.Context, q *dbsqlc.Queries, start, now time.Time) ([]*dbsqlc.DashboardOutcomesPerMinuteRow, error) {
	boundary := now.Add(-settleTime).Truncate(time.Minute)
	if boundary.Before(start) {
		boundary = start
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil || c.from.After(start) || c.settled.Before(start) || c.settled.After(boundary) {
		c.counts, c.from, c.settled = map[time.Time]map[string]int64{}, start, start // cold, or a clock gone back
	}
	if c.settled.Before(boundary) {
		rows, err := q.DashboardOutcomesPerMinute(ctx, dbsqlc.DashboardOutcomesPerMinuteParams{Since: c.settled, Before: &boundary})
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			m := r.Minute.UTC()
			if c.counts[m] == nil {
				c.counts[m] = map[string]int64{}
			}
			c.counts[m][r.Outcome] += r.Attempts
		}
		c.settled = boundary
	}
	for m := range c.counts {
		if m.Before(start) {
			delete(c.counts, m)
		}
	}
	c.from = start
	out, err := q.DashboardOutcomesPerMinute(ctx, dbsqlc.DashboardOutcomesPerMinuteParams{Since: boundary})
	if err != nil {
		return nil, err
	}
	for m, byOutcome := range c.counts {
		for outcome, n := range byOutcome {
			out = append(out, &dbsqlc.DashboardOutcomesPerMinuteRow{Minute: m, Outcome: outcome, Attempts: n})
		}
	}
	return out, nil
}
