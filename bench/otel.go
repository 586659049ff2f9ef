package main

import (
	"context"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/pgq-dev/pgq/pgq"
	"github.com/pgq-dev/pgq/worker"
)

// dropSpans is a span exporter that keeps nothing: -pgq-otel measures what making the
// spans costs the worker, not what a collector does with them.
type dropSpans struct{}

func (dropSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropSpans) Shutdown(context.Context) error                             { return nil }

// The SDK providers of -pgq-otel, shared by the client and every worker: every span
// sampled and batched, metrics aggregated for a reader that is never read.
var (
	benchTracer = sdktrace.NewTracerProvider(sdktrace.WithBatcher(dropSpans{}))
	benchMeter  = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
)

func otelClientOptions(o options) []pgq.ClientOption {
	if !o.pgqOTel {
		return nil
	}
	return []pgq.ClientOption{pgq.TracerProvider(benchTracer), pgq.MeterProvider(benchMeter)}
}

func otelWorkerOptions(o options) []worker.Option {
	if !o.pgqOTel {
		return nil
	}
	return []worker.Option{worker.WithTracerProvider(benchTracer), worker.WithMeterProvider(benchMeter)}
}
