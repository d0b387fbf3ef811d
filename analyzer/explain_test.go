package analyzer

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// pair compares a baseline and a candidate made of one endpoint each
// (plus a steady second endpoint), interleaved, with an explain phase.
func pair(t *testing.T, base, cand epSpec, misses [2]int64) *Comparison {
	t.Helper()
	other := epSpec{name: "GET /orders/{id}/status", median: 2 * ms, sql: []snapshots.SQLCount{statusFP}}
	bs, cs := noisy("baseline", 3), noisy("candidate", 3)
	bs.n, cs.n = 2000, 2000
	bs.misses, cs.misses = misses[0], misses[1]
	return mustCompare(t, summarize(t, bs, []epSpec{base, other}), summarize(t, cs, []epSpec{cand, other}), CompareOptions{})
}

// latencyRE matches the latency clause of an explanation.
const latencyRE = `p95 (rose|fell) [0-9.]+ ms → [0-9.]+ ms \([+−][0-9.]+ ms, CI ×[0-9.]+–×[0-9.]+\)`

func checkExplanation(t *testing.T, e *EndpointComparison, verdict Verdict, cause, pattern string) {
	t.Helper()
	if e == nil {
		t.Fatal("endpoint missing from the comparison")
	}
	re := regexp.MustCompile("^" + pattern + "$")
	if e.Verdict != verdict || e.Cause != cause || !re.MatchString(e.Explanation) {
		t.Errorf("got %s (%s): %s\nwant %s (%s): %s", e.Verdict, e.Cause, e.Explanation, verdict, cause, pattern)
	}
}

func items(n int, each time.Duration) snapshots.SQLCount {
	return snapshots.SQLCount{Fingerprint: itemsFP, Count: n, Duration: time.Duration(n) * each}
}

func TestExplainNPlusOne(t *testing.T) {
	base := epSpec{name: "GET /orders", median: 3 * ms, sql: []snapshots.SQLCount{listSQL}}
	slow := epSpec{name: "GET /orders", median: 3 * ms, extra: 10 * ms, sql: []snapshots.SQLCount{listSQL, items(50, 200*time.Microsecond)}}
	c := pair(t, base, slow, [2]int64{})
	e := c.Endpoint("GET /orders")
	checkExplanation(t, e, Regression, CauseNPlusOne,
		regexp.QuoteMeta("N+1: `SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = ?` runs 50 times per request (baseline 0), adding 10 ms database time per request; ")+latencyRE)
	if !e.SQLExact || e.SQLVerdict != Regression || e.SQL[0].Fingerprint != itemsFP || e.SQL[0].BaselinePerRequest != 0 || e.SQL[0].CandidatePerRequest != 50 {
		t.Errorf("sql evidence: exact %v verdict %s first %+v", e.SQLExact, e.SQLVerdict, e.SQL[0])
	}
	if other := c.Endpoint("GET /orders/{id}/status"); other.Verdict != Unchanged {
		t.Errorf("other endpoint: %s: %s", other.Verdict, other.Explanation)
	}

	// The statement count alone is a regression, latency within noise.
	same := slow
	same.extra = 0
	checkExplanation(t, pair(t, base, same, [2]int64{}).Endpoint("GET /orders"), Regression, CauseNPlusOne,
		regexp.QuoteMeta("N+1: `SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = ?` runs 50 times per request (baseline 0), adding 10 ms database time per request; latency within noise (p95 ")+`[0-9.]+ ms → [0-9.]+ ms\)`)

	// Counts that vary with the rows returned are reported with their range.
	vary := slow
	vary.sql = nil
	vary.sqlFor = func(i int) []snapshots.SQLCount {
		return []snapshots.SQLCount{listSQL, items(3+i%48, 200*time.Microsecond)}
	}
	e = pair(t, base, vary, [2]int64{}).Endpoint("GET /orders")
	checkExplanation(t, e, Regression, CauseNPlusOne,
		regexp.QuoteMeta("N+1: `SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = ?` runs 4 times per request on average (3–5; baseline 0), adding ")+`[0-9.]+ ms database time per request; `+latencyRE)

	// The reverse is an improvement.
	checkExplanation(t, pair(t, slow, base, [2]int64{}).Endpoint("GET /orders"), Improvement, CauseSQL,
		regexp.QuoteMeta("50 fewer statements per request (51 → 1): `SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = ?` 50 → 0 (−10 ms database time); ")+latencyRE)
}

