package main

import (
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/analyzer/respdiff"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
	"github.com/replaykit/replay/shard"
)

// compareSetup is the validated form of compareOptions.
type compareSetup struct {
	replay   *replaySetup
	plan     replayer.ComparePlan
	headers  [2]http.Header
	output   report.Output     // live: its Formats alone
	goals    []analyzer.Goal   // offline
	settings map[string]string // shared by both sides' run files
	analysis analyzer.CompareOptions
	barrier  *shard.Barrier // --shard: nil for the whole plan
}

// compareFlagNames name the comparison plan's fields as the flags of
// `replay compare`.
var compareFlagNames = map[string]string{
	replayer.FieldVUs: "--vus", replayer.FieldRate: "--rate", replayer.FieldDuration: "--duration",
	replayer.FieldSlices: "--slices", replayer.FieldWarmup: "--warmup", replayer.FieldExplain: "--explain", replayer.FieldMaxDuration: "--max-duration",
	replayer.FieldMaxInFlight: "--max-inflight", replayer.FieldConcurrent: "--concurrent",
}

// liveFlags are the flags of a live comparison only.
var liveFlags = []string{"baseline-url", "baseline-cmd", "candidate-url", "candidate-cmd", "baseline-env", "candidate-env", "env",
	"baseline-header", "candidate-header", "header", "vus", "rate", "duration", "max-duration", "warmup", "slices", "sequential", "concurrent", "explain", "reset",
	"endpoint", "mock", "mock-timing", "on-miss", "ca-dir", "postgres", "postgres-tls", "postgres-upstream-tls", "postgres-upstream-tls-ca",
	"mysql", "mysql-tls", "mysql-upstream-tls", "mysql-upstream-tls-ca",
	"sql-traced", "timeout", "max-inflight", "conns", "proto", "proto-path", "proto-reflect", "start-timeout", "dashboard", "dashboard-linger"}

// setupOffline validates the options of `replay compare RUN_A RUN_B`.
func (opts *compareOptions) setupOffline() (*compareSetup, error) {
	if opts.snapshot != "" {
		return nil, usagef("compare: give --snapshot SNAP for a live comparison or two run files, not both")
	}
	for _, name := range liveFlags {
		if opts.changedFlag(name) {
			return nil, usagef("compare RUN_A RUN_B: --%s applies to a live comparison (--snapshot SNAP)", name)
		}
	}
	su := &compareSetup{}
	var err error
	if su.output, err = output("compare RUN_A RUN_B", &opts.output, "out"); err != nil {
		return nil, err
	}
	if su.goals, err = analyzer.ParseGoals(opts.goals); err != nil {
		return nil, usagef("compare: --goal: %v", err)
	}
	su.analysis, err = opts.analysis()
	return su, err
}

// analysis reads --min-change, --confidence, --fail-on and the rules of
// answers.
func (opts *compareOptions) analysis() (analyzer.CompareOptions, error) {
	o, err := parseSensitivity("compare", opts.minChange, opts.confidence, opts.rules)
	if err != nil {
		return o, err
	}
	if opts.minCPU != "" {
		if o.MinCPURelative, err = analyzer.ParseMinCPUChange(opts.minCPU); err != nil {
			return o, usagef("compare: --min-cpu-change %v", err)
		}
	}
	for _, v := range opts.failOn {
		switch strings.TrimSpace(v) {
		case "regression":
		case "inconclusive":
			o.FailOnInconclusive = true
		default:
			return o, usagef("compare: --fail-on %q: want regression or inconclusive", v)
		}
	}
	return o, nil
}

// parseSensitivity reads --min-change and --confidence of cmd ("" and 0
// leave them unset) and the rules of answers.
func parseSensitivity(cmd, minChange string, confidence float64, rules respdiff.Rules) (o analyzer.CompareOptions, err error) {
	if err := rules.Validate(); err != nil {
		return o, usagef("%s: %v", cmd, err)
	}
	if minChange != "" {
		if o, err = analyzer.ParseMinChange(minChange); err != nil {
			return o, usagef("%s: --min-change %v", cmd, err)
		}
	}
	if confidence != 0 {
		if err := analyzer.ParseConfidence(confidence); err != nil {
			return o, usagef("%s: --confidence %v", cmd, err)
		}
	}
	o.Confidence, o.Responses = confidence, rules
	return o, nil
}

