package analyzer

import (
	"regexp"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// TestExplainSQLErrors: statements the server rejects more often in the
// candidate are named in the explanation, with their rate per request.
func TestExplainSQLErrors(t *testing.T) {
	const insert = "INSERT INTO orders (id, note) VALUES (?)"
	base := epSpec{name: "POST /orders", median: 3 * ms, sql: []snapshots.SQLCount{{Fingerprint: insert, Count: 1, Duration: time.Millisecond}}}
	cand := base
	cand.sql = []snapshots.SQLCount{{Fingerprint: insert, Count: 1, Duration: time.Millisecond, Errors: 3}}
	e := pair(t, base, cand, [2]int64{}).Endpoint("POST /orders")
	checkExplanation(t, e, Unchanged, CauseNoChange,
		`p95 .*: no change beyond noise; `+regexp.QuoteMeta("`"+insert+"` fails 3 times per request (baseline 0)"))
	if f := ErrorChanges(e); len(f) != 1 || f[0].CandidateErrorsPerRequest != 3 || f[0].BaselineErrorsPerRequest != 0 || f[0].CandidatePerRequest != 1 {
		t.Errorf("error changes: %+v", f)
	}

	// Back the other way.
	e = pair(t, cand, base, [2]int64{}).Endpoint("POST /orders")
	checkExplanation(t, e, Unchanged, CauseNoChange,
		`p95 .*: no change beyond noise; `+regexp.QuoteMeta("`"+insert+"` no longer fails (baseline 3 times per request)"))
}
