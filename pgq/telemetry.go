package pgq

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName is the name of pgq's tracer and meter (the instrumentation scope
// of its spans and metrics).
const InstrumentationName = "github.com/pgq-dev/pgq"

// MessagingSystem is the value of the attribute messaging.system on pgq's spans and
// metrics.
const MessagingSystem = "pgq"

// ClientOption configures a Client (NewClient).
type ClientOption func(*clientConfig)

type clientConfig struct {
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
}

// TracerProvider makes the client trace its dispatches: a "send {queue}" span of kind
// PRODUCER for each Dispatch or DispatchMany (of the caller's span in ctx, if any), whose
// W3C trace context is stored with the jobs (S110), so that a worker's span of each
// attempt links to it. Without it the client makes no span and stores no context of its
// own (a SET LOCAL pgq.traceparent in the caller's transaction still applies).
func TracerProvider(tp trace.TracerProvider) ClientOption {
	return func(c *clientConfig) { c.tracerProvider = tp }
}

// MeterProvider makes the client count the jobs it dispatches
// (messaging.client.sent.messages). Without it the client records nothing.
func MeterProvider(mp metric.MeterProvider) ClientOption {
	return func(c *clientConfig) { c.meterProvider = mp }
}

// telemetry is a client's tracer and instruments; nil when neither provider was given.
type telemetry struct {
	tracer trace.Tracer        // nil: no spans
	sent   metric.Int64Counter // nil: no metrics
}

func newTelemetry(c clientConfig) (*telemetry, error) {
	if c.tracerProvider == nil && c.meterProvider == nil {
		return nil, nil
	}
	t := &telemetry{}
	if c.tracerProvider != nil {
		t.tracer = c.tracerProvider.Tracer(InstrumentationName)
	}
	if c.meterProvider != nil {
		sent, err := c.meterProvider.Meter(InstrumentationName).Int64Counter("messaging.client.sent.messages",
			metric.WithUnit("{message}"), metric.WithDescription("Jobs dispatched (uuid.Nil ones, dropped as unique duplicates, not counted)."))
		if err != nil {
			return nil, fmt.Errorf("pgq: NewClient: meter: %w", err)
		}
		t.sent = sent
	}
	return t, nil
}

// traceContext is the W3C trace context to store with a dispatch's jobs.
type traceContext struct{ parent, state *string }

// send starts the PRODUCER span of a dispatch of n jobs named job and returns the
// option that stores its context with them, and the function that ends it. On a nil
// telemetry it does nothing.
func (t *telemetry) send(ctx context.Context, job string, n int, opts []Option) (Option, func([]uuid.UUID, error)) {
	if t == nil {
		return nil, nil
	}
	queue := collect(opts).queue
	var span trace.Span
	var traceOpt Option
	if t.tracer != nil {
		name := "send"
		attrs := []attribute.KeyValue{
			semconv.MessagingSystemKey.String(MessagingSystem),
			semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("send"),
			attribute.String("pgq.job.name", job),
		}
		if queue != nil {
			name += " " + *queue
			attrs = append(attrs, semconv.MessagingDestinationName(*queue))
		}
		if n != 1 {
			attrs = append(attrs, semconv.MessagingBatchMessageCount(n))
		}
		ctx, span = t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, carrier)
		if tp := carrier["traceparent"]; tp != "" {
			tc := traceContext{parent: &tp}
			if ts := carrier["tracestate"]; ts != "" {
				tc.state = &ts
			}
			traceOpt = func(s *settings) { s.trace = tc }
		}
	}
	return traceOpt, func(ids []uuid.UUID, err error) {
		if span != nil {
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
			} else if len(ids) == 1 && ids[0] != (uuid.UUID{}) {
				span.SetAttributes(semconv.MessagingMessageID(ids[0].String()))
			}
			span.End()
		}
		if t.sent != nil {
			sent := 0
			for _, id := range ids {
				if id != (uuid.UUID{}) {
					sent++
				}
			}
			attrs := []attribute.KeyValue{semconv.MessagingSystemKey.String(MessagingSystem), semconv.MessagingOperationName("send")}
			if queue != nil {
				attrs = append(attrs, semconv.MessagingDestinationName(*queue))
			}
			if err != nil {
				attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(err)))
				sent = n // the attempt to send them, as the convention counts it
			}
			t.sent.Add(ctx, int64(sent), metric.WithAttributes(attrs...))
		}
	}
}

// errorType is the error.type of a failed dispatch: the pgq error it is, or its Go type.
func errorType(err error) string {
	switch {
	case errors.Is(err, ErrInvalidArgument):
		return "invalid_argument"
	case errors.Is(err, ErrNotMigrated):
		return "not_migrated"
	case errors.Is(err, ErrPermission):
		return "permission_denied"
	}
	return fmt.Sprintf("%T", err)
}

// tracedOne is Dispatch (tx nil) or DispatchTx inside the client's send span.
func (c *Client) tracedOne(ctx context.Context, tx pgx.Tx, job string, args any, opts []Option) (uuid.UUID, error) {
	opts = append(argOptions(args), opts...)
	traceOpt, end := c.tel.send(ctx, job, 1, opts)
	if traceOpt != nil {
		opts = append(opts, traceOpt)
	}
	q := c.q
	if tx != nil {
		q = q.WithTx(tx)
	}
	ids, err := dispatchBatch(ctx, q, job, []any{args}, opts)
	end(ids, err)
	if err != nil {
		return uuid.Nil, err
	}
	return ids[0], nil
}

// tracedMany is DispatchMany (tx nil) or DispatchManyTx inside the client's send span.
func (c *Client) tracedMany(ctx context.Context, tx pgx.Tx, job string, args []any, opts []Option) ([]uuid.UUID, error) {
	traceOpt, end := c.tel.send(ctx, job, len(args), opts)
	if traceOpt != nil {
		opts = append(opts[:len(opts):len(opts)], traceOpt)
	}
	var ids []uuid.UUID
	var err error
	switch {
	case collect(opts).byCopy:
		ids, err = c.dispatchCopy(ctx, tx, job, args, opts)
	case tx != nil:
		ids, err = dispatchMany(ctx, c.q.WithTx(tx), job, args, opts)
	default:
		ids, err = dispatchMany(ctx, c.q, job, args, opts)
	}
	end(ids, err)
	return ids, err
}
