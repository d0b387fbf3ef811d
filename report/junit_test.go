package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/internal/junitcheck"
)

// junitDoc is the part of a JUnit report the rules below look at.
type junitDoc struct {
	Time   string `xml:"time,attr"`
	Suites []struct {
		Name      string `xml:"name,attr"`
		Time      string `xml:"time,attr"`
		Timestamp string `xml:"timestamp,attr"`
		Cases     []struct {
			Name    string    `xml:"name,attr"`
			Time    string    `xml:"time,attr"`
			Failure *struct{} `xml:"failure"`
			Error   *struct{} `xml:"error"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestJUnitRules: every JUnit report keeps the junit-10 rules (Go checks
// always; the vendored schema with xmllint where it is installed), has a
// test case per endpoint and per goal, a regression as a failure, an
// inconclusive endpoint as skipped, and times in seconds of the load: the
// endpoints' cases add up to their suite's time, the load's duration.
func TestJUnitRules(t *testing.T) {
	runs := map[string]*RunReport{"run": runFixture(t), "run-failed": crashedFixture(t), "run-check": checkFixture(t), "run-cpu": cpuRunFixture(t)}
	comparisons := map[string]*ComparisonReport{"compare": comparisonFixture(t), "unchanged": unchangedFixture(t),
		"miswired": miswiredFixture(t), "upstream": upstreamFixture(t), "behaviour": behaviourFixture(t), "cpu": cpuFixture(t)}
	check := func(t *testing.T, xmlDoc []byte, load time.Duration, endpoints map[string]analyzer.Verdict, goals []analyzer.GoalResult, start time.Time) {
		if err := junitcheck.Check(xmlDoc); err != nil {
			t.Errorf("junit-10 rules:\n%v\n%s", err, xmlDoc)
		}
		if err := junitcheck.XMLLint(context.Background(), xmlDoc); errors.Is(err, junitcheck.ErrNoXMLLint) {
			t.Logf("schema not checked: %v", err)
		} else if err != nil {
			t.Errorf("junit-10.xsd: %v", err)
		}
		var doc junitDoc
		if err := xml.Unmarshal(xmlDoc, &doc); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%.3f", load.Seconds()); doc.Time != want {
			t.Errorf("<testsuites> time %q, want the load's %q", doc.Time, want)
		}
		cases := map[string]string{}
		for _, s := range doc.Suites {
			if want := start.UTC().Format("2006-01-02T15:04:05"); s.Timestamp != want {
				t.Errorf("suite %s: timestamp %q, want the run's start %q", s.Name, s.Timestamp, want)
			}
			sum := 0.0
			for _, c := range s.Cases {
				state := ""
				switch {
				case c.Failure != nil:
					state = string(analyzer.Regression)
				case c.Skipped != nil:
					state = string(analyzer.Inconclusive)
				case c.Error != nil:
					state = "error"
				}
				cases[s.Name+"/"+c.Name] = state
				v, _ := strconv.ParseFloat(c.Time, 64)
				sum += v
			}
			st, _ := strconv.ParseFloat(s.Time, 64)
			if s.Name == "replay.endpoints" || s.Name == "replay.compare" {
				if want := fmt.Sprintf("%.3f", load.Seconds()); s.Time != want || math.Abs(sum-st) > 0.001*float64(len(s.Cases)) || st == 0 {
					t.Errorf("suite %s: time %s, its cases add up to %.3f; want the load's %s, not 0", s.Name, s.Time, sum, want)
				}
			} else if st != 0 || sum != 0 {
				t.Errorf("suite %s: time %s, cases %.3f; want 0 (it judges the run again)", s.Name, s.Time, sum)
			}
		}
		for ep, v := range endpoints {
			state, ok := cases["replay.endpoints/"+ep]
			if !ok {
				state, ok = cases["replay.compare/"+ep]
			}
			want := ""
			if v == analyzer.Regression || v == analyzer.Inconclusive {
				want = string(v)
			}
			if !ok || (v != "" && state != want) {
				t.Errorf("endpoint %s: case %v, outcome %q; want one with outcome %q", ep, ok, state, want)
			}
		}
		for _, g := range goals {
			state, ok := cases["replay.goals/"+g.Goal]
			if !ok || (state == "") != g.Passed {
				t.Errorf("goal %s (passed %v): case %v, outcome %q", g.Goal, g.Passed, ok, state)
			}
		}
	}
	for name, r := range runs {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := RunJUnit(&b, r); err != nil {
				t.Fatal(err)
			}
			eps := map[string]analyzer.Verdict{}
			for _, x := range r.Summary.Endpoints {
				eps[x.Endpoint] = ""
			}
			check(t, b.Bytes(), r.Summary.Duration, eps, r.Goals, r.Summary.Info.Started)
		})
	}
	for name, r := range comparisons {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			if err := ComparisonJUnit(&b, r); err != nil {
				t.Fatal(err)
			}
			c := r.Comparison
			eps := map[string]analyzer.Verdict{}
			for _, x := range c.Endpoints {
				eps[x.Endpoint] = x.Verdict
			}
			check(t, b.Bytes(), c.Baseline.Duration+c.Candidate.Duration, eps, r.Goals, earliest(c.Baseline.Info.Started, c.Candidate.Info.Started))
			// A wiring fault is an error (the figures measure nothing), not a failure.
			if got := strings.Count(b.String(), `<error message=`); got != len(c.Faults) {
				t.Errorf("%d <error> cases, want one per wiring fault (%d)", got, len(c.Faults))
			}
		})
	}
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