func TestExplainMoreStatements(t *testing.T) {
	customer := snapshots.SQLCount{Fingerprint: "SELECT name FROM customers WHERE id = ?", Count: 2, Duration: 1200 * time.Microsecond}
	base := epSpec{name: "GET /orders", median: 3 * ms, sql: []snapshots.SQLCount{listSQL}}
	more := epSpec{name: "GET /orders", median: 3 * ms, sql: []snapshots.SQLCount{listSQL, customer}}
	checkExplanation(t, pair(t, base, more, [2]int64{}).Endpoint("GET /orders"), Regression, CauseSQL,
		regexp.QuoteMeta("2 more statements per request (1 → 3): `SELECT name FROM customers WHERE id = ?` 0 → 2 (+1.2 ms database time); latency within noise (p95 ")+`[0-9.]+ ms → [0-9.]+ ms\)`)
}

func TestExplainSlowerStatement(t *testing.T) {
	fast := snapshots.SQLCount{Fingerprint: "SELECT status FROM orders WHERE customer = ?", Count: 1, Duration: 3100 * time.Microsecond}
	slowSQL := fast
	slowSQL.Duration = 45 * ms
	base := epSpec{name: "GET /orders", median: 5 * ms, sql: []snapshots.SQLCount{fast}}
	slow := epSpec{name: "GET /orders", median: 5 * ms, extra: 42 * ms, sql: []snapshots.SQLCount{slowSQL}}
	checkExplanation(t, pair(t, base, slow, [2]int64{}).Endpoint("GET /orders"), Regression, CauseSlowerSQL,
		regexp.QuoteMeta("`SELECT status FROM orders WHERE customer = ?` got slower: 3.1 ms → 45 ms per call (+41.9 ms database time per request); ")+latencyRE)
}

func TestExplainFailuresAndMockMisses(t *testing.T) {
	base := epSpec{name: "GET /catalog", median: 3 * ms}
	failing := epSpec{name: "GET /catalog", median: 3 * ms, failRate: 0.12, failWith: 502}
	c := pair(t, base, failing, [2]int64{0, 12})
	e := c.Endpoint("GET /catalog")
	want := fmt.Sprintf("failures rose from 0%% to %s: 5xx answers ×%[2]d (502 Bad Gateway ×%[2]d); the candidate made 12 upstream calls the snapshot has no answer for (baseline 0)",
		FormatPercent(e.Candidate.FailureRate()), e.Candidate.Failed)
	checkExplanation(t, e, Regression, CauseFailures, regexp.QuoteMeta(want))
	if e.Candidate.FailureRate() < 10 || e.Candidate.FailureRate() > 14 || e.FailureZ < 10 {
		t.Errorf("failure rate %v z %v", e.Candidate.FailureRate(), e.FailureZ)
	}
	if len(c.Notes) != 1 || c.Notes[0] != "the candidate made 12 upstream calls the snapshot has no answer for (baseline 0)" {
		t.Errorf("notes = %q", c.Notes)
	}
	// A few failures more is within noise.
	few := epSpec{name: "GET /catalog", median: 3 * ms, failRate: 0.002}
	if e := pair(t, base, few, [2]int64{}).Endpoint("GET /catalog"); e.FailureVerdict != Unchanged || e.Verdict != Unchanged {
		t.Errorf("0.2%% failures: %s %s: %s", e.FailureVerdict, e.Verdict, e.Explanation)
	}
}

