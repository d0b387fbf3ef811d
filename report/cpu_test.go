package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/internal/golden"
	"github.com/replaykit/replay/internal/schematest"
	"github.com/replaykit/replay/snapshots"
)

// withCPU gives a run's info the build's CPU time: perReq µs per request of
// each slice of rs, moved by factors (cycled) as a machine's noise would.
func withCPU(in snapshots.RunInfo, rs []*snapshots.Result, perReq float64, factors ...float64) snapshots.RunInfo {
	n := map[int]int{}
	var order []int
	for _, r := range rs {
		if r.Phase != snapshots.PhaseLoad {
			continue
		}
		if n[r.Slice] == 0 {
			order = append(order, r.Slice)
		}
		n[r.Slice]++
	}
	in.BuildCPU = &snapshots.BuildCPU{}
	for i, s := range order {
		f := factors[i%len(factors)]
		in.BuildCPU.Slices = append(in.BuildCPU.Slices, snapshots.SliceCPU{Slice: s,
			CPU: time.Duration(float64(n[s]) * perReq * f * float64(time.Microsecond)), Wall: time.Second})
	}
	return in
}

// cpuFixture compares two builds replay started: the same latency, but
// the candidate spends 20% more CPU per request (a busy loop), on a
// machine whose slices vary by a few percent.
func cpuFixture(t testing.TB) *ComparisonReport {
	brs, crs := fixtureResults(2000, 11, true, baseEndpoints()), fixtureResults(2000, 12, false, baseEndpoints())
	noise := []float64{1, 1.03, 0.98, 1.05, 0.97, 1.01, 0.99, 1.04, 0.96, 1.02}
	base := fixtureSummary(t, withCPU(info("baseline", "http://127.0.0.1:41001", 0), brs, 310, noise...), brs)
	cand := fixtureSummary(t, withCPU(info("candidate", "http://127.0.0.1:41002", 0), crs, 372, noise[3:]...), crs)
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	goals, err := analyzer.ParseGoals([]string{"cpu<=+5%", "cpu<=500us"})
	if err != nil {
		t.Fatal(err)
	}
	return &ComparisonReport{Comparison: c, Goals: analyzer.CheckComparison(c, goals)}
}

// cpuRunFixture is a run of a build replay started, with a cpu goal.
func cpuRunFixture(t testing.TB) *RunReport {
	rs := fixtureResults(2000, 7, false, baseEndpoints())
	s := fixtureSummary(t, withCPU(info("candidate", "http://127.0.0.1:41234", 0), rs, 310, 1, 1.02, 0.98), rs)
	goals, err := analyzer.ParseGoals([]string{"cpu<=200us", "p95<500ms"})
	if err != nil {
		t.Fatal(err)
	}
	return &RunReport{Summary: s, Goals: analyzer.Check(s, goals)}
}

// TestGoldenCPU renders a CPU regression whose latency did not change, and
// a run's CPU per request, in every format; the JSON matches its schema.
func TestGoldenCPU(t *testing.T) {
	r := cpuFixture(t)
	if r.Comparison.CPU.Verdict != analyzer.Regression || r.Comparison.Verdict != analyzer.Regression || r.Passed() {
		t.Fatalf("CPU %+v, overall %s; want a CPU regression failing the comparison", r.Comparison.CPU, r.Comparison.Verdict)
	}
	run := cpuRunFixture(t)
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteComparison(&b, f, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "compare-cpu"+f.Ext()+".golden", b.Bytes())
			if f == JSON {
				schematest.Check(t, "comparison", b.Bytes())
			}
			b.Reset()
			if err := WriteRun(&b, f, run); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "run-cpu"+f.Ext()+".golden", b.Bytes())
			if f == JSON {
				schematest.Check(t, "run", b.Bytes())
			}
		})
	}
}

