package report

import "time"

// Outcomes of a run or comparison, as the JSON documents' result names
// them.
const (
	OutcomePassed      = "passed"
	OutcomeFailed      = "failed"
	OutcomeInterrupted = "interrupted"
)

// interruptedWhy says what an interrupted run's figures are.
const interruptedWhy = "stopped before the load ended: the figures are of the requests completed until then, and there is no verdict"

// Interrupted reports that the run was stopped before its load ended
// (snapshots.RunInfo.Interrupted): it has no verdict and never passes.
func (r *RunReport) Interrupted() bool { return r.Summary.Info.Interrupted }

// Outcome is OutcomeInterrupted, OutcomePassed or OutcomeFailed.
func (r *RunReport) Outcome() string {
	switch {
	case r.Interrupted():
		return OutcomeInterrupted
	case r.Passed():
		return OutcomePassed
	}
	return OutcomeFailed
}

// Interrupted reports that either run of the comparison was stopped before
// its load ended: the comparison has no verdict and never passes.
func (r *ComparisonReport) Interrupted() bool { return r.Comparison.Interrupted }

// Outcome is OutcomeInterrupted, OutcomePassed or OutcomeFailed.
func (r *ComparisonReport) Outcome() string {
	switch {
	case r.Interrupted():
		return OutcomeInterrupted
	case r.Passed():
		return OutcomePassed
	}
	return OutcomeFailed
}

// interruptedSuite is a JUnit suite with an error test case when the run or
// comparison was interrupted, else empty.
func interruptedSuite(interrupted bool, name string, start time.Time) junitSuite {
	s := newSuite("replay.interrupted", start)
	if interrupted {
		msg := name + " " + interruptedWhy
		s.add(junitCase{Name: name, Classname: s.Name, Time: junitTime(0),
			Error: &junitMessage{Message: msg, Type: "interrupted", Text: msg}})
	}
	return s
}
