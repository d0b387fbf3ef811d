package report

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

const ms = time.Millisecond

var (
	listSQL   = snapshots.SQLCount{Fingerprint: "SELECT id, customer, status, created_at FROM orders ORDER BY id DESC LIMIT ?", Count: 1, Duration: 900 * time.Microsecond}
	itemsSQL  = snapshots.SQLCount{Fingerprint: "SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = ?", Count: 50, Duration: 9 * ms}
	countSQL  = snapshots.SQLCount{Fingerprint: "SELECT o.id, o.customer, o.status, o.created_at, (SELECT count(*) FROM order_items i WHERE i.order_id = o.id) FROM orders o ORDER BY o.id DESC LIMIT ?", Count: 1, Duration: 1400 * time.Microsecond}
	statusSQL = snapshots.SQLCount{Fingerprint: "SELECT status FROM orders WHERE id = ?", Count: 1, Duration: 300 * time.Microsecond}
	// productList and productEach are the calls GET /catalog makes to the
	// catalog API: the list, and (an HTTP N+1) every product's details.
	productList = snapshots.UpstreamCount{Service: "catalog.demo.test", Endpoint: "GET /products", Count: 1, Duration: 300 * time.Microsecond}
	productEach = snapshots.UpstreamCount{Service: "catalog.demo.test", Endpoint: "GET /products/{id}", Count: 10, Duration: 2 * ms}
	postSQL     = []snapshots.SQLCount{
		{Fingerprint: "begin", Count: 1, Duration: 100 * time.Microsecond},
		{Fingerprint: "INSERT INTO orders (customer) VALUES (?) RETURNING id, status, created_at", Count: 1, Duration: 700 * time.Microsecond},
		{Fingerprint: "INSERT INTO order_items (order_id, sku, qty, price_cents) SELECT ?, sku, qty, price_cents FROM unnest(?, ?, ?)", Count: 1, Duration: 600 * time.Microsecond},
		{Fingerprint: "commit", Count: 1, Duration: 400 * time.Microsecond},
	}
)

// fixEndpoint describes an endpoint of a fixture run.
type fixEndpoint struct {
	name     string
	weight   int
	median   time.Duration
	extra    time.Duration
	sql      []snapshots.SQLCount
	failures int                       // every failures-th request fails with 503 (0: none)
	upstream []snapshots.UpstreamCount // calls to mocked services of every request (counted when not nil)
}

// fixtureResults builds a deterministic run: n load results in 10
// interleaving slices (odd or even numbers), then 3 explain results per
// endpoint.
func fixtureResults(n int, seed uint64, odd bool, eps []fixEndpoint) []*snapshots.Result {
	rng := rand.New(rand.NewPCG(seed, 1))
	total := 0
	for _, e := range eps {
		total += e.weight
	}
	var out []*snapshots.Result
	perEndpoint := map[string]int{}
	for i := range n {
		k := rng.IntN(total)
		var e fixEndpoint
		for _, c := range eps {
			if k -= c.weight; k < 0 {
				e = c
				break
			}
		}
		perEndpoint[e.name]++
		slice := 2*(i*10/n) + 2
		if odd {
			slice--
		}
		d := time.Duration(float64(e.median)*math.Exp(rng.NormFloat64()*0.3)) + e.extra
		at := t0.Add(time.Duration(i) * 5 * ms)
		r := &snapshots.Result{Phase: snapshots.PhaseLoad, Slice: slice, Endpoint: e.name, Method: "GET", URL: "/x",
			Intended: at, Sent: at.Add(100 * time.Microsecond), Done: at.Add(100*time.Microsecond + d),
			Status: 200, RecordedStatus: 200, SQLCounted: e.sql != nil, SQL: e.sql, UpstreamCounted: e.upstream != nil, Upstream: e.upstream}
		if e.failures > 0 && perEndpoint[e.name]%e.failures == 0 {
			r.Status = 503
		}
		out = append(out, r)
	}
	for j, e := range eps {
		for k := range 3 {
			at := t0.Add(time.Duration(n*5+j*100+k*10) * ms)
			out = append(out, &snapshots.Result{Phase: snapshots.PhaseExplain, Endpoint: e.name, Method: "GET", URL: "/x",
				Intended: at, Sent: at, Done: at.Add(e.median + e.extra), Status: 200, RecordedStatus: 200, SQLCounted: e.sql != nil, SQL: e.sql,
				UpstreamCounted: e.upstream != nil, Upstream: e.upstream})
		}
	}
	return out
}

