package analyzer

import (
	"strings"
	"testing"

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
