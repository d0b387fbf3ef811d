package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaykit/replay/mcpserver"
)

// TestStdio is an agent's session with `replay mcp`: a real client over
// stdio starts the built binary, lists the tools, compares the demo's two
// run files (structured content = `replay compare --format json`, text =
// its Markdown Result block), runs the demo's snapshot against a real
// server with progress notifications, and gets a tool error for bad input.
func TestStdio(t *testing.T) {
	dir := demoFiles(t)
	runA, runB := filepath.Join(dir, "compare", "baseline.run"), filepath.Join(dir, "compare", "candidate.run")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	work := t.TempDir()
	cmd := exec.Command(replayBin, "mcp")
	cmd.Dir = work
	var progress progressLog
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"},
		&mcp.ClientOptions{ProgressNotificationHandler: progress.handle})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ServerInfo; got.Name != "replay" || got.Version == "" {
		t.Errorf("server info %+v, want replay and its version", got)
	}

	var names []string
	for tl, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
		if tl.Description == "" || tl.InputSchema == nil {
			t.Errorf("tool %s has no description or input schema", tl.Name)
		}
	}
	for _, want := range []string{"replay_inspect", "replay_run", "replay_compare", "replay_report"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}

	// Compare the demo's run files: a regression is a result, not an error.
	res := callTool(t, ctx, cs, "replay_compare", mcpserver.CompareInput{Runs: []string{runA, runB}}, nil)
	checkOK(t, "replay_compare", res)
	code, js, _ := replayCLI(t, "compare", runA, runB, "--format", "json")
	if code != 99 {
		t.Fatalf("replay compare of the demo's runs: exit %d, want 99 (the N+1)", code)
	}
	checkStructured(t, res, js)
	if sc, _ := res.StructuredContent.(map[string]any); sc["verdict"] != "regression" {
		t.Errorf("verdict %v, want regression", sc["verdict"])
	}
	_, md, _ := replayCLI(t, "compare", runA, runB, "--format", "markdown")
	got := text(t, res, 0)
	if got != string(md) || !strings.HasPrefix(got, "### Result") || !strings.Contains(got, "N+1") {
		t.Errorf("text:\n%s\nwant the Markdown Result block naming the N+1:\n%s", got, md)
	}

	// A real run, with progress notifications; its run file relative to
	// the server's directory.
	snap := filepath.Join(dir, "demo.snap")
	res = callTool(t, ctx, cs, "replay_run", mcpserver.RunInput{Snapshot: snap, Out: "agent.run", Target: target(t),
		Load: mcpserver.Load{Duration: "2s", Rate: "200/s", Endpoints: []string{"GET /orders", "GET /catalog"}}}, "run-1")
	checkOK(t, "replay_run", res)
	checkProgress(t, progress.all(), "run-1", "load", "requests")
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["passed"] != true || sc["requests"].(float64) < 10 {
		t.Errorf("run: passed %v, %v requests; want a passed run of many requests", sc["passed"], sc["requests"])
	}
	_, md, _ = replayCLIIn(t, work, "report", "agent.run", "--format", "markdown")
	if got := text(t, res, 0); got != string(md) || !strings.HasPrefix(got, "### Result") {
		t.Errorf("run text is not the run file's Markdown report (-report +tool):\n%s", cmp.Diff(string(md), got))
	}

	// Bad input: the command's one-line message as a tool error.
	res = callTool(t, ctx, cs, "replay_compare", mcpserver.CompareInput{Runs: []string{runA, filepath.Join(work, "nope.run")}}, nil)
	checkToolError(t, res, "replay: compare: open run "+filepath.Join(work, "nope.run")+": no such file")
}

// TestStdioAnswersCallsInFlightAtEOF: a client that pipes its calls and
// closes stdin (`printf … | replay mcp`) gets an answer to every call, the
// ones still running when its input ended too, and replay mcp exits 0.
func TestStdioAnswersCallsInFlightAtEOF(t *testing.T) {
	var in strings.Builder
	in.WriteString(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n")
	in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for id := 1; id <= 3; id++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"replay_version","arguments":{}}}`+"\n", id)
	}
	cmd := exec.Command(replayBin, "mcp")
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("replay mcp: %v", err)
	}
	answered := map[float64]bool{}
	for line := range strings.Lines(string(out)) {
		var resp struct {
			ID     *float64        `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		if resp.ID != nil && resp.Result != nil {
			answered[*resp.ID] = true
		}
	}
	for id := range 4 {
		if !answered[float64(id)] {
			t.Errorf("no answer to call %d; stdout:\n%s", id, out)
		}
	}
}
