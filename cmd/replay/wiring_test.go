package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/junitcheck"
)

// TestRunMiswiredSQLIsAnError: a build that reaches its database by a path
// the address rewrite cannot see (its Unix socket) bypasses the SQL
// counter. Its N+1 is then not counted, so its SQL goal is not evaluated
// (never PASS) in every format, no report claims its SQL exact, and the
// run is an error: exit 1 with the reason, never PASSED (issue 23: the
// N+1 passed sql<=5 with exit 0).
func TestRunMiswiredSQLIsAnError(t *testing.T) {
	env := newOrdersEnv(t)
	if env.dbSocketURL == "" {
		t.Skip("the database is not this test's own: no Unix socket to bypass the counter by")
	}
	a, err := app.New(context.Background(), app.Config{DatabaseURL: env.dbURL}) // its schema
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if out, err := exec.Command("sh", "-c", env.reset).CombinedOutput(); err != nil {
		t.Fatalf("reset: %v\n%s", err, out)
	}
	dir := filepath.Join(env.dir, "reports")
	code, stdout, stderr := replayRun(t, "--snapshot", env.snap, "--out", filepath.Join(env.dir, "miswired.run"),
		"--cmd", env.bin+" demo orders", "--env", "DATABASE_URL="+env.dbSocketURL, "--env", "APP_SLOW=1",
		"--env", "CATALOG_URL=https://catalog.demo.test", "--mock", "catalog.demo.test:443", "--ca-dir", filepath.Join(env.dir, "ca"),
		"--postgres", "127.0.0.1:0="+env.dbAddr, "--vus", "2", "--iterations", "2",
		"--goal", "GET /orders: sql<=5", "--report-dir", dir, "--format", "text,json,markdown,junit")
	if code != exitError {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); !strings.Contains(lines[len(lines)-1], "the figures do not measure what they claim") {
		t.Errorf("stderr does not end with the reason:\n%s", stderr)
	}
	for _, bad := range []string{"PASSED", "PASS ", "exact", "SQL statements per request come from"} {
		if strings.Contains(stdout, bad) {
			t.Errorf("the text report says %q:\n%s", bad, stdout)
		}
	}
	for _, want := range []string{"Result: ERROR", "Wiring:", "NOT EVALUATED", "SQL statements were not counted"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the text report lacks %q:\n%s", want, stdout)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	doc := decodeRunJSON(t, read("report.json"))
	if doc.Passed || len(doc.Goals) != 1 || doc.Goals[0].Passed {
		t.Errorf("JSON: passed %v, goals %+v; want neither passed", doc.Passed, doc.Goals)
	}
	if js := read("report.json"); !strings.Contains(js, `"not_evaluated": true`) || strings.Contains(js, `"exact"`) {
		t.Errorf("JSON: want the goal not evaluated and no SQL called exact:\n%s", js)
	}
	if md := read("report.md"); !strings.Contains(md, "not evaluated") || strings.Contains(md, "✅") || strings.Contains(md, "exact") {
		t.Errorf("Markdown: want the goal not evaluated, nothing passed, no SQL called exact:\n%s", md)
	}
	xml := read("report.xml")
	if err := junitcheck.Check([]byte(xml)); err != nil {
		t.Errorf("JUnit: %v", err)
	}
	if !strings.Contains(xml, "not evaluated") || !strings.Contains(xml, `type="wiring"`) {
		t.Errorf("JUnit: want the goal not evaluated and the wiring fault in error:\n%s", xml)
	}
}

// TestRunSQLGoalWithoutCounter: with no SQL counter at all an sql goal is
// not evaluated: the run could not tell (exit 1, the reason on stderr),
// unless another goal was missed (99, the goal not evaluated beside it).
func TestRunSQLGoalWithoutCounter(t *testing.T) {
	snap := runSnapshot(t, "GET /orders", "GET /orders")
	rt := newRunTarget(t, 0)
	dir := t.TempDir()
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", rt.URL, "--out", filepath.Join(dir, "a.run"),
		"--goal", "GET /orders: sql<=5", "--goal", "success>99%")
	if code != exitError || !strings.Contains(stderr, `run: goal "GET /orders: sql<=5" not evaluated: SQL statements were not counted (no SQL counter in place)`) {
		t.Errorf("exit %d, stderr %q; want 1 and the goal not evaluated", code, stderr)
	}
	if !strings.Contains(stdout, "Result: ERROR · success rate 100% (0 of 2 failed) · 1 goal not evaluated (below)") ||
		!hasRow(stdout, "GET", "/orders:", "sql<=5", "<=", "5", "-", "NOT", "EVALUATED", "SQL", "statements", "were", "not", "counted", "(no", "SQL", "counter", "in", "place)") {
		t.Errorf("text report:\n%s", stdout)
	}
	code, stdout, stderr = replayRun(t, "--snapshot", snap, "--target", rt.URL, "--out", filepath.Join(dir, "b.run"),
		"--goal", "GET /orders: sql<=5", "--goal", "p95<1us", "--format", "json")
	v := decodeRunJSON(t, stdout)
	if code != exitRegression || v.Passed || v.Goals[0].Passed || v.Goals[1].Passed {
		t.Errorf("exit %d, json %+v, stderr %q; want 99 for the missed goal, neither goal passed", code, v, stderr)
	}
}
