package snapshots

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// brief is what a test checks of an imported browser exchange.
type brief struct {
	Direction                Direction
	Protocol, Service        string
	Start                    time.Time
	Duration                 time.Duration
	Method, URL, Proto       string
	RequestHeaders           []string // names
	RequestBody              string
	RequestBodySize          int64
	Status                   int
	ResponseHeaders          []string
	ResponseBodyLen          int
	ResponseBodySize         int64
	Endpoint, TraceID, Error string
}

func briefOf(e *Exchange) brief {
	names := func(h map[string][]string) []string {
		var out []string
		for k := range h {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	return brief{
		Direction: e.Direction, Protocol: e.Protocol, Service: e.Service, Start: e.Start, Duration: e.Duration,
		Method: e.Method, URL: e.URL, Proto: e.Proto,
		RequestHeaders: names(e.RequestHeader), RequestBody: string(e.RequestBody), RequestBodySize: e.RequestBodySize,
		Status: e.Status, ResponseHeaders: names(e.ResponseHeader),
		ResponseBodyLen: len(e.ResponseBody), ResponseBodySize: e.ResponseBodySize,
		Endpoint: e.Endpoint, TraceID: e.TraceID, Error: e.Error,
	}
}

func importFile(t *testing.T, file string, imp func(context.Context, *os.File, *Writer) error) []*Exchange {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := filepath.Join(t.TempDir(), "imported.snap")
	w, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := imp(context.Background(), f, w); err != nil {
		w.Close()
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return collect(t, s.Exchanges(context.Background(), Filter{}))
}

func importHARFile(t *testing.T, file string) []*Exchange {
	return importFile(t, file, func(ctx context.Context, f *os.File, w *Writer) error { return ImportHAR(ctx, f, w) })
}

func ms(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

func TestImportChromeHAR(t *testing.T) {
	got := importHARFile(t, "testdata/chrome.har")
	var briefs []brief
	for _, e := range got {
		briefs = append(briefs, briefOf(e))
	}
	post := `{"items":[{"sku":"A-1","qty":2}],"note":""}`
	chromeOrder := `{"id":1042,"status":"shipped","items":[{"sku":"A-1","qty":2}]}`
	want := []brief{
		{
			Direction: Inbound, Protocol: "https", Service: "shop.example.com:443",
			Start: time.Date(2024, 5, 14, 9, 21, 38, 2e6, time.UTC), Duration: ms(48.21699999459088),
			Method: "GET", URL: "https://shop.example.com/api/orders/1042?expand=items", Proto: "HTTP/2.0",
			RequestHeaders: []string{"Accept", "Accept-Encoding", "Accept-Language", "Cookie", "Sec-Fetch-Mode", "Traceparent", "User-Agent"},
			Status:         200, ResponseHeaders: []string{"Cache-Control", "Content-Type", "Date", "Vary"},
			ResponseBodyLen: len(chromeOrder), ResponseBodySize: int64(len(chromeOrder)),
			Endpoint: "GET /api/orders/{id}", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
		},
		{
			Direction: Inbound, Protocol: "https", Service: "shop.example.com:443",
			Start: time.Date(2024, 5, 14, 9, 21, 38, 120e6, time.UTC), Duration: ms(102.5),
			Method: "POST", URL: "https://shop.example.com/api/orders", Proto: "HTTP/2.0",
			RequestHeaders: []string{"Content-Length", "Content-Type", "Origin", "User-Agent"},
			RequestBody:    post, RequestBodySize: int64(len(post)),
			Status: 201, ResponseHeaders: []string{"Content-Type", "Location"},
			ResponseBodyLen: 11, ResponseBodySize: 11,
			Endpoint: "POST /api/orders",
		},
		{
			Direction: Inbound, Protocol: "https", Service: "cdn.example.net:8443",
			Start: time.Date(2024, 5, 14, 9, 21, 38, 301e6, time.UTC), Duration: ms(12.93),
			Method: "GET", URL: "https://cdn.example.net:8443/img/7f3a9b21c0d4e5f6/pixel.png", Proto: "HTTP/3.0",
			RequestHeaders: []string{"Accept", "User-Agent"},
			Status:         200, ResponseHeaders: []string{"Content-Type"},
			ResponseBodyLen: 33, ResponseBodySize: 33,
			Endpoint: "GET /img/{id}/pixel.png",
		},
		{
			Direction: Inbound, Protocol: "http", Service: "localhost:9999",
			Start: time.Date(2024, 5, 14, 9, 21, 38, 400e6, time.UTC), Duration: ms(2.5),
			Method: "GET", URL: "http://localhost:9999/health",
			RequestHeaders: []string{"Accept"},
			Endpoint:       "GET /health", Error: "net::ERR_CONNECTION_REFUSED",
		},
		// The data: URL entry is skipped.
	}
	if diff := cmp.Diff(want, briefs); diff != "" {
		t.Errorf("imported Chrome HAR (-want +got):\n%s", diff)
	}
	if len(got) > 2 && !strings.HasPrefix(string(got[2].ResponseBody), "\x89PNG") {
		t.Errorf("base64 image body not decoded: %q", got[2].ResponseBody[:8])
	}
}

func TestImportFirefoxHAR(t *testing.T) {
	got := importHARFile(t, "testdata/firefox.har")
	var briefs []brief
	for _, e := range got {
		briefs = append(briefs, briefOf(e))
	}
	want := []brief{
		{
			Direction: Inbound, Protocol: "https", Service: "shop.example.com:443",
			Start: time.Date(2024, 5, 14, 9, 21, 38, 2e6, time.UTC), Duration: ms(45),
			Method: "GET", URL: "https://shop.example.com/api/orders/550e8400-e29b-41d4-a716-446655440000/status", Proto: "HTTP/2.0",
			RequestHeaders: []string{"Accept", "Accept-Encoding", "Accept-Language", "Cookie", "Host", "Referer", "Te", "User-Agent"},
			Status:         200, ResponseHeaders: []string{"Content-Type", "Date"},
			ResponseBodyLen: 20, ResponseBodySize: 20,
			Endpoint: "GET /api/orders/{id}/status",
		},
		{
			Direction: Inbound, Protocol: "http", Service: "localhost:8080",
			Start: time.Date(2024, 5, 14, 9, 21, 38, 250e6, time.UTC), Duration: ms(13),
			Method: "POST", URL: "http://localhost:8080/search",
			RequestHeaders: []string{"Content-Length", "Content-Type", "Host", "User-Agent"},
			RequestBody:    "q=shoes", RequestBodySize: 7,
			Status: 302, ResponseHeaders: []string{"Content-Length", "Location"},
			Endpoint: "POST /search",
		},
		{
			Direction: Inbound, Protocol: "https", Service: "cdn.example.net:443",
			Start: time.Date(2024, 5, 14, 9, 21, 38, 300e6, time.UTC), Duration: ms(10),
			Method: "GET", URL: "https://cdn.example.net/img/logo.png?v=3", Proto: "HTTP/2.0",
			RequestHeaders: []string{"Accept", "Host"},
			Status:         200, ResponseHeaders: []string{"Content-Type"},
			ResponseBodyLen: 33, ResponseBodySize: 33,
			Endpoint: "GET /img/logo.png",
		},
		{
			Direction: Inbound, Protocol: "https", Service: "tracker.example.org:443",
			Start:  time.Date(2024, 5, 14, 9, 21, 38, 400e6, time.UTC),
			Method: "GET", URL: "https://tracker.example.org/collect?id=123",
			Endpoint: "GET /collect", Error: "NS_ERROR_ABORT",
		},
	}
	if diff := cmp.Diff(want, briefs); diff != "" {
		t.Errorf("imported Firefox HAR (-want +got):\n%s", diff)
	}
}

// TestImportHARWithRules checks that the writer's rules name the endpoints
// of imported browser traffic.
func TestImportHARWithRules(t *testing.T) {
	rules, err := ParseRules([]string{"GET /api/orders/{order}"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/chrome.har")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := filepath.Join(t.TempDir(), "r.snap")
	w, err := Create(path, Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	if err := ImportHAR(context.Background(), f, w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, path)
	if got.Exchanges[0].Endpoint != "GET /api/orders/{order}" {
		t.Errorf("endpoint = %q", got.Exchanges[0].Endpoint)
	}
	if diff := cmp.Diff([]string{"GET /api/orders/{order}"}, got.Rules); diff != "" {
		t.Errorf("rules: %s", diff)
	}
	want := CaptureStats{InboundSeen: 4, InboundRecorded: 4}
	if diff := cmp.Diff(want, got.Stats); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestImportErrors(t *testing.T) {
	tests := []struct {
		name, format, input, want string
	}{
		{"jsonl empty", "jsonl", "", "import jsonl: empty file: no header line"},
		{"jsonl no header", "jsonl", `{"type":"exchange","id":1}`, "line 1: not a replay JSON Lines file"},
		{"jsonl har given", "jsonl", `{"log":{}}`, "line 1: not a replay JSON Lines file"},
		{"jsonl newer", "jsonl", `{"format":"replay-jsonl","version":3}`, "line 1: unsupported snapshot version 3"},
		{"jsonl bad json", "jsonl", "{\"format\":\"replay-jsonl\",\"version\":1}\n{\"type\":", "nothing imported: 1 entry rejected (the first: entry 1 (line 2): bad JSON: unexpected end of line)"},
		{"har empty", "har", "", "import har: not a HAR file"},
		{"har array", "har", "[]", "not a HAR file"},
		{"har jsonl given", "har", `{"format":"replay-jsonl","version":1}`, "not a HAR file"},
		{"har truncated", "har", `{"log":{"entries":[{"request":`, "unexpected end of file"},
		{"har entries not array", "har", `{"log":{"entries":{}}}`, "entries: want an array"},
		{"har newer", "har", `{"log":{"_replay":{"format":"replay-har","version":3}}}`, "unsupported snapshot version 3"},
		{"jsonl header only", "jsonl", `{"format":"replay-jsonl","version":1}`, "nothing imported: the file holds no exchange or statement"},
		{"jsonl all rejected", "jsonl", "{\"format\":\"replay-jsonl\",\"version\":1}\n{\"type\":\"exchange\",\"id\":1}", "nothing imported: 1 entry rejected (the first: entry 1 (line 2): exchange 1: no direction"},
		{"har no entries", "har", `{"log":{"entries":[]}}`, "nothing imported"},
		{"har all rejected", "har", `{"log":{"entries":[{"startedDateTime":"2024-05-14T09:21:38Z","request":{"method":"GET","url":"localhost:8080/x"}}]}}`, `nothing imported: 1 entry rejected (the first: entry 1: url "localhost:8080/x" is not http(s))`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Create(filepath.Join(t.TempDir(), "x.snap"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if tt.format == "jsonl" {
				err = ImportJSONL(context.Background(), strings.NewReader(tt.input), w)
			} else {
				err = ImportHAR(context.Background(), strings.NewReader(tt.input), w)
			}
			if err == nil {
				t.Fatalf("import succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "import "+tt.format+": ") {
				t.Errorf("error %q, want it to say %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines", err)
			}
		})
	}
}

func TestImportHARDirection(t *testing.T) {
	got := importFile(t, "testdata/firefox.har", func(ctx context.Context, f *os.File, w *Writer) error {
		return ImportHARWith(ctx, f, w, HAROptions{Direction: Outbound})
	})
	if len(got) != 4 {
		t.Fatalf("%d exchanges", len(got))
	}
	for _, e := range got {
		if e.Direction != Outbound {
			t.Errorf("exchange %d is %s", e.ID, e.Direction)
		}
	}
	// replay's own entries keep their direction whatever the option says.
	s, err := Open(variedSnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var buf bytes.Buffer
	if err := ExportHAR(context.Background(), s, &buf); err != nil {
		t.Fatal(err)
	}
	m := &memSink{}
	im := newImporter(m, nil)
	im.direction = Outbound
	if err := importHAR(context.Background(), &buf, im); err != nil {
		t.Fatal(err)
	}
	if m.exchanges[0].Direction != Inbound {
		t.Errorf("our inbound entry became %s", m.exchanges[0].Direction)
	}
	w, err := Create(filepath.Join(t.TempDir(), "x.snap"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := ImportHARWith(context.Background(), strings.NewReader("{}"), w, HAROptions{Direction: "up"}); err == nil || !strings.Contains(err.Error(), `unknown direction "up"`) {
		t.Errorf("bad direction: %v", err)
	}
}
