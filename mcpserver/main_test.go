package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// replayBin is the replay binary the tests build once: the server's tools
// run it, and the stdio test runs `replay mcp` from it.
var replayBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "replay-mcp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	replayBin = filepath.Join(dir, "replay")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goBin, "build", "-o", replayBin, "../cmd/replay").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	if demoDir != "" {
		os.RemoveAll(demoDir)
	}
	return code
}

var (
	demoOnce sync.Once
	demoDir  string
	demoErr  error
)

// demoFiles runs `replay demo` once (a real recording and a real
// comparison of the orders service with and without its N+1, on a
// throwaway PostgreSQL) and returns its directory: demo.snap, and
// compare/ with the run files and reports.
func demoFiles(t *testing.T) string {
	t.Helper()
	demoOnce.Do(func() {
		if demoDir, demoErr = os.MkdirTemp("", "replay-mcp-demo-"); demoErr != nil {
			return
		}
		out, err := exec.Command(replayBin, "demo", "--out", demoDir, "--duration", "1s", "--rounds", "2").CombinedOutput()
		// The demo exits 1 when, on a busy machine, another endpoint than
		// GET /orders regressed too in its 1s; its files serve all the same.
		if err != nil && !(bytes.Contains(out, []byte("replay: demo: expected only GET /orders to regress")) &&
			isFile(filepath.Join(demoDir, "compare", "candidate.run"))) {
			demoErr = fmt.Errorf("replay demo: %v\n%s", err, out)
		}
	})
	if demoErr != nil {
		t.Fatal(demoErr)
	}
	return demoDir
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// replayCLI runs the replay binary as a user does and returns its exit
// status, stdout and stderr.
func replayCLI(t *testing.T, args ...string) (int, []byte, string) {
	t.Helper()
	return replayCLIIn(t, "", args...)
}

// replayCLIIn is replayCLI in directory dir.
func replayCLIIn(t *testing.T, dir string, args ...string) (int, []byte, string) {
	t.Helper()
	cmd := exec.Command(replayBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.Bytes(), stderr.String()
}

// target is a real HTTP server on loopback that answers every request 200.
func target(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// progressLog collects a client's progress notifications.
type progressLog struct {
	mu    sync.Mutex
	notes []*mcp.ProgressNotificationParams
}

func (p *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = append(p.notes, req.Params)
}

func (p *progressLog) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notes = nil
}

func (p *progressLog) all() []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), p.notes...)
}

// checkProgress checks that notifications came for token, their progress
// rising, and that their messages name every word of want.
func checkProgress(t *testing.T, notes []*mcp.ProgressNotificationParams, token any, want ...string) {
	t.Helper()
	if len(notes) < 2 {
		t.Fatalf("%d progress notifications, want several", len(notes))
	}
	var msgs []string
	for i, n := range notes {
		if n.ProgressToken != token {
			t.Errorf("notification %d: token %v, want %v", i, n.ProgressToken, token)
		}
		if i > 0 && n.Progress <= notes[i-1].Progress {
			t.Errorf("notification %d: progress %v after %v: not rising", i, n.Progress, notes[i-1].Progress)
		}
		msgs = append(msgs, n.Message)
	}
	all := strings.Join(msgs, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("no progress message names %q:\n%s", w, all)
		}
	}
}

// callTool calls a tool and fails the test on a protocol error.
func callTool(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args any, token any) *mcp.CallToolResult {
	t.Helper()
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if token != nil {
		params.SetProgressToken(token)
	}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// text is the text of a result's content item i.
func text(t *testing.T, res *mcp.CallToolResult, i int) string {
	t.Helper()
	if len(res.Content) <= i {
		t.Fatalf("result has %d content items, want item %d", len(res.Content), i)
	}
	tc, ok := res.Content[i].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %d is %T, want text", i, res.Content[i])
	}
	return tc.Text
}

// checkOK fails when res is a tool error.
func checkOK(t *testing.T, name string, res *mcp.CallToolResult) {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, text(t, res, 0))
	}
}

// checkStructured checks that res's structured content is the JSON want.
func checkStructured(t *testing.T, res *mcp.CallToolResult, want []byte) {
	t.Helper()
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	checkSameJSON(t, want, raw)
}

// checkSameJSON checks that got is the JSON document want.
func checkSameJSON(t *testing.T, want, got []byte) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("the command's JSON: %v\n%s", err, want)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(w, g); d != "" {
		t.Errorf("structured content is not the command's JSON (-command +tool):\n%s", d)
	}
}

// checkToolError checks that res is a tool error whose text is the one
// line want.
func checkToolError(t *testing.T, res *mcp.CallToolResult, want string) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("no tool error, want %q", want)
	}
	got := text(t, res, 0)
	if got != want || strings.Contains(got, "\n") {
		t.Errorf("tool error %q, want the one line %q", got, want)
	}
}
