package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

// Files of a comparison's output directory.
const (
	compareBaselineRun  = "baseline.run"
	compareCandidateRun = "candidate.run"
	compareResetLog     = "reset.log"
)

// compareSession is one live comparison: its output directory, both sides'
// environments (mock, SQL counter, build), replayers and run files.
type compareSession struct {
	opts     *compareOptions
	su       *compareSetup
	s        streams
	dir      string
	runPaths [2]string
	envs     [2]*compareSideEnv
	sides    [2]replayer.Side
	writers  [2]*snapshots.RunWriter
	infos    [2]snapshots.RunInfo
}

// compareLive runs a live comparison.
func compareLive(ctx context.Context, opts *compareOptions, su *compareSetup, s streams) (*report.ComparisonReport, error) {
	inbound, outbound, err := loadExchanges(ctx, "compare", opts.snapshot, len(opts.mocks) > 0)
	if err != nil {
		return nil, err
	}
	cs := &compareSession{opts: opts, su: su, s: s}
	defer cs.close()
	if err := cs.makeDir(); err != nil {
		return nil, err
	}
	if err := cs.start(ctx, outbound); err != nil {
		return nil, err
	}
	if err := cs.openRuns(inbound); err != nil {
		return nil, err
	}
	st, err := cs.measure(ctx)
	if err != nil {
		return nil, err
	}
	rep, err := compareRunFiles(ctx, cs.runPaths[0], cs.runPaths[1], su.goals)
	if err != nil {
		return nil, err
	}
	rep.Artifacts = cs.artifacts()
	cs.notices(st)
	if err := writeComparison(s.out, rep, su.formats, cs.dir); err != nil {
		return nil, err
	}
	return rep, nil
}

// makeDir creates the output directory; the run files must not exist yet.
func (cs *compareSession) makeDir() error {
	dir, err := compareOutDir(cs.opts.out)
	if err != nil {
		return err
	}
	cs.dir = dir
	cs.runPaths = [2]string{filepath.Join(dir, compareBaselineRun), filepath.Join(dir, compareCandidateRun)}
	for _, p := range cs.runPaths {
		if _, err := os.Stat(p); err == nil {
			return fmt.Errorf("compare: %s exists: give another --out directory", p)
		}
	}
	return nil
}

// start makes both sides' mocks and SQL counters listen, then starts the
// builds (or waits for the URLs).
func (cs *compareSession) start(ctx context.Context, outbound []*snapshots.Exchange) error {
	opts := cs.opts
	authority, err := compareCA(opts)
	if err != nil {
		return err
	}
	for i, side := range opts.sides() {
		e, err := startCompareSideEnv(ctx, opts, cs.su, side, cs.su.pgListen[i], authority, outbound)
		cs.envs[i] = e
		if err != nil {
			return err
		}
		e.logPath = filepath.Join(cs.dir, side.name+".log")
	}
	for _, e := range cs.envs {
		if e.side.url != "" {
			compareURLNotice(cs.s.err, e, cs.su)
		}
	}
	for _, e := range cs.envs {
		if e.side.cmd == "" {
			if err := replayer.WaitReady(ctx, e.side.url, opts.startTimeout); err != nil {
				return fmt.Errorf("compare: %s: %w", e.side.name, err)
			}
			e.target = e.side.url
			continue
		}
		b := replayer.Build{Cmd: e.side.cmd, Env: append(slices.Clone(opts.env), e.side.env...), LogPath: e.logPath, StartTimeout: opts.startTimeout}
		proc, err := replayer.StartBuild(ctx, b, e.wiring)
		if err != nil {
			return fmt.Errorf("compare: %s: %w", e.side.name, err)
		}
		e.build, e.target = proc, proc.URL()
	}
	return nil
}

