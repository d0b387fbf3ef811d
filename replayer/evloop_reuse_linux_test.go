//go:build linux

package replayer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// copySink copies each result it is given (a ResultCopier) and notes the
// results' addresses.
type copySink struct {
	mu    sync.Mutex
	got   []snapshots.Result
	addrs map[*snapshots.Result]int
}

func (s *copySink) Add(r *snapshots.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, *r)
	if s.addrs == nil {
		s.addrs = map[*snapshots.Result]int{}
	}
	s.addrs[r]++
}

func (s *copySink) CopiesResults() {}

// TestLoopReusesResultsForCopiers: with a sink that copies results, the
// event loops reuse a virtual user's result (a handful of them for many
// requests, closed and open model) and every copy is whole: its own trace
// id, its answer. A sink that does not copy gets a result of its own each
// time.
func TestLoopReusesResultsForCopiers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world\n")
	}))
	defer srv.Close()
	// 50 passes over 4 requests each: by 4 users, and at 4,000/s.
	for _, plan := range []LoadPlan{{VUs: 4, Iterations: 50}, {Rate: Rate{Count: 4000, Per: time.Second}, Iterations: 50}} {
		// At most 4 requests in flight: the open model's loop has at most 4
		// workers however slow the machine, so at most 4 results to reuse.
		r := newReplayer(t, Config{Target: srv.URL, Exchanges: exchanges(4), MaxInFlight: 4})
		var cs copySink
		if _, err := r.Run(context.Background(), plan, &cs); err != nil {
			t.Fatal(err)
		}
		if r.loopServed.Load() != 200 || len(cs.got) != 200 {
			t.Fatalf("rate %d: %d results, %d on the loops; want 200", plan.Rate.Count, len(cs.got), r.loopServed.Load())
		}
		if len(cs.addrs) > 4 {
			t.Errorf("rate %d: %d distinct results for 200 requests; want them reused", plan.Rate.Count, len(cs.addrs))
		}
		traces := map[string]bool{}
		for _, res := range cs.got {
			if res.Status != 200 || res.Bytes != 13 || res.Error != "" || res.Endpoint == "" || res.Done.Before(res.Sent) {
				t.Fatalf("rate %d: result %+v", plan.Rate.Count, res)
			}
			if len(res.TraceID) != 32 || traces[res.TraceID] {
				t.Fatalf("rate %d: trace id %q not a fresh one (a reused result's traceparent changed under the sink?)", plan.Rate.Count, res.TraceID)
			}
			traces[res.TraceID] = true
		}
		var s sink
		if _, err := r.Run(context.Background(), plan, &s); err != nil {
			t.Fatal(err)
		}
		distinct := map[*snapshots.Result]bool{}
		for _, res := range s.all() {
			distinct[res] = true
		}
		if len(distinct) != 200 {
			t.Errorf("rate %d: %d distinct results for 200 requests to a sink that keeps them", plan.Rate.Count, len(distinct))
		}
	}
}
