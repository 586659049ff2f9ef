package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgq-dev/pgq/internal/dbsqlc"
	"github.com/pgq-dev/pgq/pgq"
)

// otelOptions are the OpenTelemetry options of a worker (WithTracerProvider and the rest).
type otelOptions struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	child          bool // the process span is a child of the dispatch's context, not linked to it
	noClientSpans  bool // no CLIENT spans for pgq's own calls
}

// WithTracerProvider makes the worker trace: a "process {queue}" span of kind CONSUMER
// for each attempt, linked to the context its job was dispatched in (S105; a child of
// it with WithTraceChild), with the messaging attributes (messaging.system pgq,
// messaging.destination.name the queue, messaging.message.id the job's uuid,
// messaging.operation.type process), pgq.job.name, pgq.job.attempt, and for a SQL
// handler code.function.name; a failed attempt has the error status and error.type.
// The handler's context carries the span, so the handler's own spans are its children.
// pgq's own calls (pgq.reserve, pgq.complete, pgq.fail_many, pgq.heartbeat) are
// CLIENT spans, unless WithoutClientSpans. Without it the worker makes no span.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return errors.New("WithTracerProvider: nil provider")
		}
		c.otel.tracerProvider = tp
		return nil
	}
}

// WithMeterProvider makes the worker record OpenTelemetry metrics beside the Prometheus
// ones: messaging.client.consumed.messages (attempts started), messaging.process.duration
// (handler run time, with error.type for failed attempts), and, read from
// pgq.queue_stats when the provider collects, pgq.queue.jobs (jobs per queue and state)
// and pgq.queue.oldest_wait (seconds the oldest ready job of each queue has waited).
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return errors.New("WithMeterProvider: nil provider")
		}
		c.otel.meterProvider = mp
		return nil
	}
}

// WithTraceChild makes each attempt's process span a child of the context the job was
// dispatched in, rather than a span of its own trace linked to it: the attempts then
// show inside the dispatching request's trace.
func WithTraceChild() Option {
	return func(c *config) error { c.otel.child = true; return nil }
}

// WithoutClientSpans leaves out the CLIENT spans of pgq's own calls (reserve, complete,
// fail, heartbeat): only the attempts are traced.
func WithoutClientSpans() Option {
	return func(c *config) error { c.otel.noClientSpans = true; return nil }
}

// telemetry is a worker's tracer and instruments. A nil *telemetry records nothing, at
// the cost of a nil check.
type telemetry struct {
	// Set by newTelemetry; read-only.
	tracer   trace.Tracer // nil: no spans
	child    bool
	client   bool                    // CLIENT spans of pgq's own calls
	consumed metric.Int64Counter     // nil: no metrics
	duration metric.Float64Histogram // nil: no metrics
	gauges   metric.Registration     // the queue gauges' callback; nil: none
}

// newTelemetry builds the worker's telemetry from its options, nil when it has no
// provider; q reads pgq.queue_stats for the queue gauges.
func newTelemetry(o otelOptions, q *dbsqlc.Queries) (*telemetry, error) {
	if o.tracerProvider == nil && o.meterProvider == nil {
		return nil, nil
	}
	t := &telemetry{child: o.child}
	if o.tracerProvider != nil {
		t.tracer = o.tracerProvider.Tracer(pgq.InstrumentationName)
		t.client = !o.noClientSpans
	}
	if o.meterProvider != nil {
		if err := t.instruments(o.meterProvider.Meter(pgq.InstrumentationName), q); err != nil {
			return nil, fmt.Errorf("meter: %w", err)
		}
	}
	return t, nil
}

func (t *telemetry) instruments(m metric.Meter, q *dbsqlc.Queries) error {
	var err error
	if t.consumed, err = m.Int64Counter("messaging.client.consumed.messages",
		metric.WithUnit("{message}"), metric.WithDescription("Attempts started: each is one job delivered to its handler.")); err != nil {
		return err
	}
	if t.duration, err = m.Float64Histogram("messaging.process.duration", metric.WithUnit("s"),
		metric.WithDescription("Handler run time of each attempt."),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)); err != nil {
		return err
	}
	depth, err := m.Int64ObservableGauge("pgq.queue.jobs", metric.WithUnit("{job}"),
		metric.WithDescription("Jobs per queue and state (ready, scheduled, retrying, running, failed), from pgq.queue_stats."))
	if err != nil {
		return err
	}
	wait, err := m.Float64ObservableGauge("pgq.queue.oldest_wait", metric.WithUnit("s"),
		metric.WithDescription("How long the oldest ready job of each queue has waited, from pgq.queue_stats."))
	if err != nil {
		return err
	}
	t.gauges, err = m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		rows, err := q.QueueStatsList(ctx)
		if err != nil {
			return fmt.Errorf("pgq queue gauges: %w", err)
		}
		for _, r := range rows {
			queue := semconv.MessagingDestinationName(r.Queue)
			for _, s := range []struct {
				state string
				n     int64
			}{{"ready", r.Ready}, {"scheduled", r.Scheduled}, {"retrying", r.Retrying}, {"running", r.Running}, {"failed", r.Failed}} {
				o.ObserveInt64(depth, s.n, metric.WithAttributes(queue, attribute.String("pgq.job.state", s.state)))
			}
			o.ObserveFloat64(wait, r.OldestWait.Seconds(), metric.WithAttributes(queue))
		}
		return nil
	}, depth, wait)
	return err
}

