package sqlcount

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount/mysqlwire"
	"github.com/replaykit/replay/sqlcount/pgwire"
	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// TestCounters: a request's statements on two counters (PostgreSQL and
// MySQL) come back together from End, and the totals add up, the same
// fingerprint merged.
func TestCounters(t *testing.T) {
	pg := sqlcore.NewUnchecked(Config{Upstream: "127.0.0.1:1", KeepUnattributed: true}, pgwire.Wire{})
	my := sqlcore.NewUnchecked(Config{Upstream: "127.0.0.1:2", KeepUnattributed: true}, mysqlwire.New())
	cs := Counters{pg, my}
	t0 := time.Unix(1700000000, 0)
	record := func(p *Proxy, shape string, d time.Duration, errText string) {
		r := p.Recorder(1)
		r.Record(sqlcore.Stmt{FP: r.Lookup([]byte(shape))}, snapshots.ProtocolSimple, r.Window(), t0, t0.Add(d), 1, nil, errText)
	}
	cs.Begin(7, "")
	record(pg, "SELECT 0", time.Millisecond, "")
	record(my, "SELECT ?", 3*time.Millisecond, "")
	record(my, "SELECT * FROM orders WHERE id = ?", time.Millisecond, "")
	record(my, "SELECT * FROM orders WHERE id = ?", time.Millisecond, "1146 (42S02): no table")
	got := cs.End(7)
	want := []snapshots.SQLCount{{Fingerprint: "SELECT ?", Count: 2, Duration: 4 * time.Millisecond},
		{Fingerprint: "SELECT * FROM orders WHERE id = ?", Count: 1, Errors: 1, Duration: time.Millisecond}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("End (-want +got):\n%s", d)
	}
	record(pg, "SELECT 0", time.Millisecond, "") // no request in flight
	record(my, "SELECT ?", time.Millisecond, "")
	st := cs.Stats()
	if st.Statements != 5 || st.Errors != 1 || len(st.Fingerprints) != 2 || st.Fingerprints[0].Fingerprint != "SELECT ?" ||
		st.Fingerprints[0].Count != 4 || st.Fingerprints[0].Mean != 1500*time.Microsecond {
		t.Errorf("Stats = %+v", st)
	}
	if u := cs.Unattributed(); u.Total() != 2 {
		t.Errorf("%d unattributed statements, want 2", u.Total())
	}
}
