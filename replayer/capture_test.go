package replayer

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// responses collects samples, safely.
type responses struct {
	mu sync.Mutex
	s  []*snapshots.ResponseSample
}

func (r *responses) AddResponse(s *snapshots.ResponseSample) {
	r.mu.Lock()
	r.s = append(r.s, s)
	r.mu.Unlock()
}

func (r *responses) all() []*snapshots.ResponseSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.s)
}

// answers counts the samples per exchange ID.
func (r *responses) answers() map[int64]int {
	m := map[int64]int{}
	for _, s := range r.all() {
		m[s.ExchangeID]++
	}
	return m
}

// mixedExchanges returns inbound GETs of /items/1..6 (IDs 1..6) and
// /other/1..2 (IDs 7, 8), interleaved: 1 7 2 3 8 4 5 6.
func mixedExchanges() []*snapshots.Exchange {
	var out []*snapshots.Exchange
	add := func(id int64, path, endpoint string) {
		out = append(out, &snapshots.Exchange{ID: id, Direction: snapshots.Inbound, Method: "GET",
			URL: "http://app.local" + path, Status: 200, Endpoint: endpoint,
			Start: time.Date(2025, 1, 1, 12, 0, 0, int(id)*int(time.Millisecond), time.UTC)})
	}
	items := func(id int64) { add(id, fmt.Sprintf("/items/%d", id), "GET /items/{id}") }
	other := func(id int64) { add(id, fmt.Sprintf("/other/%d", id-6), "GET /other/{id}") }
	items(1)
	other(7)
	items(2)
	items(3)
	other(8)
	items(4)
	items(5)
	items(6)
	return out
}

// bodyFor is the body the capture server answers path with.
func bodyFor(path string) string { return fmt.Sprintf(`{"path":%q}`, path) }

// captureServer answers every path with bodyFor(path), headers a
// comparison looks at and some it does not.
func captureServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Request-Id", fmt.Sprint(time.Now().UnixNano()))
		w.Header().Set("Set-Cookie", "session=secret")
		fmt.Fprint(w, bodyFor(r.URL.Path))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestCaptureSamplesTheFirstExchangesOfEachEndpoint(t *testing.T) {
	for _, netHTTP := range []bool{false, true} {
		t.Run(fmt.Sprintf("nethttp=%v", netHTTP), func(t *testing.T) {
			srv := captureServer(t)
			var got responses
			r := newReplayer(t, Config{Target: srv.URL, Exchanges: mixedExchanges(), NetHTTP: netHTTP,
				Responses: &got, SampleExchanges: 3, ResponseHeaders: []string{"x-request-id"}})
			if _, err := r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: 3}, &sink{}); err != nil {
				t.Fatal(err)
			}
			// Items 1, 2, 3 and both others are sampled, two answers each.
			want := map[int64]int{1: 2, 2: 2, 3: 2, 7: 2, 8: 2}
			if a := got.answers(); !mapsEqual(a, want) {
				t.Fatalf("samples per exchange = %v, want %v", a, want)
			}
			for _, s := range got.all() {
				path := "/items/" + fmt.Sprint(s.ExchangeID)
				if s.ExchangeID > 6 {
					path = "/other/" + fmt.Sprint(s.ExchangeID-6)
				}
				if string(s.Body) != bodyFor(path) || s.BodySize != int64(len(s.Body)) || s.Truncated || s.Status != 200 || s.Phase != snapshots.PhaseLoad {
					t.Errorf("sample of %d = %+v, want the body of %s", s.ExchangeID, s, path)
				}
				if s.Header.Get("Content-Type") != "application/json" || s.Header.Get("Cache-Control") != "no-store" || s.Header.Get("X-Request-Id") == "" {
					t.Errorf("sample of %d: headers %v lack the set", s.ExchangeID, s.Header)
				}
				if _, ok := s.Header["Set-Cookie"]; ok || s.Header.Get("Date") != "" {
					t.Errorf("sample of %d keeps headers outside the set: %v", s.ExchangeID, s.Header)
				}
			}
			// The third answer of a sampled exchange, and every answer of the
			// others, are counted by hash.
			hashes := map[int64]snapshots.ResponseHash{}
			for _, h := range r.ResponseHashes() {
				hashes[h.ExchangeID] = h
			}
			for id, n := range map[int64]int64{1: 1, 2: 1, 3: 1, 4: 3, 5: 3, 6: 3, 7: 1, 8: 1} {
				h := hashes[id]
				path := fmt.Sprintf("/items/%d", id)
				if id > 6 {
					path = fmt.Sprintf("/other/%d", id-6)
				}
				if h.Count != n || h.Status != 200 || h.Hash != snapshots.HashBody([]byte(bodyFor(path))) || h.Endpoint == "" {
					t.Errorf("hash of exchange %d = %+v, want %d answers hashing %q", id, h, n, bodyFor(path))
				}
			}
			if len(hashes) != 8 {
				t.Errorf("hashes of %d exchanges, want 8: %v", len(hashes), r.ResponseHashes())
			}
		})
	}
}

