package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// compareLive runs a live comparison: one session with two sides.
func compareLive(ctx context.Context, opts *compareOptions, su *compareSetup, s streams) (*report.ComparisonReport, error) {
	cfg, err := opts.sessionConfig(ctx, su, s.err)
	if err != nil {
		return nil, err
	}
	if cfg.Dir, err = compareOutDir(opts.out); err != nil {
		return nil, err
	}
	return runComparison(ctx, cfg, su.formats, s, opts.progress)
}

// runComparison runs the comparison of cfg, tells on s.err what a user
// should look at, and writes the report in every format (the first to
// s.out, all to cfg.Dir); `replay compare` and `replay demo` share it.
func runComparison(ctx context.Context, cfg session.CompareConfig, formats []report.Format, s streams, progress bool) (*report.ComparisonReport, error) {
	var pl *report.CompareProgress
	if progress {
		pl = report.NewCompareProgress(s.err)
		cfg.Plan.Progress = pl.Update
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
	compareNotices(s.err, res)
	if err := writeComparison(s.out, res.Report, formats, cfg.Dir); err != nil {
		return nil, err
	}
	return res.Report, nil
}

// sessionConfig loads the snapshot and returns the session of the
// comparison.
func (opts *compareOptions) sessionConfig(ctx context.Context, su *compareSetup, notes io.Writer) (session.CompareConfig, error) {
	c, err := opts.replayFlags.config(ctx, "compare", su.replay)
	if err != nil {
		return session.CompareConfig{}, err
	}
	c.Env = opts.env
	c.Settings = su.settings
	c.Listening = urlBuildNotice(notes, true)
	c.Warn = func(err error) { fmt.Fprintf(notes, "replay: warning: %v\n", err) }
	cfg := session.CompareConfig{Config: c, Plan: su.plan, Reset: opts.reset, Goals: su.replay.goals,
		Baseline:  opts.baseline.sideConfig("baseline", su.headers[0]),
		Candidate: opts.candidate.sideConfig("candidate", su.headers[1]),
	}
	if l := su.replay.pgListen; len(l) == 2 {
		cfg.Baseline.PostgresListen, cfg.Candidate.PostgresListen = l[0], l[1]
	}
	return cfg, nil
}

// compareNotices tells what a user should look at: mock misses (with the
// closest recorded requests) and a side that fell behind the open model.
func compareNotices(w io.Writer, res *session.CompareResult) {
	stats := [2]replayer.Stats{res.Stats.Baseline, res.Stats.Candidate}
	for i, s := range res.Sides {
		if n := s.MockMisses(); n > 0 {
			fmt.Fprintf(w, "replay: the %s's mock could not answer %d outbound requests; the closest recorded ones:\n", s.Name(), n)
			log := s.MissLog()
			for _, m := range log[:min(3, len(log))] {
				fmt.Fprintf(w, "  %v\n", m)
			}
		}
		if stats[i].NotSent > 0 || stats[i].Late > 0 {
			fmt.Fprintf(w, "replay: the %s fell behind the open model: %d requests started late (up to %s) and %d could not be sent\n",
				s.Name(), stats[i].Late, stats[i].MaxLate.Round(time.Millisecond), stats[i].NotSent)
		}
	}
}

// compareOutDir creates the output directory: dir, or a new
// ./replay-compare-YYYYMMDD-HHMMSS.
func compareOutDir(dir string) (string, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("compare: --out: %w", err)
		}
		return dir, nil
	}
	base := "replay-compare-" + time.Now().Format("20060102-150405")
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = base + "-" + strconv.Itoa(i)
		}
		err := os.Mkdir(name, 0o755)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, os.ErrExist) || i >= 100 {
			return "", fmt.Errorf("compare: output directory: %w", err)
		}
	}
}
