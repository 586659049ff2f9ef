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
// PRODUCER ("send" when the dispatch names no queue) for each Dispatch, DispatchMany,
// DispatchChain and DispatchBatch (and their Tx forms), a child of the caller's span in
// ctx if any, whose W3C trace context is stored with the jobs (S105; every step of a
// chain and member of a batch, S107), so that a worker's span of each attempt links to
// it. Without it the client makes no span and stores no context of its
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

// traceContext is the W3C trace context to store with a dispatch's jobs (S105); nil
// fields: none of the client's own.
type traceContext struct{ parent, state *string }

// send starts the PRODUCER span of a dispatch of n jobs to queue (nil: the class
// decides) and returns the trace context to store with them, and the function that ends
// the span with the dispatch's error and more attributes. attrs are added to the span.
// On a nil telemetry or without a TracerProvider it does nothing.
func (t *telemetry) send(ctx context.Context, queue *string, n int, attrs ...attribute.KeyValue) (traceContext, func(error, ...attribute.KeyValue)) {
	var tc traceContext
	if t == nil || t.tracer == nil {
		return tc, func(error, ...attribute.KeyValue) {}
	}
	name := "send"
	attrs = append(attrs,
		semconv.MessagingSystemKey.String(MessagingSystem),
		semconv.MessagingOperationTypeSend,
		semconv.MessagingOperationName("send"))
	if queue != nil {
		name += " " + *queue
		attrs = append(attrs, semconv.MessagingDestinationName(*queue))
	}
	if n != 1 {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(n))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if tp := carrier["traceparent"]; tp != "" {
		tc.parent = &tp
		if ts := carrier["tracestate"]; ts != "" {
			tc.state = &ts
		}
	}
	return tc, func(err error, more ...attribute.KeyValue) {
		span.SetAttributes(more...)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
		}
		span.End()
	}
}

// count adds the jobs a dispatch to queue (nil: the class decides) sent to
// messaging.client.sent.messages; after an error, the n it tried to send, with
// error.type, as the convention counts them.
func (t *telemetry) count(ctx context.Context, queue *string, sent, n int, err error) {
	if t == nil || t.sent == nil {
		return
	}
	attrs := []attribute.KeyValue{semconv.MessagingSystemKey.String(MessagingSystem), semconv.MessagingOperationName("send")}
	if queue != nil {
		attrs = append(attrs, semconv.MessagingDestinationName(*queue))
	}
	if err != nil {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(err)))
		sent = n
	}
	t.sent.Add(ctx, int64(sent), metric.WithAttributes(attrs...))
}

// sentOf is how many of ids are jobs (uuid.Nil: a unique duplicate dropped), and the
// attribute messaging.message.id when there is one job.
func sentOf(ids []uuid.UUID) (int, []attribute.KeyValue) {
	n := 0
	for _, id := range ids {
		if id != uuid.Nil {
			n++
		}
	}
	if len(ids) == 1 && n == 1 {
		return n, []attribute.KeyValue{semconv.MessagingMessageID(ids[0].String())}
	}
	return n, nil
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

// withTrace returns opts with tc stored, when there is one.
func withTrace(opts []Option, tc traceContext) []Option {
	if tc.parent == nil {
		return opts
	}
	return append(opts[:len(opts):len(opts)], func(s *settings) { s.trace = tc })
}

// tracedOne is Dispatch (tx nil) or DispatchTx inside the client's send span.
func (c *Client) tracedOne(ctx context.Context, tx pgx.Tx, job string, args any, opts []Option) (uuid.UUID, error) {
	opts = append(argOptions(args), opts...)
	tc, end := c.tel.send(ctx, collect(opts).queue, 1, attribute.String("pgq.job.name", job))
	q := c.q
	if tx != nil {
		q = q.WithTx(tx)
	}
	ids, err := dispatchBatch(ctx, q, job, []any{args}, withTrace(opts, tc))
	sent, attrs := sentOf(ids)
	end(err, attrs...)
	c.tel.count(ctx, collect(opts).queue, sent, 1, err)
	if err != nil {
		return uuid.Nil, err
	}
	return ids[0], nil
}

// tracedMany is DispatchMany (tx nil) or DispatchManyTx inside the client's send span.
func (c *Client) tracedMany(ctx context.Context, tx pgx.Tx, job string, args []any, opts []Option) ([]uuid.UUID, error) {
	tc, end := c.tel.send(ctx, collect(opts).queue, len(args), attribute.String("pgq.job.name", job))
	opts = withTrace(opts, tc)
	var ids []uuid.UUID
	var err error
	switch {
	case collect(opts).byCopy:
		ids, err = c.dispatchCopy(ctx, tx, job, args, opts)
	default:
		ids, err = c.dispatchMany(ctx, tx, job, args, opts)
	}
	sent, attrs := sentOf(ids)
	end(err, attrs...)
	c.tel.count(ctx, collect(opts).queue, sent, len(args), err)
	return ids, err
}

// tracedWorkflow runs the dispatch of a chain or a batch (kind) of n entries inside the
// client's send span, whose context dispatch stores with every job of it (S107). The
// span carries the chain's or batch's id as pgq.chain.id or pgq.batch.id.
func (c *Client) tracedWorkflow(ctx context.Context, kind, queue string, n int, dispatch func(traceContext) (uuid.UUID, error)) (uuid.UUID, error) {
	if c.tel == nil {
		return dispatch(traceContext{})
	}
	tc, end := c.tel.send(ctx, nonEmpty(queue), n, attribute.String("pgq.workflow", kind))
	id, err := dispatch(tc)
	if err != nil {
		end(err)
	} else {
		end(nil, attribute.String("pgq."+kind+".id", id.String()))
	}
	sent := n // a batch's members are queued now; a chain's first step only
	if kind == "chain" {
		sent = 1
	}
	c.tel.count(ctx, nonEmpty(queue), sent, sent, err)
	return id, err
}
