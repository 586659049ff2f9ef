package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/pgq-dev/pgq/internal/version"
	"github.com/pgq-dev/pgq/worker"
)

// otelFlushWait bounds how long the worker waits, as it exits, for its last spans and
// metrics to reach the collector.
const otelFlushWait = 5 * time.Second

// startOTel makes the tracer and meter providers of `work --otel`: OTLP over
// http/protobuf, configured by the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_EXPORTER_OTLP_HEADERS, their _TRACES_ and _METRICS_ forms, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_METRIC_EXPORT_INTERVAL, ...). The service is named
// pgq-worker unless OTEL_SERVICE_NAME says otherwise. Returns the worker's options and
// the function that flushes and stops both providers.
func startOTel(ctx context.Context, stderr io.Writer) ([]worker.Option, func(), error) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return nil, nil, usagef("--otel exports with http/protobuf only, but %s is %q", v, p)
		}
	}
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName("pgq-worker"), semconv.ServiceVersion(version.String())),
		resource.Environment())
	if err != nil {
		return nil, nil, fmt.Errorf("--otel: resource: %w", err)
	}
	spans, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("--otel: trace exporter: %w", err)
	}
	metrics, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("--otel: metric exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(spans), sdktrace.WithResource(res))
	mp := metric.NewMeterProvider(metric.WithReader(metric.NewPeriodicReader(metrics)), metric.WithResource(res))
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), otelFlushWait)
		defer cancel()
		if err := errors.Join(tp.Shutdown(sctx), mp.Shutdown(sctx)); err != nil {
			fmt.Fprintln(stderr, "pgq-worker: warning: --otel: the last spans or metrics may be lost:", err)
		}
	}
	return []worker.Option{worker.WithTracerProvider(tp), worker.WithMeterProvider(mp)}, stop, nil
}
