package main

import (
	"context"
	"fmt"

	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// compareOffline compares two existing run files.
func compareOffline(ctx context.Context, opts *compareOptions, su *compareSetup, s streams) (*report.ComparisonReport, error) {
	rep, err := session.CompareFilesWith(ctx, opts.runs[0], opts.runs[1], su.goals, su.analysis)
	if err != nil {
		return nil, err
	}
	if err := su.output.WriteComparison(s.out, rep); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	return rep, nil
}
