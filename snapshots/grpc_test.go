package snapshots

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestGRPCExchange: a gRPC call's endpoint is its method, its status the
// trailers', and a cut message marks the right side truncated, in memory
// and in Snapshot.Index (a message the client never ended does not).
func TestGRPCExchange(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	e := grpcExchange(start)
	if got := EndpointOf(e, nil); got != "gRPC route.RoutesService/RouteChat" {
		t.Errorf("endpoint %q", got)
	}
	if m, ok := GRPCMethod(EndpointOf(e, nil)); !ok || m != "/route.RoutesService/RouteChat" {
		t.Errorf("method %q %v", m, ok)
	}
	if _, ok := GRPCMethod("POST /route.RoutesService/RouteChat"); ok {
		t.Error("an HTTP endpoint named a gRPC method")
	}
	code, msg, ok := e.GRPCStatus()
	if !ok || code != 5 || msg != "no route à here" {
		t.Errorf("status %d %q %v, want 5 \"no route à here\"", code, msg, ok)
	}
	if e.Transport() != "h2c" || !e.IsGRPC() {
		t.Errorf("transport %s, grpc %v", e.Transport(), e.IsGRPC())
	}
	if !e.RequestTruncated() || e.ResponseTruncated() {
		t.Errorf("truncated: request %v response %v, want true false", e.RequestTruncated(), e.ResponseTruncated())
	}
	if got := len(e.MessagesFrom(FromClient)); got != 3 {
		t.Errorf("%d client messages, want 3", got)
	}
	trailersOnly := &Exchange{ResponseHeader: http.Header{"Grpc-Status": {"14"}, "Grpc-Message": {"unavailable"}}}
	if code, msg, ok := trailersOnly.GRPCStatus(); !ok || code != 14 || msg != "unavailable" {
		t.Errorf("trailers-only status %d %q %v", code, msg, ok)
	}
	for _, h := range []http.Header{nil, {"Grpc-Status": {"x"}}, {"Grpc-Status": {"-1"}}} {
		if _, _, ok := (&Exchange{ResponseTrailer: h}).GRPCStatus(); ok {
			t.Errorf("status from %v", h)
		}
	}
	for ct, want := range map[string]bool{"application/grpc": true, "application/grpc+proto": true,
		"application/grpc; charset=utf-8": true, "application/grpc-web": false, "application/json": false, "": false} {
		if IsGRPCContentType(ct) != want {
			t.Errorf("IsGRPCContentType(%q) != %v", ct, want)
		}
	}

	path := filepath.Join(t.TempDir(), "g.snap")
	w, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.AddExchange(e)
	whole := grpcExchange(start)
	whole.ID, whole.Messages = 0, whole.Messages[:2]
	w.AddExchange(whole)
	// A call the client gave up on inside its first message (a deadline
	// passed as it sent): bytes, no whole message, nothing cut at recording.
	abandoned := grpcExchange(start)
	abandoned.ID, abandoned.Messages, abandoned.RequestBodySize = 0, nil, 27187
	if abandoned.RequestTruncated() {
		t.Error("a call abandoned inside its first message reads as cut at recording")
	}
	w.AddExchange(abandoned)
	// An HTTP request whose body was cut whole at recording (size only).
	w.AddExchange(&Exchange{Direction: Inbound, Method: "POST", URL: "http://x/upload", Start: start, RequestBodySize: 10})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var cut []bool
	for ie, err := range s.Index(context.Background(), Inbound) {
		if err != nil {
			t.Fatal(err)
		}
		cut = append(cut, ie.Truncated)
	}
	if !slices.Equal(cut, []bool{true, false, false, true}) {
		t.Errorf("index truncated %v, want [true false false true]", cut)
	}
}

// TestOpenVersion1: a snapshot written before gRPC (format 1, no trailer or
// messages columns) opens, and every read gives its exchanges without them.
func TestOpenVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.snap")
	db, err := createFile(path, kindSnapshot, snapshotDDL)
	if err != nil {
		t.Fatal(err)
	}
	e := sampleExchange(1)
	e.ID, e.Endpoint = 1, "GET /orders/{id}"
	_, err = db.Exec(`INSERT INTO exchanges (id, direction, protocol, service, start_ns, duration_ns,
		method, url, proto, request_header, request_body, request_body_size, status, response_header,
		response_body, response_body_size, endpoint, parent_id, trace_id, error) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		e.ID, string(e.Direction), e.Protocol, e.Service, unixNano(e.Start), int64(e.Duration), e.Method, e.URL, e.Proto,
		headerJSON(e.RequestHeader), blob(e.RequestBody), e.RequestBodySize, e.Status, headerJSON(e.ResponseHeader),
		blob(e.ResponseBody), e.ResponseBodySize, e.Endpoint, e.ParentID, e.TraceID, e.Error)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE meta SET value = '1' WHERE key = 'version'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Version() != 1 {
		t.Errorf("version %d", s.Version())
	}
	ctx := context.Background()
	reads := map[string]func() ([]*Exchange, error){
		"Exchanges": func() ([]*Exchange, error) { return collectErr(s.Exchanges(ctx, Filter{})) },
		"Calls":     func() ([]*Exchange, error) { return collectErr(s.Calls(ctx)) },
		"Requests":  func() ([]*Exchange, error) { return s.Requests(ctx, []int64{1}) },
		"Answers":   func() ([]*Exchange, error) { return s.Answers(ctx, []int64{1}) },
	}
	for name, read := range reads {
		got, err := read()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if name == "Calls" {
			continue // the sample is inbound
		}
		if len(got) != 1 || got[0].Method != e.Method || got[0].Messages != nil || got[0].ResponseTrailer != nil {
			t.Errorf("%s: %+v", name, got)
		}
	}
	if got, err := s.Exchange(ctx, 1); err != nil || cmp.Diff(e, got) != "" {
		t.Errorf("Exchange: %v %s", err, cmp.Diff(e, got))
	}
	for ie, err := range s.Index(ctx, Inbound) {
		if err != nil || ie.ID != 1 || ie.Truncated {
			t.Errorf("index: %+v %v", ie, err)
		}
	}
	var buf bytes.Buffer
	if err := ExportJSONL(ctx, s, &buf); err != nil {
		t.Fatal(err)
	}
}

func collectErr(seq func(func(*Exchange, error) bool)) ([]*Exchange, error) {
	var out []*Exchange
	for e, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// TestMessagesColumn: the codec round-trips, and rejects what it did not
// write without panicking.
func TestMessagesColumn(t *testing.T) {
	ms := grpcExchange(time.Time{}).Messages
	got, err := decodeMessages(encodeMessages(ms))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ms, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range [][]byte{{2, 0}, {1}, {1, 0, 'x', 0}, {1, 0, 'c', 0, 0, 0, 0, 9, 'a'}} {
		if _, err := decodeMessages(bad); err == nil {
			t.Errorf("%x decoded", bad)
		}
	}
}

func FuzzDecodeMessages(f *testing.F) {
	f.Add(encodeMessages(grpcExchange(time.Time{}).Messages))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := decodeMessages(b)
		if err != nil {
			return
		}
		again, err := decodeMessages(encodeMessages(ms))
		if err != nil {
			t.Fatalf("re-encoded messages do not decode: %v", err)
		}
		if len(again) != len(ms) {
			t.Fatalf("%d messages, then %d", len(ms), len(again))
		}
	})
}
