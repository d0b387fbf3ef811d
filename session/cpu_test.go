package session

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/replayer"
)

// envBusy is the work (iterations of a busy loop) the test binary, serving
// as a build (envServe=cpu), does per request: CPU time, the same on a
// loaded machine as on a quiet one.
const envBusy = "REPLAY_SESSION_TEST_BUSY"

// serveBusy serves on $PORT, spinning $REPLAY_SESSION_TEST_BUSY iterations
// per request.
func serveBusy() {
	n, _ := strconv.Atoi(os.Getenv(envBusy))
	http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x := uint64(88172645463325252)
		for range n {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
		fmt.Fprint(w, x&1)
	}))
}

// busyCompare compares two builds replay starts, spinning base and cand
// iterations per request, under an open load gentle on a shared machine.
func busyCompare(t *testing.T, base, cand int, opts analyzer.CompareOptions, goals ...string) *CompareResult {
	t.Helper()
	gs, err := analyzer.ParseGoals(goals)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Compare(context.Background(), CompareConfig{
		Config:    Config{Inbound: inbound("/a", "/b"), Env: []string{envServe + "=cpu"}},
		Baseline:  SideConfig{Name: "baseline", Cmd: os.Args[0], Env: []string{envBusy + "=" + strconv.Itoa(base)}},
		Candidate: SideConfig{Name: "candidate", Cmd: os.Args[0], Env: []string{envBusy + "=" + strconv.Itoa(cand)}},
		Dir:       t.TempDir(),
		Plan: replayer.ComparePlan{Load: replayer.LoadPlan{Rate: replayer.Rate{Count: 150, Per: time.Second}, Duration: 3 * time.Second},
			Slices: 10, Warmup: 300 * time.Millisecond},
		Analysis: opts,
		Goals:    gs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCompareCPUOfBuilds: a candidate that spins four times the baseline's
// loop per request (about three times its CPU per request, whatever the
// machine's load) is found by CPU per request — a regression, which fails
// the comparison and a cpu goal — with the figures in the run files.
func TestCompareCPUOfBuilds(t *testing.T) {
	res := busyCompare(t, 150_000, 600_000, analyzer.CompareOptions{}, "cpu<=+50%")
	c := res.Report.Comparison
	ch := c.CPU
	if !ch.Measured || ch.Verdict != analyzer.Regression || ch.Ratio < 1.5 || ch.CILow <= 1 || ch.Pairs != 10 {
		t.Fatalf("CPU %+v; want a regression of about ×3 over 10 slice pairs", ch)
	}
	if c.Verdict != analyzer.Regression || res.Report.Passed() {
		t.Errorf("overall %s, passed %v; want a regression that fails", c.Verdict, res.Report.Passed())
	}
	if !strings.Contains(ch.Explanation, "more CPU per request") {
		t.Errorf("explanation %q", ch.Explanation)
	}
	if g := res.Report.Goals; len(g) != 1 || g[0].Passed || g[0].Actual < 50 {
		t.Errorf("goals %+v; want cpu<=+50%% missed", g)
	}
	for _, s := range []*analyzer.Summary{c.Baseline, c.Candidate} {
		u := s.CPU
		if !u.Measured || len(u.Slices) != 10 || u.PerRequest <= 0 || u.Requests != s.Overall.Requests {
			t.Errorf("%s: CPU %+v; want 10 slices measured over its %d requests", s.Info.Name, u, s.Overall.Requests)
		}
	}
}

// TestCompareCPUAA: the same build on both sides is no CPU regression or
// improvement (a generous minimum change: the machine is shared).
func TestCompareCPUAA(t *testing.T) {
	res := busyCompare(t, 150_000, 150_000, analyzer.CompareOptions{MinRelative: 0.25})
	ch := res.Report.Comparison.CPU
	if !ch.Measured || ch.Verdict == analyzer.Regression || ch.Verdict == analyzer.Improvement {
		t.Fatalf("A/A CPU %+v; want measured, neither a regression nor an improvement", ch)
	}
}

// TestRunCPU: a run of a build replay starts reports its CPU per request; a
// run against a URL has none — not a zero — and fails a cpu goal, saying
// why.
func TestRunCPU(t *testing.T) {
	goals, err := analyzer.ParseGoals([]string{"cpu<=1s"})
	if err != nil {
		t.Fatal(err)
	}
	plan := replayer.LoadPlan{Rate: replayer.Rate{Count: 100, Per: time.Second}, Duration: time.Second}
	res, err := Run(context.Background(), RunConfig{
		Config: Config{Inbound: inbound("/a"), Env: []string{envServe + "=cpu", envBusy + "=150000"}},
		Side:   SideConfig{Name: "run", Cmd: os.Args[0], RunPath: filepath.Join(t.TempDir(), "cmd.run")},
		Plan:   plan, Goals: goals,
	})
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Report.Summary.CPU; !u.Measured || u.PerRequest <= 0 || len(u.Slices) != 1 || !res.Report.Goals[0].Passed {
		t.Fatalf("CPU %+v, goals %+v; want measured and the goal met", u, res.Report.Goals)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	res, err = Run(context.Background(), RunConfig{
		Config: Config{Inbound: inbound("/a")},
		Side:   SideConfig{Name: "run", URL: srv.URL, RunPath: filepath.Join(t.TempDir(), "url.run")},
		Plan:   plan, Goals: goals,
	})
	if err != nil {
		t.Fatal(err)
	}
	if u := res.Report.Summary.CPU; u.Measured || u.PerRequest != 0 || u.Reason == "" {
		t.Fatalf("CPU of a URL %+v; want not measured, with a reason", u)
	}
	if g := res.Report.Goals[0]; g.Passed || g.Reason == "" {
		t.Fatalf("cpu goal against a URL: %+v; want FAIL with a reason", g)
	}
}
