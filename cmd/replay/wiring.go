package main

import "errors"

// undecided is the exit-1 error of a command whose report cannot decide
// (report.RunReport.Undecided, report.ComparisonReport.Undecided): wiring
// faults (the figures are not the builds' own), goals that could not be
// evaluated, a comparison in which no endpoint could be judged. That is not
// a regression (99) but a verdict that could not be reached; the reports,
// written already, say what to fix. nil when why is empty.
func undecided(cmd, why string) error {
	if why == "" {
		return nil
	}
	return errors.New(cmd + ": " + why)
}
