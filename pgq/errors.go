package pgq

import (
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinel errors. Functions of this package and of package worker wrap them, so test
// with errors.Is.
var (
	// ErrInvalidArgument: PostgreSQL rejected an argument (SQLSTATE 22023 or 22P02),
	// e.g. a negative delay, an empty backoff or a payload that is not JSON. Nothing
	// was written.
	ErrInvalidArgument = errors.New("pgq: invalid argument")
	// ErrLeaseLost: the lease token no longer holds the job (SQLSTATE PQ001); another
	// worker may have it. The call was rejected and recorded in pgq.attempts.
	ErrLeaseLost = errors.New("pgq: lease lost")
	// ErrHandlerMissing: a SQL handler function does not exist (SQLSTATE 42883).
	ErrHandlerMissing = errors.New("pgq: handler function missing")
	// ErrNotFound: no job or failed job has that uuid.
	ErrNotFound = errors.New("pgq: not found")
	// ErrNotMigrated: the database has no pgq schema (SQLSTATE 3F000). Run
	// `pgq-worker migrate` (or Migrate) first.
	ErrNotMigrated = errors.New("pgq: database is not migrated: run `pgq-worker migrate`")
	// ErrBatchClosed: a batch has finished or was cancelled, so no job can be added to
	// it (SQLSTATE PQ003, pgq.add_to_batch), or it was cancelled, so its failed jobs
	// cannot be retried in it (pgq.retry_batch_failed). Nothing was written.
	ErrBatchClosed = errors.New("pgq: batch finished or cancelled")
	// ErrPermission: the login role may not make this call (SQLSTATE 42501), e.g. a
	// role that neither dispatched a batch nor runs one of its jobs adding to it
	// (pgq.add_to_batch, S93). Nothing was written.
	ErrPermission = errors.New("pgq: permission denied")
)

// Error is a PostgreSQL error raised by a pgq function, mapped to one of the sentinel
// errors above when its SQLSTATE has a meaning for pgq.
type Error struct {
	Kind    error  // one of the sentinels, or nil
	Code    string // SQLSTATE
	Message string
	err     error
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns both the sentinel kind and the underlying *pgconn.PgError.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{e.err}
	}
	return []error{e.Kind, e.err}
}

// MapError turns PostgreSQL errors of pgq functions into *Error and pgx.ErrNoRows into
// ErrNotFound; other errors are returned as they are. It is the one place SQLSTATEs
// are interpreted.
func MapError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound{err}
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return err
	}
	e := &Error{Code: pgErr.Code, Message: pgErr.Message, err: err}
	switch pgErr.Code {
	case "22023", "22P02":
		e.Kind = ErrInvalidArgument
	case "PQ001":
		e.Kind = ErrLeaseLost
	case "42883":
		e.Kind = ErrHandlerMissing
	case "3F000":
		e.Kind = ErrNotMigrated
	case "PQ003":
		e.Kind = ErrBatchClosed
	case "P0002":
		e.Kind = ErrNotFound
	case "42501":
		e.Kind = ErrPermission
	}
	return e
}

// notFound is pgx.ErrNoRows as pgq reports it: ErrNotFound, without the driver's
// wording, which says nothing to someone who asked for a job.
type notFound struct{ err error }

func (e notFound) Error() string   { return ErrNotFound.Error() }
func (e notFound) Unwrap() []error { return []error{ErrNotFound, e.err} }
