package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/golden"

	"github.com/replaykit/replay/analyzer"
)

// crashedFixture is runFixture (0.5% of its requests failed) whose build
// exited during the run, checked against a limit of 0.2%.
func crashedFixture(t testing.TB) *RunReport {
	r := runFixture(t)
	r.Summary.Info.StatementErrors = 3
	r.Summary.Info.Truncated = map[string]int64{"POST /orders": 3, "GET /orders": 1}
	r.Artifacts = append(r.Artifacts, Artifact{Name: "build log", Path: "out/candidate.run.build.log"})
	r.Failures = analyzer.CheckFailures(r.Summary, 0.002,
		&analyzer.BuildExit{How: "exited with status 2", LastLines: []string{"starting workers", "panic: out of memory"}})
	return r
}

// TestFailuresGolden: every format says why a run with too many failed
// requests failed and names the causes; JUnit adds a failing case.
func TestFailuresGolden(t *testing.T) {
	r := crashedFixture(t)
	if r.Passed() || !r.Failures.Failed {
		t.Fatalf("a run with %d of %d requests failed passed", r.Summary.Overall.Failed, r.Summary.Overall.Requests)
	}
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteRun(&b, f, r); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "the build exited") || !strings.Contains(b.String(), "panic: out of memory") {
				t.Errorf("%s report does not name the exited build and its last line:\n%s", f, b.String())
			}
			if want := "POST /orders: 3 recorded requests replayed with their body cut at recording (--allow-truncated)."; f != JUnit && !strings.Contains(b.String(), want) {
				t.Errorf("%s report does not say %q:\n%s", f, want, b.String())
			}
			golden.Check(t, "run-failed"+f.Ext()+".golden", b.Bytes())
		})
	}
	r.Failures = analyzer.CheckFailures(r.Summary, 0.5, nil)
	if r.Passed() != analyzer.AllPassed(r.Goals) {
		t.Errorf("within --max-failed, Passed() = %v; want the goals' outcome %v", r.Passed(), analyzer.AllPassed(r.Goals))
	}
}
