package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
)

// Files of a comparison's directory.
const (
	BaselineRun  = "baseline.run"
	CandidateRun = "candidate.run"
	ResetLog     = "reset.log"
)

// CompareConfig is a comparison of two sides.
type CompareConfig struct {
	Config
	// Baseline and Candidate are the two builds. Their run files default
	// to Dir/baseline.run and Dir/candidate.run, build logs to
	// Dir/NAME.log.
	Baseline, Candidate SideConfig
	// Dir receives the run files, build logs and reset log; created when
	// missing. Required unless both sides name their files or DirPrefix
	// is set.
	Dir string
	// DirPrefix, when Dir is empty, makes Dir a new directory in the
	// working directory: DirPrefix and a time stamp (NewDir), e.g.
	// replay-compare-20250301-120000. CompareResult.Dir names it.
	DirPrefix string
	// Plan is how the sides are measured (interleaved slices or
	// sequential, explain phase, warmup); its Reset, when nil, runs the
	// Reset command, and Plan.Progress is told how it goes.
	Plan replayer.ComparePlan
	// Reset, when set, is a shell command that restores the data before
	// each side's explain phase and before the load (see ResetCommand); its
	// output goes to Dir/reset.log.
	Reset string
	// Goals are checked against the candidate (none is fine).
	Goals []analyzer.Goal
	// Analysis tunes the comparison of the two runs (minimum change,
	// confidence); its zero value means the analyzer's defaults.
	Analysis analyzer.CompareOptions
}

// CompareResult is what a comparison saw.
type CompareResult struct {
	// Report is the comparison with goals and files (run files, build
	// logs, reset log).
	Report *report.ComparisonReport
	// Stats are each side's load counts.
	Stats replayer.CompareStats
	// Dir is the comparison's directory (CompareConfig.Dir or the one
	// DirPrefix made).
	Dir string
	// Sides are the two sides as they ended, baseline first: their mock
	// misses and miss logs, addresses and build logs. Everything they ran
	// is stopped.
	Sides [2]*Side
}

// Compare replays the same requests against a baseline and a candidate,
// each with its own mock and SQL counter, under one plan (see
// replayer.Compare), then compares the two run files. Canceling ctx stops
// the load: the run files, kept and marked interrupted, are compared all
// the same, and the report says the comparison was interrupted (no
// verdict, never passed). Any other error
// removes the files and the directory it created, but for a log (a
// build's, the reset's) that holds output, which the error names.
func Compare(ctx context.Context, cfg CompareConfig) (res *CompareResult, err error) {
	var lo leftovers
	keep := false
	defer func() {
		if err != nil && !keep {
			err = lo.clean(err)
		}
	}()
	sides, err := cfg.prepare(&lo)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if cfg.Local != nil {
		keep = true // the shards' logs say what went wrong
		return compareLocal(ctx, &cfg)
	}
	finish, err := cfg.startObserver(ctx, "compare", cfg.Baseline.Name, cfg.Candidate.Name)
	if err != nil {
		return nil, err
	}
	defer func() { finish(Outcome{Comparison: res.report(), Dir: cfg.Dir, Err: err}) }()
	for _, s := range sides {
		defer s.Close()
	}
	if err := startSides(ctx, "compare", sides[:]); err != nil {
		return nil, err
	}
	plan := cfg.Plan
	if plan.Reset == nil && cfg.Reset != "" {
		plan.Reset = ResetCommand(cfg.Reset, filepath.Join(cfg.Dir, ResetLog))
	}
	observeCompare(&plan, cfg.Observer)
	var looks *looker
	if plan.MaxDuration > plan.Load.Duration && plan.Look == nil {
		if looks, err = newLooker(&cfg, sides); err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		plan.Look, looks.progress = looks.look, plan.Progress
	}
	settings := cfg.settings(plan)
	defer cfg.closeShard()
	var rs [2]replayer.Side
	for i, s := range sides {
		s.sliceCPU(!plan.Sequential, 0)
		if err := s.open(plan.Load.VUs, settings); err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		s.explainWeights(plan.Explain)
		rs[i] = replayer.Side{Name: s.sc.Name, Replayer: s.rp, Sink: observe(packing{s.run}, cfg.Observer, s.sc.Name), Measure: s.measure}
	}
	st, runErr := replayer.Compare(ctx, plan, rs[0], rs[1])
	rs = [2]replayer.Side{} // the replayers go with releaseReplayer below
	analysis := cfg.Analysis
	for _, s := range sides {
		calibratedSettings(s.info.Settings, plan, st)
		if looks != nil {
			looks.settings(s.info.Settings, plan.MaxDuration)
			analysis = looks.opts
		}
	}
	interrupted := errors.Is(runErr, context.Canceled)
	if err := finishSides(sides, st, interrupted); err != nil {
		return nil, err
	}
	if runErr != nil && !interrupted {
		return nil, runErr
	}
	if interrupted {
		// The run files say so, and what they hold is compared and
		// reported (Comparison.Interrupted: no verdict).
		keep = true
		ctx = context.WithoutCancel(ctx)
	}
	releaseLoads(&cfg, sides)
	rep, err := CompareFilesWith(ctx, sides[0].sc.RunPath, sides[1].sc.RunPath, cfg.Goals, analysis)
	if err != nil {
		return nil, err
	}
	rep.Artifacts = cfg.artifacts(sides)
	return &CompareResult{Report: rep, Stats: st, Dir: cfg.Dir, Sides: sides}, nil
}