func mapsEqual(a, b map[int64]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// sampled returns the exchange IDs of samples, sorted.
func sampled(r *responses) []int64 {
	var ids []int64
	for id := range r.answers() {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// TestCaptureBothSidesSampleTheSameExchanges: under concurrency, and with
// one side sending many more requests than the other, both sample the
// explain phase's exchanges and then the load's first ones.
func TestCaptureBothSidesSampleTheSameExchanges(t *testing.T) {
	srv := captureServer(t)
	var ids [2][]int64
	var explained []int64
	for i, it := range []int{1, 20} {
		var got responses
		var results sink
		r := newReplayer(t, Config{Target: srv.URL, Exchanges: mixedExchanges(), Responses: &got, SampleExchanges: 2})
		if _, err := r.Run(context.Background(), LoadPlan{Explain: 1, VUs: 8, Iterations: it}, &results); err != nil {
			t.Fatal(err)
		}
		ids[i] = sampled(&got)
		if i == 0 {
			for _, res := range results.all() {
				if res.Phase == snapshots.PhaseExplain {
					explained = append(explained, res.ExchangeID)
				}
			}
		}
	}
	if !slices.Equal(ids[0], ids[1]) {
		t.Fatalf("sampled exchanges differ: %v and %v", ids[0], ids[1])
	}
	for _, id := range explained {
		if !slices.Contains(ids[0], id) {
			t.Errorf("explained exchange %d not sampled (sampled %v)", id, ids[0])
		}
	}
	if len(ids[0]) != 4 {
		t.Errorf("sampled %v, want 2 per endpoint", ids[0])
	}
}

func TestCaptureDecodesCutsAndReadsEveryFraming(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 100<<10/16)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(big))
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/items/1": // gzip, length known
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", fmt.Sprint(gz.Len()))
			w.Write(gz.Bytes())
		case "/items/2": // chunked
			for i := range 3 {
				fmt.Fprintf(w, "part %d;", i)
				w.(http.Flusher).Flush()
			}
		}
	}))
	defer srv.Close()
	for _, netHTTP := range []bool{false, true} {
		var got responses
		r := newReplayer(t, Config{Target: srv.URL, Exchanges: exchanges(2), NetHTTP: netHTTP, Responses: &got, SampleBody: 1024})
		if _, err := r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: 3}, &sink{}); err != nil {
			t.Fatal(err)
		}
		for _, s := range got.all() {
			switch s.ExchangeID {
			case 1:
				if string(s.Body) != big[:1024] || s.BodySize != int64(len(big)) || !s.Truncated || s.Header.Get("Content-Encoding") != "gzip" {
					t.Errorf("nethttp=%v: gzip sample: %d bytes %q…, size %d, truncated %v, header %v", netHTTP, len(s.Body), s.Body[:min(len(s.Body), 20)], s.BodySize, s.Truncated, s.Header)
				}
			case 2:
				if string(s.Body) != "part 0;part 1;part 2;" || s.Truncated {
					t.Errorf("nethttp=%v: chunked sample %q (truncated %v)", netHTTP, s.Body, s.Truncated)
				}
			}
		}
		if n := len(got.all()); n != 4 {
			t.Errorf("nethttp=%v: %d samples, want 4", netHTTP, n)
		}
		want := map[int64]uint64{1: snapshots.HashBody(gz.Bytes()), 2: snapshots.HashBody([]byte("part 0;part 1;part 2;"))}
		for _, h := range r.ResponseHashes() {
			if h.Hash != want[h.ExchangeID] || h.Count != 1 {
				t.Errorf("nethttp=%v: hash %+v, want %d once (the body as received)", netHTTP, h, want[h.ExchangeID])
			}
		}
	}
}

func TestCaptureReadsABodyEndingAtClose(t *testing.T) {
	s := newRawServer(t, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end|CLOSE")
	var got responses
	r := newReplayer(t, Config{Target: s.url(), Exchanges: exchanges(1), Responses: &got})
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: 1}, &sink{}); err != nil {
		t.Fatal(err)
	}
	all := got.all()
	if len(all) != 1 || string(all[0].Body) != "until the end" || all[0].Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("samples %+v, want the body read until the close", all)
	}
}

