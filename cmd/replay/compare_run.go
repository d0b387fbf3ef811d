package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// compareLive runs a live comparison: one session with two sides.
func compareLive(ctx context.Context, opts *compareOptions, su *compareSetup, s streams) (*report.ComparisonReport, error) {
	cfg, err := opts.sessionConfig(ctx, su, s.err)
	defer opts.replayFlags.close()
	if err != nil {
		return nil, err
	}
	cfg.Dir, cfg.DirPrefix = opts.output.Dir, "replay-compare-"
	return runComparison(ctx, cfg, su.output.Formats, s, opts.progress)
}

// runComparison runs the comparison of cfg, tells on s.err what a user
// should look at, and writes the report in every format (the first to
// s.out, all to the comparison's directory); `replay compare` and `replay
// demo` share it.
func runComparison(ctx context.Context, cfg session.CompareConfig, formats []report.Format, s streams, progress bool) (*report.ComparisonReport, error) {
	var pl *report.CompareProgress
	if progress {
		pl = report.NewCompareProgress(s.err)
		cfg.Plan.Progress = pl.Update
	} else if os.Getenv("REPLAY_PROGRESS") == "json" { // replay mcp's children
		cfg.Plan.Progress = report.NewJSONProgress(s.err).Compare
	}
	res, err := session.Compare(ctx, cfg)
	if pl != nil {
		pl.Clear()
	}
	var reset *session.ResetError
	if errors.As(err, &reset) {
		return nil, fmt.Errorf("compare: --%w", err)
	}
	if err != nil {
		return nil, err
	}
	for _, n := range res.Notices() {
		fmt.Fprintf(s.err, "replay: %s\n", n)
	}
	if err := (report.Output{Formats: formats, Dir: res.Dir}).WriteComparison(s.out, res.Report); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if res.Report.Interrupted() {
		return nil, fmt.Errorf("compare interrupted: no verdict; %s holds the run files and reports of the requests completed so far", res.Dir)
	}
	return res.Report, nil
}

// sessionConfig loads the snapshot and returns the session of the
// comparison.
func (opts *compareOptions) sessionConfig(ctx context.Context, su *compareSetup, notes io.Writer) (session.CompareConfig, error) {
	c, err := opts.replayFlags.config(ctx, "compare", su.replay, notes, !opts.shard.Local)
	if err != nil {
		return session.CompareConfig{}, err
	}
	c.Env = opts.env
	c.Settings, c.Shard, c.Local = su.settings, su.barrier, opts.shard.LocalShards(os.Args[1:])
	c.Listening = func(s *session.Side) { s.WriteStartHint(notes) }
	c.Warn = func(err error) { fmt.Fprintf(notes, "replay: warning: %v\n", err) }
	cfg := session.CompareConfig{Config: c, Plan: su.plan, Reset: opts.reset, Goals: su.replay.goals, Analysis: su.analysis,
		Baseline:  opts.baseline.sideConfig("baseline", su.headers[0]),
		Candidate: opts.candidate.sideConfig("candidate", su.headers[1]),
	}
	if l := su.replay.pgListen; len(l) == 2 {
		cfg.Baseline.PostgresListen, cfg.Candidate.PostgresListen = l[0], l[1]
	}
	if l := su.replay.myListen; len(l) == 2 {
		cfg.Baseline.MySQLListen, cfg.Candidate.MySQLListen = l[0], l[1]
	}
	return cfg, nil
}
