package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCompareCPUGoals: cpu goals on a comparison of run files whose builds
// replay started: the change from the baseline's (4% here) and the
// candidate's CPU per request; a cpu goal on an endpoint is a usage error.
func TestCompareCPUGoals(t *testing.T) {
	dir := t.TempDir()
	base, cand := goldenRuns(t, dir)
	code, stdout, stderr := cliRun(t, "", "compare", base, cand, "--format", "json", "--goal", "cpu<=+1%", "--goal", "cpu<=+10%", "--goal", "cpu<=300us")
	if code != exitRegression {
		t.Fatalf("exit %d, want 99; stderr %s", code, stderr)
	}
	var d struct {
		Goals []struct {
			Goal   string  `json:"goal"`
			Passed bool    `json:"passed"`
			Actual float64 `json:"actual"`
		} `json:"goals"`
		CPU struct {
			Measured bool    `json:"measured"`
			Ratio    float64 `json:"ratio"`
		} `json:"cpu"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	if !d.CPU.Measured || d.CPU.Ratio < 1.02 || d.CPU.Ratio > 1.06 {
		t.Fatalf("cpu %+v; want measured, about ×1.04", d.CPU)
	}
	want := map[string]bool{"cpu<=+1%": false, "cpu<=+10%": true, "cpu<=300us": true}
	for _, g := range d.Goals {
		if p, ok := want[g.Goal]; ok && g.Passed != p {
			t.Errorf("%s: passed %v (actual %g), want %v", g.Goal, g.Passed, g.Actual, p)
		}
	}
	code, _, stderr = cliRun(t, "", "compare", base, cand, "--goal", "GET /orders: cpu<=1ms")
	if code != exitUsage || !strings.Contains(stderr, "per build") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("cpu goal on an endpoint: exit %d, stderr %q; want 2 and one line saying cpu is per build", code, stderr)
	}
}
