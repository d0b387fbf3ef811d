package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

type reportOptions struct {
	path    string
	formats []string
	goals   []string
}

func newCmdReport(s streams) *cobra.Command {
	opts := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report RUN|DIR [--format text|json|markdown|junit|html] [--goal G]...",
		Short: "Render a run file, or a comparison's output directory, again",
		Long:  longHelp("report"),
		Example: `  replay report replay-compare-20250301-120000 --format markdown >> "$GITHUB_STEP_SUMMARY"
  replay report run.db --format json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			return reportRun(cmd.Context(), opts, s)
		},
	}
	addFormatFlag(cmd.Flags(), &opts.formats)
	cmd.Flags().StringArrayVar(&opts.goals, "goal", nil, "also check goal `G`, e.g. 'p95<500ms' (repeatable)")
	return cmd
}

func reportRun(ctx context.Context, opts *reportOptions, s streams) error {
	format, err := oneFormat("report", opts.formats)
	if err != nil {
		return err
	}
	extra, err := analyzer.ParseGoals(opts.goals)
	if err != nil {
		return usagef("report: --goal: %v", err)
	}
	fi, err := os.Stat(opts.path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	passed := true
	if fi.IsDir() {
		rep, err := reportComparison(ctx, opts.path, extra)
		if err != nil {
			return err
		}
		if err := report.WriteComparison(s.out, format, rep); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		passed = rep.Passed()
		if err := wiringError("report", rep.Comparison.Faults); err != nil {
			return err
		}
	} else {
		rep, err := reportRunFile(ctx, opts.path, extra)
		if err != nil {
			return err
		}
		if err := report.WriteRun(s.out, format, rep); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		passed = rep.Passed()
	}
	if !passed {
		return errFailed
	}
	return nil
}

// reportRunFile builds the report of one run file.
func reportRunFile(ctx context.Context, path string, extra []analyzer.Goal) (*report.RunReport, error) {
	rep, err := session.LoadRun(ctx, path, extra)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return rep, nil
}

// reportComparison builds the report of a comparison's output directory.
func reportComparison(ctx context.Context, dir string, extra []analyzer.Goal) (*report.ComparisonReport, error) {
	rep, err := session.LoadComparison(ctx, dir, extra)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return rep, nil
}
