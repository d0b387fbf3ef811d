package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/internal/runlog"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
	"github.com/replaykit/replay/shard"
)

type runOptions struct {
	replayFlags
	build      buildFlags
	out        string
	name       string
	load       replayer.PlanFlags
	shard      shard.Options
	mockListen string
	buildLog   string
	maxFailed  string
	output     report.OutputFlags
	check      bool // --check-responses
	printRun   bool // --print-run

	stdout, stderr io.Writer
	outTTY         bool
	// onTarget, when set, is told the target URL once it answers (tests).
	onTarget func(url string)
}

func newCmdRun(s streams) *cobra.Command {
	opts := &runOptions{stdout: s.out, stderr: s.err, outTTY: s.outTTY}
	cmd := &cobra.Command{
		Use:   "run --snapshot SNAP (--target URL | --cmd CMD) --out RUN [load flags] [--goal G]...",
		Short: "Replay a snapshot's inbound requests against one build under a load model",
		Long:  longHelp("run"),
		Example: `  replay run --snapshot orders.snap --target http://127.0.0.1:8080 --out run.db
  replay run --snapshot orders.snap --cmd 'go run ./examples/orders' --env APP_SLOW=1 \
      --mock catalog.example:443 --postgres 127.0.0.1:6543=127.0.0.1:5432 \
      --vus 10 --duration 30s --out run.db --goal 'p95<200ms' --goal 'GET /orders: sql<=5'
  replay run --snapshot orders.snap --target http://127.0.0.1:8080 --rate 200/s --duration 1m --out run.db`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.changed = cmd.Flags().Changed
			return runRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	opts.replayFlags.addFlags(f)
	opts.build.addFlags(f, "")
	f.StringVar(&opts.out, "out", "", "run `FILE` to create (must not exist)")
	f.StringVar(&opts.name, "name", "run", "`NAME` of the run, for reports")
	opts.load.AddFlags(f)
	opts.shard.AddFlags(f)
	f.StringVar(&opts.mockListen, "mock-listen", "127.0.0.1:0", "`ADDR` the mock's forward proxy listens on")
	f.StringVar(&opts.buildLog, "build-log", "", "`FILE` for the output of --cmd (default RUN.build.log)")
	f.StringVar(&opts.maxFailed, "max-failed", "1%", "fail the run when more than `SHARE` of its requests fail (N% or a fraction; 0: any)")
	f.BoolVar(&opts.check, "check-responses", false, "compare the build's answers with the recorded ones (the rules: --ignore, --unordered, …); a difference fails the run")
	f.BoolVar(&opts.printRun, "print-run", false, "end standard output with the run file, compressed and base64'd between markers (replay k8s collect reads it from the pods' logs)")
	opts.output.AddFlags(f, "report-dir")
	return cmd
}

func runRun(ctx context.Context, opts *runOptions) error {
	defer opts.dashboard.Close()
	su, err := opts.setup()
	if err != nil {
		return err
	}
	// Stderr for notes when stdout must stay clean JSON (or other
	// machine-readable output).
	notes := opts.stdout
	if su.output.Formats[0] != report.Text {
		notes = opts.stderr
	}
	cfg, err := opts.sessionConfig(ctx, su, notes)
	defer opts.replayFlags.close()
	if err != nil {
		return err
	}
	var pl *report.RunProgress
	if opts.outTTY {
		pl = report.NewRunProgress(notes)
		cfg.Plan.Progress = pl.Update
	} else if os.Getenv("REPLAY_PROGRESS") == "json" { // replay mcp's children
		cfg.Plan.Progress = report.NewJSONProgress(opts.stderr).Run
	}
	res, err := session.Run(ctx, cfg)
	if pl != nil {
		pl.Clear()
	}
	if err != nil {
		return err
	}
	if err := su.output.WriteRun(opts.stdout, res.Report); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	for _, n := range res.Notices() {
		fmt.Fprintf(opts.stderr, "replay: %s\n", n)
	}
	if opts.printRun {
		if err := runlog.EncodeFile(opts.stdout, opts.out); err != nil {
			return err
		}
	}
	if res.Interrupted {
		return errors.New("run interrupted; the run file holds the requests completed so far")
	}
	if su.barrier != nil {
		return nil // a shard: the merged run has the verdict
	}
	if err := undecided("run", res.Report.Undecided()); err != nil {
		return err
	}
	return verdict(res.Report.Passed())
}

// sessionConfig loads the snapshot and returns the session of the run.
func (opts *runOptions) sessionConfig(ctx context.Context, su *runSetup, notes io.Writer) (session.RunConfig, error) {
	maxFailed, err := session.ParseMaxFailed(opts.maxFailed)
	if err != nil {
		return session.RunConfig{}, usagef("--max-failed: %v", err)
	}
	c, err := opts.replayFlags.config(ctx, "run", su.replay, opts.stderr, !opts.shard.Local)
	if err != nil {
		return session.RunConfig{}, err
	}
	c.Env = opts.build.env
	c.Settings, c.Shard, c.Local = su.settings, su.barrier, opts.shard.LocalShards(os.Args[1:])
	c.Listening = func(s *session.Side) { s.WriteStartHint(notes) }
	c.Warn = func(err error) { fmt.Fprintf(opts.stderr, "replay: warning: %v\n", err) }
	side := opts.build.sideConfig(opts.name, su.header)
	side.Env = nil // in c.Env: the run's command is named alone
	side.RunPath, side.LogPath, side.MockListen = opts.out, opts.buildLog, opts.mockListen
	if len(su.replay.pgListen) > 0 {
		side.PostgresListen = su.replay.pgListen[0]
	}
	if len(su.replay.myListen) > 0 {
		side.MySQLListen = su.replay.myListen[0]
	}
	return session.RunConfig{Config: c, Side: side, Plan: su.plan, Goals: su.replay.goals, MaxFailed: maxFailed, Ready: opts.onTarget,
		CheckResponses: opts.check, Rules: opts.rules}, nil
}