// TestCPUEveryFormat: the CPU regression is in every format, in words an
// agent can act on; the JSON carries the figures under "cpu", at the top
// and on each endpoint, scope "build".
func TestCPUEveryFormat(t *testing.T) {
	r := cpuFixture(t)
	for _, f := range Formats() {
		var b bytes.Buffer
		if err := WriteComparison(&b, f, r); err != nil {
			t.Fatal(err)
		}
		// JUnit has no outcome line: its test case carries the sentence.
		if !strings.Contains(b.String(), "more CPU per request") || f != JUnit && !strings.Contains(b.String(), "Regression in CPU per request (+") {
			t.Errorf("%s: no CPU regression in the report:\n%s", f, b.String())
		}
	}
	var d struct {
		CPU       CPUComparisonDocument `json:"cpu"`
		Endpoints []struct {
			CPU *CPUComparisonDocument `json:"cpu"`
		} `json:"endpoints"`
	}
	var b bytes.Buffer
	if err := ComparisonJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	c := d.CPU
	if !c.Measured || c.Scope != "build" || c.BaselineUsPerRequest == nil || c.CandidateUsPerRequest == nil || c.Ratio == nil || c.CILow == nil ||
		*c.CILow <= 1 || c.Verdict != analyzer.Regression {
		t.Fatalf("cpu = %+v; want measured, both figures, an interval above 1, regression", c)
	}
	if len(d.Endpoints) == 0 || d.Endpoints[0].CPU == nil || d.Endpoints[0].CPU.Scope != "build" {
		t.Fatalf("endpoints lack the build's cpu: %s", b.String())
	}
}

// TestCPUNotMeasuredNeverZero: builds given as URLs have no CPU figure in
// the JSON — measured false and a reason, never a 0 — and the human
// formats say nothing of it.
func TestCPUNotMeasuredNeverZero(t *testing.T) {
	r := comparisonFixture(t)
	var b bytes.Buffer
	if err := ComparisonJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var d struct {
		CPU map[string]any `json:"cpu"`
	}
	if err := json.Unmarshal(b.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if d.CPU["measured"] != false || d.CPU["reason"] == "" || d.CPU["baseline_us_per_request"] != nil || d.CPU["ratio"] != nil {
		t.Fatalf("cpu = %v; want measured false, a reason and no figure", d.CPU)
	}
	b.Reset()
	if err := ComparisonText(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "CPU") {
		t.Errorf("text of builds given as URLs mentions CPU:\n%s", b.String())
	}
}

// TestCPUSchemaRefusesZero: the schemas refuse a CPU figure beside
// measured false, and a measured one without its figures.
func TestCPUSchemaRefusesZero(t *testing.T) {
	var b bytes.Buffer
	if err := RunJSON(&b, cpuRunFixture(t)); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for name, cpu := range map[string]map[string]any{
		"zero when not measured": {"measured": false, "scope": "build", "reason": "a URL", "us_per_request": 0},
		"measured, no figure":    {"measured": true, "scope": "build"},
	} {
		doc["cpu"] = cpu
		raw, _ := json.Marshal(doc)
		if err := schematest.Validate("run", raw); err == nil {
			t.Errorf("%s: the run schema accepts %v", name, cpu)
		}
	}
}

// TestConcurrentRanLine: the Ran line of a comparison whose builds were
// loaded at once says so, not "interleaved".
func TestConcurrentRanLine(t *testing.T) {
	r := cpuFixture(t)
	if r.Comparison.Baseline.Info.Settings == nil {
		r.Comparison.Baseline.Info.Settings = map[string]string{}
	}
	r.Comparison.Baseline.Info.Settings[analyzer.SettingOrder] = "concurrent"
	var b strings.Builder
	if err := ComparisonText(&b, r); err != nil {
		t.Fatal(err)
	}
	ran, _, _ := strings.Cut(b.String(), "\n")
	if !strings.Contains(ran, fmt.Sprintf("both builds loaded at once in %d slice pairs", r.Comparison.SlicePairs)) || strings.Contains(ran, "interleaved") {
		t.Errorf("Ran line %q: want both builds loaded at once, not interleaved", ran)
	}
}
