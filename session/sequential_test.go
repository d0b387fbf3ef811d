package session

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

// busyBuild is a build whose every answer costs about half a millisecond of
// CPU, and /slow, when slow is set, 40 ms more of waiting. Its answers are
// the same every time (the hashing's result, which depends on how long it
// ran, goes in a header no comparison looks at).
func busyBuild(t *testing.T, slow bool) string {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.Sum256([]byte(r.URL.Path))
		for deadline := time.Now().Add(500 * time.Microsecond); time.Now().Before(deadline); {
			sum = sha256.Sum256(sum[:])
		}
		if slow && r.URL.Path == "/slow" {
			time.Sleep(40 * time.Millisecond)
		}
		w.Header().Set("X-Work", fmt.Sprintf("%x", sum[:4]))
		fmt.Fprintf(w, "answer of %s\n", r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s.URL
}

// TestCompareFairLoadSlowEndpoint: under the default fair load, a candidate
// whose /slow waits 40 ms more regresses there and leaves its other
// endpoints unchanged (in the closed model its virtual users would wait at
// /slow, and the others, with less CPU contention, would look faster).
func TestCompareFairLoadSlowEndpoint(t *testing.T) {
	dir := t.TempDir()
	res, err := Compare(context.Background(), CompareConfig{
		Config:    Config{Inbound: inbound("/a", "/b", "/c", "/slow")},
		Baseline:  SideConfig{Name: "baseline", URL: busyBuild(t, false)},
		Candidate: SideConfig{Name: "candidate", URL: busyBuild(t, true)},
		Dir:       dir,
		Plan: replayer.ComparePlan{Load: replayer.LoadPlan{VUs: DefaultVUs, Duration: 4 * time.Second},
			Warmup: 500 * time.Millisecond, Calibrate: DefaultCalibrate},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Report.Comparison
	for _, e := range c.Endpoints {
		switch {
		case e.Endpoint == "GET /slow":
			if e.Verdict != analyzer.Regression {
				t.Errorf("%s: %s (%s); want regression", e.Endpoint, e.Verdict, e.Explanation)
			}
		case e.Verdict == analyzer.Regression || e.Verdict == analyzer.Improvement:
			// The fair load's point: the slow endpoint does not make the
			// others look slower. Four seconds beside the other packages
			// under -race may leave one inconclusive (its interval too
			// wide), which is honest; a change claimed is not.
			t.Errorf("%s: %s (%s); want unchanged (or inconclusive on a busy machine)", e.Endpoint, e.Verdict, e.Explanation)
		case e.Verdict != analyzer.Unchanged:
			t.Logf("%s: %s (%s)", e.Endpoint, e.Verdict, e.Explanation)
		}
	}
	if res.Stats.Rate.Count == 0 || res.Stats.Baseline.Requests != res.Stats.Candidate.Requests {
		t.Errorf("rate %s; requests %d and %d: want the same open-model load on both sides",
			res.Stats.Rate, res.Stats.Baseline.Requests, res.Stats.Candidate.Requests)
	}
	if l := c.Baseline.Info.Settings[report.SettingLoad]; !strings.Contains(l, "fair load") || !strings.HasPrefix(l, "open model, "+res.Stats.Rate.String()) {
		t.Errorf("load %q; want the open model at the calibrated rate, called a fair load", l)
	}
}

// TestCompareRunsUntilItKnows: with MaxDuration, the comparison looks after
// Duration and goes on while an endpoint is inconclusive for the noise; it
// records its looks, and `replay report DIR` judges at the last look's
// confidence, as the live comparison did.
func TestCompareRunsUntilItKnows(t *testing.T) {
	dir := t.TempDir()
	var notes []string
	res, err := Compare(context.Background(), CompareConfig{
		Config:    Config{Inbound: inbound("/a", "/slow")},
		Baseline:  SideConfig{Name: "baseline", URL: busyBuild(t, false)},
		Candidate: SideConfig{Name: "candidate", URL: busyBuild(t, true)},
		Dir:       dir,
		Plan: replayer.ComparePlan{Load: replayer.LoadPlan{VUs: DefaultVUs, Duration: 2 * time.Second}, Slices: 10,
			Warmup: 300 * time.Millisecond, Calibrate: DefaultCalibrate, MaxDuration: 4 * time.Second,
			Progress: func(p replayer.CompareProgress) {
				if p.Phase == replayer.PhaseLook {
					notes = append(notes, p.Note)
				}
			}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Report.Comparison
	s := c.Baseline.Info.Settings
	if res.Stats.Looks == 0 || s[report.SettingLooks] == "" || s[report.SettingStopped] == "" || len(notes) != res.Stats.Looks {
		t.Fatalf("looks %d, settings %v, notes %q", res.Stats.Looks, s, notes)
	}
	ran, _ := time.ParseDuration(s[report.SettingRan])
	undecided := undecided(c)
	switch {
	case ran < 2*time.Second || ran > 4*time.Second:
		t.Errorf("ran %s per side; want 2s to 4s", ran)
	case ran < 4*time.Second && len(undecided) > 0:
		t.Errorf("stopped after %s with %v inconclusive", ran, undecided)
	case !strings.Contains(notes[len(notes)-1], "stop: "):
		t.Errorf("last look %q does not say it stops", notes[len(notes)-1])
	}
	// A regression; or, when the looks ran out of time (MaxDuration) on a
	// machine busy enough to leave the interval wide, inconclusive — never
	// unchanged or an improvement.
	switch e := c.Endpoint("GET /slow"); {
	case e == nil:
		t.Errorf("GET /slow not compared")
	case e.Verdict == analyzer.Inconclusive && ran >= 4*time.Second:
		t.Logf("GET /slow inconclusive after the longest run allowed: %s", e.Explanation)
	case e.Verdict != analyzer.Regression:
		t.Errorf("GET /slow: %s (%s); want a regression", e.Verdict, e.Explanation)
	}
	// Spent over the looks: the last look is judged at more than 99%.
	if res.Stats.Looks > 0 && c.Options.Confidence <= 0.99 {
		t.Errorf("confidence %v at the last look; want above 0.99", c.Options.Confidence)
	}
	off, err := LoadComparison(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if off.Comparison.Options.Confidence != c.Options.Confidence || off.Comparison.Verdict != c.Verdict {
		t.Errorf("report DIR: confidence %v, verdict %s; live %v, %s", off.Comparison.Options.Confidence, off.Comparison.Verdict,
			c.Options.Confidence, c.Verdict)
	}
	var b strings.Builder
	if err := report.ComparisonText(&b, res.Report); err != nil {
		t.Fatal(err)
	}
	if text := b.String(); !strings.Contains(text, "ran until it knew: ") || !strings.Contains(text, "99% over ") {
		t.Errorf("the report does not say how long it ran and at what confidence:\n%s", text)
	}
}

// TestUndecidedCPU: a look goes on while the builds' CPU per request is
// inconclusive over slice pairs, as it does for an endpoint; CPU not
// measured, or not over pairs (nothing more load would settle), does not
// keep it going.
func TestUndecidedCPU(t *testing.T) {
	judged := []*analyzer.EndpointComparison{{Endpoint: "GET /a", Verdict: analyzer.Unchanged},
		{Endpoint: "GET /b", Verdict: analyzer.Inconclusive, Cause: analyzer.CauseNoise}}
	for _, tc := range []struct {
		cpu  analyzer.CPUChange
		want []string
	}{
		{analyzer.CPUChange{Measured: true, Pairs: 10, Verdict: analyzer.Inconclusive}, []string{"GET /b", "CPU per request"}},
		{analyzer.CPUChange{Measured: true, Pairs: 10, Verdict: analyzer.Regression}, []string{"GET /b"}},
		{analyzer.CPUChange{Measured: true, Pairs: 0, Verdict: analyzer.Inconclusive}, []string{"GET /b"}},
		{analyzer.CPUChange{}, []string{"GET /b"}},
	} {
		c := &analyzer.Comparison{Endpoints: judged, CPU: tc.cpu}
		if got := undecided(c); !slices.Equal(got, tc.want) {
			t.Errorf("CPU %+v: undecided %q, want %q", tc.cpu, got, tc.want)
		}
	}
}

// TestLookSeesCPUSoFar: a look reads run files that do not have the
// builds' CPU time yet (they get it as they close): compareFiles judges
// them with the CPU time measured so far, so that a look can see the CPU
// per request it waits for.
func TestLookSeesCPUSoFar(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var paths [2]string
	var cpu [2]*snapshots.BuildCPU
	for side := range 2 {
		paths[side] = filepath.Join(dir, []string{"baseline.run", "candidate.run"}[side])
		w, err := snapshots.CreateRun(paths[side], snapshots.RunInfo{Name: "s", Started: t0})
		if err != nil {
			t.Fatal(err)
		}
		cpu[side] = &snapshots.BuildCPU{}
		for slice := 1; slice <= 10; slice++ {
			at := t0.Add(time.Duration(2*slice+side) * time.Second)
			for range 40 {
				w.Add(&snapshots.Result{Phase: snapshots.PhaseLoad, Slice: slice, Endpoint: "GET /a", Method: "GET", URL: "/a",
					Intended: at, Sent: at, Done: at.Add(2 * time.Millisecond), Status: 200, RecordedStatus: 200})
				at = at.Add(10 * time.Millisecond)
			}
			us := []float64{250, 400}[side] * 40 * (1 + 0.02*float64((slice+side)%3-1))
			cpu[side].Slices = append(cpu[side].Slices, snapshots.SliceCPU{Slice: slice, CPU: time.Duration(us * float64(time.Microsecond)), Wall: time.Second})
		}
		if err := w.Close(snapshots.RunInfo{Ended: t0.Add(25 * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	without, err := compareFiles(context.Background(), paths[0], paths[1], [2]*snapshots.BuildCPU{}, nil, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if without.Comparison.CPU.Measured {
		t.Fatalf("CPU measured from files that hold none: %+v", without.Comparison.CPU)
	}
	with, err := compareFiles(context.Background(), paths[0], paths[1], cpu, nil, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ch := with.Comparison.CPU; !ch.Measured || ch.Pairs != 10 || ch.Verdict != analyzer.Regression {
		t.Fatalf("CPU so far %+v; want measured over 10 pairs, a regression (×1.6)", ch)
	}
}
