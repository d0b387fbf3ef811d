package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/replaykit/replay/internal/golden"
)

// cliRun runs the CLI in process with stdin and returns its exit code and
// output.
func cliRun(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, streams{in: strings.NewReader(stdin), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

// importFixture imports testdata/orders.jsonl into a new snapshot.
func importFixture(t *testing.T) string {
	t.Helper()
	snap := filepath.Join(t.TempDir(), "orders.snap")
	code, _, stderr := cliRun(t, "", "snapshot", "import", "testdata/orders.jsonl", "--out", snap)
	if code != 0 {
		t.Fatalf("import fixture: exit %d: %s", code, stderr)
	}
	return snap
}

func TestInspectText(t *testing.T) {
	snap := importFixture(t)
	code, stdout, stderr := cliRun(t, "", "inspect", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden.Check(t, "inspect.txt", []byte(strings.ReplaceAll(stdout, snap, "orders.snap")))
}

func TestInspectJSON(t *testing.T) {
	snap := importFixture(t)
	code, stdout, stderr := cliRun(t, "", "inspect", snap, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden.Check(t, "inspect.json", []byte(strings.ReplaceAll(stdout, snap, "orders.snap")))

	// The keys checks outside the repo rely on (DESIGN.md, CLI contract).
	var got struct {
		Exchanges  *int64 `json:"exchanges"`
		Statements *int64 `json:"statements"`
		Endpoints  []struct {
			Direction     *string  `json:"direction"`
			Service       *string  `json:"service"`
			Endpoint      *string  `json:"endpoint"`
			Count         *int64   `json:"count"`
			SQLPerRequest *float64 `json:"sql_per_request"`
		} `json:"endpoints"`
	}
	schematest.Check(t, "inspect", []byte(stdout))
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.Exchanges == nil || *got.Exchanges != 14 || got.Statements == nil || *got.Statements != 216 {
		t.Errorf("exchanges/statements = %v/%v, want 14/216", got.Exchanges, got.Statements)
	}
	found := false
	for _, e := range got.Endpoints {
		if e.Direction == nil || e.Service == nil || e.Endpoint == nil || e.Count == nil || e.SQLPerRequest == nil {
			t.Fatalf("endpoint lacks a contract key: %+v", e)
		}
		if *e.Endpoint == "GET /orders" {
			found = true
			// 51 attributed per request; 2 statements of no request ran
			// while they were in flight, so the figure is an estimate.
			if *e.Direction != "inbound" || *e.Service != "127.0.0.1:8080" || *e.Count != 4 || *e.SQLPerRequest < 51 || *e.SQLPerRequest > 51.5 {
				t.Errorf("GET /orders = %s %s count %d sql/req %v; want inbound 127.0.0.1:8080 4 51 to 51.5",
					*e.Direction, *e.Service, *e.Count, *e.SQLPerRequest)
			}
		}
	}
	if !found {
		t.Errorf("no GET /orders endpoint in %s", stdout)
	}
}

// TestInspectSQLNotCounted: a snapshot recorded without a SQL counter
// holds no statement; inspect says its SQL was not counted, in text and in
// JSON (sql_method "not counted", no sql_per_request), never an exact zero
// (issue 23).
func TestInspectSQLNotCounted(t *testing.T) {
	snap := runSnapshot(t, "GET /orders", "GET /orders", "GET /catalog")
	code, stdout, stderr := cliRun(t, "", "inspect", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "SQL not counted") || !hasRow(stdout, "inbound", "app.local:8080", "GET", "/orders", "2", "2", "0", "0", "0", "0", "1", "1", "not", "counted") {
		t.Errorf("text: want SQL not counted, per endpoint too:\n%s", stdout)
	}
	code, stdout, stderr = cliRun(t, "", "inspect", snap, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	schematest.Check(t, "inspect", []byte(stdout))
	var got struct {
		Endpoints []map[string]any `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Endpoints) != 2 {
		t.Fatalf("%d endpoints, want 2:\n%s", len(got.Endpoints), stdout)
	}
	for _, e := range got.Endpoints {
		if _, ok := e["sql_per_request"]; ok || e["sql_method"] != "not counted" {
			t.Errorf("endpoint %v: want sql_method \"not counted\" and no sql_per_request", e)
		}
	}
}

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no snapshot", []string{"inspect"}, 2, "inspect: expects 1 argument (the snapshot), got none"},
		{"two snapshots", []string{"inspect", "a", "b"}, 2, `inspect: expects 1 argument (the snapshot), got "a" "b"`},
		{"bad format", []string{"inspect", "x.snap", "--format", "yaml"}, 2, `inspect: --format "yaml": want text, json`},
		{"two formats", []string{"inspect", "x.snap", "--format", "json", "--format", "text"}, 2, "inspect: --format json,text: give one format"},
		{"unknown flag", []string{"inspect", "x.snap", "--colour"}, 2, "unknown flag"},
		{"missing file", []string{"inspect", filepath.Join(dir, "nope.snap")}, 1, "open snapshot " + filepath.Join(dir, "nope.snap") + ": no such file"},
		{"not a snapshot", []string{"inspect", "testdata/orders.jsonl"}, 1, "open snapshot testdata/orders.jsonl: not a replay snapshot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := cliRun(t, "", tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line saying %q", stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}
