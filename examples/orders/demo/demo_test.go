package demo

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/report"
)

// The whole flow, with a real PostgreSQL and builds, is tested end to end
// by cmd/replay's TestDemo; these check what the demo concludes from it.

func TestCheck(t *testing.T) {
	nPlusOne := &analyzer.EndpointComparison{Endpoint: "GET /orders", Verdict: analyzer.Regression, Cause: analyzer.CauseNPlusOne}
	slower := &analyzer.EndpointComparison{Endpoint: "GET /orders", Verdict: analyzer.Regression, Cause: analyzer.CauseApp, Explanation: "p95 rose"}
	status := &analyzer.EndpointComparison{Endpoint: "GET /orders/{id}/status", Verdict: analyzer.Unchanged}
	statusWorse := &analyzer.EndpointComparison{Endpoint: "GET /orders/{id}/status", Verdict: analyzer.Regression, Explanation: "p95 rose"}
	for _, tc := range []struct {
		name      string
		endpoints []*analyzer.EndpointComparison
		want      string // in the error; empty: no error
	}{
		{"the N+1 alone", []*analyzer.EndpointComparison{nPlusOne, status}, ""},
		{"no GET /orders", []*analyzer.EndpointComparison{status}, "got no result for GET /orders"},
		{"another cause", []*analyzer.EndpointComparison{slower, status}, "got regression (p95 rose)"},
		{"another regression", []*analyzer.EndpointComparison{nPlusOne, statusWorse}, "but GET /orders/{id}/status did too: p95 rose"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &Result{Report: &report.ComparisonReport{Comparison: &analyzer.Comparison{Endpoints: tc.endpoints}}}
			err := res.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestConfigPrepare(t *testing.T) {
	cfg := Config{Replay: "/bin/replay", Dir: t.TempDir() + "/out"}
	if made, err := cfg.prepare(); err != nil || made != cfg.Dir {
		t.Fatalf("prepare: made %q, %v", made, err)
	}
	if cfg.Duration != DefaultDuration || cfg.Rounds != DefaultRounds {
		t.Errorf("defaults: duration %s, rounds %d; want %s, %d", cfg.Duration, cfg.Rounds, DefaultDuration, DefaultRounds)
	}
	for _, bad := range []Config{{}, {Replay: "r", Duration: -1}, {Replay: "r", Rounds: -1}} {
		if _, err := bad.prepare(); err == nil {
			t.Errorf("prepare(%+v): no error", bad)
		}
	}
}

// TestRunFailureLeavesNothing: a demo that cannot run removes the directory
// it made (a new --out DIR, or its directory in the temp dir) and keeps one
// it was given.
func TestRunFailureLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the demo cannot start its PostgreSQL
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, dir := range []string{"", filepath.Join(tmp, "new", "out")} {
		if _, err := Run(ctx, Config{Replay: "/bin/false", Dir: dir}); err == nil {
			t.Fatalf("Run(%q) with a canceled context: no error", dir)
		}
		if names, _ := os.ReadDir(tmp); len(names) > 1 || (len(names) == 1 && names[0].Name() != "new") {
			t.Errorf("Run(%q) left %v in the temp dir", dir, names)
		}
	}
	if names, _ := os.ReadDir(filepath.Join(tmp, "new")); len(names) != 0 {
		t.Errorf("left %v", names)
	}
	given := t.TempDir()
	if _, err := Run(ctx, Config{Replay: "/bin/false", Dir: given}); err == nil {
		t.Fatal("no error")
	}
	if _, err := os.Stat(given); err != nil {
		t.Errorf("removed the directory it was given: %v", err)
	}
}
