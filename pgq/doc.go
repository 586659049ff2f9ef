// Package pgq is the public Go API of pgq, a job queue that lives inside PostgreSQL.
//
// PostgreSQL holds the state machine: every state change of a job is one call of a
// function in schema pgq (see sql/migrations). This package dispatches jobs (also in a
// caller's transaction, so a rolled-back dispatch never exists), declares job classes
// and queues, migrates the schema, and reads and operates failed jobs. The worker that
// runs jobs lives in package worker.
//
// A Client is safe for concurrent use.
package pgq
