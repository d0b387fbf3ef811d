package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaykit/replay/mcpserver"
)

// connect serves a new server to an in-process client over the SDK's
// in-memory transports.
func connect(t *testing.T, ctx context.Context, cfg mcpserver.Config, progress *progressLog) *mcp.ClientSession {
	t.Helper()
	srv, err := mcpserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	opts := &mcp.ClientOptions{}
	if progress != nil {
		opts.ProgressNotificationHandler = progress.handle
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestTools lists the tools with an in-process client and calls the quick
// ones on the demo's files: their structured content is the command's
// JSON, their text its Markdown (or text) report, and bad input is a tool
// error with the command's one-line message.
func TestTools(t *testing.T) {
	dir := demoFiles(t)
	snap, cmpDir := filepath.Join(dir, "demo.snap"), filepath.Join(dir, "compare")
	ctx := context.Background()
	cs := connect(t, ctx, mcpserver.Config{Replay: replayBin, Dir: t.TempDir()}, nil)

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
	}
	for _, name := range []string{"replay_inspect", "replay_run", "replay_compare", "replay_report", "replay_demo", "replay_version"} {
		if byName[name] == nil {
			t.Errorf("no tool %s", name)
		}
	}
	if tl := byName["replay_run"]; tl != nil {
		s := tl.InputSchema.(map[string]any)
		req, _ := s["required"].([]any)
		if !slices.Contains(req, any("snapshot")) || !slices.Contains(req, any("out")) {
			t.Errorf("replay_run requires %v, want snapshot and out", req)
		}
		if props := s["properties"].(map[string]any); props["goals"] == nil || props["target"] == nil {
			t.Errorf("replay_run's input schema lacks goals or target: %v", props)
		}
	}

	if tl := byName["replay_compare"]; tl != nil {
		s, _ := tl.OutputSchema.(map[string]any)
		if req, _ := s["required"].([]any); !slices.Contains(req, any("verdict")) {
			t.Errorf("replay_compare's output schema %v does not require the verdict", s)
		}
	}

	t.Run("inspect", func(t *testing.T) {
		res := callTool(t, ctx, cs, "replay_inspect", mcpserver.InspectInput{Snapshot: snap}, nil)
		checkOK(t, "replay_inspect", res)
		_, js, _ := replayCLI(t, "inspect", snap, "--format", "json")
		checkStructured(t, res, js)
		_, txt, _ := replayCLI(t, "inspect", snap)
		if got := text(t, res, 0); got != string(txt) {
			t.Errorf("text:\n%s\nwant replay inspect's:\n%s", got, txt)
		}
	})
	t.Run("report", func(t *testing.T) {
		res := callTool(t, ctx, cs, "replay_report", mcpserver.ReportInput{Path: cmpDir}, nil)
		checkOK(t, "replay_report", res) // a regression is a result
		code, js, _ := replayCLI(t, "report", cmpDir, "--format", "json")
		if code != 99 {
			t.Fatalf("replay report on the demo's comparison: exit %d, want 99 (its N+1)", code)
		}
		checkStructured(t, res, js)
		_, md, _ := replayCLI(t, "report", cmpDir, "--format", "markdown")
		if got := text(t, res, 0); got != string(md) || !strings.HasPrefix(got, "### Result") {
			t.Errorf("text:\n%s\nwant the Markdown report:\n%s", got, md)
		}
	})
	t.Run("version", func(t *testing.T) {
		res := callTool(t, ctx, cs, "replay_version", map[string]any{}, nil)
		checkOK(t, "replay_version", res)
		_, out, _ := replayCLI(t, "version")
		if got := text(t, res, 0); got != strings.TrimSpace(string(out)) {
			t.Errorf("version %q, want %q", got, out)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.run")
		for _, tc := range []struct {
			name, tool string
			args       any
			cli        []string // the same on the command line
		}{
			{"missing run file", "replay_compare", mcpserver.CompareInput{Runs: []string{filepath.Join(cmpDir, "baseline.run"), missing}},
				[]string{"compare", filepath.Join(cmpDir, "baseline.run"), missing, "--format", "json"}},
			{"one run file", "replay_compare", mcpserver.CompareInput{Runs: []string{missing}}, []string{"compare", missing}},
			{"bad vus", "replay_run", mcpserver.RunInput{Snapshot: snap, Out: missing, Target: "http://127.0.0.1:1", Load: mcpserver.Load{VUs: -1}},
				[]string{"run", "--snapshot", snap, "--out", missing, "--target", "http://127.0.0.1:1", "--vus=-1"}},
			{"not a snapshot", "replay_inspect", mcpserver.InspectInput{Snapshot: missing}, []string{"inspect", missing}},
			{"bad goal", "replay_report", mcpserver.ReportInput{Path: cmpDir, Goals: []string{"p95<<1"}},
				[]string{"report", cmpDir, "--goal", "p95<<1"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, _, stderr := replayCLI(t, tc.cli...)
				if code == 0 || code == 99 || strings.Count(stderr, "\n") != 1 {
					t.Fatalf("replay %v: exit %d, stderr %q; want a failure in one line", tc.cli, code, stderr)
				}
				checkToolError(t, callTool(t, ctx, cs, tc.tool, tc.args, nil), strings.TrimSpace(stderr))
			})
		}
		res := callTool(t, ctx, cs, "replay_report", mcpserver.ReportInput{Path: cmpDir, Args: []string{"--format=text"}}, nil)
		checkToolError(t, res, `args: "--format=text": the tool sets --format itself (use its fields)`)
		res = callTool(t, ctx, cs, "replay_run", map[string]any{"out": missing}, nil)
		if !res.IsError || !strings.Contains(text(t, res, 0), "snapshot") {
			t.Errorf("replay_run without a snapshot: %v, want a tool error naming it", res.Content)
		}
	})
}

// TestCompareLiveProgress compares two builds live (a real HTTP server on
// loopback as both) through the in-process client with a progress token:
// progress notifications come for both sides' load, and the result is
// the report the comparison wrote to its directory.
func TestCompareLiveProgress(t *testing.T) {
	snap := filepath.Join(demoFiles(t), "demo.snap")
	url := target(t)
	ctx := context.Background()
	var progress progressLog
	work := t.TempDir()
	cs := connect(t, ctx, mcpserver.Config{Replay: replayBin, Dir: work}, &progress)

	in := mcpserver.CompareInput{Snapshot: snap, BaselineURL: url, CandidateURL: url,
		Load: mcpserver.Load{Duration: "2s", Args: []string{"--warmup=0", "--slices=4"}}}
	res := callTool(t, ctx, cs, "replay_compare", in, "cmp-1")
	checkOK(t, "replay_compare", res)
	checkProgress(t, progress.all(), "cmp-1", "baseline load slice", "candidate load slice")
	// No out given: a new ./replay-compare-* directory, as on the command line.
	dirs, _ := filepath.Glob(filepath.Join(work, "replay-compare-*"))
	if len(dirs) != 1 {
		t.Fatalf("output directories %v, want one replay-compare-*", dirs)
	}
	// The report as compare printed it: report.json names its artifacts
	// relative to the directory, the result as they are from the server's.
	js, err := os.ReadFile(filepath.Join(dirs[0], "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkSameJSON(t, withoutArtifacts(t, js, dirs[0]), withoutArtifacts(t, res, work))
	md, err := os.ReadFile(filepath.Join(dirs[0], "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res, 0); got != string(md) || !strings.HasPrefix(got, "### Result") {
		t.Errorf("text:\n%s\nwant report.md:\n%s", got, md)
	}
	if got := text(t, res, 1); !strings.Contains(got, filepath.Base(dirs[0])) {
		t.Errorf("second text %q does not name the output directory", got)
	}

	// A failed comparison leaves no directory behind.
	in.BaselineURL = "not a url"
	res = callTool(t, ctx, cs, "replay_compare", in, nil)
	if !res.IsError || strings.Contains(text(t, res, 0), "\n") {
		t.Errorf("compare with a bad URL: %v, want a one-line tool error", res.Content)
	}
	if dirs, _ := filepath.Glob(filepath.Join(work, "replay-compare-*")); len(dirs) != 1 {
		t.Errorf("after a failed compare: directories %v, want only the first", dirs)
	}
}

// TestCancel cancels a long run: the call ends at once and its child, the
// replay run, is gone.
func TestCancel(t *testing.T) {
	snap := filepath.Join(demoFiles(t), "demo.snap")
	url := target(t)
	var progress progressLog
	cs := connect(t, context.Background(), mcpserver.Config{Replay: replayBin, Dir: t.TempDir()}, &progress)
	out := filepath.Join(t.TempDir(), "cancelled-run-"+strings.ReplaceAll(t.Name(), "/", "-")+".run")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "replay_run", Arguments: mcpserver.RunInput{Snapshot: snap, Out: out, Target: url,
			Load: mcpserver.Load{Duration: "60s", Rate: "20/s"}}}
		params.SetProgressToken(1)
		_, err := cs.CallTool(ctx, params)
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(progress.all()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no progress from the run in 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !running(out) {
		t.Fatal("no replay run process found while the run makes progress")
	}
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a cancelled call returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call has not returned in 10s")
	}
	for running(out) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("replay run still runs 10s after its call was cancelled")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// running reports whether a process has arg on its command line.
func running(arg string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), arg) {
			return true
		}
	}
	return false
}

// TestDemoTool runs the demo through its tool: the comparison it makes is
// the result (the N+1 in GET /orders), its files are named, and the
// comparison sends progress.
func TestDemoTool(t *testing.T) {
	ctx := context.Background()
	var progress progressLog
	cs := connect(t, ctx, mcpserver.Config{Replay: replayBin, Dir: t.TempDir()}, &progress)
	var out string
	var res *mcp.CallToolResult
	for try := 1; ; try++ {
		out = filepath.Join(t.TempDir(), "demo")
		res = callTool(t, ctx, cs, "replay_demo", mcpserver.DemoInput{Out: out, Duration: "2s", Rounds: 3}, "demo")
		// On a busy machine another endpoint may regress too in 2s, and
		// the demo says so (exit 1); once is noise, twice a failure.
		if try == 1 && res.IsError && strings.Contains(text(t, res, 0), "expected only GET /orders to regress") {
			t.Logf("demo, try %d: %s", try, text(t, res, 0))
			progress.reset()
			continue
		}
		break
	}
	checkOK(t, "replay_demo", res)
	checkProgress(t, progress.all(), "demo", "baseline", "candidate")
	js, err := os.ReadFile(filepath.Join(out, "compare", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkStructured(t, res, js)
	if sc, _ := res.StructuredContent.(map[string]any); sc["verdict"] != "regression" {
		t.Errorf("demo verdict %v, want regression", sc["verdict"])
	}
	if md := text(t, res, 0); !strings.HasPrefix(md, "### Result") || !strings.Contains(md, "N+1") {
		t.Errorf("demo text is not the Result block naming the N+1:\n%s", md)
	}
	if files := text(t, res, 1); !strings.Contains(files, filepath.Join(out, "demo.snap")) {
		t.Errorf("demo's files %q do not name its snapshot", files)
	}
}

// withoutArtifacts checks that the artifacts a report (a tool's result or
// a JSON file) names are files, their paths relative to dir, and returns
// the report without them.
func withoutArtifacts(t *testing.T, report any, dir string) []byte {
	t.Helper()
	raw, ok := report.([]byte)
	if res, isRes := report.(*mcp.CallToolResult); isRes {
		var err error
		if raw, err = json.Marshal(res.StructuredContent); err != nil {
			t.Fatal(err)
		}
	} else if !ok {
		t.Fatalf("withoutArtifacts of %T", report)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	arts, _ := doc["artifacts"].([]any)
	if len(arts) == 0 {
		t.Error("the report names no artifacts")
	}
	for _, a := range arts {
		p, _ := a.(map[string]any)["path"].(string)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if !isFile(p) {
			t.Errorf("artifact %v: no file %s", a, p)
		}
	}
	delete(doc, "artifacts")
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
