package demo

import (
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
	if err := cfg.prepare(); err != nil {
		t.Fatal(err)
	}
	if cfg.Duration != DefaultDuration || cfg.Rounds != DefaultRounds {
		t.Errorf("defaults: duration %s, rounds %d; want %s, %d", cfg.Duration, cfg.Rounds, DefaultDuration, DefaultRounds)
	}
	for _, bad := range []Config{{}, {Replay: "r", Duration: -1}, {Replay: "r", Rounds: -1}} {
		if err := bad.prepare(); err == nil {
			t.Errorf("prepare(%+v): no error", bad)
		}
	}
}
