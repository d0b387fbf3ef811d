package report

import (
	"github.com/replaykit/replay/analyzer"
)

// failureCauses are the causes a run report shows: those of its failure
// check when some request failed; none otherwise (the mock's misses and
// the database's errors then have notes of their own).
func failureCauses(r *RunReport) []analyzer.FailureCause {
	if r.Failures == nil || r.Summary.Overall == nil || r.Summary.Overall.Failed == 0 {
		return nil
	}
	return r.Failures.Causes
}

// writeFailuresText lists the main causes of the failed requests, each
// exited build with the last lines of its log.
func writeFailuresText(e *errWriter, r *RunReport) {
	causes := failureCauses(r)
	if len(causes) == 0 {
		return
	}
	e.println("")
	e.println("Failures (main causes)")
	for _, c := range causes {
		e.println("  " + c.String())
		for _, l := range c.LastLines {
			e.println("      | " + l)
		}
		if c.Kind == analyzer.FailBuildExited && r.exitLog() != "" {
			e.println("      build log: " + r.exitLog())
		}
	}
}

// writeFailuresMarkdown is writeFailuresText in Markdown.
func writeFailuresMarkdown(e *errWriter, r *RunReport) {
	causes := failureCauses(r)
	if len(causes) == 0 {
		return
	}
	e.println("")
	e.println("**Failures (main causes):**")
	e.println("")
	for _, c := range causes {
		e.println("- " + c.String())
		if len(c.LastLines) > 0 {
			e.println("")
			e.println("  ```")
			for _, l := range c.LastLines {
				e.println("  " + l)
			}
			e.println("  ```")
		}
	}
}

// failureNotes are the causes as one-line notes (HTML).
func failureNotes(r *RunReport) []string {
	var out []string
	for _, c := range failureCauses(r) {
		n := "Failures: " + c.String()
		if len(c.LastLines) > 0 {
			n += "; last line of its log: " + c.LastLines[len(c.LastLines)-1]
		}
		out = append(out, n)
	}
	return out
}

// exitLog is the build log named by an exited build's cause; "" when none.
func (r *RunReport) exitLog() string {
	for _, a := range r.Artifacts {
		if a.Name == "build log" {
			return a.Path
		}
	}
	return ""
}

// FailureCauseDocument is one cause of failed requests in JSON.
type FailureCauseDocument struct {
	Kind      string   `json:"kind"`
	Count     int64    `json:"count"`
	Detail    string   `json:"detail,omitempty"`
	LastLines []string `json:"last_lines,omitempty"`
}

func failureCauseDocs(r *RunReport) []FailureCauseDocument {
	var out []FailureCauseDocument
	for _, c := range failureCauses(r) {
		out = append(out, FailureCauseDocument{Kind: c.Kind, Count: c.Count, Detail: c.Detail, LastLines: c.LastLines})
	}
	return out
}
