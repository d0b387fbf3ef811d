package main

import (
	"fmt"

	"github.com/replaykit/replay/analyzer"
)

// wiringError is the exit-1 error of a command whose runs have wiring
// faults (analyzer.RunFaults, analyzer.CompareFaults): the figures are not
// the builds' own, which is not a regression (99) but a comparison that
// could not be made. The reports, written already, say what to fix; nil
// without faults.
func wiringError(cmd string, faults []analyzer.Fault) error {
	switch len(faults) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s: wiring fault: %s", cmd, faults[0].Text)
	}
	return fmt.Errorf("%s: %d wiring faults, first: %s (the report lists them all)", cmd, len(faults), faults[0].Text)
}
