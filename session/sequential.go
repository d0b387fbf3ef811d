package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

// DefaultCalibrate is the share of the baseline's closed-model throughput
// a fair (calibrated) comparison loads both builds at.
const DefaultCalibrate = 0.5

// looker takes the looks of a comparison that runs until it knows
// (replayer.ComparePlan.MaxDuration): at each it compares the run files so
// far at a confidence that spends the false-alarm rate α = 1 − Confidence
// over the looks in proportion to the load time each adds
// (analyzer.LookLevel): look k, at a share t_k of MaxDuration, is judged at
// the level α·(t_k − t_{k−1}), so the chance that any look calls a change
// that is not there (or "unchanged" a change that is) stays within α.
type looker struct {
	cfg   *CompareConfig
	sides [2]*Side
	alpha float64
	t     float64 // share of MaxDuration at the previous look
	// opts are the analysis options of the last look, its confidence
	// included: the final comparison uses them.
	opts    analyzer.CompareOptions
	looks   int
	ran     time.Duration
	stopped string
	// progress, when set, is told one line per look.
	progress func(replayer.CompareProgress)
}

func newLooker(cfg *CompareConfig, sides [2]*Side) (*looker, error) {
	opts, err := cfg.Analysis.WithDefaults()
	if err != nil {
		return nil, err
	}
	return &looker{cfg: cfg, sides: sides, alpha: 1 - opts.Confidence, opts: opts, progress: cfg.Plan.Progress}, nil
}

// look judges the slices so far; it stops the comparison when every
// endpoint with enough requests is conclusive.
func (l *looker) look(ctx context.Context, lk replayer.Look) (bool, error) {
	t := min(1, lk.Ran.Seconds()/lk.MaxDuration.Seconds())
	if lk.Last {
		t = 1
	}
	level := analyzer.LookLevel(l.alpha, l.t, t)
	l.t, l.looks, l.ran = t, lk.N, lk.Ran
	opts := l.opts
	opts.Confidence = 1 - level
	opts.Resamples = analyzer.LookResamples(level, max(l.cfg.Analysis.Resamples, 2000))
	l.opts = opts
	for _, s := range l.sides {
		if err := s.syncRun(ctx); err != nil {
			return false, err
		}
	}
	var cpu [2]*snapshots.BuildCPU
	for i, s := range l.sides {
		cpu[i], _ = s.cpu.result() // nil when not measured: a failed reading is told at the end
	}
	rep, err := compareFiles(ctx, l.sides[0].sc.RunPath, l.sides[1].sc.RunPath, cpu, nil, opts)
	if err != nil {
		return false, err
	}
	open := undecided(rep.Comparison)
	switch {
	case len(open) == 0:
		l.stopped = "every endpoint with enough requests is conclusive"
	case lk.Last:
		l.stopped = fmt.Sprintf("the maximum duration was reached with %s still inconclusive", endpointList(open))
	}
	if l.progress != nil {
		note := fmt.Sprintf("look %d after %s per side (%s%% confidence): ", lk.N, lk.Ran, analyzer.FormatCount(100*opts.Confidence))
		if l.stopped != "" {
			note += "stop: " + l.stopped
		} else {
			note += endpointList(open) + " inconclusive; going on"
		}
		l.progress(replayer.CompareProgress{Phase: replayer.PhaseLook, Note: note})
	}
	return len(open) == 0, nil
}

// undecided lists what more load could still decide: the endpoints
// inconclusive for the noise, with enough requests on both sides, and the
// builds' CPU per request when it was measured over slice pairs and is
// inconclusive (its interval narrows with the load as theirs do).
func undecided(c *analyzer.Comparison) []string {
	var out []string
	for _, e := range c.Endpoints {
		if e.Verdict == analyzer.Inconclusive && e.Cause == analyzer.CauseNoise {
			out = append(out, e.Endpoint)
		}
	}
	if c.CPU.Measured && c.CPU.Pairs > 0 && c.CPU.Verdict == analyzer.Inconclusive {
		out = append(out, cpuPerRequest)
	}
	return out
}

// cpuPerRequest names the builds' CPU per request among what a look found
// undecided.
const cpuPerRequest = "CPU per request"

// endpointList names up to three endpoints: "GET /a, GET /b and 2 more".
func endpointList(names []string) string {
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(" and %d more", len(names)-3)
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// settings records the looks in a run file's settings (report.Setting…).
func (l *looker) settings(s map[string]string, maxDuration time.Duration) {
	s[report.SettingMaxDuration] = maxDuration.String()
	s[report.SettingLooks] = strconv.Itoa(l.looks)
	s[report.SettingRan] = l.ran.String()
	put(s, report.SettingStopped, l.stopped)
	s[report.SettingConfidence] = strconv.FormatFloat(l.opts.Confidence, 'g', -1, 64)
	s[report.SettingResamples] = strconv.Itoa(l.opts.Resamples)
	s[report.SettingAlpha] = strconv.FormatFloat(l.alpha, 'g', -1, 64)
}

// syncRun waits until the side's run file holds every result added so far
// (the writer commits at least once a second).
func (s *Side) syncRun(ctx context.Context) error {
	want := s.run.Added()
	r, err := snapshots.OpenRun(s.sc.RunPath)
	if err != nil {
		return err
	}
	defer r.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := r.Count(ctx)
		if err != nil || n >= want || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lookOptions are the analysis options a comparison directory's run files
// recorded from their last look (SettingConfidence, SettingResamples), over
// opts' zero fields: `replay report DIR` then judges as the live run did.
func lookOptions(settings map[string]string, opts analyzer.CompareOptions) analyzer.CompareOptions {
	if v, err := strconv.ParseFloat(settings[report.SettingConfidence], 64); err == nil && opts.Confidence == 0 {
		opts.Confidence = v
	}
	if v, err := strconv.Atoi(settings[report.SettingResamples]); err == nil && opts.Resamples == 0 {
		opts.Resamples = v
	}
	return opts
}
