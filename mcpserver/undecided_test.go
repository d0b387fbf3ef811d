package mcpserver_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaykit/replay/mcpserver"
)

// A comparison that could not decide (replay exits 1: no endpoint could be
// judged, too few requests) is a result an agent can read, with its
// report and the reason, not a tool error.
func TestCouldNotTellIsAResult(t *testing.T) {
	snap := filepath.Join(demoFiles(t), "demo.snap")
	ctx := context.Background()
	work := t.TempDir()
	cs := connect(t, ctx, mcpserver.Config{Replay: replayBin, Dir: work}, nil)
	run := filepath.Join(work, "one.run")
	res := callTool(t, ctx, cs, "replay_run", mcpserver.RunInput{Snapshot: snap, Out: run, Target: target(t), Iterations: 1}, nil)
	checkOK(t, "replay_run", res)
	for _, tc := range []struct {
		tool string
		in   any
	}{
		{"replay_compare", mcpserver.CompareInput{Runs: []string{run, run}}},
		{"replay_compare", mcpserver.CompareInput{Runs: []string{run, run}, MinChange: "10%,1ms"}},
	} {
		res := callTool(t, ctx, cs, tc.tool, tc.in, nil)
		checkOK(t, tc.tool, res)
		sc, _ := res.StructuredContent.(map[string]any)
		why, _ := sc["undecided"].(string)
		if sc["verdict"] != "inconclusive" || !strings.Contains(why, "no endpoint could be judged") {
			t.Errorf("%s: verdict %v, undecided %q; want inconclusive and why", tc.tool, sc["verdict"], why)
		}
		if md := text(t, res, 0); !strings.HasPrefix(md, "### Result") {
			t.Errorf("%s: text %q, want the Markdown report", tc.tool, md)
		}
	}
}
