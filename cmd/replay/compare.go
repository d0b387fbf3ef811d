package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
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
	warmup     time.Duration
	slices     int
	sequential bool
	reset      string
	out        string
	formats    []string

	// progress draws a live progress line on stderr (a terminal).
	progress bool
}

func newCmdCompare(s streams) *cobra.Command {
	opts := &compareOptions{}
	cmd := &cobra.Command{
		Use: "compare --snapshot SNAP (--baseline-url URL | --baseline-cmd CMD) (--candidate-url URL | --candidate-cmd CMD) [flags]\n" +
			"  replay compare RUN_A RUN_B [--format F]... [--goal G]... [--out DIR]",
		Short: "Replay a snapshot against a baseline and a candidate build and explain what got slower",
		Long:  compareLong,
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
			if err := wiringError("compare", rep.Comparison.Faults); err != nil {
				return err
			}
			if !rep.Passed() {
				return errFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	opts.replayFlags.addFlags(f)
	opts.baseline.addFlags(f, "baseline")
	opts.candidate.addFlags(f, "candidate")
	f.StringArrayVar(&opts.env, "env", nil, "`KEY=VALUE` for both build commands (repeatable; --baseline-env/--candidate-env win)")
	f.StringArrayVar(&opts.baselineHeaders, "baseline-header", nil, "add or replace header `'K: V'` on the baseline's requests (repeatable)")
	f.StringArrayVar(&opts.candidateHeaders, "candidate-header", nil, "add or replace header `'K: V'` on the candidate's requests (repeatable)")
	f.IntVar(&opts.vus, "vus", session.DefaultVUs, "closed model: `N` virtual users")
	f.StringVar(&opts.rate, "rate", "", "open model instead: `R` requests per unit (200/s, 1000/m)")
	f.DurationVar(&opts.duration, "duration", session.DefaultDuration, "load time `D` per side")
	f.DurationVar(&opts.warmup, "warmup", session.DefaultWarmup, "load each side for `D` before measuring (results discarded; 0: none)")
	f.IntVar(&opts.slices, "slices", 0, "interleave each side's load in `N` slices (default: one per second of --duration, 10 to 20)")
	f.BoolVar(&opts.sequential, "sequential", false, "load the baseline, then the candidate, instead of interleaving")
	f.StringVar(&opts.reset, "reset", "", "`COMMAND` (sh -c) that restores the data, run before each side's explain phase and before the load")
	f.StringVar(&opts.out, "out", "", "`DIR` for the run files, build logs and reports (default ./replay-compare-TIMESTAMP; offline: no files)")
	addFormatFlag(f, &opts.formats)
	return cmd
}

const compareLong = `compare replays the same recorded requests against a baseline and a candidate
build, with the same mocks and the same real database, and compares them
endpoint by endpoint: requests, failures, avg/p50/p95/p99 latency, SQL
statements per request and per fingerprint. It prints a verdict per endpoint
(regression, improvement, unchanged, inconclusive) and explains each
regression in one sentence: an N+1, more or slower statements (naming them),
failures, mock misses, or latency not from the database.

Builds. Each side is a URL (--baseline-url, --candidate-url: you run the
build) or a command that replay starts and stops (--baseline-cmd,
--candidate-cmd, run with /bin/sh -c in its own process group). Each side
gets its OWN mock (own recorded-answer order and miss count) and its OWN SQL
counter (same database), so statements and misses are told apart per side.
` + buildEnvHelp + `
plus --env and its side's --baseline-env/--candidate-env. replay waits until
it answers HTTP (--start-timeout), keeps its output in DIR/baseline.log or
DIR/candidate.log, and stops it at the end (SIGTERM, then SIGKILL after 5s).
A build that exits or does not answer is an error naming the side, the
command and the last line of its output. With a URL side, replay prints the
settings that build must use (its mock and SQL counter) and waits until the
URL accepts connections. One URL with two header sets (--baseline-header,
--candidate-header, e.g. 'baggage: sd-routing-key=…') compares two builds
behind one address.

Order of a comparison (default: interleaved):
  1. both sides' mocks and SQL counters listen; the builds start (or are
     waited for); replay's requests carry a fresh traceparent each;
  2. explain phase, baseline then candidate, each after --reset: up to
     --explain requests of every endpoint, one at a time, so every SQL
     statement is attributed exactly (requests are not counted in latency;
     --explain 0 skips this phase and its resets);
  3. warmup, baseline then candidate (--warmup, results discarded);
  4. --reset once more, then the load: each side's --duration is cut into
     --slices slices sent in alternating order (A B, B A, A B, …) under the
     same load model (--vus closed model, or --rate open model), so that the
     machine's drift hits both sides alike; the analyzer pairs slice i of
     each side. Both sides replay the same request sequence from its start.
With --sequential the baseline gets reset, explain, warmup, reset, load, then
the candidate the same; separate runs differ more, so the analyzer then asks
for a larger change (50%) before it calls one.

--reset COMMAND runs with /bin/sh -c and replay's environment plus
REPLAY_SIDE (baseline, candidate, or both before an interleaved load) and
REPLAY_PHASE (explain or load); its output goes to DIR/reset.log. It runs
after the builds started (they may create the schema), so it should restore
rows (TRUNCATE and re-insert), not drop tables. A failing reset stops the
comparison (exit 1) with the last line of its output.

Output. DIR (--out; default ./replay-compare-YYYYMMDD-HHMMSS, created) gets
baseline.run and candidate.run (run files: every request, with settings, mock
misses and statement totals), the build logs, reset.log, and report.EXT for
every --format (report.txt, .json, .md, .xml, .html). The first --format goes
to stdout; progress (on a terminal only) and notices go to stderr, so JSON on
stdout stays clean. Goals (--goal) are checked against the candidate.

Offline: replay compare RUN_A RUN_B compares two existing run files (the
baseline first) with --goal and --format; with --out DIR the reports are
written there too. replay report DIR renders a comparison again.

Wiring. Each side's run file records what its SQL counter and mock saw, and
the comparison checks that each build used its own: a counter that saw no
connection while the other side's did, a counter that saw the other side's
build (told by PGAPPNAME), a mock never called although the recorded requests
made upstream calls, or more than 1% of a mock's calls missed. Any such
wiring fault makes the verdict INCONCLUSIVE whatever the endpoints show; every
format lists each fault in one sentence saying what to fix, and replay exits
1: the comparison did not measure what it claims. With --postgres
LISTEN=HOST:PORT (the habit record teaches), a build environment naming LISTEN
is rewritten to that side's own counter, like HOST:PORT.

Exit codes: 0 no regression and every goal met, 99 a regression or a missed
goal, 1 could not run (a build that fails to start, a failing --reset) or a
wiring fault (the reports are written all the same), 2 bad usage.`

// compareRun runs `replay compare`: a live comparison (opts.snapshot) or an
// offline one (opts.runs). It writes the first format to s.out, every
// format to the output directory, notices and progress to s.err, and
// returns the report; the caller maps !rep.Passed() to exit 99. Its errors
// are usage errors (usagef) or failures to run.
func compareRun(ctx context.Context, opts *compareOptions, s streams) (*report.ComparisonReport, error) {
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
