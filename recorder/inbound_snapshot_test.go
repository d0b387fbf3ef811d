package recorder

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/snapshots"
)

// recordTo starts backend behind an Inbound writing to a new snapshot file;
// closeAll stops the proxy (waiting for its handlers) and closes the writer.
func recordTo(t *testing.T, backend http.Handler, rules ...string) (proxyURL, path string, closeAll func()) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "rec.snap")
	rs, err := snapshots.ParseRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	w, err := snapshots.Create(path, snapshots.Options{Rules: rs, Redactor: redact.New(redact.Config{})})
	if err != nil {
		t.Fatal(err)
	}
	b := httptest.NewServer(backend)
	in, err := NewInbound(InboundConfig{Target: mustURL(t, b.URL), Sink: w})
	if err != nil {
		t.Fatal(err)
	}
	p := httptest.NewServer(in)
	var once sync.Once
	closeAll = func() {
		once.Do(func() {
			p.Close() // waits for in-flight handlers, hence recorded exchanges
			b.Close()
			if err := w.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(closeAll)
	return p.URL, path, closeAll
}

func openSnapshot(t *testing.T, path string) ([]*snapshots.Exchange, snapshots.CaptureStats) {
	t.Helper()
	s, err := snapshots.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var all []*snapshots.Exchange
	for e, err := range s.Exchanges(context.Background(), snapshots.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return all, st
}

// TestInboundRecordsEveryRequest: 10,000 requests from 50 concurrent clients
// all land in the snapshot, each with the body and status its client got.
// With -short, 2,000.
func TestInboundRecordsEveryRequest(t *testing.T) {
	const clients = 50
	total := 10000
	if testing.Short() {
		total = 2000
	}
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		status := 200
		if strings.HasSuffix(id, "7") {
			status = 404
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"id":%q}`, id)
	})
	proxy, path, closeAll := recordTo(t, backend)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, Proxy: nil}}
	defer client.CloseIdleConnections()
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range total {
			next <- i
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for i := range next {
				res, err := client.Get(fmt.Sprintf("%s/items/%d?id=%d", proxy, i, i))
				if err != nil {
					errs <- err
					return
				}
				b, err := io.ReadAll(res.Body)
				res.Body.Close()
				if want := fmt.Sprintf(`{"id":"%d"}`, i); err != nil || string(b) != want {
					errs <- fmt.Errorf("request %d: got %q, %v; want %s", i, b, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	closeAll()

	all, st := openSnapshot(t, path)
	if len(all) != total {
		t.Fatalf("%d exchanges in the snapshot; want %d", len(all), total)
	}
	if st.InboundSeen != int64(total) || st.InboundRecorded != int64(total) {
		t.Errorf("capture stats seen %d recorded %d; want %d both", st.InboundSeen, st.InboundRecorded, total)
	}
	seen := make([]bool, total)
	for _, e := range all {
		var i int
		if _, err := fmt.Sscanf(e.URL, proxy+"/items/%d?id=", &i); err != nil || i < 0 || i >= total || seen[i] {
			t.Fatalf("unexpected or repeated exchange %s (%v)", e.URL, err)
		}
		seen[i] = true
		wantStatus := 200
		if strings.HasSuffix(fmt.Sprint(i), "7") {
			wantStatus = 404
		}
		if want := fmt.Sprintf(`{"id":"%d"}`, i); string(e.ResponseBody) != want || e.Status != wantStatus {
			t.Fatalf("exchange %s: %d %s; want %d %s", e.URL, e.Status, e.ResponseBody, wantStatus, want)
		}
		if e.Endpoint != "GET /items/{id}" || e.Direction != snapshots.Inbound || e.Error != "" {
			t.Fatalf("exchange %s: endpoint %q direction %q error %q", e.URL, e.Endpoint, e.Direction, e.Error)
		}
	}
}

// TestInboundEndpointTemplates: computed templates and user rules land in
// the snapshot.
func TestInboundEndpointTemplates(t *testing.T) {
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	proxy, path, closeAll := recordTo(t, backend, "GET /orders/{id}/status", "GET /search/{term}")
	targets := []struct{ method, path, want string }{
		{"GET", "/orders/42", "GET /orders/{id}"},
		{"GET", "/orders/9f1c2a7e-5b6d-4c3e-8f9a-0b1c2d3e4f5a", "GET /orders/{id}"},
		{"GET", "/orders/42/status?verbose=1", "GET /orders/{id}/status"},
		{"GET", "/search/shoes", "GET /search/{term}"},
		{"POST", "/orders", "POST /orders"},
		{"GET", "/catalog?page=2", "GET /catalog"},
	}
	for _, tt := range targets {
		req, _ := http.NewRequest(tt.method, proxy+tt.path, nil)
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	closeAll()
	all, _ := openSnapshot(t, path)
	if len(all) != len(targets) {
		t.Fatalf("%d exchanges; want %d", len(all), len(targets))
	}
	got := map[string]string{}
	for _, e := range all {
		got[e.Method+" "+strings.TrimPrefix(e.URL, proxy)] = e.Endpoint
	}
	for _, tt := range targets {
		if ep := got[tt.method+" "+tt.path]; ep != tt.want {
			t.Errorf("%s %s: endpoint %q; want %q", tt.method, tt.path, ep, tt.want)
		}
	}
}

// TestInboundSnapshotRoundTrip: what the recorder captured reads back from
// the file as it was, redaction and truncation included.
func TestInboundSnapshotRoundTrip(t *testing.T) {
	big := strings.Repeat("x", DefaultBodyLimit+10)
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Set-Cookie", "s=1")
		io.WriteString(w, big)
	})
	proxy, path, closeAll := recordTo(t, backend)
	req, _ := http.NewRequest("PUT", proxy+"/blob/1", strings.NewReader("hello"))
	req.Header.Set("Authorization", "Basic Zm9vOmJhcg==")
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if n != int64(len(big)) {
		t.Fatalf("client got %d bytes; want %d", n, len(big))
	}
	closeAll()
	all, _ := openSnapshot(t, path)
	if len(all) != 1 {
		t.Fatalf("%d exchanges", len(all))
	}
	e := all[0]
	if e.RequestHeader.Get("Authorization") != "Basic "+Redacted || e.ResponseHeader.Get("Set-Cookie") != Redacted {
		t.Errorf("headers not redacted in the file: %v / %v", e.RequestHeader, e.ResponseHeader)
	}
	if string(e.RequestBody) != "hello" || len(e.ResponseBody) != DefaultBodyLimit ||
		e.ResponseBodySize != int64(len(big)) || !e.ResponseTruncated() {
		t.Errorf("bodies: request %q, response %d of %d bytes (truncated %v)", e.RequestBody, len(e.ResponseBody), e.ResponseBodySize, e.ResponseTruncated())
	}
}
