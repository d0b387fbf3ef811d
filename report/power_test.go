package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/internal/schematest"
)

// TestLongerRunReported: a comparison too short for most of its endpoints
// says, in the text's notes and the JSON's longer_run, how long a run would
// likely settle them.
func TestLongerRunReported(t *testing.T) {
	base := fixtureSummary(t, info("baseline", "http://127.0.0.1:41001", 0), fixtureResults(80, 11, true, baseEndpoints()))
	cand := fixtureSummary(t, info("candidate", "http://127.0.0.1:41002", 0), fixtureResults(80, 12, false, baseEndpoints()))
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &ComparisonReport{Comparison: c}
	var b bytes.Buffer
	if err := ComparisonText(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "could not tell at this noise level") {
		t.Errorf("text lacks the longer-run estimate:\n%s", b.String())
	}
	b.Reset()
	if err := ComparisonJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	schematest.Check(t, "comparison", b.Bytes())
	var d struct {
		LongerRun *LongerRunDocument `json:"longer_run"`
	}
	if err := json.Unmarshal(b.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	l := d.LongerRun
	if l == nil || l.Inconclusive*2 <= l.Endpoints || l.HalfFactor == nil || *l.HalfFactor < 1 || l.HalfS == nil || *l.HalfS <= l.RanS {
		t.Fatalf("longer_run = %+v; want an estimate above this run's load", l)
	}
}
