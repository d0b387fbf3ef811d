package snapshots

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// variedSnapshot writes a snapshot holding the awkward cases: binary and
// empty bodies, nil and non-canonical headers, relative URLs, zero times,
// failures, truncation, invalid UTF-8 SQL.
func variedSnapshot(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "varied.snap")
	rules, err := ParseRules([]string{"GET /orders/{id}/status", "* /legacy/{path}"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := Create(path, Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	exchanges := []*Exchange{
		sampleExchange(1),
		sampleExchange(3),
		{
			Direction: Inbound, Protocol: "http", Service: "127.0.0.1:8080", Start: start,
			Duration: 1234567 * time.Nanosecond, Method: "POST", URL: "/orders?dry_run=1&x=a%20b",
			RequestHeader:   http.Header{"Content-Type": {"application/octet-stream"}, "x-lower": {"v"}},
			RequestBody:     []byte{0xff, 0x00, 0xfe, 'a'},
			RequestBodySize: 4,
			Status:          201,
			ResponseHeader:  http.Header{"Content-Encoding": {"gzip"}, "Set-Cookie": {"a=1", "b=2"}},
			ResponseBody:    []byte{0x1f, 0x8b, 0x08, 0x00, 0x00},
			// truncated: 5 bytes kept of 9000
			ResponseBodySize: 9000,
			TraceID:          "0af7651916cd43dd8448eb211c80319c",
		},
		{
			Direction: Outbound, Protocol: "https", Service: "api.example.com:443",
			Method: "GET", URL: "https://api.example.com/v1/items/ord_7f3a9b21", Proto: "HTTP/2.0",
			Error: "dial tcp: connection refused", ParentID: 3,
		},
		{
			Direction: Inbound, Protocol: "http", Service: "127.0.0.1:8080", Start: start.Add(time.Second),
			Method: "GET", URL: "/orders/42/status", Status: 200,
			ResponseBody: []byte("✓ ünïcödé"), ResponseBodySize: int64(len("✓ ünïcödé")),
			Endpoint: "GET /custom/endpoint",
		},
		{Direction: Inbound, Method: "DELETE", URL: "/legacy/x", Status: 204, ID: 100},
		grpcExchange(start),
	}
	for _, e := range exchanges {
		w.CountSeen(e.Direction)
		w.AddExchange(e)
	}
	w.CountSeen(Inbound) // seen but not recorded
	w.AddStatement(sampleStatement(1))
	w.AddStatement(&Statement{ExchangeID: 3, SQL: "SELECT '\xff'", Fingerprint: "SELECT ?", Protocol: ProtocolSimple, Error: "22021: invalid byte sequence"})
	w.AddStatement(&Statement{SQL: "BEGIN", Start: start})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// grpcExchange is a bidirectional gRPC call over h2c: messages both ways,
// interleaved, one compressed, one cut, one binary, one empty; trailers.
func grpcExchange(start time.Time) *Exchange {
	return &Exchange{
		Direction: Inbound, Protocol: "http", Service: "127.0.0.1:50051", Start: start.Add(2 * time.Second),
		Duration: 3 * time.Millisecond, Method: "POST", URL: "/route.RoutesService/RouteChat", Proto: "HTTP/2.0",
		RequestHeader:   http.Header{"Content-Type": {"application/grpc"}, "Grpc-Timeout": {"5S"}, "Te": {"trailers"}},
		RequestBodySize: 27,
		Status:          200, ResponseHeader: http.Header{"Content-Type": {"application/grpc"}, "Grpc-Encoding": {"gzip"}},
		ResponseBodySize: 40,
		ResponseTrailer:  http.Header{"Grpc-Status": {"5"}, "Grpc-Message": {"no route %C3%A0 here"}},
		Messages: []Message{
			{From: FromClient, Offset: 100 * time.Microsecond, Data: []byte{0x0a, 0x03, 'a', 'b', 'c'}, Size: 5},
			{From: FromServer, Offset: 900 * time.Microsecond, Data: []byte{0x08, 0x96, 0x01}, Size: 3, Compressed: true},
			{From: FromClient, Offset: 1500 * time.Microsecond, Data: []byte{0xff, 0xfe}, Size: 17},
			{From: FromClient, Offset: 1600 * time.Microsecond, Size: 0},
			{From: FromServer, Offset: 2 * time.Millisecond, Data: []byte{1, 2}, Size: 2, Compressed: true, Encoding: "snappy"},
		},
	}
}

type snapshotContents struct {
	Exchanges  []*Exchange
	Statements []*Statement
	Stats      CaptureStats
	Rules      []string
}

func readAll(t *testing.T, path string) snapshotContents {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var c snapshotContents
	c.Exchanges = collect(t, s.Exchanges(ctx, Filter{}))
	c.Statements = collect(t, s.Statements(ctx))
	if c.Stats, err = s.Stats(); err != nil {
		t.Fatal(err)
	}
	rules, err := s.Rules()
	if err != nil {
		t.Fatal(err)
	}
	c.Rules = ruleStrings(rules)
	return c
}

func TestRoundTrip(t *testing.T) {
	src := variedSnapshot(t)
	want := readAll(t, src)
	if len(want.Exchanges) != 7 || len(want.Statements) != 3 {
		t.Fatalf("fixture: %d exchanges, %d statements", len(want.Exchanges), len(want.Statements))
	}
	formats := []struct {
		name string
		exp  func(context.Context, *Snapshot, *bytes.Buffer) error
		imp  func(context.Context, *bytes.Buffer, *Writer) error
	}{
		{"jsonl",
			func(ctx context.Context, s *Snapshot, b *bytes.Buffer) error { return ExportJSONL(ctx, s, b) },
			func(ctx context.Context, b *bytes.Buffer, w *Writer) error { return ImportJSONL(ctx, b, w) }},
		{"har",
			func(ctx context.Context, s *Snapshot, b *bytes.Buffer) error { return ExportHAR(ctx, s, b) },
			func(ctx context.Context, b *bytes.Buffer, w *Writer) error { return ImportHAR(ctx, b, w) }},
	}
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(src)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := f.exp(ctx, s, &buf); err != nil {
				t.Fatal(err)
			}
			s.Close()
			exported := buf.String()
			dst := filepath.Join(t.TempDir(), "copy.snap")
			w, err := Create(dst, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.imp(ctx, &buf, w); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got := readAll(t, dst)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip through %s (-want +got):\n%s\nexported:\n%s", f.name, diff, exported)
			}
		})
	}
}
