package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/replaykit/replay/analyzer"
)

// JUnit XML as CI systems read it, within the rules of the junit-10 schema
// that Jenkins' xUnit plugin validates against (GitLab's and GitHub's
// reporters read the same elements):
//   - <testsuites> carries name, time, tests, failures and errors only;
//   - every <testsuite> has name, tests, failures, errors, skipped and
//     time, and timestamp when the run's start is known;
//   - times are seconds with at most three decimals.
//
// Times are seconds of the run's load: an endpoint's test case takes the
// endpoint's share of the load time (its share of the load's requests
// times the load phase's duration, summed over both builds in a
// comparison), so its suite's time is the load time and the cases add up
// to it. Cases that judge the run's figures again (goals, the answers,
// wiring faults, failed requests) take no time of their own: 0.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// newSuite is an empty suite named name (its cases' classname) that
// started at start (zero: unknown) and takes no time until told.
func newSuite(name string, start time.Time) junitSuite {
	s := junitSuite{Name: name, Time: junitTime(0)}
	if !start.IsZero() {
		// ISO 8601 without a zone, as Ant and Surefire write it: UTC.
		s.Timestamp = start.UTC().Format("2006-01-02T15:04:05")
	}
	return s
}

func (s *junitSuite) add(c junitCase) {
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Error != nil:
		s.Errors++
	case c.Skipped != nil:
		s.Skipped++
	}
	s.Cases = append(s.Cases, c)
}

// add adds s unless it has no cases; the skipped count stays with the
// suites (junit-10 has none on <testsuites>).
func (ss *junitSuites) add(s junitSuite) {
	if len(s.Cases) == 0 {
		return
	}
	ss.Tests += s.Tests
	ss.Failures += s.Failures
	ss.Errors += s.Errors
	ss.Suites = append(ss.Suites, s)
}

func writeXML(w io.Writer, v any) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func goalSuite(class string, goals []analyzer.GoalResult, start time.Time) junitSuite {
	s := newSuite(class, start)
	for _, g := range goals {
		c := junitCase{Name: g.Goal, Classname: class, Time: junitTime(0),
			SystemOut: fmt.Sprintf("expected %s, actual %s", g.Expected, actual(g))}
		if g.NotEvaluated {
			// Neither passed nor missed: the goal could not be judged.
			msg := fmt.Sprintf("goal %s not evaluated: %s", g.Goal, g.Reason)
			c.Error = &junitMessage{Message: msg, Type: "not-evaluated", Text: msg}
		} else if !g.Passed {
			msg := fmt.Sprintf("goal %s missed: expected %s, actual %s", g.Goal, g.Expected, actual(g))
			if g.Reason != "" {
				msg = fmt.Sprintf("goal %s failed: %s", g.Goal, g.Reason)
			}
			c.Failure = &junitMessage{Message: msg, Type: "goal", Text: msg}
		}
		s.add(c)
	}
	return s
}

// endpointOut describes one endpoint's figures for system-out.
func endpointOut(x *analyzer.EndpointSummary) string {
	if x.Latency.Count == 0 {
		return fmt.Sprintf("requests %d, failed %d, no latency (no request answered), sql/request %s", x.Requests, x.Failed, perRequest(&x.SQL))
	}
	return fmt.Sprintf("requests %d, failed %d, avg %s, p50 %s, p95 %s, p99 %s, max %s, sql/request %s",
		x.Requests, x.Failed, analyzer.FormatMs(x.Latency.Avg), analyzer.FormatMs(x.Latency.P50), analyzer.FormatMs(x.Latency.P95),
		analyzer.FormatMs(x.Latency.P99), analyzer.FormatMs(x.Latency.Max), perRequest(&x.SQL))
}

// comparisonOut is an endpoint's system-out in a comparison: its verdict
// and explanation, then each side's figures. When its p95 and p99 leave
// out slice pairs set aside, a line gives them as the verdict has them and
// the sides' figures are labelled as over all their requests.
func comparisonOut(c *analyzer.Comparison, x *analyzer.EndpointComparison) string {
	if !x.P95.WithoutSetAside {
		return fmt.Sprintf("%s: %s\nbaseline:  %s\ncandidate: %s", x.Verdict, x.Explanation, endpointOut(x.Baseline), endpointOut(x.Candidate))
	}
	return fmt.Sprintf("%s: %s\n%s\nbaseline, all requests:  %s\ncandidate, all requests: %s",
		x.Verdict, x.Explanation, changeOut(c, x), endpointOut(x.Baseline), endpointOut(x.Candidate))
}

// junitTime formats d as JUnit seconds: three decimals, never negative
// (junit-10's SUREFIRE_TIME).
func junitTime(d time.Duration) string { return fmt.Sprintf("%.3f", max(d, 0).Seconds()) }

