package dashboard

import (
	"fmt"
	"math"
	"time"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

// chartMinutes is the span of the overview's chart: the last hour, the current minute
// included.
const chartMinutes = 60

// outcomeColors: the order in which outcomes stack, from the bottom, and their colours.
var outcomeColors = []struct {
	outcome pgq.Outcome
	color   string
}{
	{pgq.OutcomeSucceeded, "#2e7d32"},
	{pgq.OutcomeFailed, "#c62828"},
	{pgq.OutcomeTimedOut, "#ef6c00"},
	{pgq.OutcomeExhausted, "#880e4f"},
	{pgq.OutcomeLeaseExpired, "#8d6e63"},
	{pgq.OutcomeInterrupted, "#00838f"},
	{pgq.OutcomeReleased, "#1565c0"},
	{pgq.OutcomeTurnedAway, "#7b1fa2"},
	{pgq.OutcomeDebounced, "#9e9e9e"},
	{pgq.OutcomeCancelled, "#546e7a"},
}

// chart is the overview's SVG bar chart of attempts per minute, stacked by outcome.
type chart struct {
	Width, Height          int
	Left, Right, Top, Base float64 // the plot area
	Bars                   []chartBar
	Grid                   []chartLabel // horizontal lines with their counts
	Ticks                  []chartLabel // minutes along the bottom
	Legend                 []chartLegend
	Total                  int64
}

type chartBar struct {
	X, Y, W, H float64
	Color      string
	Title      string
}

type chartLabel struct {
	X, Y float64
	Text string
}

type chartLegend struct {
	Outcome string
	Color   string
	Total   int64
}

// chartStart is the first minute the chart shows, when the current minute is now's.
func chartStart(now time.Time) time.Time {
	return now.Truncate(time.Minute).Add(-(chartMinutes - 1) * time.Minute)
}

// newChart lays out rows (attempts per minute and outcome since chartStart(now)).
func newChart(rows []*dbsqlc.DashboardOutcomesPerMinuteRow, now time.Time) chart {
	c := chart{Width: 760, Height: 190, Left: 48, Right: 750, Top: 12, Base: 160}
	start := chartStart(now)
	counts := make([]map[string]int64, chartMinutes)
	totals := map[string]int64{}
	for _, r := range rows {
		i := int(r.Minute.Sub(start) / time.Minute)
		if i < 0 || i >= chartMinutes {
			continue
		}
		if counts[i] == nil {
			counts[i] = map[string]int64{}
		}
		counts[i][r.Outcome] += r.Attempts
		totals[r.Outcome] += r.Attempts
		c.Total += r.Attempts
	}
	var peak int64
	for _, m := range counts {
		var sum int64
		for _, n := range m {
			sum += n
		}
		peak = max(peak, sum)
	}
	top := niceCeil(peak)
	slot := (c.Right - c.Left) / chartMinutes
	scale := (c.Base - c.Top) / float64(top)
	for i, m := range counts {
		y := c.Base
		minute := start.Add(time.Duration(i) * time.Minute)
		for _, oc := range outcomeColors {
			n := m[string(oc.outcome)]
			if n == 0 {
				continue
			}
			h := float64(n) * scale
			y -= h
			c.Bars = append(c.Bars, chartBar{
				X: r1(c.Left + float64(i)*slot + 1), Y: r1(y), W: r1(slot - 2), H: r1(h), Color: oc.color,
				Title: fmt.Sprintf("%s UTC: %s %s", minute.UTC().Format("15:04"), thousands(n), oc.outcome),
			})
		}
	}
	for _, v := range []int64{0, top / 2, top} {
		c.Grid = append(c.Grid, chartLabel{X: c.Left - 6, Y: r1(c.Base - float64(v)*scale), Text: thousands(v)})
	}
	for i := 0; i < chartMinutes; i += 10 {
		c.Ticks = append(c.Ticks, chartLabel{X: r1(c.Left + float64(i)*slot + slot/2), Y: c.Base + 16,
			Text: start.Add(time.Duration(i) * time.Minute).UTC().Format("15:04")})
	}
	c.Ticks = append(c.Ticks, chartLabel{X: r1(c.Left + (chartMinutes-0.5)*slot), Y: c.Base + 16, Text: "now"})
	for _, oc := range outcomeColors {
		if n := totals[string(oc.outcome)]; n > 0 {
			c.Legend = append(c.Legend, chartLegend{Outcome: string(oc.outcome), Color: oc.color, Total: n})
		}
	}
	return c
}

// niceCeil rounds n up to 1, 2 or 5 times a power of ten (at least 2, so the middle
// grid line is a whole number).
func niceCeil(n int64) int64 {
	if n <= 2 {
		return 2
	}
	p := int64(math.Pow(10, math.Floor(math.Log10(float64(n)))))
	for _, m := range []int64{1, 2, 5, 10} {
		if m*p >= n {
			return m * p
		}
	}
	return 10 * p
}

// r1 rounds a coordinate to a tenth of a pixel, for short SVG attributes.
func r1(v float64) float64 { return math.Round(v*10) / 10 }