// finishSides closes both sides' run files with what they measured;
// interrupted marks them so (no verdict).
func finishSides(sides [2]*Side, st replayer.CompareStats, interrupted bool) error {
	for i, s := range sides {
		s.info.Interrupted = interrupted
		if err := s.finish([2]replayer.Stats{st.Baseline, st.Candidate}[i]); err != nil {
			return fmt.Errorf("compare: %w", err)
		}
	}
	return nil
}

// releaseLoads lets go of the request index once the loads are done (tens
// of MB over a big snapshot; the mocks keep theirs, still listening), and
// gives the load's garbage back to the system before the analysis
// allocates its own: the two together made a big comparison's peak memory.
func releaseLoads(cfg *CompareConfig, sides [2]*Side) {
	for _, s := range sides {
		s.releaseReplayer()
	}
	cfg.Source = nil
	debug.FreeOSMemory()
}

// report is r's report; nil when r is.
func (r *CompareResult) report() *report.ComparisonReport {
	if r == nil {
		return nil
	}
	return r.Report
}

// prepare checks cfg, fills the sides' files from Dir and creates it,
// noting in lo what it will create.
func (cfg *CompareConfig) prepare(lo *leftovers) ([2]*Side, error) {
	var sides [2]*Side
	if err := cfg.check(); err != nil {
		return sides, err
	}
	if cfg.Dir == "" && cfg.DirPrefix != "" {
		dir, err := NewDir(".", cfg.DirPrefix)
		if err != nil {
			return sides, fmt.Errorf("output directory: %w", err)
		}
		cfg.Dir, lo.dir = dir, dir
	}
	scs := [2]*SideConfig{&cfg.Baseline, &cfg.Candidate}
	for i, sc := range scs {
		if sc.RunPath == "" && cfg.Dir != "" {
			sc.RunPath = filepath.Join(cfg.Dir, [2]string{BaselineRun, CandidateRun}[i])
		}
		if sc.LogPath == "" && sc.Cmd != "" && cfg.Dir != "" {
			sc.LogPath = filepath.Join(cfg.Dir, sc.Name+".log")
		}
		if err := sc.check(); err != nil {
			return sides, err
		}
	}
	if cfg.Baseline.Name == cfg.Candidate.Name {
		return sides, fmt.Errorf("both sides are named %q", cfg.Baseline.Name)
	}
	if cfg.Dir != "" && lo.dir == "" {
		if err := lo.mkdir(cfg.Dir); err != nil {
			return sides, err
		}
	}
	for _, sc := range scs {
		if _, err := os.Stat(sc.RunPath); err == nil {
			return sides, fmt.Errorf("%s exists: give another output directory", sc.RunPath)
		}
	}
	for _, sc := range scs {
		lo.file(sc.RunPath, false)
		lo.file(sc.LogPath, true)
	}
	if cfg.Reset != "" && cfg.Dir != "" {
		lo.file(filepath.Join(cfg.Dir, ResetLog), true)
	}
	for i, sc := range scs {
		sides[i] = &Side{cfg: &cfg.Config, sc: *sc, paired: true}
	}
	return sides, nil
}

// artifacts lists the run files and logs of the comparison.
func (cfg *CompareConfig) artifacts(sides [2]*Side) []report.Artifact {
	a := []report.Artifact{{Name: "baseline run", Path: sides[0].sc.RunPath}, {Name: "candidate run", Path: sides[1].sc.RunPath}}
	for _, s := range sides {
		if s.build != nil {
			a = append(a, report.Artifact{Name: s.sc.Name + " build log", Path: s.sc.LogPath})
		}
	}
	if cfg.Reset != "" && cfg.Plan.Reset == nil {
		a = append(a, report.Artifact{Name: "reset log", Path: filepath.Join(cfg.Dir, ResetLog)})
	}
	return a
}

// settings are what both sides' run files record of how they were run.
func (cfg *CompareConfig) settings(plan replayer.ComparePlan) map[string]string {
	settings := cfg.sharedSettings(cfg.Goals, plan.Explain)
	comparePlanSettings(settings, plan, cfg.maxInFlight())
	put(settings, "reset", redact.Command(cfg.Reset))
	recordSensitivity(settings, cfg.Analysis)
	recordRules(settings, cfg.Analysis.Responses)
	cfg.shardSettings(settings)
	return settings
}
