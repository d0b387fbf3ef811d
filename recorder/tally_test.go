package recorder

import (
	"path/filepath"
	"testing"

	"github.com/replaykit/replay/snapshots"
)

// TestTallyLateStatements: a statement the SQL proxy reports after its
// exchange was written counts in the exchange's row and leaves nothing
// behind, so that a long recording's memory stays flat (the 30-minute soak
// grew 6 MB of live heap in 5 minutes before); statements ahead of their
// exchange still count when it comes, and those of exchanges that never
// come are bounded.
func TestTallyLateStatements(t *testing.T) {
	w, err := snapshots.Create(filepath.Join(t.TempDir(), "t.snap"), snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	tl := NewTally(w, nil)
	const n = 3 * recentExchanges
	for i := 0; i < n; i++ {
		id := tl.NewID()
		if i%2 == 0 { // the statement first, as the proxy usually reports it
			tl.AddStatement(&snapshots.Statement{ExchangeID: id, SQL: "SELECT 1", Fingerprint: "SELECT ?"})
		}
		tl.AddExchange(&snapshots.Exchange{ID: id, Direction: snapshots.Inbound, Method: "GET", URL: "http://a.test/orders", Status: 200})
		if i%2 == 1 { // late: after the exchange was written
			tl.AddStatement(&snapshots.Statement{ExchangeID: id, SQL: "SELECT 1", Fingerprint: "SELECT ?"})
		}
	}
	sum := tl.Summary()
	if len(sum.Rows) != 1 || sum.Rows[0].Exchanges != n || sum.Rows[0].SQL != n {
		t.Fatalf("rows %+v, want one row of %d exchanges and %d statements", sum.Rows, n, n)
	}
	tl.mu.Lock()
	pending, recent := len(tl.pending), len(tl.recent)
	tl.mu.Unlock()
	if pending != 0 || recent != recentExchanges {
		t.Fatalf("%d exchanges pending, %d remembered; want 0 and %d", pending, recent, recentExchanges)
	}

	// Statements of exchanges that never come: bounded.
	for i := 0; i < maxPending+10; i++ {
		tl.AddStatement(&snapshots.Statement{ExchangeID: tl.NewID(), SQL: "SELECT 1", Fingerprint: "SELECT ?"})
	}
	tl.mu.Lock()
	pending = len(tl.pending)
	tl.mu.Unlock()
	if pending > maxPending {
		t.Fatalf("%d exchanges pending, want at most %d", pending, maxPending)
	}
}
