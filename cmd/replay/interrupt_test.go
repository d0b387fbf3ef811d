package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"
	"github.com/replaykit/replay/internal/syncbuf"
)

// Issue 23, item 4: an interrupted run is its own outcome. Ctrl-C during
// `replay run` ends it INTERRUPTED (exit 1), never PASSED; the run file
// says so, and every report of it, `replay report` and `replay compare`
// too.

// interruptedProcess runs the replay binary with args, sends it SIGINT once
// target has served some requests, and returns its exit code and output.
func interruptedProcess(t *testing.T, bin string, rt *runTarget, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errb syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	deadline := time.Now().Add(60 * time.Second)
	for rt.count() < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the target saw %d requests in 60 s\nstdout:\n%s\nstderr:\n%s", rt.count(), out.String(), errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("still running 60 s after SIGINT\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestRunInterruptedIsNeverPassed(t *testing.T) {
	bin := buildReplay(t)
	rt := newRunTarget(t, 2*time.Millisecond)
	snap := runSnapshot(t, "GET /a", "GET /b")
	out := filepath.Join(t.TempDir(), "r.run")
	code, stdout, stderr := interruptedProcess(t, bin, rt, "run", "--snapshot", snap, "--target", rt.URL, "--out", out,
		"--duration", "30s", "--vus", "2", "--explain", "0")
	if code != exitError || !strings.Contains(stdout, "\nResult: INTERRUPTED · ") || strings.Contains(stdout, "PASSED") ||
		!strings.Contains(stderr, "run interrupted") {
		t.Errorf("run: exit %d (want %d), stdout:\n%s\nstderr:\n%s", code, exitError, stdout, stderr)
	}

	// The run file says so: replay report of it, in every format.
	code, stdout, stderr = cliRun(t, "", "report", out)
	if code != exitError || !strings.Contains(stdout, "\nResult: INTERRUPTED · stopped before the load ended") ||
		strings.Contains(stdout, "PASSED") || !strings.Contains(stderr, "the run was interrupted") {
		t.Errorf("report: exit %d (want %d), stdout:\n%s\nstderr:\n%s", code, exitError, stdout, stderr)
	}
	code, stdout, _ = cliRun(t, "", "report", out, "--format", "json")
	schematest.Check(t, "run", []byte(stdout))
	var d struct {
		Passed      bool   `json:"passed"`
		Result      string `json:"result"`
		Interrupted bool   `json:"interrupted"`
		Requests    int64  `json:"requests"`
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || code != exitError {
		t.Fatalf("report --format json: exit %d, %v\n%s", code, err, stdout)
	}
	if d.Passed || d.Result != "interrupted" || !d.Interrupted || d.Requests < 10 {
		t.Errorf("JSON: passed %v, result %q, interrupted %v, %d requests; want an interrupted run, not passed", d.Passed, d.Result, d.Interrupted, d.Requests)
	}
	for format, want := range map[string]string{"markdown": "**Outcome:** ⚠️ Interrupted: stopped before the load ended", "html": "Interrupted: stopped before the load ended"} {
		code, stdout, _ = cliRun(t, "", "report", out, "--format", format)
		if code != exitError || !strings.Contains(stdout, want) || strings.Contains(stdout, "✅") || strings.Contains(stdout, "Passed:") {
			t.Errorf("report --format %s: exit %d; want %q:\n%s", format, code, want, stdout)
		}
	}
	code, stdout, _ = cliRun(t, "", "report", out, "--format", "junit")
	var suites struct {
		Errors int `xml:"errors,attr"`
		Suites []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(stdout), &suites); err != nil || code != exitError || suites.Errors == 0 || !strings.Contains(stdout, `name="replay.interrupted"`) {
		t.Errorf("report --format junit: exit %d, %v, %d errors; want a replay.interrupted error:\n%s", code, err, suites.Errors, stdout)
	}

	// Compared, offline: no verdict, exit 1.
	code, stdout, stderr = cliRun(t, "", "compare", out, out)
	if code != exitError || !strings.HasPrefix(strings.SplitN(stdout, "\n", 3)[1], "Verdict: INTERRUPTED · ") || !strings.Contains(stderr, "interrupted") {
		t.Errorf("compare of the interrupted run: exit %d (want %d)\n%s\nstderr: %s", code, exitError, stdout, stderr)
	}
}

// A live comparison interrupted keeps its run files, reports what they hold
// as INTERRUPTED (no verdict) and exits 1; replay report of its directory
// says the same.
func TestCompareInterruptedIsReported(t *testing.T) {
	bin := buildReplay(t)
	rt := newRunTarget(t, 2*time.Millisecond)
	snap := runSnapshot(t, "GET /a", "GET /b")
	dir := filepath.Join(t.TempDir(), "cmp")
	code, stdout, stderr := interruptedProcess(t, bin, rt, "compare", "--snapshot", snap, "--baseline-url", rt.URL, "--candidate-url", rt.URL,
		"--out", dir, "--duration", "30s", "--warmup", "0", "--vus", "2", "--explain", "0", "--format", "text", "--format", "json")
	if code != exitError || !strings.Contains(stdout, "\nVerdict: INTERRUPTED · Interrupted: the comparison was stopped before the load ended") ||
		!strings.Contains(stderr, "compare interrupted") {
		t.Errorf("compare: exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, exitError, stdout, stderr)
	}
	for _, f := range []string{"baseline.run", "candidate.run", "report.txt", "report.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not kept: %v", f, err)
		}
	}
	doc, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	schematest.Check(t, "comparison", doc)
	var d struct {
		Verdict     string `json:"verdict"`
		Passed      bool   `json:"passed"`
		Result      string `json:"result"`
		Interrupted bool   `json:"interrupted"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	if d.Passed || d.Result != "interrupted" || !d.Interrupted || d.Verdict != "inconclusive" {
		t.Errorf("report.json: verdict %q, passed %v, result %q, interrupted %v; want inconclusive, not passed, interrupted", d.Verdict, d.Passed, d.Result, d.Interrupted)
	}
	code, stdout, stderr = cliRun(t, "", "report", dir)
	if code != exitError || !strings.Contains(stdout, "\nVerdict: INTERRUPTED · ") || !strings.Contains(stderr, "the comparison was interrupted") {
		t.Errorf("report DIR: exit %d (want %d)\n%s\nstderr: %s", code, exitError, stdout, stderr)
	}
}
