package main

import (
	"fmt"

	"github.com/replaykit/replay/analyzer"
)

// wiringError is the exit-1 error of a command whose runs have wiring
// faults (analyzer.RunFaults, analyzer.CompareFaults) or auth faults
// (analyzer.AuthFaults): the figures are not the builds' own, which is not a regression (99) but a comparison that
// could not be made. The reports, written already, say what to fix; nil
// without faults.
func wiringError(cmd string, faults []analyzer.Fault) error {
	kind := "auth" // every fault a want of credentials
	for _, f := range faults {
		if f.Kind != analyzer.FaultAuth {
			kind = "wiring"
		}
	}
	switch len(faults) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: %s fault: %s", cmd, kind, faults[0].Text)
	}
	return fmt.Errorf("%s: %d %s faults, first: %s (the report lists them all)", cmd, len(faults), kind, faults[0].Text)
}
