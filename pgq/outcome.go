package pgq

// Outcome is how an attempt ended, as pgq.attempts.outcome records it (S19). The values
// are those of the column's CHECK constraint; TestOutcomesMatchTheSchema keeps the two
// in step.
type Outcome string

// The outcomes of an attempt.
const (
	OutcomeSucceeded    Outcome = "succeeded"     // the handler returned without error
	OutcomeFailed       Outcome = "failed"        // the handler raised (or its middleware could not be evaluated)
	OutcomeReleased     Outcome = "released"      // the handler released the job, or a stopping worker gave it back
	OutcomeTurnedAway   Outcome = "turned_away"   // middleware sent it back before the handler ran (S26-S29)
	OutcomeTimedOut     Outcome = "timed_out"     // the handler ran past its timeout (S13)
	OutcomeLeaseExpired Outcome = "lease_expired" // the worker died or froze (S14)
	OutcomeDebounced    Outcome = "debounced"     // a newer dispatch of its key superseded it (S24)
	OutcomeExhausted    Outcome = "exhausted"     // picked up with no attempts or deadline left (S12)
	OutcomeInterrupted  Outcome = "interrupted"   // infrastructure interrupted it; given back, not counted (S35)
	OutcomeCancelled    Outcome = "cancelled"     // an operator cancelled it (pgq.cancel): not retried, not failed
)

// Outcomes lists every Outcome, in the order of the schema's CHECK constraint.
var Outcomes = []Outcome{OutcomeSucceeded, OutcomeFailed, OutcomeReleased, OutcomeTurnedAway,
	OutcomeTimedOut, OutcomeLeaseExpired, OutcomeDebounced, OutcomeExhausted, OutcomeInterrupted, OutcomeCancelled}
