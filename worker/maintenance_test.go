package worker

import "testing"

// A vacuum under load leaves the rows that died while it ran; that is not a held
// horizon, and must not make the worker vacuum less often (S47, S77). What a held
// horizon leaves grows past them. Figures from a benchmark at 20,000 jobs/s, where the
// rule before this one (vacuumAfter dead rows left) took load for a hold every 10 s.
func TestS47S77HorizonHeldOnlyWhenTheVacuumLeftMoreThanDiedMeanwhile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		left, died int64
		held       bool
	}{
		{"held: idle queue, nothing died meanwhile", 12_000, 0, true},
		{"held: 5 s of 20,000 jobs/s, a 0.5 s vacuum", 200_000, 20_000, true},
		{"load: 20,000 jobs/s, a 0.5 s vacuum", 19_787, 20_004, false},
		{"load: a backend's report came in just after the vacuum", 19_787, 8_000, false},
		{"clean: fewer left than vacuumAfter", 500, 0, false},
	} {
		if got := horizonHeld(c.left, c.died, 10_000); got != c.held {
			t.Errorf("%s: horizonHeld(%d, %d) = %v, want %v", c.name, c.left, c.died, got, c.held)
		}
	}
}
