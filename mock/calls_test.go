package mock

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/replaykit/replay/snapshots"
)

// callsMock is a mock of catalog.test over HTTPS (intercepted through the
// forward proxy) and of pay.test over plain HTTP, and a client using it.
func callsMock(t *testing.T) (*Server, *http.Client) {
	t.Helper()
	authority := testCA(t)
	exs := []*snapshots.Exchange{
		{ID: 1, Direction: snapshots.Outbound, Method: "GET", URL: "https://catalog.test/products/1001", Status: 200, ResponseBody: []byte(`{"id":1001}`)},
		{ID: 2, Direction: snapshots.Outbound, Method: "GET", URL: "http://pay.test/status?n=1000", Status: 200, ResponseBody: []byte(`ok`)},
	}
	s := newServer(t, Config{Exchanges: exs, CA: authority})
	return s, proxyClient(t, startMock(t, s), authority.Pool())
}

// calls makes n calls to u for a request carrying traceparent tp ("" for none).
func calls(t *testing.T, c *http.Client, u string, n int, tp string) {
	t.Helper()
	for i := range n {
		var h []string
		if tp != "" {
			h = []string{"Traceparent", tp}
		}
		do(t, c, "GET", fmt.Sprintf(u, 1000+i), nil, h...)
	}
}

var sortCounts = cmpopts.SortSlices(func(a, b snapshots.UpstreamCount) bool { return a.Name() < b.Name() })

// TestCallsAloneInFlight: calls made while one request is in flight are its,
// per service and endpoint template, misses counted; with two in flight and
// no traceparent they are nobody's, and End says so.
func TestCallsAloneInFlight(t *testing.T) {
	s, c := callsMock(t)
	s.Begin(7, "")
	calls(t, c, "https://catalog.test/products/%d", 3, "")
	calls(t, c, "http://pay.test/status?n=%d", 1, "")
	got, complete := s.End(7)
	want := []snapshots.UpstreamCount{
		{Service: "catalog.test", Endpoint: "GET /products/{id}", Count: 3, Misses: 0},
		{Service: "pay.test", Endpoint: "GET /status", Count: 1},
	}
	if diff := cmp.Diff(want, got, sortCounts, cmpopts.IgnoreFields(snapshots.UpstreamCount{}, "Duration")); diff != "" || !complete {
		t.Errorf("one in flight: complete %v (-want +got):\n%s", complete, diff)
	}
	for _, g := range got {
		if g.Duration <= 0 {
			t.Errorf("%s: no duration", g.Name())
		}
	}

	// A call the recording has no answer for counts as a miss.
	s.Begin(8, "")
	calls(t, c, "https://catalog.test/items/%d", 1, "")
	got, complete = s.End(8)
	if len(got) != 1 || got[0].Name() != "catalog.test GET /items/{id}" || got[0].Misses != 1 || !complete {
		t.Errorf("a miss: %+v, complete %v", got, complete)
	}

	s.Begin(9, "")
	s.Begin(10, "")
	calls(t, c, "https://catalog.test/products/%d", 2, "")
	for _, id := range []int64{9, 10} {
		if got, complete := s.End(id); len(got) != 0 || complete {
			t.Errorf("request %d of two in flight without traceparent: %+v, complete %v; want none, incomplete", id, got, complete)
		}
	}
}

// TestCallsByTraceparent: requests in flight at once each get their own
// calls when the app passes their traceparent on.
func TestCallsByTraceparent(t *testing.T) {
	s, c := callsMock(t)
	const requests = 6
	trace := func(i int) string { return fmt.Sprintf("%032x", 0xabc000+i) }
	for i := range requests {
		s.Begin(int64(100+i), trace(i))
	}
	var wg sync.WaitGroup
	for i := range requests {
		wg.Go(func() {
			tp := "00-" + trace(i) + "-00f067aa0ba902b7-01"
			calls(t, c, "https://catalog.test/products/%d", i+1, tp)
			calls(t, c, "http://pay.test/status?n=%d", 1, tp)
		})
	}
	wg.Wait()
	for i := range requests {
		got, complete := s.End(int64(100 + i))
		want := []snapshots.UpstreamCount{
			{Service: "catalog.test", Endpoint: "GET /products/{id}", Count: i + 1},
			{Service: "pay.test", Endpoint: "GET /status", Count: 1},
		}
		if diff := cmp.Diff(want, got, sortCounts, cmpopts.IgnoreFields(snapshots.UpstreamCount{}, "Duration")); diff != "" || !complete {
			t.Errorf("request %d: complete %v (-want +got):\n%s", i, complete, diff)
		}
	}
}
