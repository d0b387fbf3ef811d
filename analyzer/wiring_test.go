package analyzer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

func TestCompareFaults(t *testing.T) {
	side := func(name string, w snapshots.Wiring, misses int64) snapshots.RunInfo {
		return snapshots.RunInfo{Name: name, Wiring: &w, MockMisses: misses}
	}
	good := func(name, sql string) snapshots.Wiring {
		app := "replay-" + name
		return snapshots.Wiring{SQLAddr: sql, SQLApp: app, SQLConnections: 2,
			SQLClients: []snapshots.SQLClient{{App: app, Connections: 2, Statements: 40}}, MockAddr: "127.0.0.1:4000", MockCalls: 100, RecordedCalls: 20}
	}
	base, cand := good("baseline", "127.0.0.1:6543"), good("candidate", "127.0.0.1:6544")
	// Both builds at the baseline's counter, as the issue saw it.
	crossed := base
	crossed.SQLClients = append(crossed.SQLClients, snapshots.SQLClient{App: "replay-candidate", Connections: 1, Statements: 41})
	unused := cand
	unused.SQLConnections, unused.SQLClients = 0, nil
	noMock := cand
	noMock.MockCalls = 0
	tests := []struct {
		name       string
		base, cand snapshots.RunInfo
		want       []string // kind side: text fragment
	}{
		{"well wired", side("baseline", base, 0), side("candidate", cand, 1), nil},
		{"old run files", snapshots.RunInfo{Name: "baseline"}, side("candidate", unused, 0), nil},
		{"both at the baseline's counter", side("baseline", crossed, 0), side("candidate", unused, 0), []string{
			"sql-crossed candidate: the baseline's SQL counter (127.0.0.1:6543) saw 41 statements on 1 connection from the candidate build (application_name replay-candidate), counted as the baseline's: point the candidate's DATABASE_URL at its own counter, 127.0.0.1:6544",
			"sql-unused candidate: the candidate's SQL counter (127.0.0.1:6544) saw no connection while the baseline's saw 2 connections",
		}},
		{"mock never called", side("baseline", base, 0), side("candidate", noMock, 0), []string{
			"mock-unused candidate: the candidate's mock (127.0.0.1:4000) saw no call, but the recorded requests replayed made 20 calls to mocked services",
		}},
		{"mock misses over 1%", side("baseline", base, 2), side("candidate", cand, 0), []string{
			"mock-misses baseline: the baseline's mock could not answer 2 of its 100 calls (2%, over 1%)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			faults := CompareFaults(tt.base, tt.cand)
			if len(faults) != len(tt.want) {
				t.Fatalf("faults = %q, want %d", faults, len(tt.want))
			}
			for i, f := range faults {
				got := f.Kind + " " + f.Side + ": " + f.Text
				if !strings.HasPrefix(got, tt.want[i]) {
					t.Errorf("fault %d:\n got %s\nwant %s…", i, got, tt.want[i])
				}
			}
		})
	}
}

func TestRunFaults(t *testing.T) {
	w := snapshots.Wiring{SQLAddr: "127.0.0.1:7000", MockAddr: "127.0.0.1:4000", RecordedCalls: 3}
	got := RunFaults(snapshots.RunInfo{Name: "run", Wiring: &w})
	var kinds []string
	for _, f := range got {
		kinds = append(kinds, f.Kind)
	}
	if diff := cmp.Diff([]string{FaultSQLUnused, FaultMockUnused}, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s\n%q", diff, got)
	}
	if !strings.HasPrefix(got[0].Text, "the SQL counter (127.0.0.1:7000) saw no connection") || !strings.HasPrefix(got[1].Text, "the run's mock (127.0.0.1:4000) saw no call") {
		t.Errorf("texts: %q", got)
	}
}

// TestUnwiredSQLIsNotCounted: requests replayed with a SQL counter in place
// that saw no connection carry zero statements each; those zeros are not
// a count (the build bypassed the counter), so the summary shows SQL as not
// counted and an sql goal is not evaluated, never passed (issue 23: an N+1
// passed sql<=5 so).
func TestUnwiredSQLIsNotCounted(t *testing.T) {
	var rs []*snapshots.Result
	for i := range 4 {
		at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		for _, phase := range []string{snapshots.PhaseExplain, snapshots.PhaseLoad} {
			rs = append(rs, &snapshots.Result{Phase: phase, Endpoint: "GET /orders", Intended: at, Sent: at, Done: at.Add(time.Millisecond),
				Status: 200, RecordedStatus: 200, SQLCounted: true})
		}
	}
	goals, err := ParseGoals([]string{"GET /orders: sql<=5"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name        string
		connections int64
		counted     bool
	}{
		{"the counter saw the build", 1, true},
		{"the counter saw no connection", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			info := snapshots.RunInfo{Name: "run", Wiring: &snapshots.Wiring{SQLAddr: "127.0.0.1:7000", SQLConnections: tt.connections}}
			s, err := Summarize(context.Background(), info, fromSlice(rs), SummarizeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			e := s.Endpoint("GET /orders")
			if e.SQL.Counted() != tt.counted || s.Overall.SQL.Counted() != tt.counted || e.ExplainSQL.Counted() != tt.counted {
				t.Errorf("SQL counted %v (overall %v, explain %v), want %v", e.SQL.Counted(), s.Overall.SQL.Counted(), e.ExplainSQL.Counted(), tt.counted)
			}
			g := Check(s, goals)[0]
			if g.Passed == !tt.counted || g.NotEvaluated == tt.counted || g.Status() != map[bool]string{true: "PASS", false: "NOT EVALUATED"}[tt.counted] {
				t.Errorf("goal %+v (%s); want passed %v", g, g.Status(), tt.counted)
			}
			if !tt.counted && (AllPassed([]GoalResult{g}) || AnyMissed([]GoalResult{g}) || !strings.Contains(g.Reason, "wiring fault")) {
				t.Errorf("goal %+v: want neither passed nor missed, the reason naming the wiring fault", g)
			}
		})
	}
}
