package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/snapshots"
)

// Issue 12's failing runs: something the build needs dies part way
// through the load. Each run ends FAILED (exit 99) without goals, its
// report names the cause with counts, and `replay report RUN` gives the
// same verdict from the run file alone.

// failedRunJSON is the part of a run's JSON report that names why it failed.
type failedRunJSON struct {
	Passed        bool     `json:"passed"`
	Requests      int64    `json:"requests"`
	Failed        int64    `json:"failed"`
	MaxFailed     *float64 `json:"max_failed"`
	FailedWhy     string   `json:"failed_why"`
	FailureCauses []struct {
		Kind      string   `json:"kind"`
		Count     int64    `json:"count"`
		Detail    string   `json:"detail"`
		LastLines []string `json:"last_lines"`
	} `json:"failure_causes"`
}

// cause returns the count and detail of the cause of kind; -1 when absent.
func (d failedRunJSON) cause(kind string) (int64, string) {
	for _, c := range d.FailureCauses {
		if c.Kind == kind {
			return c.Count, c.Detail
		}
	}
	return -1, ""
}

// verdictBlock is a text run report's verdict: from its Result line to the
// end of its Failures block.
func verdictBlock(report string) string {
	_, after, _ := strings.Cut(report, "\nResult: ")
	block, _, _ := strings.Cut(after, "\nEndpoints (busiest first)")
	return block
}

// reportedAgain checks that `replay report RUN` gives the verdict the live
// run gave (Result line, failure causes, exit 99), and returns the run's
// JSON report.
func reportedAgain(t *testing.T, run, live string) failedRunJSON {
	t.Helper()
	t.Log(live)
	code, stdout, stderr := cliRun(t, "", "report", run)
	if got, want := verdictBlock(stdout), verdictBlock(live); code != exitRegression || got != want || !strings.Contains(want, "Failures (main causes)") {
		t.Errorf("replay report RUN: exit %d (want %d); its verdict differs from the live run's:\n%s\nlive:\n%s\nstderr: %s", code, exitRegression, got, want, stderr)
	}
	code, stdout, stderr = cliRun(t, "", "report", run, "--format", "json")
	var d failedRunJSON
	schematest.Check(t, "run", []byte(stdout))
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || code != exitRegression {
		t.Fatalf("replay report RUN --format json: exit %d, %v\n%s\nstderr: %s", code, err, stdout, stderr)
	}
	if d.Passed || d.MaxFailed == nil || *d.MaxFailed != 0.01 || !strings.HasSuffix(d.FailedWhy, "of requests failed (at most 1% may)") || d.Requests != 60 {
		t.Errorf("JSON: passed %v, max_failed %v, failed_why %q, %d requests; want a failed run of 60 requests over 1%%", d.Passed, d.MaxFailed, d.FailedWhy, d.Requests)
	}
	return d
}

// wantLines checks that stdout holds every line of want.
func wantLines(t *testing.T, stdout string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
}

// TestRunBuildSIGKILLedMidRun: a build killed with SIGKILL part way
// through the load (after 5 requests of 60) is named with the signal and
// the last line of its log, live and from the run file; --max-failed on
// report overrides the share the run was given.
func TestRunBuildSIGKILLedMidRun(t *testing.T) {
	bin := buildFailingApp(t)
	snap := runSnapshot(t, "GET /a", "GET /b", "GET /c")
	out := filepath.Join(t.TempDir(), "r.run")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--out", out, "--cmd", bin, "--env", "EXIT_AFTER=5", "--env", "KILL=1",
		"--explain", "0", "--iterations", "20")
	if code != exitRegression {
		t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", code, exitRegression, stdout, stderr)
	}
	// /bin/sh -c runs the build and reports its death as status 137, or
	// the build is killed itself when the shell execs it.
	killed := `(exited with status 137: killed|was killed) by signal 9 \(killed\)`
	if !regexp.MustCompile(`\n  the build exited ×5[5-9] \(` + killed + `\)\n(      \| .*\n)*      \| fatal error: out of memory allocating order cache\n`).MatchString(stdout) {
		t.Errorf("stdout does not name the killed build as the main cause:\n%s", stdout)
	}
	wantLines(t, stdout, "Result: FAILED · success rate ", "of requests failed (at most 1% may)")
	d := reportedAgain(t, out, stdout)
	if n, detail := d.cause("the build exited"); n != d.Failed || !regexp.MustCompile("^"+killed+"$").MatchString(detail) {
		t.Errorf("JSON cause: the build exited ×%d (%s); want ×%d, killed by signal 9", n, detail, d.Failed)
	}
	code, stdout, _ = cliRun(t, "", "report", out, "--max-failed", "100%")
	if code != exitOK || !strings.Contains(stdout, "Result: PASSED") {
		t.Errorf("report --max-failed 100%%: exit %d\n%s", code, stdout)
	}
}