func fixtureSummary(t testing.TB, info snapshots.RunInfo, rs []*snapshots.Result) *analyzer.Summary {
	t.Helper()
	s, err := analyzer.Summarize(context.Background(), info, func(yield func(*snapshots.Result, error) bool) {
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
	}, analyzer.SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func info(name, target string, misses int64) snapshots.RunInfo {
	return snapshots.RunInfo{Name: name, Snapshot: "demo.snap", Target: target, Started: t0, Ended: t0.Add(10 * time.Second),
		Settings: map[string]string{"vus": "8", "duration": "10s"}, MockMisses: misses, Statements: 4321}
}

func baseEndpoints() []fixEndpoint {
	return []fixEndpoint{
		{name: "GET /orders", weight: 40, median: 3 * ms, sql: []snapshots.SQLCount{countSQL}},
		{name: "GET /orders/{id}/status", weight: 30, median: 2 * ms, sql: []snapshots.SQLCount{statusSQL}},
		{name: "POST /orders", weight: 25, median: 6 * ms, sql: postSQL},
		{name: "GET /catalog", weight: 1, median: 4 * ms, sql: []snapshots.SQLCount{}, upstream: []snapshots.UpstreamCount{productList}},
	}
}

// runFixture is a run report with goals, some met and some missed.
func runFixture(t testing.TB) *RunReport {
	eps := baseEndpoints()
	eps[2].failures = 50
	s := fixtureSummary(t, info("candidate", "http://127.0.0.1:41234", 2), fixtureResults(2000, 7, false, eps))
	goals, err := analyzer.ParseGoals([]string{"p95<500ms", "success>99%", "tps>100", "GET /orders: sql<=5", "GET /orders: p95<3ms", "GET /missing: p95<1s"})
	if err != nil {
		t.Fatal(err)
	}
	return &RunReport{Summary: s, Goals: analyzer.Check(s, goals), Artifacts: []Artifact{{Name: "run file", Path: "out/candidate.run"}}}
}

// comparisonFixture is the demo's comparison: an N+1 in GET /orders (50
// more statements, +10 ms), the rest unchanged, GET /catalog too rare to
// judge, and two mock misses in the candidate.
func comparisonFixture(t testing.TB) *ComparisonReport {
	base := fixtureSummary(t, info("baseline", "http://127.0.0.1:41001", 0), fixtureResults(2000, 11, true, baseEndpoints()))
	slow := baseEndpoints()
	slow[0].sql = []snapshots.SQLCount{listSQL, itemsSQL}
	slow[0].extra = 10 * ms
	cand := fixtureSummary(t, info("candidate", "http://127.0.0.1:41002", 2), fixtureResults(2000, 12, false, slow))
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	goals, err := analyzer.ParseGoals([]string{"p95<500ms", "GET /orders: sql<=5"})
	if err != nil {
		t.Fatal(err)
	}
	return &ComparisonReport{Comparison: c, Goals: analyzer.Check(cand, goals), Artifacts: []Artifact{
		{Name: "baseline run", Path: "out/baseline.run"}, {Name: "candidate run", Path: "out/candidate.run"}, {Name: "Markdown report", Path: "out/report.md"},
	}}
}

// unchangedFixture compares a run with a second run of the same build.
func unchangedFixture(t testing.TB) *ComparisonReport {
	base := fixtureSummary(t, info("baseline", "http://127.0.0.1:41001", 0), fixtureResults(2000, 11, true, baseEndpoints()))
	cand := fixtureSummary(t, info("candidate", "http://127.0.0.1:41002", 0), fixtureResults(2000, 12, false, baseEndpoints()))
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &ComparisonReport{Comparison: c}
}

// miswiredFixture is the comparison of issue 11: both builds pointed at the
// baseline's SQL counter, so the candidate's counter saw nothing and its
// N+1 landed in the baseline's; its mock was never called either.
func miswiredFixture(t testing.TB) *ComparisonReport {
	bi, ci := info("baseline", "http://127.0.0.1:41001", 0), info("candidate", "http://127.0.0.1:41002", 0)
	bi.Wiring = &snapshots.Wiring{SQLAddr: "127.0.0.1:6543", SQLApp: "replay-baseline", SQLConnections: 8,
		SQLClients: []snapshots.SQLClient{{App: "replay-baseline", Connections: 4, Statements: 2100}, {App: "replay-candidate", Connections: 4, Statements: 41000}},
		MockAddr:   "127.0.0.1:40001", MockCalls: 500, RecordedCalls: 20}
	ci.Wiring = &snapshots.Wiring{SQLAddr: "127.0.0.1:6544", SQLApp: "replay-candidate",
		MockAddr: "127.0.0.1:40002", RecordedCalls: 20}
	base := fixtureSummary(t, bi, fixtureResults(2000, 11, true, baseEndpoints()))
	slow := baseEndpoints()
	for i := range slow {
		slow[i].sql = []snapshots.SQLCount{}
	}
	slow[0].extra = 10 * ms
	cand := fixtureSummary(t, ci, fixtureResults(2000, 12, false, slow))
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &ComparisonReport{Comparison: c}
}

// upstreamFixture compares the demo with a candidate whose GET /catalog
// calls the catalog API for every product's details (an HTTP N+1, judged
// from the explain phase's exact counts); nothing else changed.
func upstreamFixture(t testing.TB) *ComparisonReport {
	base := fixtureSummary(t, info("baseline", "http://127.0.0.1:41001", 0), fixtureResults(2000, 11, true, baseEndpoints()))
	eps := baseEndpoints()
	eps[3].upstream = []snapshots.UpstreamCount{productList, productEach}
	cand := fixtureSummary(t, info("candidate", "http://127.0.0.1:41002", 0), fixtureResults(2000, 12, false, eps))
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &ComparisonReport{Comparison: c}
}
