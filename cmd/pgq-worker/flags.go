package main

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Numeric flags are checked before anything is done, against the bounds the SQL (or
// the worker) applies, so a bad value is a usage error that names the flag instead of
// a database error, or worse, a value silently replaced by a default. Counts and
// seconds that reach SQL are PostgreSQL int, hence the int32 bounds.

// checkInt checks that --name's value v lies in [lo, hi].
func checkInt(name string, v, lo, hi int) error {
	if v < lo {
		return usagef("--%s must be >= %d, got %d", name, lo, v)
	}
	if v > hi {
		return usagef("--%s must be <= %d, got %d", name, hi, v)
	}
	return nil
}

// checkCount checks a count or a number of seconds that reaches SQL as int: >= lo.
func checkCount(name string, v, lo int) error { return checkInt(name, v, lo, math.MaxInt32) }

// maxSeconds is the longest time.Duration in seconds.
const maxSeconds = float64(math.MaxInt64) / float64(time.Second)

// checkSeconds converts --name's fractional seconds to a duration, which must be
// positive, or also zero when zeroOK.
func checkSeconds(name string, v float64, zeroOK bool) (time.Duration, error) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, usagef("--%s must be a number of seconds, got %v", name, v)
	case v < 0 || v == 0 && !zeroOK:
		if zeroOK {
			return 0, usagef("--%s must be >= 0, got %v", name, v)
		}
		return 0, usagef("--%s must be > 0, got %v", name, v)
	case v > maxSeconds:
		return 0, usagef("--%s must be <= %.0f seconds, got %v", name, maxSeconds, v)
	}
	d := time.Duration(v * float64(time.Second))
	if d == 0 && !zeroOK {
		return 0, usagef("--%s must be > 0, got %v (less than a nanosecond)", name, v)
	}
	return d, nil
}

// checkDuration checks that --name's duration is not negative.
func checkDuration(name string, d time.Duration) error {
	if d < 0 {
		return usagef("--%s must be >= 0, got %s", name, d)
	}
	return nil
}

// parseBackoff parses --name's comma-separated whole seconds >= 0 (e.g. 10,60,300).
func parseBackoff(name, s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, p := range splitList(s) {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > math.MaxInt32 {
			return nil, usagef("--%s takes whole seconds >= 0 separated by commas (e.g. 10,60,300), got %q", name, p)
		}
		out = append(out, time.Duration(n)*time.Second)
	}
	if len(out) == 0 {
		return nil, usagef("--%s takes whole seconds >= 0 separated by commas (e.g. 10,60,300), got %q", name, s)
	}
	return out, nil
}

// firstErr returns the first error that is not nil.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func firstLine(s string, max int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > max {
		s = s[:max-1] + "…"
	}
	return s
}
