// Package faults holds the fault-injection tests of pgq (rules S34-S37 of
// docs/SEMANTICS.md): PostgreSQL restarted under a drain, worker sessions terminated,
// workers killed or frozen, role-level timeouts, connection slots held. Each test runs
// the real binaries (pgq-worker, and faults/internal/gohandlers for Go handlers) against
// a private cluster of its own (internal/pgcluster) and asserts exact counts.
//
// Sizes are small by default, so the package fits in CI; PGQ_FAULTS_FULL=1 runs the
// full sizes. Every test logs its figures in one line starting with "FIGURES", for
// bench/RESULTS.md.
package faults