// TestRunUpstreamKilledMidRun: the build's upstream, which the mock passes
// its calls through to (--on-miss passthrough: the snapshot recorded
// another call), goes down after 5 calls of the load; the build answers 502
// from then on, and the report names the 502s and the calls the mock could
// not pass through, not the mock's misses.
func TestRunUpstreamKilledMidRun(t *testing.T) {
	bin := buildFailingApp(t)
	var calls atomic.Int64
	var up *httptest.Server
	up = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The 5th call of the load (not of replay's readiness check) is the last.
		if r.Header.Get("X-Inbound-Path") != "/" && calls.Add(1) == 5 {
			up.Listener.Close() // no more connections: each call opens its own
		}
		fmt.Fprint(w, "ok")
	}))
	up.Config.SetKeepAlivesEnabled(false)
	up.Start()
	t.Cleanup(up.Close)
	svc := strings.TrimPrefix(up.URL, "http://")

	snap := filepath.Join(t.TempDir(), "up.snap")
	w, err := snapshots.Create(snap, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	w.AddExchange(&snapshots.Exchange{Direction: snapshots.Outbound, Protocol: "http", Service: svc, Start: start, Duration: time.Millisecond,
		Method: "GET", URL: up.URL + "/v1/recorded/only", RequestHeader: http.Header{}, Status: 200, ResponseBody: []byte("recorded")})
	for _, p := range []string{"/a", "/b", "/c"} {
		start = start.Add(10 * time.Millisecond)
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "app.local:8080", Start: start,
			Duration: time.Millisecond, Method: "GET", URL: "http://app.local:8080" + p, RequestHeader: http.Header{}, Status: 200})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.run")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--out", out, "--cmd", bin, "--env", "UPSTREAM="+up.URL+"/data",
		"--mock", svc, "--on-miss", "passthrough", "--ca-dir", filepath.Join(t.TempDir(), "ca"), "--explain", "0", "--iterations", "20")
	failedAfterFive(t, code, stdout, stderr, out, "502 Bad Gateway", "upstream unreachable",
		"upstream unreachable: 55 upstream calls the mock passed through got no answer from the real upstream")
	wantLines(t, stdout, "had no recorded answer and went to the real upstream (--on-miss passthrough).")
	if strings.Contains(stdout, "mock misses") || strings.Contains(stdout, "could not answer") || strings.Contains(stdout, "record a fresh snapshot") {
		t.Errorf("stdout blames the mock's misses, which it passed through:\n%s", stdout)
	}
}

// failedAfterFive checks a run of 60 requests whose first 5 were answered
// and the other 55 failed with status (answered 5xx) for the named cause:
// FAILED with exit 99, the same verdict from report RUN, the 5xx answers and
// the cause, with its line, in the text and the JSON.
func failedAfterFive(t *testing.T, code int, stdout, stderr, out, status, cause, causeLine string) {
	t.Helper()
	if code != exitRegression {
		t.Fatalf("exit %d; want %d\nstdout:\n%s\nstderr:\n%s", code, exitRegression, stdout, stderr)
	}
	d := reportedAgain(t, out, stdout)
	if d.Failed != 55 {
		t.Errorf("%d failed; want 55 (5 of 60 answered before %s)", d.Failed, cause)
	}
	wantLines(t, stdout, "Result: FAILED · success rate 8.3% (55 of 60 failed) · 91.7% of requests failed (at most 1% may)",
		"\n  5xx answers ×55 ("+status+" ×55)\n", "\n  "+causeLine+"\n")
	if n, detail := d.cause("5xx answers"); n != 55 || detail != status+" ×55" {
		t.Errorf("JSON cause: 5xx answers ×%d (%s)", n, detail)
	}
	if n, _ := d.cause(cause); n != 55 {
		t.Errorf("JSON cause: %s ×%d; want 55", cause, n)
	}
}

// TestRunDatabaseKilledMidRun: the database behind the SQL counter shuts
// down at once (a crash) after 5 requests of the load; the build answers
// 500 from then on, and the report names the connections the counter could
// not open, as counted by replay, not only the build's log.
func TestRunDatabaseKilledMidRun(t *testing.T) {
	if os.Getenv(pgtest.EnvURL) != "" {
		t.Skip("kills its database: needs a cluster of its own, not " + pgtest.EnvURL)
	}
	bin := buildFailingApp(t)
	db := pgtest.New(t)
	var calls atomic.Int64
	tick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// After the 5th request of the load (not replay's readiness check).
		if r.Header.Get("X-Inbound-Path") != "/" && calls.Add(1) == 5 {
			if err := db.StopImmediately(); err != nil {
				t.Error(err)
			}
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(tick.Close)
	snap := runSnapshot(t, "GET /a", "GET /b", "GET /c")
	out := filepath.Join(t.TempDir(), "r.run")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--out", out, "--cmd", bin,
		"--env", "DB=query", "--env", "DB_USER="+db.User, "--env", "UPSTREAM="+tick.URL,
		"--postgres", "127.0.0.1:0="+db.Addr(), "--explain", "0", "--iterations", "20")
	failedAfterFive(t, code, stdout, stderr, out, "500 Internal Server Error", "database unreachable",
		"database unreachable: the SQL counter could not connect to the database 55 times")
	run, err := snapshots.OpenRun(out)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if info := run.Info(); info.Statements < 5 {
		t.Errorf("%d statements counted; want those that ran before the database went down", info.Statements)
	}
}
