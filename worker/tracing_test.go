package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

// traced is a test's tracer provider, whose spans end up in memory, and a client that
// traces with it.
type traced struct {
	bundle
	spans *tracetest.InMemoryExporter
	tp    *sdktrace.TracerProvider
}

func setupTraced(t *testing.T, opts ...pgq.ClientOption) traced {
	t.Helper()
	b := setup(t)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	client, err := pgq.NewClient(b.db.Pool, append([]pgq.ClientOption{pgq.TracerProvider(tp)}, opts...)...)
	require.NoError(t, err)
	b.client = client
	return traced{bundle: b, spans: spans, tp: tp}
}

// named returns the ended spans called name, in the order they ended.
func (tr traced) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range tr.spans.GetSpans() {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func attrsOf(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// S105, S108: a Go dispatch inside a request's span makes a send span (PRODUCER) of that trace,
// whose context is stored with the job (S105); the worker's attempt is a process span
// (CONSUMER) linked to it, with the messaging attributes, and the handler's own spans
// are its children. pgq's reserve and complete are CLIENT spans; WithTraceChild makes
// the process span a child of the send span instead.
func TestS105S108ProcessSpanLinksToTheDispatch(t *testing.T) {
	t.Parallel()
	for _, child := range []bool{false, true} {
		t.Run(map[bool]string{false: "Link", true: "Child"}[child], func(t *testing.T) {
			t.Parallel()
			tr := setupTraced(t)
			ctx, request := tr.tp.Tracer("app").Start(context.Background(), "request")
			id, err := tr.client.Dispatch(ctx, "mail", order{OrderID: 7}, pgq.Queue("mail"))
			require.NoError(t, err)
			request.End()

			opts := []worker.Option{worker.WithTracerProvider(tr.tp), worker.WithQueues("mail"), worker.WithStopWhenEmpty()}
			if child {
				opts = append(opts, worker.WithTraceChild())
			}
			w := tr.worker(t, opts...)
			worker.Handle(w, "mail", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
				_, s := tr.tp.Tracer("app").Start(ctx, "render")
				s.End()
				return nil
			}})
			drain(t, w)

			send := tr.named("send mail")
			require.Len(t, send, 1)
			require.Equal(t, trace.SpanKindProducer, send[0].SpanKind)
			require.Equal(t, request.SpanContext().TraceID(), send[0].SpanContext.TraceID())
			require.Equal(t, request.SpanContext().SpanID(), send[0].Parent.SpanID())
			sa := attrsOf(send[0])
			require.Equal(t, "pgq", sa["messaging.system"].AsString())
			require.Equal(t, "send", sa["messaging.operation.type"].AsString())
			require.Equal(t, "mail", sa["messaging.destination.name"].AsString())
			require.Equal(t, id.String(), sa["messaging.message.id"].AsString())

			process := tr.named("process mail")
			require.Len(t, process, 1)
			p := process[0]
			require.Equal(t, trace.SpanKindConsumer, p.SpanKind)
			if child {
				require.Empty(t, p.Links)
				require.Equal(t, send[0].SpanContext.SpanID(), p.Parent.SpanID())
				require.Equal(t, send[0].SpanContext.TraceID(), p.SpanContext.TraceID())
			} else {
				require.Len(t, p.Links, 1)
				require.Equal(t, send[0].SpanContext.TraceID(), p.Links[0].SpanContext.TraceID())
				require.Equal(t, send[0].SpanContext.SpanID(), p.Links[0].SpanContext.SpanID())
				require.NotEqual(t, send[0].SpanContext.TraceID(), p.SpanContext.TraceID(), "a trace of its own")
			}
			pa := attrsOf(p)
			require.Equal(t, "pgq", pa["messaging.system"].AsString())
			require.Equal(t, "process", pa["messaging.operation.type"].AsString())
			require.Equal(t, "mail", pa["messaging.destination.name"].AsString())
			require.Equal(t, id.String(), pa["messaging.message.id"].AsString())
			require.Equal(t, "mail", pa["pgq.job.name"].AsString())
			require.Equal(t, int64(1), pa["pgq.job.attempt"].AsInt64())
			require.Equal(t, codes.Unset, p.Status.Code)

			render := tr.named("render")
			require.Len(t, render, 1)
			require.Equal(t, p.SpanContext.SpanID(), render[0].Parent.SpanID(), "the handler's spans are children of its attempt")

			require.NotEmpty(t, tr.named("pgq.reserve"))
			complete := tr.named("pgq.complete")
			require.Len(t, complete, 1)
			require.Equal(t, trace.SpanKindClient, complete[0].SpanKind)
		})
	}
}