func TestExplainLatencyWithoutSQL(t *testing.T) {
	base := epSpec{name: "GET /catalog", median: 3 * ms}
	slow := epSpec{name: "GET /catalog", median: 3 * ms, extra: 50 * ms}
	checkExplanation(t, pair(t, base, slow, [2]int64{}).Endpoint("GET /catalog"), Regression, CauseLatency,
		latencyRE+regexp.QuoteMeta(" (SQL was not counted, so the database cannot be ruled out)"))
}

func TestExplainUnchanged(t *testing.T) {
	base := epSpec{name: "GET /orders", median: 3 * ms, sql: []snapshots.SQLCount{listSQL}}
	checkExplanation(t, pair(t, base, base, [2]int64{}).Endpoint("GET /orders"), Unchanged, CauseNoChange,
		`p95 [0-9.]+ ms → [0-9.]+ ms \(CI ×[0-9.]+–×[0-9.]+\), SQL 1 → 1 statements per request: no change beyond noise`)
}

// TestExplainUnchangedSmallChange: a change the interval is sure of, but
// below the minimum change, is unchanged and says why.
func TestExplainUnchangedSmallChange(t *testing.T) {
	base := epSpec{name: "GET /orders", median: 3 * ms, sql: []snapshots.SQLCount{listSQL}}
	cand := base
	cand.median = 3 * ms * 6 / 10
	e := pair(t, base, cand, [2]int64{}).Endpoint("GET /orders")
	checkExplanation(t, e, Unchanged, CauseNoChange,
		`p95 [0-9.]+ ms → [0-9.]+ ms \(CI ×0\.[0-9]+–×0\.[0-9]+\), SQL 1 → 1 statements per request: smaller than a change that counts \(5 ms and 10%\)`)
}

func TestShortFingerprint(t *testing.T) {
	long := "SELECT o.id, o.customer, o.status, o.created_at, o.updated_at, o.total_cents FROM orders o WHERE o.id = ?"
	tests := []struct{ in, want string }{
		{itemsFP, itemsFP},
		{"SELECT  a,\n b FROM t", "SELECT a, b FROM t"},
		{long, "SELECT … FROM orders o WHERE o.id = ?"},
		{"SELECT o.id, o.customer, o.status, o.created_at, (SELECT count(*) FROM order_items i WHERE i.order_id = o.id) FROM orders o ORDER BY o.id DESC LIMIT ?",
			"SELECT … FROM orders o ORDER BY o.id DESC LIMIT ?"},
		{"UPDATE orders SET status = ?, note = ? WHERE id IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", "UPDATE orders SET status = ?, note = ? WHERE id IN (?, ?, ?, ?, ?, ?, ?, ?, ?…"},
	}
	for _, tt := range tests {
		got := ShortFingerprint(tt.in, FingerprintWidth)
		if got != tt.want {
			t.Errorf("ShortFingerprint(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if len(got) > FingerprintWidth {
			t.Errorf("%q is %d bytes long", got, len(got))
		}
	}
	if strings.Contains(ShortFingerprint(strings.Repeat("é", 100), 11), "\uFFFD") {
		t.Error("cut inside a rune")
	}
}

func TestFormat(t *testing.T) {
	tests := []struct{ got, want string }{
		{FormatMs(0), "0 ms"}, {FormatMs(0.423), "0.42 ms"}, {FormatMs(4.1), "4.1 ms"}, {FormatMs(45), "45 ms"},
		{FormatMs(54.34), "54.3 ms"}, {FormatMs(1234.5), "1234 ms"}, {signedMs(-3.14), "−3.1 ms"}, {signedMs(50.2), "+50.2 ms"},
		{FormatRatio(13.24), "×13.2"}, {FormatRatio(1.053), "×1.05"}, {FormatRatio(0.996), "×0.996"}, {FormatRatio(1.0004), "×1.0004"},
		{FormatCount(50), "50"}, {FormatCount(1.5), "1.5"}, {FormatCount(1.0 / 3), "0.33"}, {FormatCount(123.4), "123"},
		{FormatPercent(0), "0%"}, {FormatPercent(12.5), "12.5%"}, {FormatPercent(99.95), "99.95%"}, {FormatPercent(100), "100%"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