// openRuns makes each side's replayer and creates its run file.
func (cs *compareSession) openRuns(inbound []*snapshots.Exchange) error {
	opts := cs.opts
	for i, e := range cs.envs {
		cfg := replayer.Config{
			Target:      e.target,
			Exchanges:   inbound,
			Endpoints:   opts.endpoints,
			Header:      cs.su.headers[i],
			Timeout:     opts.timeout,
			MaxInFlight: max(opts.maxInFlight, cs.su.plan.Load.VUs),
			SQLTraced:   opts.sqlTraced,
		}
		if e.sql != nil {
			cfg.SQL = e.sql
		}
		rp, err := replayer.New(cfg)
		if err != nil {
			return fmt.Errorf("compare: %s: %w", e.side.name, err)
		}
		cs.sides[i] = replayer.Side{Name: e.side.name, Replayer: rp}
		cs.infos[i] = snapshots.RunInfo{Name: e.side.name, Snapshot: opts.snapshot, Target: e.target, Started: time.Now(),
			Settings: compareSideSettings(cs.su.settings, opts, e.side, cs.su.headers[i])}
		w, err := snapshots.CreateRun(cs.runPaths[i], cs.infos[i])
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
		cs.writers[i] = w
		cs.sides[i].Sink = w
	}
	return nil
}

// measure runs the comparison (replayer.Compare), stops the builds and
// closes the run files with what they measured.
func (cs *compareSession) measure(ctx context.Context) (replayer.CompareStats, error) {
	plan := cs.su.plan
	if cs.opts.reset != "" {
		plan.Reset = compareResetFunc(cs.opts.reset, filepath.Join(cs.dir, compareResetLog))
	}
	var pl *compareProgressLine
	if cs.opts.progress {
		pl = newCompareProgressLine(cs.s.err)
		plan.Progress = pl.update
	}
	st, runErr := replayer.Compare(ctx, plan, cs.sides[0], cs.sides[1])
	if pl != nil {
		pl.clear()
	}
	stats := [2]replayer.Stats{st.Baseline, st.Candidate}
	for i, e := range cs.envs {
		if e.build != nil {
			if err := e.build.Stop(); err != nil {
				fmt.Fprintf(cs.s.err, "replay: warning: %s: %v\n", e.side.name, err)
			}
		}
		info := &cs.infos[i]
		info.Ended = time.Now()
		if e.mock != nil {
			info.MockMisses = e.mock.Misses()
		}
		if e.sql != nil {
			info.Statements = e.sql.Stats().Statements
		}
		stallSettings(info.Settings, stats[i])
		w := cs.writers[i]
		cs.writers[i] = nil
		if err := w.Close(*info); err != nil {
			return st, fmt.Errorf("compare: %w", err)
		}
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			return st, fmt.Errorf("compare interrupted; %s and %s hold the requests completed so far", cs.runPaths[0], cs.runPaths[1])
		}
		return st, runErr
	}
	return st, nil
}

// artifacts lists the run files and logs of the comparison.
func (cs *compareSession) artifacts() []report.Artifact {
	a := []report.Artifact{{Name: "baseline run", Path: cs.runPaths[0]}, {Name: "candidate run", Path: cs.runPaths[1]}}
	for _, e := range cs.envs {
		if e.build != nil {
			a = append(a, report.Artifact{Name: e.side.name + " build log", Path: e.logPath})
		}
	}
	if cs.opts.reset != "" {
		a = append(a, report.Artifact{Name: "reset log", Path: filepath.Join(cs.dir, compareResetLog)})
	}
	return a
}

// notices tells on stderr what a user should look at: mock misses (with the
// closest recorded requests) and a side that fell behind the open model.
func (cs *compareSession) notices(st replayer.CompareStats) {
	stats := [2]replayer.Stats{st.Baseline, st.Candidate}
	w := cs.s.err
	for i, e := range cs.envs {
		if n := cs.infos[i].MockMisses; n > 0 {
			fmt.Fprintf(w, "replay: the %s's mock could not answer %d outbound requests; the closest recorded ones:\n", e.side.name, n)
			log := e.mock.MissLog()
			for _, m := range log[:min(3, len(log))] {
				fmt.Fprintf(w, "  %v\n", m)
			}
		}
		if stats[i].NotSent > 0 || stats[i].Late > 0 {
			fmt.Fprintf(w, "replay: the %s fell behind the open model: %d requests started late (up to %s) and %d could not be sent\n",
				e.side.name, stats[i].Late, stats[i].MaxLate.Round(time.Millisecond), stats[i].NotSent)
		}
	}
}

// close stops whatever still runs: builds, mocks, SQL counters, replayers,
// and closes run files left open by an error.
func (cs *compareSession) close() {
	for i, w := range cs.writers {
		if w != nil {
			w.Close(cs.infos[i])
		}
	}
	for _, s := range cs.sides {
		if s.Replayer != nil {
			s.Replayer.Close()
		}
	}
	for _, e := range cs.envs {
		if e != nil {
			e.close()
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
