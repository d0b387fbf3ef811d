package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// A ramp runs its whole duration and the run says so: --stage 300ms:2
// --stage 300ms:1 lasts 0.6 s although its first request waits for the
// ramp from 0 users to reach 1 (at 150 ms); both stages send requests, and
// `replay report` of the run file gives the same duration.
func TestRunStagesLastTheirWholeDuration(t *testing.T) {
	snap := runSnapshot(t, orderRequests(5)...)
	tg := newLoadTarget(t, time.Millisecond)
	out := filepath.Join(t.TempDir(), "stages.run")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", tg.URL, "--stage", "300ms:2", "--stage", "300ms:1", "--out", out, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if d := runDuration(t, stdout); d < 0.58 || d > 10 {
		t.Errorf("the run lasted %.3f s, want the stages' 0.6 s", d)
	}
	var rep, errb bytes.Buffer
	if code := run([]string{"report", out, "--format", "json"}, streams{in: strings.NewReader(""), out: &rep, err: &errb}); code != 0 {
		t.Fatalf("replay report: exit %d %s", code, errb.String())
	}
	if d := runDuration(t, rep.String()); d < 0.58 || d > 10 {
		t.Errorf("replay report: the run lasted %.3f s, want the stages' 0.6 s", d)
	}

	r, err := snapshots.OpenRun(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := r.Info().LoadStarted
	if start.IsZero() {
		t.Fatal("the run file has no load start")
	}
	if d := r.Info().LoadEnded.Sub(start); d < 600*time.Millisecond {
		t.Errorf("the run file's load lasted %s, want the stages' 600ms", d)
	}
	var first time.Duration = -1
	perStage := [2]int{}
	for res, err := range r.Results(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		at := res.Intended.Sub(start)
		if first < 0 || at < first {
			first = at
		}
		perStage[min(int(at/(300*time.Millisecond)), 1)]++
	}
	if perStage[0] == 0 || perStage[1] == 0 {
		t.Errorf("requests per stage: %v, want both stages to send", perStage)
	}
	// From 0 users at first, the ramp reaches 1 at 150 ms (k6's ramping).
	if first < 145*time.Millisecond || first > 400*time.Millisecond {
		t.Errorf("the first request started %s into the load, want at 150 ms (the ramp from 0 to 2 users reaching 1)", first)
	}
}
