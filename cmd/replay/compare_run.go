package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount"
)

// Files of a comparison's output directory.
const (
	compareBaselineRun  = "baseline.run"
	compareCandidateRun = "candidate.run"
	compareResetLog     = "reset.log"
)

// compareSideEnv is what replay runs around one side: its mock, its SQL
// counter and its build.
type compareSideEnv struct {
	side     *compareSide
	mock     *mock.Server
	mockSrv  *http.Server
	mockAddr string
	sql      *sqlcount.Proxy
	sqlAddr  string
	sqlStop  context.CancelFunc
	sqlDone  chan struct{}
	build    *replayer.Process
	logPath  string
	target   string
	wiring   replayer.Wiring
}

// close stops the build (if still running), the mock and the SQL counter.
func (e *compareSideEnv) close() {
	if e.build != nil {
		e.build.Stop()
	}
	if e.mockSrv != nil {
		e.mockSrv.Close()
	}
	if e.mock != nil {
		e.mock.Close()
	}
	if e.sqlStop != nil {
		e.sqlStop()
		<-e.sqlDone
	}
}

// compareLive runs a live comparison.
func compareLive(ctx context.Context, opts *compareOptions, su *compareSetup, s streams) (*report.ComparisonReport, error) {
	inbound, outbound, err := compareLoadSnapshot(ctx, opts.snapshot, len(opts.mocks) > 0)
	if err != nil {
		return nil, err
	}
	dir, err := compareOutDir(opts.out)
	if err != nil {
		return nil, err
	}
	runPaths := [2]string{filepath.Join(dir, compareBaselineRun), filepath.Join(dir, compareCandidateRun)}
	for _, p := range runPaths {
		if _, err := os.Stat(p); err == nil {
			return nil, fmt.Errorf("compare: %s exists: give another --out directory", p)
		}
	}

	// Both sides' proxies listen before any build starts.
	var envs [2]*compareSideEnv
	defer func() {
		for _, e := range envs {
			if e != nil {
				e.close()
			}
		}
	}()
	var authority *ca.CA
	if len(opts.mocks) > 0 {
		if authority, err = ca.LoadOrCreate(opts.caDir); err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
	}
	for i, side := range opts.sides() {
		e, err := startCompareSideEnv(ctx, opts, su, side, su.pgListen[i], authority, outbound)
		if e != nil {
			envs[i] = e
		}
		if err != nil {
			return nil, err
		}
		e.logPath = filepath.Join(dir, side.name+".log")
	}
	for _, e := range envs {
		if e.side.url != "" {
			compareURLNotice(s.err, e, su)
		}
	}

	// The builds.
	for _, e := range envs {
		if e.side.cmd != "" {
			b := replayer.Build{Cmd: e.side.cmd, Env: append(slices.Clone(opts.env), e.side.env...), LogPath: e.logPath, StartTimeout: opts.startTimeout}
			proc, err := replayer.StartBuild(ctx, b, e.wiring)
			if err != nil {
				return nil, fmt.Errorf("compare: %s: %w", e.side.name, err)
			}
			e.build = proc
			e.target = proc.URL()
		} else {
			if err := replayer.WaitReady(ctx, e.side.url, opts.startTimeout); err != nil {
				return nil, fmt.Errorf("compare: %s: %w", e.side.name, err)
			}
			e.target = e.side.url
		}
	}
	if opts.onTargets != nil {
		opts.onTargets(envs[0].target, envs[1].target)
	}

	// The replayers and run files.
	var sides [2]replayer.Side
	var writers [2]*snapshots.RunWriter
	var infos [2]snapshots.RunInfo
	defer func() {
		for i, w := range writers {
			if w != nil {
				w.Close(infos[i])
			}
		}
	}()
	for i, e := range envs {
		cfg := replayer.Config{
			Target:      e.target,
			Exchanges:   inbound,
			Endpoints:   opts.endpoints,
			Header:      su.headers[i],
			Timeout:     opts.timeout,
			MaxInFlight: max(opts.maxInFlight, su.plan.Load.VUs),
			SQLTraced:   opts.sqlTraced,
		}
		if e.sql != nil {
			cfg.SQL = e.sql
		}
		rp, err := replayer.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("compare: %s: %w", e.side.name, err)
		}
		defer rp.Close()
		infos[i] = snapshots.RunInfo{Name: e.side.name, Snapshot: opts.snapshot, Target: e.target, Started: time.Now(),
			Settings: compareSideSettings(su.settings, opts, i, e.side, su.headers[i])}
		w, err := snapshots.CreateRun(runPaths[i], infos[i])
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		writers[i] = w
		sides[i] = replayer.Side{Name: e.side.name, Replayer: rp, Sink: w}
	}

	plan := su.plan
	if opts.reset != "" {
		plan.Reset = compareResetFunc(opts.reset, filepath.Join(dir, compareResetLog))
	}
	var pl *compareProgressLine
	if opts.progress {
		pl = newCompareProgressLine(s.err)
		plan.Progress = pl.update
	}
	st, runErr := replayer.Compare(ctx, plan, sides[0], sides[1])
	if pl != nil {
		pl.clear()
	}

	// Stop the builds and close the run files with what they measured.
	stats := [2]replayer.Stats{st.Baseline, st.Candidate}
	var warnings []string
	for i, e := range envs {
		if e.build != nil {
			if err := e.build.Stop(); err != nil {
				warnings = append(warnings, fmt.Sprintf("%s: %v", e.side.name, err))
			}
		}
		infos[i].Ended = time.Now()
		if e.mock != nil {
			infos[i].MockMisses = e.mock.Misses()
		}
		if e.sql != nil {
			infos[i].Statements = e.sql.Stats().Statements
		}
		compareStallSettings(infos[i].Settings, stats[i])
		w := writers[i]
		writers[i] = nil
		if err := w.Close(infos[i]); err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
	}
	for _, w := range warnings {
		fmt.Fprintf(s.err, "replay: warning: %s\n", w)
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			return nil, fmt.Errorf("compare interrupted; %s and %s hold the requests completed so far", runPaths[0], runPaths[1])
		}
		return nil, runErr
	}

	rep, err := compareRunFiles(ctx, runPaths[0], runPaths[1], su.goals)
	if err != nil {
		return nil, err
	}
	rep.Artifacts = []report.Artifact{{Name: "baseline run", Path: runPaths[0]}, {Name: "candidate run", Path: runPaths[1]}}
	for _, e := range envs {
		if e.build != nil {
			rep.Artifacts = append(rep.Artifacts, report.Artifact{Name: e.side.name + " build log", Path: e.logPath})
		}
	}
	if opts.reset != "" {
		rep.Artifacts = append(rep.Artifacts, report.Artifact{Name: "reset log", Path: filepath.Join(dir, compareResetLog)})
	}
	for i, e := range envs {
		if n := infos[i].MockMisses; n > 0 {
			fmt.Fprintf(s.err, "replay: the %s's mock could not answer %d outbound requests; the closest recorded ones:\n", e.side.name, n)
			for _, m := range e.mock.MissLog()[:min(3, len(e.mock.MissLog()))] {
				fmt.Fprintf(s.err, "  %v\n", m)
			}
		}
		if stats[i].NotSent > 0 || stats[i].Late > 0 {
			fmt.Fprintf(s.err, "replay: the %s fell behind the open model: %d requests started late (up to %s) and %d could not be sent\n",
				e.side.name, stats[i].Late, stats[i].MaxLate.Round(time.Millisecond), stats[i].NotSent)
		}
	}
	if err := writeComparison(s.out, rep, su.formats, dir); err != nil {
		return nil, err
	}
	return rep, nil
}