// S108: a SQL dispatch after SET LOCAL pgq.traceparent (no pgq client: any language) gives the
// attempt's span the same link to the dispatching span; a SQL handler's span names its
// function. WithoutClientSpans leaves pgq's own calls out.
func TestS108SQLDispatchWithSetLocalIsLinked(t *testing.T) {
	t.Parallel()
	tr := setupTraced(t)
	tr.db.Exec(t, `CREATE FUNCTION public.touch(p jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$`)
	tr.db.Exec(t, `SELECT pgq.define_job('sql', handler => 'public.touch')`)
	ctx, request := tr.tp.Tracer("app").Start(context.Background(), "request")
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	request.End()

	tx, err := tr.db.Pool.Begin(context.Background())
	require.NoError(t, err)
	_, err = tx.Exec(context.Background(), `SELECT set_config('pgq.traceparent', $1, true)`, carrier["traceparent"])
	require.NoError(t, err)
	_, err = tx.Exec(context.Background(), `SELECT pgq.dispatch('sql')`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(context.Background()))

	w := tr.worker(t, worker.WithTracerProvider(tr.tp), worker.WithoutClientSpans(), worker.WithStopWhenEmpty())
	drain(t, w)
	process := tr.named("process default")
	require.Len(t, process, 1)
	require.Len(t, process[0].Links, 1)
	require.Equal(t, request.SpanContext().TraceID(), process[0].Links[0].SpanContext.TraceID())
	require.Equal(t, request.SpanContext().SpanID(), process[0].Links[0].SpanContext.SpanID())
	require.Equal(t, "public.touch(jsonb)", attrsOf(process[0])["code.function.name"].AsString())
	require.Empty(t, tr.named("pgq.reserve"))
	require.Empty(t, tr.named("pgq.complete"))
}

// S108: each attempt is a span of its own, linked to the one dispatch: a failed attempt has
// the error status and error.type, and the retry that succeeds has neither. The OTel
// metrics count the attempts and their run times, the client's dispatches, and read
// the queue gauges from pgq.queue_stats.
func TestS108EachAttemptIsASpanWithItsError(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tr := setupTraced(t, pgq.MeterProvider(mp))
	_, err := tr.client.Dispatch(context.Background(), "flaky", order{OrderID: 1}, pgq.Tries(3))
	require.NoError(t, err)
	var calls atomic.Int32
	w := tr.worker(t, worker.WithTracerProvider(tr.tp), worker.WithMeterProvider(mp), worker.WithStopWhenEmpty())
	worker.Handle(w, "flaky", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error {
		if calls.Add(1) < 3 {
			return errors.New("vendor 500")
		}
		return nil
	}})
	gauges := collect(t, reader)
	var ready int64
	for _, d := range gauges["pgq.queue.jobs"].(metricdata.Gauge[int64]).DataPoints {
		if state, _ := d.Attributes.Value("pgq.job.state"); state.AsString() == "ready" {
			q, _ := d.Attributes.Value("messaging.destination.name")
			require.Equal(t, "default", q.AsString())
			ready += d.Value
		}
	}
	require.Equal(t, int64(1), ready)
	require.Contains(t, gauges, "pgq.queue.oldest_wait")
	drain(t, w)

	send := tr.named("send")
	require.Len(t, send, 1, "no queue given: the span is named by the operation alone")
	process := tr.named("process default")
	require.Len(t, process, 3)
	for i, p := range process {
		a := attrsOf(p)
		require.Equal(t, int64(i+1), a["pgq.job.attempt"].AsInt64())
		require.Len(t, p.Links, 1)
		require.Equal(t, send[0].SpanContext.SpanID(), p.Links[0].SpanContext.SpanID())
		if i < 2 {
			require.Equal(t, codes.Error, p.Status.Code)
			require.Equal(t, "vendor 500", p.Status.Description)
			require.Equal(t, "*errors.errorString", a["error.type"].AsString())
		} else {
			require.Equal(t, codes.Unset, p.Status.Code)
			require.NotContains(t, a, attribute.Key("error.type"))
		}
	}
	require.Len(t, tr.named("pgq.fail_many"), 2)

	got := collect(t, reader)
	sum := func(name string) int64 {
		var n int64
		for _, d := range got[name].(metricdata.Sum[int64]).DataPoints {
			n += d.Value
		}
		return n
	}
	require.Equal(t, int64(1), sum("messaging.client.sent.messages"))
	require.Equal(t, int64(3), sum("messaging.client.consumed.messages"))
	var failed, ok uint64
	for _, d := range got["messaging.process.duration"].(metricdata.Histogram[float64]).DataPoints {
		if _, has := d.Attributes.Value("error.type"); has {
			failed += d.Count
		} else {
			ok += d.Count
		}
	}
	require.Equal(t, uint64(2), failed)
	require.Equal(t, uint64(1), ok)
	require.NotContains(t, got, "pgq.queue.jobs", "a stopped worker reads no gauges")
}

// collect reads every metric of reader, by name.
func collect(t *testing.T, reader sdkmetric.Reader) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = m.Data
		}
	}
	return got
}

// S107, S108: with a traced client, every step of a chain, the one a worker's
// transaction queues too, is processed in a span linked to the chain's send span.
func TestS107S108ChainStepsLinkToTheChainsDispatch(t *testing.T) {
	t.Parallel()
	tr := setupTraced(t)
	chain, err := tr.client.DispatchChain(context.Background(),
		[]pgq.Step{{Job: "step", Args: order{1}}, {Job: "step", Args: order{2}}}, pgq.ChainOptions{Queue: "flow"})
	require.NoError(t, err)
	w := tr.worker(t, worker.WithTracerProvider(tr.tp), worker.WithQueues("flow"), worker.WithStopWhenEmpty())
	worker.Handle(w, "step", worker.Handler[order]{Run: func(ctx context.Context, j *worker.Job[order]) error { return nil }})
	drain(t, w)

	send := tr.named("send flow")
	require.Len(t, send, 1)
	require.Equal(t, chain.String(), attrsOf(send[0])["pgq.chain.id"].AsString())
	process := tr.named("process flow")
	require.Len(t, process, 2)
	for _, p := range process {
		require.Len(t, p.Links, 1)
		require.Equal(t, send[0].SpanContext.SpanID(), p.Links[0].SpanContext.SpanID())
	}
}
