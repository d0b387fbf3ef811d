package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/replaykit/replay/examples/orders/demo"
	"github.com/replaykit/replay/internal/pgtest"
)

// checkJSON is the part of `replay run --check-responses --format json`
// about the check.
type checkJSON struct {
	Passed    bool `json:"passed"`
	Endpoints []struct {
		Endpoint  string `json:"endpoint"`
		Responses *struct {
			Compared    int64 `json:"compared"`
			Differing   int64 `json:"differing"`
			Differences []struct {
				Path string `json:"path"`
			} `json:"differences"`
		} `json:"responses"`
	} `json:"endpoints"`
}

// TestRunCheckResponsesDemo records the demo (replay demo, whose own
// comparison of APP_SLOW=0 and APP_SLOW=1 must find the N+1 and no change
// of behaviour), then replays its snapshot with --check-responses against
// a build of the demo app on a fresh PostgreSQL: the same build answers as
// recorded, a changed build's differences are named and fail the run.
func TestRunCheckResponsesDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("records the demo and replays it twice")
	}
	ctx := context.Background()
	bin, dir := buildReplay(t), t.TempDir()
	res, err := demo.Run(ctx, demo.Config{Replay: bin, Dir: dir, Duration: time.Second, Rounds: 4})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Check(); err != nil {
		// The latency verdicts of 1 s of load beside the other packages
		// under -race are not this test's subject (TestDemo's are); the
		// answers below are.
		t.Logf("the demo's comparison: %v", err)
	}
	for _, e := range res.Report.Comparison.Endpoints {
		if e.Responses == nil || e.Responses.Compared == 0 {
			t.Errorf("demo: %s: no answers compared", e.Endpoint)
		} else if e.Responses.Differing > 0 {
			t.Errorf("demo: %s: the N+1 build answers differently: %s", e.Endpoint, e.Responses.Sentence())
		}
	}
	db := pgtest.New(t)
	check := func(name string, env ...string) (int, checkJSON, string) {
		if err := demo.Reset(ctx, db.URL("postgres"), demo.Orders); err != nil {
			t.Fatal(err)
		}
		args := []string{"run", "--snapshot", res.Recording.Snapshot, "--cmd", bin + " demo orders",
			"--env", "DATABASE_URL=" + db.URL("postgres"), "--env", "CATALOG_URL=https://" + demo.CatalogHost,
			"--mock", demo.CatalogHost + ":443", "--ca-dir", filepath.Join(dir, "ca"), "--postgres", db.Addr(),
			"--duration", "1s", "--check-responses", "--out", filepath.Join(dir, name+".run"), "--format", "json"}
		for _, e := range env {
			args = append(args, "--env", e)
		}
		code, stdout, stderr := cliRun(t, "", args...)
		var doc checkJSON
		schematest.Check(t, "run", []byte(stdout))
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("%s: exit %d, stdout not JSON: %v\n%s\nstderr: %s", name, code, err, stdout, stderr)
		}
		return code, doc, stderr
	}

	code, doc, stderr := check("same")
	if code != exitOK || !doc.Passed {
		t.Errorf("the recorded build: exit %d, passed %v; want 0; stderr %s", code, doc.Passed, stderr)
	}
	var compared int64
	for _, e := range doc.Endpoints {
		if e.Responses == nil {
			t.Errorf("%s: its answers were not checked", e.Endpoint)
			continue
		}
		compared += e.Responses.Compared
		if e.Responses.Differing > 0 {
			t.Errorf("%s: %d answers differ from the recording: %+v", e.Endpoint, e.Responses.Differing, e.Responses.Differences)
		}
	}
	if compared == 0 {
		t.Errorf("no answer compared with the recording")
	}

	code, doc, stderr = check("changed", "APP_CHANGE=type")
	if code != exitRegression || doc.Passed {
		t.Errorf("a changed build: exit %d, passed %v; want 99; stderr %s", code, doc.Passed, stderr)
	}
	// A type change is named everywhere, also where the value varies
	// between the build's own answers (the ids of a list that grows, the
	// id a POST makes up): their values are noise, their type is not.
	for ep, path := range map[string]string{"GET /orders/{id}": "$.id", "GET /orders": "$.orders[*].id", "POST /orders": "$.id"} {
		var paths []string
		for _, e := range doc.Endpoints {
			if e.Endpoint == ep && e.Responses != nil {
				for _, d := range e.Responses.Differences {
					paths = append(paths, d.Path)
				}
			}
		}
		if !slices.Contains(paths, path) {
			t.Errorf("a changed build: %s's %s not named (differences at %v)", ep, path, paths)
		}
	}
}
