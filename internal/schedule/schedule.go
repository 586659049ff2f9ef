// Package schedule computes the ticks of pgq's schedules (S60-S66): it parses their
// expressions with github.com/robfig/cron/v3 and adds what pgq promises beyond it, so
// that the worker's maintenance loop can tell which ticks are due and when the next
// one is.
//
// pgq.schedule() validates an expression in SQL (pgq._cron_problem) before it is
// stored; Parse here accepts exactly what that validator accepts, a test runs a corpus
// through both. What pgq accepts is robfig's language (configured for an optional
// seconds field and descriptors) with these refusals added, each checked on robfig's
// result or on the text it was given:
//
//   - characters outside ASCII (robfig would split fields at Unicode spaces);
//   - a TZ= or CRON_TZ= prefix: the time zone is the schedule's timezone argument;
//   - @every with a duration that is not whole numbers with units (30s, 1h30m, no sign,
//     no fraction), or that is under a second or not whole seconds (robfig silently
//     rounds those);
//   - a field that matches nothing (robfig accepts "," as an empty list);
//   - a day of month that never falls in the months given (0 0 30 2 *), with which
//     robfig's Next searches five years and gives up.
//
// Daylight saving (S63): robfig skips wall-clock times that a spring-forward gap
// removes and fires twice at times a fall-back repeats. pgq fires each wall-clock time
// of a schedule once: a skipped time fires at the instant it would have had at the
// offset before the gap (for Europe/Berlin, 02:30 fires at 03:30 CEST, as PostgreSQL
// reads '02:30' that day), and a repeated time fires at its first occurrence only,
// unless the hour field is * (every hour), in which case the schedule follows real time
// through the repeated hour. @every durations are absolute time and ignore the zone.
package schedule

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// MaxCatchUp is the most ticks one firing dispatches, the bound of catch_up 'all'
// (S62). It equals pgq._schedule_max_catch_up() (a test checks).
const MaxCatchUp = 100

// scanLimit is how many ticks Due walks one by one before it jumps to the last ones
// before now: a per-second schedule that was down for days has millions.
const scanLimit = 100_000

// Parser is robfig's parser as pgq configures it: five fields, or six with seconds
// first, and the descriptors (@hourly, @every 30s, ...).
var Parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig's mark on a field written as *, ? or */1 (SpecSchedule's top bit).
const starBit = 1 << 63

// everyDuration is the duration text pgq accepts after @every; robfig's
// time.ParseDuration decides the units.
var everyDuration = regexp.MustCompile(`^([0-9]+[a-z]+)+$`)

// Spec is a schedule's expression in its time zone. It is immutable and safe for
// concurrent use.
type Spec struct {
	expr  string
	loc   *time.Location
	cron  *cron.SpecSchedule // the fields, or nil for @every
	every time.Duration      // for @every: whole seconds, >= 1 s
}

// ErrInvalid is wrapped by the errors of Parse and New.
var ErrInvalid = errors.New("invalid schedule")

// Parse parses a cron expression or macro in UTC. It accepts what pgq._cron_problem
// accepts and errors (wrapping ErrInvalid) with the reason otherwise.
func Parse(expr string) (*Spec, error) {
	return parse(expr, time.UTC)
}

