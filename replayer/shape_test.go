package replayer

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

func shapeExchanges(urls ...string) []*snapshots.Exchange {
	var ex []*snapshots.Exchange
	for i, u := range urls {
		ex = append(ex, &snapshots.Exchange{ID: int64(i + 1), Direction: snapshots.Inbound, Method: "GET", URL: "http://app" + u, Endpoint: "GET /items", Status: 200})
	}
	return ex
}

func TestExplainPicksShapes(t *testing.T) {
	many := func(n int, u string) []string {
		var s []string
		for range n {
			s = append(s, u)
		}
		return s
	}
	var skewed []string
	for i := range 20 {
		skewed = append(skewed, fmt.Sprintf("/items?id=%d", i)) // 20 shapes of one request each
	}
	skewed = append(skewed, many(80, "/items?kind=a")...) // one shape, 80% of the load
	for _, tc := range []struct {
		name string
		urls []string
		cap  int
		want map[string]float64 // URL picked → weight
	}{
		{"first three alike", append(append(many(3, "/items?kind=a"), many(7, "/items?kind=b")...), "/items?kind=a&x=1"), 10,
			map[string]float64{"/items?kind=a": 3, "/items?kind=b": 7, "/items?kind=a&x=1": 1}},
		{"query order does not make a shape", []string{"/items?a=1&b=2", "/items?b=2&a=1"}, 10,
			map[string]float64{"/items?a=1&b=2": 2}},
		{"beyond the cap: spread by frequency", skewed, 5,
			// strata of 20 requests: four fall in the commonest shape, one
			// in the rare ones (the first of them in order of frequency).
			map[string]float64{"/items?kind=a": 80, "/items?id=10": 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReplayer(t, Config{Target: "http://127.0.0.1:1", Exchanges: shapeExchanges(tc.urls...)})
			got := map[string]float64{}
			total := 0.0
			for _, p := range r.explainPicks(tc.cap) {
				got[p.t.uri] += p.weight
				total += p.weight
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("picks (-want +got):\n%s", diff)
			}
			if total != float64(len(tc.urls)) {
				t.Errorf("weights sum to %v, want the %d requests of a pass", total, len(tc.urls))
			}
		})
	}
}

// TestExplainWarmsUpFirst: each endpoint's first request goes out once
// before the explain phase, uncounted and not given to the sink.
func TestExplainWarmsUpFirst(t *testing.T) {
	tg := newTarget(t, nil)
	var c counter
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: shapeExchanges("/items?kind=a", "/items?kind=a", "/items?kind=b"), SQL: &c})
	var s sink
	if _, err := r.Explain(context.Background(), 3, 0, &s); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, q := range tg.seen() {
		uris = append(uris, q.URI)
	}
	if diff := cmp.Diff([]string{"/items?kind=a", "/items?kind=a", "/items?kind=b"}, uris); diff != "" {
		t.Errorf("requests at the target (-want +got):\n%s", diff)
	}
	if n := len(s.all()); n != 2 {
		t.Errorf("%d explain results, want 2 (the warm-up is dropped)", n)
	}
	if n := len(c.calls); n != 4 {
		t.Errorf("%d counter calls, want 4 (the warm-up is not counted)", n)
	}
}