// TestCaptureSkipsWarmupsAndFailures: warm-up answers and failed requests
// are neither sampled nor hashed, and a failure gives its sample back.
func TestCaptureSkipsWarmupsAndFailures(t *testing.T) {
	s := newRawServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nwarm", "CLOSE",
		"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo")
	var got responses
	ex := exchanges(1)
	ex[0].Method = "POST" // not sent again on a fresh connection
	r := newReplayer(t, Config{Target: s.url(), Exchanges: ex, Responses: &got})
	if _, err := r.Run(context.Background(), LoadPlan{Phase: PhaseWarmup, VUs: 1, Iterations: 1}, &sink{}); err != nil {
		t.Fatal(err)
	}
	if n := len(got.all()) + len(r.ResponseHashes()); n != 0 {
		t.Fatalf("a warm-up answer was captured: %v %v", got.all(), r.ResponseHashes())
	}
	var results sink
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: 3}, &results); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, x := range got.all() {
		bodies = append(bodies, string(x.Body))
	}
	if !slices.Equal(bodies, []string{"one", "two"}) || len(r.ResponseHashes()) != 0 {
		t.Fatalf("samples %q, hashes %v; want one and two after the failure", bodies, r.ResponseHashes())
	}
}

// BenchmarkCapture sends b.N requests with 8 virtual users to a loopback
// target answering JSON of 2 KiB or 32 KiB, capturing the answers (on) or
// not (off), and reports the process's CPU time per request ("cpu-us/req",
// the target's included: it shares the machine, as a build does in a
// comparison). Capture's cost is the difference between on and off; run
// them interleaved (-count) on a quiet machine.
func BenchmarkCapture(b *testing.B) {
	for _, size := range []int{2 << 10, 32 << 10} {
		for _, on := range []bool{false, true} {
			name := fmt.Sprintf("%dKiB/off", size>>10)
			if on {
				name = fmt.Sprintf("%dKiB/on", size>>10)
			}
			b.Run(name, func(b *testing.B) { benchmarkCapture(b, on, size) })
		}
	}
}

func benchmarkCapture(b *testing.B, on bool, size int) {
	item := `{"id":12345,"name":"a product name","price":"19.99"},`
	body := []byte(`{"items":[` + strings.Repeat(item, size/len(item)) + `{}]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	cfg := Config{Target: srv.URL, Exchanges: exchanges(100)}
	var got responses
	if on {
		cfg.Responses = &got
	}
	r, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var s countSink
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	// One pass is 100 requests.
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 8, Iterations: max(b.N/100, 1)}, &s); err != nil {
		b.Fatal(err)
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(s.n.Load()), "cpu-us/req")
	if on && b.N >= 200 && len(got.all()) != 2*32 {
		b.Fatalf("%d samples, want 64", len(got.all()))
	}
}

// BenchmarkCaptureHashOnly is what an answer outside the sample costs the
// capture: the hash of a 2 KiB or 32 KiB body as the fast path reads it,
// and its count.
func BenchmarkCaptureHashOnly(b *testing.B) {
	for _, size := range []int{2 << 10, 32 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			body := bytes.Repeat([]byte("x"), size)
			var got responses
			r, err := New(Config{Target: "http://127.0.0.1:1", Exchanges: exchanges(100), Responses: &got})
			if err != nil {
				b.Fatal(err)
			}
			c := &conn{}
			res := &snapshots.Result{Status: 200, Phase: snapshots.PhaseLoad}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				t := r.seq.at(i % r.seq.len())
				tp := r.tap(c, t, res.Phase)
				tp.Write(body)
				r.captured(t, res, tp, false)
			}
		})
	}
}

// TestCaptureBoundsHashesPerExchange: a body that changes with every
// answer keeps MaxHashes hashes per exchange, the rest counted together.
func TestCaptureBoundsHashesPerExchange(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "answer %d", n.Add(1))
	}))
	defer srv.Close()
	var got responses
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: exchanges(1), Responses: &got})
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 2, Iterations: 50}, &sink{}); err != nil {
		t.Fatal(err)
	}
	hashes := r.ResponseHashes()
	var total, other int64
	for _, h := range hashes {
		total += h.Count
		if h.Hash == OtherHashes {
			other = h.Count
		}
	}
	if len(hashes) != MaxHashes+1 || total != 48 || other != 48-MaxHashes {
		t.Fatalf("%d hashes counting %d answers (%d beyond), want %d counting 48 (%d beyond)", len(hashes), total, other, MaxHashes+1, 48-MaxHashes)
	}
}