// compareLoadSnapshot reads the snapshot's inbound exchanges, and its
// outbound ones when they are to be mocked.
func compareLoadSnapshot(ctx context.Context, path string, outboundToo bool) (inbound, outbound []*snapshots.Exchange, err error) {
	snap, err := snapshots.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("compare: %w", err)
	}
	defer snap.Close()
	for e, err := range snap.Exchanges(ctx, snapshots.Filter{}) {
		if err != nil {
			return nil, nil, fmt.Errorf("compare: read %s: %w", path, err)
		}
		switch {
		case e.Direction == snapshots.Inbound:
			inbound = append(inbound, e)
		case outboundToo:
			outbound = append(outbound, e)
		}
	}
	if len(inbound) == 0 {
		return nil, nil, fmt.Errorf("compare: %s holds no inbound requests to replay", path)
	}
	return inbound, outbound, nil
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

// startCompareSideEnv starts one side's mock and SQL counter. On error the
// returned env (if any) holds what was started, for the caller to close.
func startCompareSideEnv(ctx context.Context, opts *compareOptions, su *compareSetup, side *compareSide, pgListen string, authority *ca.CA, outbound []*snapshots.Exchange) (*compareSideEnv, error) {
	e := &compareSideEnv{side: side}
	if len(opts.mocks) > 0 {
		var services []string
		if !slices.Contains(opts.mocks, "all") {
			services = opts.mocks
		}
		m, err := mock.New(mock.Config{Exchanges: outbound, Services: services, OnMiss: opts.onMiss, Timing: opts.mockTiming, CA: authority})
		if err != nil {
			return e, fmt.Errorf("compare: %s mock: %w", side.name, err)
		}
		e.mock = m
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return e, fmt.Errorf("compare: %s mock: %w", side.name, err)
		}
		e.mockAddr = l.Addr().String()
		e.mockSrv = &http.Server{Handler: m, ReadHeaderTimeout: 30 * time.Second}
		go e.mockSrv.Serve(l)
		bundle, err := authority.BundlePath()
		if err != nil {
			return e, fmt.Errorf("compare: %w", err)
		}
		e.wiring.Proxy, e.wiring.CABundle, e.wiring.CACert = e.mockAddr, bundle, authority.CertPath()
	}
	if su.pgServer != "" {
		p, err := sqlcount.New(sqlcount.Config{Upstream: su.pgServer})
		if err != nil {
			return e, fmt.Errorf("compare: %s sqlcount: %w", side.name, err)
		}
		l, err := net.Listen("tcp", pgListen)
		if err != nil {
			return e, fmt.Errorf("compare: %s sqlcount: %w", side.name, err)
		}
		e.sql, e.sqlAddr = p, l.Addr().String()
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		e.sqlStop, e.sqlDone = cancel, make(chan struct{})
		go func() {
			defer close(e.sqlDone)
			p.Serve(sctx, l)
		}()
		e.wiring.Postgres, e.wiring.SQLCount = su.pgServer, e.sqlAddr
	}
	return e, nil
}

