package analyzer

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// synthLoad simulates clients that each send requests one after another,
// picking an endpoint at random; every request of endpoint e runs rates[e]
// statements at random moments while it is in flight. attributed is the
// chance that the counter attributed a statement exactly.
func synthLoad(seed uint64, clients, requests int, rates map[string]int, attributed float64) ([]snapshots.SQLSpan, snapshots.SQLHistogram) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var names []string
	for _, n := range []string{"GET /none", "GET /five", "GET /two", "POST /one"} {
		if _, ok := rates[n]; ok {
			names = append(names, n)
		}
	}
	base := time.Unix(1_700_000_000, 0)
	clock := make([]time.Duration, clients)
	h := snapshots.SQLHistogram{Bin: time.Millisecond}
	var spans []snapshots.SQLSpan
	for i := range requests {
		c := i % clients
		name := names[rng.IntN(len(names))]
		d := time.Duration(2+rng.IntN(18)) * time.Millisecond
		start := base.Add(clock[c] + time.Duration(rng.IntN(3000))*time.Microsecond)
		clock[c] = start.Sub(base) + d
		sp := snapshots.SQLSpan{Key: name, Start: start, End: start.Add(d)}
		for range rates[name] {
			if rng.Float64() < attributed {
				sp.Statements++
				continue
			}
			h.Add(start.Add(time.Duration(rng.Int64N(int64(d)))))
		}
		spans = append(spans, sp)
	}
	return spans, h
}

func TestEstimateSQL(t *testing.T) {
	for _, tc := range []struct {
		name       string
		clients    int
		requests   int
		rates      map[string]int
		attributed float64
		tolerance  float64 // statements per request
	}{
		{"one endpoint", 4, 40, map[string]int{"GET /two": 2}, 0, 0.001},
		{"zero and five", 4, 400, map[string]int{"GET /none": 0, "GET /five": 5}, 0, 0.5},
		{"three endpoints", 8, 2000, map[string]int{"GET /none": 0, "GET /five": 5, "GET /two": 2}, 0, 0.5},
		{"partly attributed", 4, 400, map[string]int{"GET /none": 0, "GET /five": 5, "POST /one": 1}, 0.5, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spans, h := synthLoad(7, tc.clients, tc.requests, tc.rates, tc.attributed)
			ests := EstimateSQL(spans, h)
			if len(ests) != len(tc.rates) {
				t.Fatalf("got %d estimates, want %d: %+v", len(ests), len(tc.rates), ests)
			}
			for _, e := range ests {
				want := float64(tc.rates[e.Key])
				if math.Abs(e.PerRequest-want) > tc.tolerance {
					t.Errorf("%s: %.3f statements per request (±%.3f, %s), want %v", e.Key, e.PerRequest, e.Margin, e.Method, want)
				}
				if e.Method != SQLMethodEstimated {
					t.Errorf("%s: method %q, want %q", e.Key, e.Method, SQLMethodEstimated)
				}
				if e.Margin <= 0 || e.Margin > 2 {
					t.Errorf("%s: margin %.3f, want a small positive one", e.Key, e.Margin)
				}
				t.Logf("%s: %.3f ±%.3f (want %v)", e.Key, e.PerRequest, e.Margin, want)
			}
		})
	}
}

func TestEstimateSQLExact(t *testing.T) {
	spans, h := synthLoad(3, 4, 100, map[string]int{"GET /none": 0, "GET /five": 5}, 1)
	if h.Total() != 0 {
		t.Fatalf("histogram holds %d statements, want none", h.Total())
	}
	// A statement while no request was in flight is nobody's.
	h.Add(spans[len(spans)-1].End.Add(time.Second))
	for _, e := range EstimateSQL(spans, h) {
		want := float64(map[string]int{"GET /five": 5}[e.Key])
		if e.PerRequest != want || e.Method != SQLMethodExact || e.Margin != 0 {
			t.Errorf("%s: %v ±%v (%s), want exactly %v", e.Key, e.PerRequest, e.Margin, e.Method, want)
		}
	}
}
