package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/examples/orders/demo"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// demoOptions are the flags of `replay demo`.
type demoOptions struct {
	out      string
	duration time.Duration
	rounds   int

	stdout, stderr io.Writer
	progress       bool
}

func newCmdDemo(s streams) *cobra.Command {
	opts := &demoOptions{stdout: s.out, stderr: s.err, progress: s.outTTY}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the whole flow on the demo workload: record, then compare a build with an N+1",
		Long:  longHelp("demo"),
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return demoRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.out, "out", "", "write everything to `DIR` (default: a new replay-demo-* directory in the temp dir)")
	f.DurationVar(&opts.duration, "duration", demo.DefaultDuration, "load `D` per side in the comparison")
	f.IntVar(&opts.rounds, "rounds", demo.DefaultRounds, "record `N` rounds of the demo's request mix (6 requests each)")
	cmd.AddCommand(newCmdDemoOrders(s), newCmdDemoReset(s))
	return cmd
}

// demoFormats are the formats the demo writes its report in: text to
// stdout, every one to the comparison's directory.
var demoFormats = []report.Format{report.Text, report.Markdown, report.JSON, report.JUnit, report.HTML}

// demoRun checks the flags, runs the demo and renders what it did: the
// recording's summary, the comparison's report and whether it found the N+1.
func demoRun(ctx context.Context, opts *demoOptions) error {
	if opts.duration < time.Second {
		return usagef("demo: --duration %s: want at least 1s", opts.duration)
	}
	if opts.rounds < 1 {
		return usagef("demo: --rounds %d: want at least 1", opts.rounds)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: find the replay binary: %w", err)
	}
	w, s := opts.stdout, streams{out: opts.stdout, err: opts.stderr}
	start := time.Now()
	res, err := demo.Run(ctx, demo.Config{
		Replay: self, Dir: opts.out, Duration: opts.duration, Rounds: opts.rounds,
		Out: w,
		Recorded: func(r demo.Recording) error {
			return printSummary(ctx, w, opts.stderr, r.Snapshot, r.Summary, true)
		},
		Compare: func(ctx context.Context, cfg session.CompareConfig) (*report.ComparisonReport, error) {
			return runComparison(ctx, cfg, demoFormats, s, opts.progress)
		},
		Warn: func(err error) { fmt.Fprintf(opts.stderr, "replay: warning: %v\n", err) },
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nEverything is in %s (snapshot %s; run files, build logs and reports in %s/).\n",
		res.Dir, demo.SnapshotFile, demo.CompareDir)
	if err := res.Check(); err != nil {
		return err
	}
	fmt.Fprintf(w, "The demo found the N+1 in GET /orders, as expected, in %s. In CI, `replay compare` exits 99 here.\n",
		time.Since(start).Round(time.Second))
	return nil
}

// newCmdDemoOrders runs the demo's orders service (examples/orders) from the
// replay binary, so that the demo needs no Go toolchain: the same as
// `go run ./examples/orders`, configured by PORT, DATABASE_URL, APP_SLOW,
// CATALOG_URL and the proxy and CA variables.
func newCmdDemoOrders(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "orders",
		Short: "Run the demo's orders service (configured by DATABASE_URL, PORT, APP_SLOW… in its environment)",
		Long:  longHelp("demo-orders"),
		Example: `  DATABASE_URL=postgres://postgres@127.0.0.1:5432/orders replay demo reset
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/orders PORT=8080 APP_SLOW=1 replay demo orders`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			logger := slog.New(slog.NewTextHandler(s.err, nil))
			return app.Serve(cmd.Context(), os.Getenv, logger)
		},
	}
}

// newCmdDemoReset brings the demo's database (DATABASE_URL) to its known
// state; the demo's comparison runs it as --reset.
func newCmdDemoReset(s streams) *cobra.Command {
	n := demo.Orders
	cmd := &cobra.Command{
		Use:   "reset",
		Short: "Create and seed the demo's tables in DATABASE_URL (N orders), as the demo's --reset does",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			url := os.Getenv("DATABASE_URL")
			if url == "" {
				return usagef("demo reset: DATABASE_URL is not set")
			}
			return demo.Reset(cmd.Context(), url, n)
		},
	}
	cmd.Flags().IntVar(&n, "orders", demo.Orders, "seed `N` orders")
	return cmd
}
