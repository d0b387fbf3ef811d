package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"
	"github.com/replaykit/replay/snapshots"
)

// gateRuns writes a baseline and a candidate run file alike: n[endpoint]
// load requests each, the same latencies on both sides, no SQL counted.
func gateRuns(t *testing.T, dir string, n map[string]int) (base, cand string) {
	t.Helper()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for side, name := range []string{"baseline", "candidate"} {
		path := filepath.Join(dir, name+".run")
		info := snapshots.RunInfo{Name: name, Snapshot: "s.snap", Target: fmt.Sprintf("http://127.0.0.1:4100%d", side+1), Started: t0,
			Settings: map[string]string{"side": name}}
		w, err := snapshots.CreateRun(path, info)
		if err != nil {
			t.Fatal(err)
		}
		at := t0
		for ep, count := range n {
			for i := range count {
				lat := time.Duration(2000+10*(i%7)) * time.Microsecond
				w.Add(&snapshots.Result{Phase: snapshots.PhaseLoad, ExchangeID: 1, Endpoint: ep, Method: "GET", URL: strings.Fields(ep)[1],
					Intended: at, Sent: at, Done: at.Add(lat), Status: 200, RecordedStatus: 200, Bytes: 10})
				at = at.Add(lat)
			}
		}
		info.Ended = at
		if err := w.Close(info); err != nil {
			t.Fatal(err)
		}
		if side == 0 {
			base = path
		} else {
			cand = path
		}
	}
	return base, cand
}

// TestCompareCouldNotTell: a comparison in which no endpoint could be
// judged exits 1 with the reason, never 0 (issue 23: CI went green on
// nothing); inconclusive endpoints beside judged ones do not fail the gate
// by default, and the Result says so; --fail-on inconclusive makes any
// inconclusive endpoint fail it (exit 99). SQL counted on neither side is
// said, never a clean pass.
func TestCompareCouldNotTell(t *testing.T) {
	none := t.TempDir()
	noneBase, noneCand := gateRuns(t, none, map[string]int{"GET /a": 5, "GET /b": 4})
	some := t.TempDir()
	someBase, someCand := gateRuns(t, some, map[string]int{"GET /a": 200, "GET /b": 4})
	for _, tt := range []struct {
		name       string
		args       []string
		code       int
		verdict    string
		outcome    []string
		stderrLast string
	}{
		{"no endpoint judged", []string{noneBase, noneCand}, exitError, "inconclusive",
			[]string{"Inconclusive: no endpoint could be judged", "SQL not counted"}, "compare: inconclusive: no endpoint could be judged (2 of 2; GET /"},
		{"no endpoint judged, --fail-on inconclusive", []string{noneBase, noneCand, "--fail-on", "inconclusive"}, exitRegression, "inconclusive",
			[]string{"Inconclusive, which fails the gate (--fail-on inconclusive): GET /a and GET /b"}, ""},
		{"one judged, one not", []string{someBase, someCand}, exitOK, "unchanged",
			[]string{"No regression (1 inconclusive: not a gate failure without --fail-on inconclusive)", "SQL not counted, so latency alone was compared"}, ""},
		{"one judged, one not, --fail-on inconclusive", []string{someBase, someCand, "--fail-on", "regression,inconclusive"}, exitRegression, "unchanged",
			[]string{"Inconclusive, which fails the gate (--fail-on inconclusive): GET /b"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := replayCompare(t, append(tt.args, "--format", "json")...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstderr: %s\n%s", code, tt.code, stderr, stdout)
			}
			schematest.Check(t, "comparison", []byte(stdout))
			var doc struct {
				Verdict, Outcome, Undecided string
				Passed                      bool
			}
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Verdict != tt.verdict || doc.Passed != (tt.code == exitOK) || (doc.Undecided != "") != (tt.code == exitError) {
				t.Errorf("verdict %q, passed %v, undecided %q; want %q, passed only on exit 0, undecided only on exit 1", doc.Verdict, doc.Passed, doc.Undecided, tt.verdict)
			}
			for _, want := range tt.outcome {
				if !strings.Contains(doc.Outcome, want) {
					t.Errorf("outcome %q lacks %q", doc.Outcome, want)
				}
			}
			if lines := strings.Split(strings.TrimSpace(stderr), "\n"); tt.stderrLast != "" && !strings.HasPrefix(lines[len(lines)-1], "replay: "+tt.stderrLast) {
				t.Errorf("stderr ends %q, want %q…", lines[len(lines)-1], tt.stderrLast)
			}
		})
	}
	code, _, stderr := replayCompare(t, someBase, someCand, "--fail-on", "slowness")
	if code != exitUsage || !strings.Contains(stderr, `--fail-on "slowness": want regression or inconclusive`) {
		t.Errorf("--fail-on slowness: exit %d, stderr %q; want 2 naming the values", code, stderr)
	}
}
