package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
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

// TestReportOutRelativePaths: `replay report cmp --out rep` names the run
// files in rep's reports as seen from rep, not from the working directory.
func TestReportOutRelativePaths(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "cmp"), 0o755)
	goldenRuns(t, filepath.Join(dir, "cmp"))
	t.Chdir(dir)
	if code, _, stderr := cliRun(t, "", "report", "cmp", "--out", "rep", "--format", "text,markdown"); code != exitRegression {
		t.Fatalf("exit %d, want 99; stderr %s", code, stderr)
	}
	md, err := os.ReadFile(filepath.Join("rep", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"- baseline run: `../cmp/baseline.run`", "- candidate run: `../cmp/candidate.run`", "`report.txt`"} {
		if !strings.Contains(string(md), a) {
			t.Errorf("rep/report.md lacks %q:\n%s", a, md)
		}
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
		{"no argument", []string{"report"}, exitUsage, "report: expects 1 argument (a run file or a comparison's directory), got none"},
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

// TestReportRunRechecksMaxFailed: `replay report RUN` checks the failed
// requests against the share the run was given (recorded in the run file),
// or against --max-failed when given; bad values are one-line usage
// errors, as are the flags of the other kind of report.
func TestReportRunRechecksMaxFailed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			http.Error(w, "boom", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(srv.Close)
	reqs := make([]string, 0, 200)
	for i := range 199 {
		reqs = append(reqs, "GET /ok/"+strconv.Itoa(i))
	}
	snap := runSnapshot(t, append(reqs, "GET /bad")...) // 1 of 200 fails: 0.5%
	dir := t.TempDir()
	strict, lenient := filepath.Join(dir, "strict.run"), filepath.Join(dir, "lenient.run")
	code, live, stderr := replayRun(t, "--snapshot", snap, "--out", strict, "--target", srv.URL, "--max-failed", "0")
	if code != exitRegression {
		t.Fatalf("run --max-failed 0: exit %d\n%s\n%s", code, live, stderr)
	}
	if code, _, stderr := replayRun(t, "--snapshot", snap, "--out", lenient, "--target", srv.URL); code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	const failed = "Result: FAILED · success rate 99.5% (1 of 200 failed) · 0.5% of requests failed (at most 0% may)"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{strict}, exitRegression, failed}, // as the run was given
		{[]string{strict, "--max-failed", "1%"}, exitOK, "Result: PASSED · success rate 99.5% (1 of 200 failed)\n"},
		{[]string{lenient}, exitOK, "Result: PASSED"},
		{[]string{lenient, "--max-failed", "0"}, exitRegression, failed},
		{[]string{lenient, "--max-failed", "0.001"}, exitRegression, "\n  5xx answers ×1 (503 Service Unavailable ×1)\n"},
		{[]string{strict, "--format", "json"}, exitRegression, `"max_failed": 0,`},
		{[]string{lenient, "--format", "json", "--max-failed", "0.2%"}, exitRegression, `"failed_why": "0.5% of requests failed (at most 0.2% may)"`},
	} {
		code, stdout, stderr := cliRun(t, "", append([]string{"report"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stdout, tc.want) {
			t.Errorf("report %s: exit %d (want %d), stdout lacks %q:\n%s\nstderr: %s", strings.Join(tc.args, " "), code, tc.code, tc.want, stdout, stderr)
		}
	}
	if _, stdout, _ := cliRun(t, "", "report", strict); verdictBlock(stdout) != verdictBlock(live) {
		t.Errorf("report RUN's verdict differs from the run's:\n%s\nlive:\n%s", stdout, live)
	}

	cmp := t.TempDir()
	goldenRuns(t, cmp)
	for _, tc := range []struct{ args []string }{
		{[]string{lenient, "--max-failed", "5"}},
		{[]string{lenient, "--max-failed", "x%"}},
		{[]string{lenient, "--max-failed", "-1%"}},
		{[]string{lenient, "--min-change", "20%,8ms"}},
		{[]string{lenient, "--confidence", "0.95"}},
		{[]string{cmp, "--max-failed", "1%"}},
	} {
		code, stdout, stderr := cliRun(t, "", append([]string{"report"}, tc.args...)...)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.args[1]) {
			t.Errorf("report %s: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", strings.Join(tc.args, " "), code, stdout, stderr, tc.args[1])
		}
	}
}

// TestReportComparisonSensitivity: `replay report DIR` takes --min-change
// and --confidence as `replay compare` does, validated the same way; the
// report is the comparison of the two run files with them.
func TestReportComparisonSensitivity(t *testing.T) {
	dir := t.TempDir()
	base, cand := goldenRuns(t, dir)
	for _, tt := range []struct{ args []string }{
		{[]string{"--min-change", "ten"}},
		{[]string{"--min-change", "10%,20%"}},
		{[]string{"--confidence", "95"}},
		{[]string{"--confidence", "0.3"}},
	} {
		code, stdout, stderr := cliRun(t, "", append([]string{"report", dir}, tt.args...)...)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.args[0]) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %s", tt.args, code, stdout, stderr, tt.args[0])
		}
	}
	_, def, _ := cliRun(t, "", "report", dir)
	if !strings.Contains(def, "min change 10% and 5 ms at 99% confidence") {
		t.Errorf("report DIR without flags does not state the default sensitivity:\n%s", def)
	}
	for _, args := range [][]string{
		{"--min-change", "20%,8ms", "--confidence", "0.95"},
		{"--min-change", "300%,1s"},
	} {
		code, stdout, stderr := cliRun(t, "", append([]string{"report", dir}, args...)...)
		// With the goals the comparison recorded, as TestReportComparisonDir.
		wantCode, want, _ := replayCompare(t, append([]string{base, cand, "--goal", "p95<500ms", "--goal", "GET /orders: sql<=5"}, args...)...)
		if code != wantCode || stdout != want || stdout == def {
			t.Errorf("report DIR %v: exit %d (want %d); differs from compare RUN_A RUN_B, or is the default report:\n%s\nwant:\n%s\nstderr: %s", args, code, wantCode, stdout, want, stderr)
		}
	}
	if _, stdout, _ := cliRun(t, "", "report", dir, "--min-change", "20%,8ms", "--confidence", "0.95"); !strings.Contains(stdout, "min change 20% and 8 ms at 95% confidence") {
		t.Errorf("report DIR does not state the sensitivity given:\n%s", stdout)
	}
}