// setup validates the options of a live comparison; its errors are usage
// errors.
func (opts *compareOptions) setup() (*compareSetup, error) {
	su := &compareSetup{}
	if opts.snapshot == "" {
		return nil, usagef("compare: --snapshot SNAP is required (or give two run files to compare)")
	}
	for _, b := range []*buildFlags{&opts.baseline, &opts.candidate} {
		if err := b.validate("compare"); err != nil {
			return nil, err
		}
	}
	if len(opts.env) > 0 && opts.baseline.cmd == "" && opts.candidate.cmd == "" {
		return nil, usagef("compare: --env applies to --baseline-cmd/--candidate-cmd, and neither is given")
	}
	if err := checkEnv("compare", "env", opts.env); err != nil {
		return nil, err
	}
	var err error
	live := report.OutputFlags{Formats: opts.output.Formats, Dir: "."} // a live comparison always has its directory
	if su.output, err = output("compare", &live, "out"); err != nil {
		return nil, err
	}
	if su.replay, err = opts.replayFlags.validate("compare", 2); err != nil {
		return nil, err
	}
	if su.plan, err = opts.comparePlan(su.replay.explain); err != nil {
		return nil, err
	}
	if su.barrier, err = opts.shard.Setup(os.Getenv); err != nil {
		return nil, usagef("compare: %v", err)
	}
	if err := shardPlan("compare", opts.shard, su.barrier, su.plan.Load, compareFlagNames); err != nil {
		return nil, err
	}
	for i, side := range []headerFlag{{"baseline-header", opts.baselineHeaders}, {"candidate-header", opts.candidateHeaders}} {
		if su.headers[i], err = parseHeaders("compare", headerFlag{"header", opts.headers}, side); err != nil {
			return nil, err
		}
	}
	su.settings = opts.replayFlags.settings()
	su.analysis, err = opts.analysis()
	return su, err
}

// comparePlan reads the load flags.
func (opts *compareOptions) comparePlan(explain int) (replayer.ComparePlan, error) {
	p := replayer.LoadPlan{Duration: opts.duration}
	if opts.rate == "" || opts.changedFlag("vus") {
		if opts.vus <= 0 {
			return replayer.ComparePlan{}, usagef("compare: --vus %d: want at least 1", opts.vus)
		}
		p.VUs = opts.vus
	}
	if opts.rate != "" {
		r, err := replayer.ParseRate(opts.rate)
		if err != nil {
			return replayer.ComparePlan{}, usagef("compare: --rate: %v", err)
		}
		p.Rate = r
	}
	switch {
	case opts.duration <= 0:
		return replayer.ComparePlan{}, usagef("compare: --duration %s: want a positive duration per side, e.g. 20s", opts.duration)
	case opts.sequential && opts.concurrent:
		return replayer.ComparePlan{}, usagef("compare: --concurrent and --sequential are two orders of measurement; give one")
	case opts.sequential && opts.slices > 0:
		return replayer.ComparePlan{}, usagef("compare: --slices applies to an interleaved comparison; --sequential runs each side in one piece")
	case opts.changedFlag("reset") && strings.TrimSpace(opts.reset) == "":
		return replayer.ComparePlan{}, usagef("compare: --reset: want a command")
	case opts.slices > 0 && opts.duration/time.Duration(opts.slices) < 50*time.Millisecond:
		return replayer.ComparePlan{}, usagef("compare: --slices %d cuts --duration %s into slices shorter than 50ms; give fewer slices or a longer duration", opts.slices, opts.duration)
	}
	plan := replayer.ComparePlan{Load: p, Slices: opts.slices, Sequential: opts.sequential, Concurrent: opts.concurrent, Explain: explain, Warmup: opts.warmup, MaxDuration: opts.maxDur}
	if opts.rate == "" && !opts.changedFlag("vus") && !opts.sequential {
		plan.Calibrate = session.DefaultCalibrate
	}
	return plan, planUsage("compare", plan.Validate(), compareFlagNames)
}
