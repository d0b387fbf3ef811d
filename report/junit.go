package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/replaykit/replay/analyzer"
)

// JUnit XML, as CI systems read it (the de-facto schema of Ant's and
// Maven's surefire reports).
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func (s *junitSuite) add(c junitCase) {
	s.Tests++
	if c.Failure != nil {
		s.Failures++
	}
	if c.Skipped != nil {
		s.Skipped++
	}
	s.Cases = append(s.Cases, c)
}

func (ss *junitSuites) add(s junitSuite) {
	if len(s.Cases) == 0 {
		return
	}
	ss.Tests += s.Tests
	ss.Failures += s.Failures
	ss.Skipped += s.Skipped
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

func goalSuite(class string, goals []analyzer.GoalResult) junitSuite {
	s := junitSuite{Name: class, Time: "0"}
	for _, g := range goals {
		c := junitCase{Name: g.Goal, Classname: class, Time: "0",
			SystemOut: fmt.Sprintf("expected %s, actual %s", g.Expected, actual(g))}
		if !g.Passed {
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
	return fmt.Sprintf("requests %d, failed %d, avg %s, p50 %s, p95 %s, p99 %s, max %s, sql/request %s",
		x.Requests, x.Failed, analyzer.FormatMs(x.Latency.Avg), analyzer.FormatMs(x.Latency.P50), analyzer.FormatMs(x.Latency.P95),
		analyzer.FormatMs(x.Latency.P99), analyzer.FormatMs(x.Latency.Max), perRequest(&x.SQL))
}

// seconds3 formats milliseconds as JUnit seconds.
func seconds3(ms float64) string { return fmt.Sprintf("%.3f", ms/1000) }

// RunJUnit writes a run report as JUnit XML: a test case per goal (failed
// when missed) and per endpoint (failed when a goal on it was missed; its
// time is the endpoint's p95).
func RunJUnit(w io.Writer, r *RunReport) error {
	s := r.Summary
	ss := junitSuites{Name: "replay run"}
	ss.add(goalSuite("replay.goals", r.Goals))
	eps := junitSuite{Name: "replay.endpoints", Time: seconds3(float64(s.Duration.Milliseconds()))}
	for _, x := range s.Endpoints {
		c := junitCase{Name: x.Endpoint, Classname: "replay.endpoints", Time: seconds3(x.Latency.P95), SystemOut: endpointOut(x)}
		var missed []string
		for _, g := range r.Goals {
			if g.Endpoint == x.Endpoint && !g.Passed {
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
	ss.add(wiringSuite(r.Faults()))
	ss.add(responsesSuite(r.Responses))
	if why := r.Failures.Why(); why != "" {
		c := junitCase{Name: "failed requests", Classname: "replay.failures", Time: "0", SystemOut: strings.Join(failureNotes(r), "\n")}
		c.Failure = &junitMessage{Message: why, Type: "failures", Text: why + "\n" + strings.Join(failureNotes(r), "\n")}
		fs := junitSuite{Name: "replay.failures", Time: "0"}
		fs.add(c)
		ss.add(fs)
	}
	return writeXML(w, ss)
}

// ComparisonJUnit writes a comparison as JUnit XML: a test case per
// endpoint (failed on a regression, skipped when inconclusive, with the
// explanation as message) and per goal.
func ComparisonJUnit(w io.Writer, r *ComparisonReport) error {
	c := r.Comparison
	ss := junitSuites{Name: "replay compare"}
	eps := junitSuite{Name: "replay.compare", Time: "0"}
	for _, x := range c.Endpoints {
		tc := junitCase{Name: x.Endpoint, Classname: "replay.compare", Time: seconds3(x.Candidate.Latency.P95),
			SystemOut: fmt.Sprintf("%s: %s\nbaseline:  %s\ncandidate: %s", x.Verdict, x.Explanation, endpointOut(x.Baseline), endpointOut(x.Candidate))}
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
	ss.add(eps)
	ss.add(goalSuite("replay.goals", r.Goals))
	ss.add(wiringSuite(c.Faults))
	return writeXML(w, ss)
}