// loadShare is x's share of s's load time: the load phase's duration
// times x's share of its requests; 0 when either is unknown.
func loadShare(s *analyzer.Summary, x *analyzer.EndpointSummary) time.Duration {
	if s == nil || s.Overall == nil || s.Overall.Requests == 0 || x == nil {
		return 0
	}
	return time.Duration(float64(s.Duration) * float64(x.Requests) / float64(s.Overall.Requests))
}

// startOf is the earliest known start of the summaries' runs.
func startOf(sums ...*analyzer.Summary) time.Time {
	var t time.Time
	for _, s := range sums {
		if st := s.Info.Started; !st.IsZero() && (t.IsZero() || st.Before(t)) {
			t = st
		}
	}
	return t
}

// RunJUnit writes a run report as JUnit XML: a test case per goal (failed
// when missed) and per endpoint (failed when a goal on it was missed; its
// time is the endpoint's share of the load time), wiring faults as errors,
// differing answers and too many failed requests as failures.
func RunJUnit(w io.Writer, r *RunReport) error {
	s := r.Summary
	start := startOf(s)
	ss := junitSuites{Name: "replay run", Time: junitTime(s.Duration)}
	ss.add(goalSuite("replay.goals", r.Goals, start))
	eps := newSuite("replay.endpoints", start)
	eps.Time = junitTime(s.Duration)
	for _, x := range s.Endpoints {
		c := junitCase{Name: x.Endpoint, Classname: eps.Name, Time: junitTime(loadShare(s, x)), SystemOut: endpointOut(x)}
		var missed []string
		for _, g := range r.Goals {
			if g.Endpoint == x.Endpoint && !g.Passed && !g.NotEvaluated {
				missed = append(missed, fmt.Sprintf("%s (actual %s)", g.Goal, actual(g)))
			}
		}
		if len(missed) > 0 {
			msg := "goals missed: " + strings.Join(missed, "; ")
			c.Failure = &junitMessage{Message: msg, Type: "goal", Text: msg}
		}
		eps.add(c)
	}
	ss.add(eps)
	if n := cpuRunNote(s); n != "" {
		cs := newSuite("replay.cpu", start)
		cs.add(junitCase{Name: "CPU per request", Classname: cs.Name, Time: junitTime(0), SystemOut: n})
		ss.add(cs)
	}
	ss.add(wiringSuite(r.Faults(), start))
	ss.add(interruptedSuite(r.Interrupted(), "run", start))
	ss.add(responsesSuite(r.Responses, start))
	if why := r.Failures.Why(); why != "" {
		notes := strings.Join(failureNotes(r), "\n")
		fs := newSuite("replay.failures", start)
		fs.add(junitCase{Name: "failed requests", Classname: fs.Name, Time: junitTime(0), SystemOut: notes,
			Failure: &junitMessage{Message: why, Type: "failures", Text: why + "\n" + notes}})
		ss.add(fs)
	}
	return writeXML(w, ss)
}

// ComparisonJUnit writes a comparison as JUnit XML: a test case per
// endpoint (failed on a regression, skipped when inconclusive, with the
// explanation as message; its time is the endpoint's share of both builds'
// load time), per goal, and an error per wiring fault.
func ComparisonJUnit(w io.Writer, r *ComparisonReport) error {
	c := r.Comparison
	start := startOf(c.Baseline, c.Candidate)
	load := c.Baseline.Duration + c.Candidate.Duration
	ss := junitSuites{Name: "replay compare", Time: junitTime(load)}
	eps := newSuite("replay.compare", start)
	eps.Time = junitTime(load)
	for _, x := range c.Endpoints {
		tc := junitCase{Name: x.Endpoint, Classname: eps.Name, Time: junitTime(loadShare(c.Baseline, x.Baseline) + loadShare(c.Candidate, x.Candidate)),
			SystemOut: comparisonOut(c, x)}
		switch x.Verdict {
		case analyzer.Regression:
			tc.Failure = &junitMessage{Message: x.Explanation, Type: "regression", Text: x.Explanation}
			if ex := responseExample(x); ex != "" {
				tc.Failure.Text += "\n\n" + ex
			}
		case analyzer.Inconclusive:
			tc.Skipped = &junitMessage{Message: x.Explanation}
		}
		eps.add(tc)
	}
	if cpuShown(c) {
		eps.add(cpuCase(c, eps.Name))
	}
	ss.add(eps)
	ss.add(goalSuite("replay.goals", r.Goals, start))
	ss.add(wiringSuite(c.Faults, start))
	ss.add(interruptedSuite(r.Interrupted(), "comparison", start))
	return writeXML(w, ss)
}
