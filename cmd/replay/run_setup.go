package main

import (
	"net/http"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
)

// runSetup is the validated form of runOptions.
type runSetup struct {
	replay   *replaySetup
	plan     replayer.LoadPlan
	header   http.Header
	output   report.Output
	settings map[string]string
}

// runFlagNames name the load plan's fields as the flags of `replay run`.
var runFlagNames = map[string]string{
	replayer.FieldVUs: "--vus", replayer.FieldStages: "--stage", replayer.FieldRate: "--rate", replayer.FieldSpeed: "--speed",
	replayer.FieldDuration: "--duration", replayer.FieldIterations: "--iterations", replayer.FieldExplain: "--explain",
	replayer.FieldMaxInFlight: "--max-inflight",
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
	if su.plan, err = opts.loadPlan(); err != nil {
		return nil, err
	}
	if su.header, err = parseHeaders("run", headerFlag{"header", opts.headers}); err != nil {
		return nil, err
	}
	if su.replay, err = opts.replayFlags.validate("run", 1); err != nil {
		return nil, err
	}
	su.plan.Explain = su.replay.explain
	su.settings = opts.replayFlags.settings()
	return su, nil
}

// loadPlan reads the load flags.
func (opts *runOptions) loadPlan() (replayer.LoadPlan, error) {
	p := replayer.LoadPlan{Duration: opts.duration, Iterations: opts.iterations, Speed: opts.speed}
	if opts.changedFlag("vus") {
		p.VUs = opts.vus
		if opts.vus <= 0 {
			return p, usagef("run: --vus %d: want at least 1", opts.vus)
		}
	}
	if opts.rate != "" {
		r, err := replayer.ParseRate(opts.rate)
		if err != nil {
			return p, usagef("run: --rate: %v", err)
		}
		p.Rate = r
	}
	for _, s := range opts.stages {
		st, err := replayer.ParseStage(s)
		if err != nil {
			return p, usagef("run: --stage: %v", err)
		}
		p.Stages = append(p.Stages, st)
	}
	switch {
	case opts.changedFlag("speed") && opts.speed <= 0:
		return p, usagef("run: --speed %g: want a positive factor, e.g. 1 or 2", opts.speed)
	case opts.changedFlag("duration") && opts.duration <= 0:
		return p, usagef("run: --duration %s: want a positive duration", opts.duration)
	case opts.changedFlag("iterations") && opts.iterations <= 0:
		return p, usagef("run: --iterations %d: want at least 1", opts.iterations)
	}
	return p, planUsage("run", p.Validate(), runFlagNames)
}
