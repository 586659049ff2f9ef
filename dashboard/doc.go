// Package dashboard is pgq's web dashboard: every job's story, and the operator's
// actions on it, in a browser. Handler returns an http.Handler to mount in an
// application; `pgq-worker dashboard` serves the same handler on its own.
//
// Pages (server-rendered HTML, templates and stylesheet embedded, no JavaScript):
//
//   - /            overview: per queue ready, scheduled, retrying, running, failed and
//     the oldest wait, paused queues marked; the stalled chains and batches; the
//     running batches with their progress; attempts per minute by outcome over the
//     last hour (SVG); the latest operator actions
//   - /jobs        jobs by state (?state=ready|scheduled|retrying|running|failed),
//     filtered by queue and job name, searched by uuid or by a payload field, paged by
//     keyset
//   - /jobs/{uuid} one job: payload, frozen settings, and a timeline of its attempts
//     and of the operators' actions on it; the batch or chain it belongs to
//   - /batches     batches by state, newest first: progress, counts, callbacks
//   - /batches/{id} one batch: figures, callbacks, chains, and its jobs by state
//   - /chains      chains by state, newest first
//   - /chains/{id} one chain: its steps in order and what became of each, its
//     on_failure job
//   - /locks       unique locks, debounce tokens, overlap leases, rate limits, circuits
//   - /fair        each fair queue's keys with live jobs (pgq.fair_keys): weight, ready
//     jobs and the oldest one's wait, waiting later, running; the first page of them
//   - /workers     workers seen lately, what each runs, its last lease renewal, and the
//     idle sessions napping on each queue
//   - /check       the findings of pgq.check
//   - /history     the operators' actions (pgq.actions)
//
// Actions are POST requests, each one call of pgq's SQL function for it (pgq.run_now,
// pgq.cancel, pgq.retry_failed, pgq.forget_failed, pgq.flush_failed, pgq.pause_queue,
// pgq.resume_queue, pgq.retry_batch_failed, pgq.cancel_batch), recorded in pgq.actions
// with the database role that took it and, as on_behalf_of, the person the dashboard
// acted for (Options.Actor). Forget, cancel, the bulk retry and flush, and a batch's
// retry and cancel ask for confirmation first. Every POST passes
// net/http's CrossOriginProtection: a request a browser sends from another origin is
// refused (403). With Options.ReadOnly no action is shown and every POST is refused.
//
// The dashboard reads the views for psql (pgq.ready, pgq.failed, pgq.batches,
// pgq.chains, pgq.batch_jobs, pgq.stalled, …), its own views (pgq.job_settings,
// pgq.failed_job_settings, pgq.queue_overview), pgq.attempts, pgq.actions, pgq.queues,
// pgq.job_classes, pgq.job_ends and pgq.callbacks, so a role that may only SELECT those
// can serve it read-only. Payloads come only through the views for psql:
// where they show a payload as NULL (a role without the right to read payloads), the
// page says it is hidden. Templates escape everything they print.
//
// The handler has no authentication of its own: mount it behind the application's, or
// wrap it in BasicAuth.
package dashboard