// New parses expr in the IANA time zone tz (time.LoadLocation).
func New(expr, tz string) (*Spec, error) {
	if tz == "" || tz == "Local" {
		return nil, fmt.Errorf("%w: time zone %q: give an IANA name such as Europe/Berlin", ErrInvalid, tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("%w: time zone %q: %v", ErrInvalid, tz, err)
	}
	return parse(expr, loc)
}

func parse(expr string, loc *time.Location) (*Spec, error) {
	bad := func(format string, args ...any) (*Spec, error) {
		return nil, fmt.Errorf("%w: cron expression %q: %s", ErrInvalid, expr, fmt.Sprintf(format, args...))
	}
	for i := 0; i < len(expr); i++ {
		if expr[i] >= 0x80 {
			return bad("only ASCII characters are allowed")
		}
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return bad("give the time zone as the schedule's timezone, not in the expression")
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		if !everyDuration.MatchString(rest) {
			return bad("@every takes whole numbers with units, such as 30s or 1h30m")
		}
	}
	sched, err := Parser.Parse(expr)
	if err != nil {
		return bad("%v", err)
	}
	s := &Spec{expr: expr, loc: loc}
	switch c := sched.(type) {
	case cron.ConstantDelaySchedule:
		d, _ := time.ParseDuration(strings.TrimPrefix(expr, "@every ")) // robfig parsed it already
		if d < time.Second || d%time.Second != 0 {
			return bad("@every needs whole seconds, at least 1s")
		}
		s.every = c.Delay
	case *cron.SpecSchedule:
		if p := fieldsProblem(c); p != "" {
			return bad("%s", p)
		}
		c.Location = loc // robfig's own is time.Local; never used for anything else
		s.cron = c
	default:
		return bad("unexpected schedule type %T", sched)
	}
	return s, nil
}

// daysIn is the most days each month can have (February: 29).
var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// fieldsProblem names a field that matches nothing, or a day of month that never falls
// in the months given; "" when the schedule fires.
func fieldsProblem(c *cron.SpecSchedule) string {
	for _, f := range []struct {
		name string
		bits uint64
	}{{"second", c.Second}, {"minute", c.Minute}, {"hour", c.Hour}, {"day of month", c.Dom}, {"month", c.Month}, {"day of week", c.Dow}} {
		if f.bits&^starBit == 0 {
			return fmt.Sprintf("the %s field matches nothing", f.name)
		}
	}
	// robfig requires both day fields when either is a star (a star matches every day),
	// and either one otherwise (a day of week always comes round).
	if c.Dow&starBit == 0 || c.Dom&starBit != 0 {
		return ""
	}
	for m := 1; m <= 12; m++ {
		for d := 1; d <= daysIn[m]; d++ {
			if c.Month&(1<<m) != 0 && c.Dom&(1<<d) != 0 {
				return ""
			}
		}
	}
	return "the day of month never falls in the months given"
}

// Every returns the interval of an @every schedule, 0 for a cron expression.
func (s *Spec) Every() time.Duration { return s.every }

// Location returns the schedule's time zone.
func (s *Spec) Location() *time.Location { return s.loc }

// Next returns the first tick strictly after t, or the zero time when the expression
// has none within five years. Ticks are whole seconds. See the package doc for
// daylight saving.
func (s *Spec) Next(t time.Time) time.Time {
	if s.every > 0 {
		return cron.Every(s.every).Next(t)
	}
	for {
		n := s.cron.Next(t)
		if g, ok := s.gapTick(t, n); ok {
			return g
		}
		if n.IsZero() || !s.repeated(n) {
			return n
		}
		t = n // the second occurrence of a wall-clock time that already fired
	}
}

// gapTick returns the first instant after t, and before n unless n is zero, at which a
// wall-clock time of the schedule that a spring-forward gap removed fires: the instant
// that wall-clock time has at the offset before the gap.
func (s *Spec) gapTick(t, n time.Time) (time.Time, bool) {
	limit := t.AddDate(5, 0, 0)
	if !n.IsZero() {
		limit = n
	}
	start, end := t.In(s.loc).ZoneBounds()
	// The transition that began t's period (t may be a tick inside its gap), then the
	// ones after it.
	for T := start; !T.IsZero() && T.Before(limit); {
		_, before := T.Add(-time.Nanosecond).In(s.loc).Zone()
		_, after := T.In(s.loc).Zone()
		if gap := time.Duration(after-before) * time.Second; gap > 0 && t.Before(T.Add(gap)) {
			wall := T.In(time.FixedZone("", before)) // the first wall-clock time the gap removed
			for d := time.Duration(0); d < gap; d += time.Second {
				g := T.Add(d)
				if !g.Before(limit) {
					break
				}
				if g.After(t) && s.matches(wall.Add(d)) {
					return g, true
				}
			}
		}
		if end.IsZero() {
			break
		}
		T = end
		_, end = T.In(s.loc).ZoneBounds()
	}
	return time.Time{}, false
}

// repeated tells whether tick n is the second occurrence of a wall-clock time that a
// fall-back repeats, in a schedule whose hour field is not * (those follow real time).
func (s *Spec) repeated(n time.Time) bool {
	if s.cron.Hour&starBit != 0 {
		return false
	}
	start, _ := n.In(s.loc).ZoneBounds()
	if start.IsZero() {
		return false
	}
	_, before := start.Add(-time.Nanosecond).In(s.loc).Zone()
	_, after := n.In(s.loc).Zone()
	overlap := time.Duration(before-after) * time.Second
	return overlap > 0 && n.Before(start.Add(overlap))
}

// matches tells whether the wall-clock time w (its fields as they read) is one of the
// schedule's, by robfig's rules for the two day fields.
func (s *Spec) matches(w time.Time) bool {
	c := s.cron
	if c.Second&(1<<w.Second()) == 0 || c.Minute&(1<<w.Minute()) == 0 || c.Hour&(1<<w.Hour()) == 0 ||
		c.Month&(1<<int(w.Month())) == 0 {
		return false
	}
	dom, dow := c.Dom&(1<<w.Day()) != 0, c.Dow&(1<<int(w.Weekday())) != 0
	if c.Dom&starBit != 0 || c.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// Due returns the ticks from first (the schedule's next_run_at, itself a tick) up to
// and including now, in order: the last keep of them at most. left is how many earlier
// due ticks it left out (a lower bound when there were more than 100,000), and next the
// first tick after now (zero when there is none within five years).
func (s *Spec) Due(first, now time.Time, keep int) (ticks []time.Time, left int64, next time.Time) {
	if first.After(now) {
		return nil, 0, first
	}
	if s.every > 0 {
		n := int64(now.Sub(first)/s.every) + 1
		k := min(n, int64(keep))
		for i := n - k; i < n; i++ {
			ticks = append(ticks, first.Add(time.Duration(i)*s.every))
		}
		return ticks, n - k, first.Add(time.Duration(n) * s.every)
	}
	r := ring{keep: keep}
	t := first
	for i := 0; !t.IsZero() && !t.After(now); i++ {
		if i == scanLimit {
			return s.tail(t, now, keep, r)
		}
		r.push(t)
		t = s.Next(t)
	}
	return r.ticks(), r.count - int64(len(r.buf)), t
}

// tail finds the last keep ticks up to now when more than scanLimit are due: it looks
// back from now over twice the time the last keep ticks walked took, widening until
// that holds keep ticks or reaches back to t. Every tick walked before t is left out.
func (s *Spec) tail(t, now time.Time, keep int, walked ring) ([]time.Time, int64, time.Time) {
	buf := walked.ticks()
	span := buf[len(buf)-1].Sub(buf[0])
	if span <= 0 {
		span = time.Duration(keep) * time.Second
	}
	for {
		// Once the window would reach back to t, walk from t: span never outgrows the
		// time between t and now, so doubling it cannot overflow.
		from := t.Add(-time.Second)
		if span < now.Sub(t)/2 {
			from = now.Add(-2 * span)
		}
		r := ring{keep: keep}
		u := s.Next(from.Add(-time.Second))
		for ; !u.IsZero() && !u.After(now); u = s.Next(u) {
			r.push(u)
		}
		if len(r.buf) >= keep || !from.After(t) {
			return r.ticks(), walked.count, u
		}
		span *= 4
	}
}

// ring keeps the last keep ticks pushed, and counts them all.
type ring struct {
	keep  int
	buf   []time.Time
	head  int // index of the oldest once buf is full
	count int64
}

func (r *ring) push(t time.Time) {
	r.count++
	if len(r.buf) < r.keep {
		r.buf = append(r.buf, t)
		return
	}
	r.buf[r.head] = t
	r.head = (r.head + 1) % r.keep
}

func (r *ring) ticks() []time.Time {
	return append(append([]time.Time(nil), r.buf[r.head:]...), r.buf[:r.head]...)
}
