package analyzer

import (
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

var (
	productList = snapshots.UpstreamCount{Service: "catalog.test", Endpoint: "GET /products", Count: 1, Duration: 2 * time.Millisecond}
	productByID = snapshots.UpstreamCount{Service: "catalog.test", Endpoint: "GET /products/{id}", Count: 1, Duration: 2 * time.Millisecond}
)

// catalogEndpoints are the demo's endpoints with GET /catalog calling the
// catalog as calls says.
func catalogEndpoints(calls ...snapshots.UpstreamCount) []epSpec {
	eps := demoEndpoints()
	return append(eps, epSpec{name: "GET /catalog", median: 3 * ms, weight: 3, sql: []snapshots.SQLCount{}, upstream: calls})
}

// TestCompareUpstreamNPlusOne: a candidate that calls the catalog once per
// product instead of once regresses, explained as an HTTP N+1 from the
// explain phase's exact counts, whatever its latency; the same calls on
// both sides are unchanged.
func TestCompareUpstreamNPlusOne(t *testing.T) {
	perItem := productByID
	perItem.Count, perItem.Duration = 20, 40*time.Millisecond
	base := summarize(t, noisy("base", 3), catalogEndpoints(productList, productByID))
	cand := summarize(t, noisy("cand", 3), catalogEndpoints(productList, perItem))
	c := mustCompare(t, base, cand, CompareOptions{})
	e := c.Endpoint("GET /catalog")
	if e.Verdict != Regression || e.Cause != CauseUpstreamNPlusOne || e.UpstreamCall != "catalog.test GET /products/{id}" || !e.UpstreamExact {
		t.Fatalf("GET /catalog: %s (%s, %q, exact %v): %s", e.Verdict, e.Cause, e.UpstreamCall, e.UpstreamExact, e.Explanation)
	}
	want := "HTTP N+1: `GET /catalog` calls `catalog.test GET /products/{id}` 20 times per request (baseline 1), adding 38 ms upstream time per request"
	if !strings.HasPrefix(e.Explanation, want) {
		t.Errorf("explanation %q, want it to start %q", e.Explanation, want)
	}
	if got := c.Candidate.Endpoint("GET /catalog").Upstream; got.Source != SQLSourceExplain || got.PerRequest != 21 || got.Endpoint("catalog.test GET /products/{id}").MaxPerRequest != 20 {
		t.Errorf("candidate upstream %+v", got)
	}
	for _, o := range c.Endpoints {
		if o.Endpoint != "GET /catalog" && o.UpstreamVerdict != "" {
			t.Errorf("%s: upstream verdict %q without a mock's counts", o.Endpoint, o.UpstreamVerdict)
		}
	}

	aa := mustCompare(t, base, summarize(t, noisy("cand", 3), catalogEndpoints(productList, productByID)), CompareOptions{})
	if e := aa.Endpoint("GET /catalog"); e.UpstreamVerdict != Unchanged || e.Verdict == Regression || strings.Contains(e.Explanation, "upstream") {
		t.Errorf("A/A: %s, upstream %s: %s", e.Verdict, e.UpstreamVerdict, e.Explanation)
	}

	// Fewer calls: an improvement, named.
	imp := mustCompare(t, cand, base, CompareOptions{})
	if e := imp.Endpoint("GET /catalog"); e.UpstreamVerdict != Improvement || e.Verdict != Improvement ||
		!strings.Contains(e.Explanation, "19 fewer upstream calls per request (21 → 2): `catalog.test GET /products/{id}` 20 → 1") {
		t.Errorf("fewer calls: %s (%s): %s", e.Verdict, e.Cause, e.Explanation)
	}
}

// TestCompareUpstreamLoadOnly: counts from the load phase only need a rise
// of 50% too; a rise of one call to a new upstream endpoint is named but no
// N+1.
func TestCompareUpstreamLoadOnly(t *testing.T) {
	spec := func(name string) runSpec { r := noisy(name, 5); r.explain = 0; return r }
	base := summarize(t, spec("base"), catalogEndpoints(productList))
	cand := summarize(t, spec("cand"), catalogEndpoints(productList, productByID))
	e := mustCompare(t, base, cand, CompareOptions{}).Endpoint("GET /catalog")
	if e.UpstreamExact || e.Verdict != Regression || e.Cause != CauseUpstream ||
		!strings.HasPrefix(e.Explanation, "1 more upstream calls per request (1 → 2): `catalog.test GET /products/{id}` 0 → 1") {
		t.Errorf("load only: %s (%s, exact %v): %s", e.Verdict, e.Cause, e.UpstreamExact, e.Explanation)
	}
}
