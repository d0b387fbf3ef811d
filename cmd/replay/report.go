package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/analyzer/respdiff"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

type reportOptions struct {
	path                 string
	output               report.OutputFlags
	goals                []string
	maxFailed, minChange string
	confidence           float64
	rules                respdiff.Rules
}

func newCmdReport(s streams) *cobra.Command {
	opts := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report RUN|DIR [--format text|json|markdown|junit|html] [--goal G]...",
		Short: "Render a run file, or a comparison's output directory, again",
		Long:  longHelp("report"),
		Example: `  replay report replay-compare-20250301-120000 --format markdown >> "$GITHUB_STEP_SUMMARY"
  replay report run.db --format json --max-failed 0`,
		Args: exactArgs(1, "a run file or a comparison's directory"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.path = args[0]
			return reportRun(cmd.Context(), opts, s)
		},
	}
	f := cmd.Flags()
	opts.output.AddFlags(f, "out")
	f.StringArrayVar(&opts.goals, "goal", nil, "also check goal `G`, e.g. 'p95<500ms' (repeatable)")
	f.StringVar(&opts.maxFailed, "max-failed", "", "RUN: fail when more than `SHARE` of its requests failed (default: as the run was given; 1% if it recorded none)")
	f.StringVar(&opts.minChange, "min-change", "", "DIR: smallest p95 change `'P%,D'` that counts (default: as the comparison was made)")
	f.Float64Var(&opts.confidence, "confidence", 0, "DIR: confidence level `C` of the intervals (default: as the comparison was made)")
	opts.rules.AddFlags(f)
	return cmd
}

func reportRun(ctx context.Context, opts *reportOptions, s streams) error {
	out, err := output("report", &opts.output, "out")
	if err != nil {
		return err
	}
	extra, err := analyzer.ParseGoals(opts.goals)
	if err != nil {
		return usagef("report: --goal: %v", err)
	}
	maxFailed, err := session.ParseMaxFailed(opts.maxFailed)
	if err != nil {
		return usagef("report: --max-failed: %v", err)
	}
	analysis, err := parseSensitivity("report", opts.minChange, opts.confidence, opts.rules)
	if err != nil {
		return err
	}
	fi, err := os.Stat(opts.path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if !fi.IsDir() {
		if opts.minChange != "" || opts.confidence != 0 {
			return usagef("report RUN: --min-change and --confidence apply to a comparison's directory (report DIR)")
		}
		rep, err := session.LoadRunChecked(ctx, opts.path, extra, maxFailed, opts.rules)
		if err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if err := out.WriteRun(s.out, rep); err != nil {
			return fmt.Errorf("report: %w", err)
		}
		if rep.Interrupted() {
			return fmt.Errorf("report: %s: the run was interrupted (stopped before its load ended): no verdict", opts.path)
		}
		if err := undecided("report", rep.Undecided()); err != nil {
			return err
		}
		return verdict(rep.Passed())
	}
	if opts.maxFailed != "" {
		return usagef("report DIR: --max-failed applies to a run file (report RUN)")
	}
	rep, err := session.LoadComparisonWith(ctx, opts.path, extra, analysis)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := out.WriteComparison(s.out, rep); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if rep.Interrupted() {
		return fmt.Errorf("report: %s: the comparison was interrupted (stopped before its load ended): no verdict", opts.path)
	}
	if err := undecided("report", rep.Undecided()); err != nil {
		return err
	}
	return verdict(rep.Passed())
}