// compareURLNotice tells the user how to start a build given as a URL.
func compareURLNotice(w io.Writer, e *compareSideEnv, su *compareSetup) {
	var parts []string
	if e.mockAddr != "" {
		services := strings.Join(e.mock.Services(), ", ")
		if services == "" {
			services = "no recorded upstream"
		}
		fmt.Fprintf(w, "%s mock: answering %s on %s\n", e.side.name, services, e.mockAddr)
		parts = append(parts, "HTTP_PROXY=http://"+e.mockAddr, "HTTPS_PROXY=http://"+e.mockAddr, "NO_PROXY=localhost,127.0.0.1,::1",
			"SSL_CERT_FILE="+e.wiring.CABundle, "NODE_EXTRA_CA_CERTS="+e.wiring.CACert)
	}
	if e.sqlAddr != "" {
		fmt.Fprintf(w, "%s sqlcount: counting SQL on %s in front of %s; point the %s's database at %s\n", e.side.name, e.sqlAddr, su.pgServer, e.side.name, e.sqlAddr)
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "start the %s build with:\n  %s\n", e.side.name, strings.Join(parts, " "))
	}
	if len(parts) > 0 || e.sqlAddr != "" {
		fmt.Fprintf(w, "waiting for the %s at %s…\n", e.side.name, e.side.url)
	}
}

