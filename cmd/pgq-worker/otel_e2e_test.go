package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/pgq-dev/pgq/internal/pgqtest"
)

// collector stands in for an OpenTelemetry collector: it keeps what OTLP http/protobuf
// exports send it.
type collector struct {
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string // service.name of each resource that sent spans
	metrics map[string]bool
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var resp proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.Resource.GetAttributes() {
				if a.Key == "service.name" {
					c.service = append(c.service, a.Value.GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		resp = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(raw, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					c.metrics[m.Name] = true
				}
			}
		}
		resp = &colmetricpb.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, r)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func spanAttrs(s *tracepb.Span) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, a := range s.Attributes {
		m[a.Key] = a.Value
	}
	return m
}

// S108: `pgq-worker work --otel` exports a process span (CONSUMER) per attempt by OTLP
// http/protobuf to the collector the standard variables name, as the service
// OTEL_SERVICE_NAME says: linked to the context a SQL dispatch stored after SET LOCAL
// pgq.traceparent, with the messaging attributes and the SQL handler's function, and
// for an attempt whose handler raised, the error status and error.type; and its
// metrics.
func TestS108E2EWorkOTelExportsSpans(t *testing.T) {
	t.Parallel()
	db := pgqtest.New(t)
	db.Exec(t, `CREATE FUNCTION public.touch(p jsonb) RETURNS void LANGUAGE sql AS $$ SELECT $$`)
	db.Exec(t, `CREATE FUNCTION public.boom(p jsonb) RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'card declined'; END $$`)
	db.Exec(t, `SELECT pgq.define_job('touch', handler => 'public.touch')`)
	db.Exec(t, `SELECT pgq.define_job('boom', handler => 'public.boom')`)
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	var ok, failed string
	ctx := context.Background()
	require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL pgq.traceparent = '00-`+traceID+`-`+spanID+`-01'`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT pgq.dispatch('touch')::text`).Scan(&ok); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT pgq.dispatch('boom')::text`).Scan(&failed)
	}))

	col := &collector{metrics: map[string]bool{}}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	cmd := exec.Command(workerBinary(t), "work", "--database-url", db.WorkerURL, "--otel", "--stop-when-empty")
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL, "OTEL_SERVICE_NAME=billing-worker",
		"OTEL_METRIC_EXPORT_INTERVAL=60000")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	done := make(chan error, 1)
	require.NoError(t, cmd.Start())
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "log:\n%s", stderr.String())
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("pgq-worker work --otel did not stop; log:\n%s", stderr.String())
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	require.Contains(t, col.service, "billing-worker")
	byID := map[string]*tracepb.Span{}
	names := map[string]int{}
	for _, s := range col.spans {
		names[s.Name]++
		if s.Name == "process default" {
			byID[spanAttrs(s)["messaging.message.id"].GetStringValue()] = s
		}
	}
	require.Equal(t, 2, names["process default"], "spans: %v", names)
	require.NotZero(t, names["pgq.reserve"], "spans: %v", names)
	for id, fn := range map[string]string{ok: "public.touch(jsonb)", failed: "public.boom(jsonb)"} {
		s := byID[id]
		require.NotNil(t, s, "the span of job %s", id)
		require.Equal(t, tracepb.Span_SPAN_KIND_CONSUMER, s.Kind)
		require.Len(t, s.Links, 1)
		require.Equal(t, traceID, hexOf(s.Links[0].TraceId))
		require.Equal(t, spanID, hexOf(s.Links[0].SpanId))
		a := spanAttrs(s)
		require.Equal(t, "pgq", a["messaging.system"].GetStringValue())
		require.Equal(t, "process", a["messaging.operation.type"].GetStringValue())
		require.Equal(t, "default", a["messaging.destination.name"].GetStringValue())
		require.Equal(t, fn, a["code.function.name"].GetStringValue())
		require.Equal(t, int64(1), a["pgq.job.attempt"].GetIntValue())
	}
	require.Equal(t, tracepb.Status_STATUS_CODE_UNSET, byID[ok].Status.GetCode())
	require.Equal(t, tracepb.Status_STATUS_CODE_ERROR, byID[failed].Status.GetCode())
	require.Equal(t, "card declined", byID[failed].Status.GetMessage())
	require.Equal(t, "sql_exception", spanAttrs(byID[failed])["error.type"].GetStringValue())
	require.True(t, col.metrics["messaging.client.consumed.messages"], "metrics: %v", col.metrics)
	require.True(t, col.metrics["messaging.process.duration"], "metrics: %v", col.metrics)
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}
