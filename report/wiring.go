package report

import (
	"fmt"
	"time"

	"github.com/replaykit/replay/analyzer"
)

// FaultDocument is one wiring fault in JSON (analyzer.Fault).
type FaultDocument struct {
	Side string `json:"side"`
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// faultDocs converts faults; nil for none, so the key is left out.
func faultDocs(faults []analyzer.Fault) []FaultDocument {
	var out []FaultDocument
	for _, f := range faults {
		out = append(out, FaultDocument{Side: f.Side, Kind: f.Kind, Text: f.Text})
	}
	return out
}

// faultsHeading introduces the wiring faults of a report in one line.
func faultsHeading(faults []analyzer.Fault, again string) string {
	fix := "fix the wiring"
	if authOnly(faults) {
		fix = "give the builds credentials"
	}
	return fmt.Sprintf("%s, so the figures do not measure what they claim; %s and %s:", plural(len(faults), "fault"), fix, again)
}

// authOnly reports whether every fault is a want of credentials
// (analyzer.FaultAuth), not wiring.
func authOnly(faults []analyzer.Fault) bool {
	for _, f := range faults {
		if f.Kind != analyzer.FaultAuth {
			return false
		}
	}
	return len(faults) > 0
}

// faultsLabel names the faults' section.
func faultsLabel(faults []analyzer.Fault) string {
	if authOnly(faults) {
		return "Auth"
	}
	return "Wiring"
}

// writeFaultsText writes the wiring faults, if any, as a list under a
// heading.
func writeFaultsText(e *errWriter, faults []analyzer.Fault, again string) {
	if len(faults) == 0 {
		return
	}
	e.println("")
	e.println(faultsLabel(faults) + ": " + faultsHeading(faults, again))
	for _, f := range faults {
		e.println("  - " + f.Text)
	}
}

// writeFaultsMarkdown writes the wiring faults, if any, as a list.
func writeFaultsMarkdown(e *errWriter, faults []analyzer.Fault, again string) {
	if len(faults) == 0 {
		return
	}
	e.println("**" + faultsLabel(faults) + ":** ⚠️ " + faultsHeading(faults, again))
	e.println("")
	for _, f := range faults {
		e.println("- " + f.Text)
	}
	e.println("")
}

// faultNotes are the wiring faults as notes (HTML, JUnit).
func faultNotes(faults []analyzer.Fault) []string {
	var out []string
	for _, f := range faults {
		out = append(out, "Wiring fault: "+f.Text)
	}
	return out
}

// wiringSuite is a JUnit test case in error per wiring fault (the figures
// do not measure what they claim); empty (left out) when there are none.
func wiringSuite(faults []analyzer.Fault, start time.Time) junitSuite {
	s := newSuite("replay.wiring", start)
	for _, f := range faults {
		s.add(junitCase{Name: f.Side + " " + f.Kind, Classname: s.Name, Time: junitTime(0),
			Error: &junitMessage{Message: f.Text, Type: "wiring", Text: f.Text}})
	}
	return s
}
