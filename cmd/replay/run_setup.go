package main

import (
	"net/http"
	"os"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/shard"
)

// runSetup is the validated form of runOptions.
type runSetup struct {
	replay   *replaySetup
	plan     replayer.LoadPlan
	header   http.Header
	output   report.Output
	settings map[string]string
	barrier  *shard.Barrier // --shard: nil for the whole plan
}

// planUsage turns a plan error into a usage error naming the flags (names
// maps the plan's fields to them); other errors come back as they are.
func planUsage(cmd string, err error, names map[string]string) error {
	if msg, ok := replayer.PlanMessage(err, names); ok {
		return usagef("%s: %s", cmd, msg)
	}
	return err
}

// setup validates opts; its errors are usage errors.
func (opts *runOptions) setup() (*runSetup, error) {
	su := &runSetup{}
	switch {
	case opts.snapshot == "":
		return nil, usagef("run: --snapshot SNAP is required")
	case opts.out == "":
		return nil, usagef("run: --out RUN is required")
	}
	if err := opts.build.validate("run"); err != nil {
		return nil, err
	}
	var err error
	if su.output, err = output("run", &opts.output, "report-dir"); err != nil {
		return nil, err
	}
	if su.plan, err = opts.load.Plan("run", opts.changedFlag); err != nil {
		return nil, usagef("%v", err)
	}
	if su.header, err = parseHeaders("run", headerFlag{"header", opts.headers}); err != nil {
		return nil, err
	}
	if su.replay, err = opts.replayFlags.validate("run", 1); err != nil {
		return nil, err
	}
	if su.barrier, err = opts.shard.Setup(os.Getenv); err != nil {
		return nil, usagef("run: %v", err)
	}
	if err := shardPlan("run", opts.shard, su.barrier, su.plan, replayer.FlagNames); err != nil {
		return nil, err
	}
	su.plan.Explain = su.replay.explain
	su.settings = opts.replayFlags.settings()
	return su, nil
}

// shardPlan refuses, as bad usage naming the flags, a closed plan that
// leaves one of the shards the flags ask for (--shard k/N, --shards N)
// without virtual users: before any shard reads the snapshot.
func shardPlan(cmd string, o shard.Options, b *shard.Barrier, p replayer.LoadPlan, names map[string]string) error {
	n := o.Shards
	if b != nil {
		n = b.Spec.N
	}
	if !o.Local && b == nil {
		return nil
	}
	return planUsage(cmd, replayer.Shard{N: n}.CheckPlan(p), names)
}
