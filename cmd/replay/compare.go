package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
	"github.com/replaykit/replay/shard"
)

// compareOptions are the settings of `replay compare`.
type compareOptions struct {
	replayFlags
	// runs are two run files to compare offline, instead of a live
	// comparison.
	runs []string

	baseline, candidate buildFlags
	// baselineHeaders and candidateHeaders are 'K: V' added to one side's
	// requests, over --header.
	baselineHeaders, candidateHeaders []string
	// env applies to both sides' commands.
	env []string

	vus        int
	rate       string
	duration   time.Duration
	maxDur     time.Duration
	warmup     time.Duration
	slices     int
	sequential bool
	concurrent bool
	reset      string
	output     report.OutputFlags // --format, --out
	shard      shard.Options
	minChange  string
	minCPU     string // --min-cpu-change
	confidence float64
	// failOn are the --fail-on values: what fails the gate besides a
	// regression and a missed goal ("inconclusive").
	failOn []string

	// progress draws a live progress line on stderr (a terminal).
	progress bool
}

func newCmdCompare(s streams) *cobra.Command {
	opts := &compareOptions{}
	cmd := &cobra.Command{
		Use: "compare --snapshot SNAP (--baseline-url URL | --baseline-cmd CMD) (--candidate-url URL | --candidate-cmd CMD) [flags]\n" +
			"  replay compare RUN_A RUN_B [--format F]... [--goal G]... [--out DIR]",
		Short: "Replay a snapshot against a baseline and a candidate build and explain what got slower",
		Long:  longHelp("compare"),
		Example: `  replay compare --snapshot orders.snap \
      --baseline-cmd './orders' --baseline-env APP_SLOW=0 \
      --candidate-cmd './orders' --candidate-env APP_SLOW=1 \
      --env DATABASE_URL=postgres://postgres@127.0.0.1:5432/orders \
      --postgres 127.0.0.1:5432 --mock catalog.example.com:443 \
      --reset 'psql "$DATABASE_URL" -f reset.sql' --format text --format json
  replay compare --snapshot orders.snap --baseline-url https://sandbox.example --candidate-url https://sandbox.example \
      --baseline-header 'baggage: sd-routing-key=main' --candidate-header 'baggage: sd-routing-key=pr-42'
  replay compare out/baseline.run out/candidate.run --format markdown`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 && len(args) != 2 {
				return usagef("compare: give --snapshot SNAP for a live comparison, or two run files RUN_A RUN_B (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.runs = args
			opts.changed = cmd.Flags().Changed
			opts.progress = isTerminalWriter(s.err)
			rep, err := compareRun(cmd.Context(), opts, s)
			if err != nil {
				return err
			}
			if rep.Interrupted() { // run files of an interrupted run
				return errors.New("compare: a run was interrupted (stopped before its load ended): no verdict")
			}
			if err := undecided("compare", rep.Undecided()); err != nil {
				return err
			}
			return verdict(rep.Passed())
		},
	}
	f := cmd.Flags()
	opts.replayFlags.addFlags(f)
	opts.baseline.addFlags(f, "baseline")
	opts.candidate.addFlags(f, "candidate")
	f.StringArrayVar(&opts.env, "env", nil, "`KEY=VALUE` for both build commands (repeatable; --baseline-env/--candidate-env win)")
	f.StringArrayVar(&opts.baselineHeaders, "baseline-header", nil, "add or replace header `'K: V'` on the baseline's requests (repeatable)")
	f.StringArrayVar(&opts.candidateHeaders, "candidate-header", nil, "add or replace header `'K: V'` on the candidate's requests (repeatable)")
	f.IntVar(&opts.vus, "vus", session.DefaultVUs, "closed model at `N` virtual users (default: the fair load, found under N in warmup)")
	f.StringVar(&opts.rate, "rate", "", "open model at `R` requests per unit (200/s, 1000/m) instead of the fair load")
	f.DurationVar(&opts.duration, "duration", session.DefaultDuration, "load time `D` per side (the first look with --max-duration)")
	f.DurationVar(&opts.maxDur, "max-duration", 0, "run until every endpoint (and the builds' CPU per request) is conclusive, up to `D` of load per side")
	f.DurationVar(&opts.warmup, "warmup", session.DefaultWarmup, "load each side for `D` before measuring (results discarded; 0: none)")
	f.IntVar(&opts.slices, "slices", 0, "interleave each side's load in `N` slices (default: one per second of --duration, 10 to 20)")
	f.BoolVar(&opts.sequential, "sequential", false, "load the baseline, then the candidate, instead of interleaving")
	f.BoolVar(&opts.concurrent, "concurrent", false, "load both builds at once, each slice pair at the same time (a burst of load on the machine hits both alike), instead of one slice after the other")
	f.StringVar(&opts.reset, "reset", "", "`COMMAND` (sh -c) that restores the data, run before each side's explain phase and before the load")
	f.StringVar(&opts.output.Dir, "out", "", "`DIR` for the run files, build logs and reports (default ./replay-compare-TIMESTAMP; offline: no files)")
	f.StringVar(&opts.minChange, "min-change", analyzer.DefaultMinChange, "smallest p95 change `'P%,D'` that counts: both the percentage and the duration")
	f.StringVar(&opts.minCPU, "min-cpu-change", "", "smallest change of CPU time per request `P%` that counts (default: --min-change's percentage)")
	f.Float64Var(&opts.confidence, "confidence", 0.99, "confidence level `C` of the intervals (0.95 is 95%)")
	f.StringSliceVar(&opts.failOn, "fail-on", []string{"regression"}, "what fails the gate (exit 99): `regression` (always: and missed goals), inconclusive (any endpoint that could not be judged)")
	opts.output.AddFlags(f, "")
	opts.shard.AddFlags(f)
	return cmd
}

// compareRun runs `replay compare`: a live comparison (opts.snapshot) or an
// offline one (opts.runs). It writes the first format to s.out, every
// format to the output directory, notices and progress to s.err, and
// returns the report; the caller maps !rep.Passed() to exit 99. Its errors
// are usage errors (usagef) or failures to run.
func compareRun(ctx context.Context, opts *compareOptions, s streams) (*report.ComparisonReport, error) {
	defer opts.dashboard.Close()
	if len(opts.runs) > 0 {
		if len(opts.runs) != 2 {
			return nil, usagef("compare: give two run files, RUN_A RUN_B (got %d)", len(opts.runs))
		}
		su, err := opts.setupOffline()
		if err != nil {
			return nil, err
		}
		return compareOffline(ctx, opts, su, s)
	}
	su, err := opts.setup()
	if err != nil {
		return nil, err
	}
	return compareLive(ctx, opts, su, s)
}
