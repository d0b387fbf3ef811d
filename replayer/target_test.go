package replayer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// seen is one request as the test target received it.
type seen struct {
	At     time.Time
	Method string
	URI    string
	Header http.Header
	Body   string
	Host   string
	// Concurrent is the number of requests in flight at the target when
	// this one arrived, itself included.
	Concurrent int
}

// target is a loopback HTTP server that measures what it receives: counts,
// arrival times and concurrency are taken here, not from the replayer.
type target struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []seen
	inNow   int
	maxConc int
	// hold, when set, is called before answering (to be slow or stall).
	hold func(arrived time.Time)
	// holdCtx, when set, is called with the request's context before
	// answering.
	holdCtx func(ctx context.Context)
}

func newTarget(t *testing.T, hold func(time.Time)) *target {
	t.Helper()
	tg := &target{hold: hold}
	tg.Server = httptest.NewServer(http.HandlerFunc(tg.serve))
	t.Cleanup(tg.Close)
	return tg
}

func (tg *target) serve(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	body, _ := io.ReadAll(r.Body)
	tg.mu.Lock()
	tg.inNow++
	tg.maxConc = max(tg.maxConc, tg.inNow)
	tg.reqs = append(tg.reqs, seen{At: now, Method: r.Method, URI: r.RequestURI, Header: r.Header.Clone(), Body: string(body), Host: r.Host, Concurrent: tg.inNow})
	tg.mu.Unlock()
	if tg.hold != nil {
		tg.hold(now)
	}
	if tg.holdCtx != nil {
		tg.holdCtx(r.Context())
	}
	tg.mu.Lock()
	tg.inNow--
	tg.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ok "+r.URL.Path)
}

func (tg *target) seen() []seen {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]seen(nil), tg.reqs...)
}

func (tg *target) maxConcurrency() int {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.maxConc
}

// sink collects results in memory, safely.
type sink struct {
	mu  sync.Mutex
	res []*snapshots.Result
}

func (s *sink) Add(r *snapshots.Result) {
	s.mu.Lock()
	s.res = append(s.res, r)
	s.mu.Unlock()
}

func (s *sink) all() []*snapshots.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*snapshots.Result(nil), s.res...)
}

// exchanges returns n recorded inbound GETs of /items/1.. /items/n, IDs 1..n,
// recorded 10ms apart.
func exchanges(n int) []*snapshots.Exchange {
	t0 := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	var out []*snapshots.Exchange
	for i := 1; i <= n; i++ {
		out = append(out, &snapshots.Exchange{
			ID:        int64(i),
			Direction: snapshots.Inbound,
			Protocol:  "http",
			Service:   "app.local:8080",
			Start:     t0.Add(time.Duration(i-1) * 10 * time.Millisecond),
			Method:    "GET",
			URL:       "http://app.local:8080/items/" + strconv.Itoa(i),
			Status:    200,
			Endpoint:  "GET /items/{id}",
		})
	}
	return out
}

func newReplayer(t *testing.T, cfg Config) *Replayer {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
