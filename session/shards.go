package session

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/shard"
)

// shardSettings tags a session's shared settings as cfg.Shard's (nothing
// without one): the plan's hash over them, k, N and the histogram
// parameters; the barrier learns the hash, and the replayers the start.
func (c *Config) shardSettings(s map[string]string) {
	b := c.Shard
	if b == nil {
		return
	}
	s["snapshot_id"] = snapshotID(c.Snapshot)
	s[shard.TagCount] = strconv.Itoa(b.Spec.N)
	s[shard.TagHistogram] = shard.Histogram
	b.Plan = shard.PlanHash(s)
	maps.Copy(s, b.Spec.Tags(b.Plan))
	c.shard = replayer.Shard{K: b.Spec.K, N: b.Spec.N}
	if b.Warn == nil {
		b.Warn = c.Warn
	}
	if b.Addr != "" {
		c.shard.Start = onceStart(b.Start)
	}
}

// closeShard stops shard 0's barrier from answering late shards.
func (c *Config) closeShard() {
	if c.Shard != nil {
		c.Shard.Close()
	}
}

// snapshotID names a snapshot in a plan's hash: its file name and size
// (shards read copies of one file, at paths of their own).
func snapshotID(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return filepath.Base(path)
	}
	return fmt.Sprintf("%s %d", filepath.Base(path), fi.Size())
}

// onceStart calls start once, for whichever side of a comparison starts
// its load first; the other starts when its turn comes (the zero time).
func onceStart(start func(context.Context) (time.Time, error)) func(context.Context) (time.Time, error) {
	var once sync.Once
	return func(ctx context.Context) (t0 time.Time, err error) {
		once.Do(func() { t0, err = start(ctx) })
		return t0, err
	}
}

// runLocal is Run with cfg.Local: the shards run here, their run files
// merge into the side's RunPath (shard.Local.RunFile), and the report is
// LoadRunChecked's: the goals, failures and answers the shards recorded
// are checked only now, over every shard's results.
func runLocal(ctx context.Context, cfg RunConfig) (*RunResult, error) {
	l, out := *cfg.Local, cfg.Side.RunPath
	l.Dir = out + ".shards"
	if err := l.RunFile(ctx, out); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	rep, err := LoadRunChecked(ctx, out, nil, 0, cfg.Rules)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return &RunResult{Report: rep, Interrupted: rep.Interrupted()}, nil
}

// compareLocal is Compare with cfg.Local: the shards run here, each side's
// run files merge into its RunPath, and the merged files are compared.
func compareLocal(ctx context.Context, cfg *CompareConfig) (*CompareResult, error) {
	l := *cfg.Local
	l.Dir = filepath.Join(cfg.Dir, "shards")
	sides := []string{cfg.Baseline.RunPath, cfg.Candidate.RunPath}
	if _, err := l.Compare(ctx, cfg.Dir, filepath.Base(sides[0]), filepath.Base(sides[1])); err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	rep, err := CompareFilesWith(ctx, sides[0], sides[1], cfg.Goals, cfg.Analysis)
	if err != nil {
		return nil, err
	}
	rep.Artifacts = append(rep.Artifacts, report.Artifact{Name: "shards", Path: l.Dir})
	return &CompareResult{Report: rep, Dir: cfg.Dir}, nil
}