// close unregisters the queue gauges' callback.
func (t *telemetry) close() {
	if t != nil && t.gauges != nil {
		_ = t.gauges.Unregister()
	}
}

// dispatchContext is the span context row's job was dispatched in (S105); invalid when
// it has none.
func dispatchContext(row *dbsqlc.JobReserveRow) trace.SpanContext {
	if row.Traceparent == nil {
		return trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{"traceparent": *row.Traceparent}
	if row.Tracestate != nil {
		carrier["tracestate"] = *row.Tracestate
	}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
}

// process starts the CONSUMER span of a's attempt and counts it; the handler runs under
// the context returned. end finishes both with the attempt's error.
func (t *telemetry) process(ctx context.Context, a *active) (context.Context, trace.Span) {
	row := a.row
	queue := semconv.MessagingDestinationName(row.Queue)
	if t.consumed != nil {
		t.consumed.Add(ctx, 1, metric.WithAttributes(semconv.MessagingSystemKey.String(pgq.MessagingSystem),
			semconv.MessagingOperationName("process"), queue))
	}
	if t.tracer == nil {
		return ctx, nil
	}
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKey.String(pgq.MessagingSystem),
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		queue,
		semconv.MessagingMessageID(row.Uuid.String()),
		attribute.String("pgq.job.name", row.Job),
		attribute.Int("pgq.job.attempt", int(row.Attempts)),
	}
	if row.Handler != nil {
		attrs = append(attrs, semconv.CodeFunctionName(*row.Handler))
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...)}
	parent := ctx
	if sc := dispatchContext(row); sc.IsValid() {
		if t.child {
			parent = trace.ContextWithRemoteSpanContext(ctx, sc)
		} else {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	return t.tracer.Start(parent, "process "+row.Queue, opts...)
}

// processed ends the span of a's attempt (nil: none) and records its duration. err is
// what the handler returned; a release (ReleaseError) is not a failure.
func (t *telemetry) processed(ctx context.Context, span trace.Span, a *active, err error) {
	var errType string
	if err != nil && !errors.Is(err, errCompletedInTx) {
		if _, ok := asRelease(err); !ok {
			errType = attemptErrorType(ctx, err)
		}
	}
	if t.duration != nil {
		attrs := []attribute.KeyValue{semconv.MessagingSystemKey.String(pgq.MessagingSystem),
			semconv.MessagingOperationName("process"), semconv.MessagingDestinationName(a.row.Queue)}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
		t.duration.Record(ctx, a.returned.Sub(a.started).Seconds(), metric.WithAttributes(attrs...))
	}
	if span == nil {
		return
	}
	if errType != "" {
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// attemptErrorType is the error.type of a failed attempt: why the worker cut it short, or
// the kind of exception.
func attemptErrorType(ctx context.Context, err error) string {
	var panicErr *PanicError
	var sqlErr *sqlHandlerError
	var interrupted *interruptedError
	var setup *setupError
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errTimeout) || errors.Is(err, errTimeout):
		return "timeout"
	case errors.Is(cause, errShutdown):
		return "shutdown"
	case errors.Is(cause, errCancelled):
		return "cancelled"
	case errors.Is(cause, errOverlapLost):
		return "overlap_lost"
	case errors.As(err, &panicErr):
		return "panic"
	case errors.As(err, &sqlErr):
		return "sql_exception"
	case errors.As(err, &interrupted):
		return "interrupted"
	case errors.As(err, &setup):
		return "setup_failed"
	case errors.Is(err, pgq.ErrLeaseLost):
		return "lease_lost"
	}
	return fmt.Sprintf("%T", err)
}

// call starts the CLIENT span of one of pgq's own calls (pgq.reserve, pgq.complete,
// pgq.fail_many, pgq.heartbeat) for n jobs, and returns the function that ends it with
// the jobs the answer had (-1: as sent) and its error. On a nil telemetry, or
// WithoutClientSpans, it costs nothing.
func (t *telemetry) call(ctx context.Context, function string, n int) func(int, error) {
	if t == nil || !t.client {
		return noCall
	}
	_, span := t.tracer.Start(ctx, function, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		semconv.DBSystemNamePostgreSQL,
		semconv.DBOperationName("SELECT"),
		semconv.DBStoredProcedureName(function),
		semconv.MessagingSystemKey.String(pgq.MessagingSystem),
	))
	return func(got int, err error) {
		if got < 0 {
			got = n
		}
		span.SetAttributes(semconv.MessagingBatchMessageCount(got))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(semconv.ErrorTypeKey.String(fmt.Sprintf("%T", err)))
		}
		span.End()
	}
}

func noCall(int, error) {}
