package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/replaykit/replay/analyzer"
)

// Format is an output format.
type Format string

// The formats.
const (
	Text     Format = "text"
	JSON     Format = "json"
	Markdown Format = "markdown"
	JUnit    Format = "junit"
	HTML     Format = "html"
)

// Formats lists every format, in the order the CLI documents them.
func Formats() []Format { return []Format{Text, JSON, Markdown, JUnit, HTML} }

// ParseFormat parses a format name: text, json, markdown (or md), junit
// (or xml) and html.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "text", "txt":
		return Text, nil
	case "json":
		return JSON, nil
	case "markdown", "md":
		return Markdown, nil
	case "junit", "xml":
		return JUnit, nil
	case "html":
		return HTML, nil
	}
	return "", &FormatError{Name: s}
}

// FormatError is a format name ParseFormat does not know.
type FormatError struct{ Name string }

func (e *FormatError) Error() string {
	return fmt.Sprintf("unknown format %q: want text, json, markdown, junit or html", e.Name)
}

// ParseFormats parses format names, each value possibly a comma-separated
// list, in order and without duplicates; no name gives Text.
func ParseFormats(values []string) ([]Format, error) {
	var out []Format
	for _, v := range values {
		for name := range strings.SplitSeq(v, ",") {
			f, err := ParseFormat(name)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	if len(out) == 0 {
		out = []Format{Text}
	}
	return out, nil
}

// Ext is the file name extension for the format: ".txt", ".json", ".md",
// ".xml" or ".html".
func (f Format) Ext() string {
	switch f {
	case JSON:
		return ".json"
	case Markdown:
		return ".md"
	case JUnit:
		return ".xml"
	case HTML:
		return ".html"
	default:
		return ".txt"
	}
}

// FileName is the name of a report file in the format: report.txt,
// report.json, report.md, report.xml or report.html.
func (f Format) FileName() string { return "report" + f.Ext() }

// Title names a report in the format, as Artifacts list it: "text report",
// "JSON report", "Markdown report", "JUnit report" or "HTML report".
func (f Format) Title() string {
	switch f {
	case JSON:
		return "JSON report"
	case Markdown:
		return "Markdown report"
	case JUnit:
		return "JUnit report"
	case HTML:
		return "HTML report"
	}
	return "text report"
}

// Artifact is a file a report points at: a run file, a report, a build's
// log.
type Artifact struct {
	// Name says what the file is, e.g. "baseline run" or "Markdown report".
	Name string
	// Path is where it is, as the user should read it.
	Path string
}

// RunReport is what a run report shows.
type RunReport struct {
	// Summary is the run's summary; required.
	Summary *analyzer.Summary
	// Goals are the goal outcomes (analyzer.Check); none is fine.
	Goals []analyzer.GoalResult
	// Artifacts are files to point at.
	Artifacts []Artifact
	// Failures checks the share of failed requests and names their causes
	// (analyzer.CheckFailures); nil when not checked.
	Failures *analyzer.FailureCheck
	// Responses compares the build's answers with the recorded ones
	// (analyzer.CheckResponses, replay run --check-responses); nil when
	// not checked.
	Responses *analyzer.ResponseCheck
}

// Passed reports whether every goal passed (true when there are none), no
// more requests failed than Failures allows, no answer differed from the
// recording (Responses), the run was not Interrupted and nothing left it
// undecided (Undecided: wiring faults, goals not evaluated). The CLI exits 1
// when interrupted or when Undecided says why, else 99 when it did not pass.
func (r *RunReport) Passed() bool {
	return !r.Interrupted() && r.Undecided() == "" && analyzer.AllPassed(r.Goals) && (r.Failures == nil || !r.Failures.Failed) && (r.Responses == nil || r.Responses.Passed())
}

// Faults are the run's wiring faults (analyzer.RunFaults): a build that did
// not use its SQL counter or mock.
func (r *RunReport) Faults() []analyzer.Fault { return analyzer.RunFaults(r.Summary.Info) }

// ComparisonReport is what a comparison report shows.
type ComparisonReport struct {
	// Comparison is the comparison; required.
	Comparison *analyzer.Comparison
	// Goals are goal outcomes checked against the candidate; none is fine.
	Goals []analyzer.GoalResult
	// Artifacts are files to point at (run files, reports, build logs).
	Artifacts []Artifact
}

// Passed reports whether there was no regression, every goal passed,
// no endpoint was inconclusive when Options.FailOnInconclusive asks so,
// the runs were not interrupted and nothing left the comparison undecided
// (Undecided: wiring faults, goals not evaluated, no endpoint judged). The
// CLI exits 1 when interrupted or when Undecided says why (the comparison
// measured nothing it can vouch for), else 99 when it did not pass.
func (r *ComparisonReport) Passed() bool {
	c := r.Comparison
	if c.Interrupted || c.Options.FailOnInconclusive && c.Counts[analyzer.Inconclusive] > 0 {
		return false
	}
	return r.Undecided() == "" && c.Verdict != analyzer.Regression && analyzer.AllPassed(r.Goals)
}

// WriteRun renders a run report in format f.
func WriteRun(w io.Writer, f Format, r *RunReport) error {
	if r == nil || r.Summary == nil {
		return fmt.Errorf("run report: no summary")
	}
	switch f {
	case Text:
		return RunText(w, r)
	case JSON:
		return RunJSON(w, r)
	case Markdown:
		return RunMarkdown(w, r)
	case JUnit:
		return RunJUnit(w, r)
	case HTML:
		return RunHTML(w, r)
	}
	return fmt.Errorf("run report: unknown format %q", f)
}

// WriteComparison renders a comparison report in format f.
func WriteComparison(w io.Writer, f Format, r *ComparisonReport) error {
	if r == nil || r.Comparison == nil {
		return fmt.Errorf("comparison report: no comparison")
	}
	switch f {
	case Text:
		return ComparisonText(w, r)
	case JSON:
		return ComparisonJSON(w, r)
	case Markdown:
		return ComparisonMarkdown(w, r)
	case JUnit:
		return ComparisonJUnit(w, r)
	case HTML:
		return ComparisonHTML(w, r)
	}
	return fmt.Errorf("comparison report: unknown format %q", f)
}

// errWriter remembers the first write error, so that renderers can write
// freely and check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func (e *errWriter) println(s string) {
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s+"\n")
	}
}