// compareResetFunc runs the --reset command: /bin/sh -c with REPLAY_SIDE and
// REPLAY_PHASE, output appended to logPath.
func compareResetFunc(command, logPath string) func(ctx context.Context, side, phase string) error {
	return func(ctx context.Context, side, phase string) error {
		if side == "" {
			side = "both"
		}
		what := fmt.Sprintf("--reset before the %s %s phase", side, phase)
		if side == "both" {
			what = "--reset before the interleaved load"
		}
		log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("compare: %s: %w", what, err)
		}
		defer log.Close()
		fmt.Fprintf(log, "# %s: REPLAY_SIDE=%s REPLAY_PHASE=%s\n", time.Now().Format(time.RFC3339), side, phase)
		var tail strings.Builder
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
		cmd.Env = append(os.Environ(), "REPLAY_SIDE="+side, "REPLAY_PHASE="+phase)
		out := io.MultiWriter(log, &lockedWriter{w: &tail})
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("compare: %s: %w", what, ctx.Err())
			}
			status := err.Error()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() >= 0 {
				status = "exited with status " + strconv.Itoa(ee.ExitCode())
			}
			return fmt.Errorf("compare: %s: %q %s: %s", what, command, status, lastLine(tail.String()))
		}
		return nil
	}
}

// lockedWriter serialises writes from a command's stdout and stderr.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lastLine returns the last non-empty line of out, or "(no output)".
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return "(no output)"
}

// compareStallSettings records in a run file how far a side fell behind the
// open model.
func compareStallSettings(s map[string]string, st replayer.Stats) {
	if st.Late > 0 {
		s["late_requests"] = strconv.FormatInt(st.Late, 10)
		s["max_late"] = st.MaxLate.Round(time.Millisecond).String()
	}
	if st.NotSent > 0 {
		s["not_sent"] = strconv.FormatInt(st.NotSent, 10)
	}
}

// compareProgressLine draws a live one-line progress display on a terminal:
// the side, phase and slice, the time since the comparison started, and the
// side's load requests and failures so far.
type compareProgressLine struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	done  map[string][2]int64 // per side: load requests and failures of finished slices
	drawn bool
}

func newCompareProgressLine(w io.Writer) *compareProgressLine {
	return &compareProgressLine{w: w, start: time.Now(), done: map[string][2]int64{}}
}

func (pl *compareProgressLine) update(p replayer.CompareProgress) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "\r\033[K%5.1fs  %-9s %-7s", time.Since(pl.start).Seconds(), p.Side, p.Phase)
	switch p.Phase {
	case "load":
		d := pl.done[p.Side]
		n, failed := d[0]+p.Progress.Done, d[1]+p.Progress.Failures
		if p.Progress.Final {
			pl.done[p.Side] = [2]int64{n, failed}
		}
		if p.Slices > 1 {
			fmt.Fprintf(&b, " slice %d/%d", p.Slice, p.Slices)
		}
		fmt.Fprintf(&b, "  %d requests, %d failed  %.0f/s", n, failed, p.Progress.Rate)
	case replayer.PhaseWarmup:
		fmt.Fprintf(&b, "  %d requests  %.0f/s", p.Progress.Done, p.Progress.Rate)
	}
	io.WriteString(pl.w, b.String())
	pl.drawn = true
}

func (pl *compareProgressLine) clear() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.drawn {
		io.WriteString(pl.w, "\r\033[K")
	}
}

// isTerminalWriter reports whether w is a terminal.
func isTerminalWriter(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminal(f)
}
