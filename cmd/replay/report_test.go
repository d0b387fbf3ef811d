package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/golden"
)

func TestReportComparisonDir(t *testing.T) {
	dir := t.TempDir()
	goldenRuns(t, dir) // dir/baseline.run and dir/candidate.run, as replay compare writes them
	if err := os.WriteFile(filepath.Join(dir, "candidate.log"), []byte("listening\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := cliRun(t, "", "report", dir)
	if code != exitRegression {
		t.Fatalf("exit %d, want 99 (the comparison shows a regression); stderr %s", code, stderr)
	}
	// The same as comparing the two run files with the goals they recorded.
	_, want, _ := replayCompare(t, filepath.Join(dir, "baseline.run"), filepath.Join(dir, "candidate.run"), "--goal", "p95<500ms", "--goal", "GET /orders: sql<=5")
	if stdout != want {
		t.Errorf("report DIR differs from compare RUN_A RUN_B:\n%s\nwant:\n%s", stdout, want)
	}
	_, md, _ := cliRun(t, "", "report", dir, "--format", "markdown")
	for _, a := range []string{"- baseline run: `" + filepath.Join(dir, "baseline.run") + "`", "- candidate build log: `" + filepath.Join(dir, "candidate.log") + "`"} {
		if !strings.Contains(md, a) {
			t.Errorf("Markdown lacks artifact %q:\n%s", a, md)
		}
	}
	if strings.Contains(md, "baseline build log") {
		t.Errorf("Markdown lists a baseline build log that does not exist")
	}
}

func TestReportRunFile(t *testing.T) {
	dir := t.TempDir()
	base, cand := goldenRuns(t, dir)
	code, stdout, stderr := cliRun(t, "", "report", base)
	if code != exitOK {
		t.Fatalf("exit %d, want 0 (every recorded goal met); stderr %s", code, stderr)
	}
	golden.Check(t, "report-run.txt.golden", []byte(strings.ReplaceAll(stdout, dir, "runs")))
	// The candidate misses its recorded goal GET /orders: sql<=5.
	code, stdout, _ = cliRun(t, "", "report", cand, "--format", "json", "--goal", "p99<1s")
	if code != exitRegression || !strings.Contains(stdout, `"goal": "GET /orders: sql<=5"`) || !strings.Contains(stdout, `"goal": "p99<1s"`) {
		t.Errorf("candidate: exit %d, want 99 and both goals in\n%s", code, stdout)
	}
}

func TestReportErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no argument", []string{"report"}, exitUsage, "accepts 1 arg"},
		{"bad format", []string{"report", dir, "--format", "pdf"}, exitUsage, `--format "pdf"`},
		{"bad goal", []string{"report", dir, "--goal", "p95"}, exitUsage, "--goal"},
		{"missing", []string{"report", filepath.Join(dir, "none.run")}, exitError, "none.run"},
		{"not a comparison", []string{"report", dir}, exitError, "holds no baseline.run and candidate.run: not the output directory of replay compare"},
		{"not a run file", []string{"report", "testdata/orders.jsonl"}, exitError, "orders.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := cliRun(t, "", tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) || stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, stderr, tt.code, tt.want)
			}
		})
	}
}
