package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/analyzer/respdiff"
	"github.com/replaykit/replay/internal/spool"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

// CompareFiles compares two run files, the baseline first, and checks
// goals against the candidate. The report lists the two run files.
func CompareFiles(ctx context.Context, basePath, candPath string, goals []analyzer.Goal) (*report.ComparisonReport, error) {
	return CompareFilesWith(ctx, basePath, candPath, goals, analyzer.CompareOptions{})
}

// CompareFilesWith is CompareFiles with the analyzer's options (minimum
// change, confidence; zero values mean its defaults).
func CompareFilesWith(ctx context.Context, basePath, candPath string, goals []analyzer.Goal, opts analyzer.CompareOptions) (*report.ComparisonReport, error) {
	return compareFiles(ctx, basePath, candPath, [2]*snapshots.BuildCPU{}, goals, opts)
}

// compareFiles is CompareFilesWith with the builds' CPU time so far, for a
// look at run files still being written (they get it as they close); nil
// keeps a file's own.
func compareFiles(ctx context.Context, basePath, candPath string, cpu [2]*snapshots.BuildCPU, goals []analyzer.Goal, opts analyzer.CompareOptions) (*report.ComparisonReport, error) {
	base, err := snapshots.OpenRun(basePath)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	defer base.Close()
	cand, err := snapshots.OpenRun(candPath)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	defer cand.Close()
	if opts.Responses, err = recordedRules(base.Info(), opts.Responses); err != nil {
		return nil, fmt.Errorf("compare: %s: %w", basePath, err)
	}
	opts, closeRecording := withRecording(ctx, base.Info(), opts)
	defer closeRecording()
	c, err := analyzer.CompareRuns(ctx, withCPU(base, cpu[0]), withCPU(cand, cpu[1]), analyzer.SummarizeOptions{}, opts)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if n := failureNote(c); n != "" {
		c.Notes = append(c.Notes, n)
	}
	return &report.ComparisonReport{Comparison: c, Goals: analyzer.CheckComparison(c, goals),
		Artifacts: []report.Artifact{{Name: "baseline run", Path: basePath}, {Name: "candidate run", Path: candPath}}}, nil
}

// cpuSoFar is a run file read with the build's CPU time measured so far.
type cpuSoFar struct {
	*snapshots.Run
	cpu *snapshots.BuildCPU
}

func (r cpuSoFar) Info() snapshots.RunInfo {
	info := r.Run.Info()
	info.BuildCPU = r.cpu
	return info
}

// withCPU reads r with cpu as its build's CPU time, unless cpu is nil.
func withCPU(r *snapshots.Run, cpu *snapshots.BuildCPU) analyzer.RunSource {
	if cpu == nil {
		return r
	}
	return cpuSoFar{r, cpu}
}

// failureNote warns when many requests failed on either side: the
// comparison then compares failures, whatever its verdict says.
func failureNote(c *analyzer.Comparison) string {
	const many = 5.0 // percent
	var parts []string
	for i, s := range []*analyzer.Summary{c.Baseline, c.Candidate} {
		side := [2]string{"baseline", "candidate"}[i]
		o := s.Overall
		if o == nil || o.Requests == 0 || o.FailureRate() < many {
			continue
		}
		part := fmt.Sprintf("%s of the %s's %s requests failed", analyzer.FormatPercent(o.FailureRate()), side, strconv.FormatInt(o.Requests, 10))
		if len(o.Failures) > 0 {
			part += fmt.Sprintf(" (most often %s)", o.Failures[0])
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + ": check the builds' logs and the data (--reset) before trusting the latency figures"
}

// LoadComparison compares again the run files of a comparison's directory
// (Compare's Dir), with the goals the comparison was given and extra ones
// checked against the candidate; the report lists the files in dir,
// reports included (report.EXT).
func LoadComparison(ctx context.Context, dir string, extra []analyzer.Goal) (*report.ComparisonReport, error) {
	return LoadComparisonWith(ctx, dir, extra, analyzer.CompareOptions{})
}

// LoadComparisonWith is LoadComparison with the analyzer's options: a
// minimum change (MinRelative and MinChange both zero) or a Confidence left
// zero is the one the comparison was made with (see SettingMinChange),
// the default when it recorded none.
func LoadComparisonWith(ctx context.Context, dir string, extra []analyzer.Goal, opts analyzer.CompareOptions) (*report.ComparisonReport, error) {
	base, cand := filepath.Join(dir, BaselineRun), filepath.Join(dir, CandidateRun)
	if !fileExists(base) || !fileExists(cand) {
		return nil, fmt.Errorf("%s holds no %s and %s: not the output directory of replay compare", dir, BaselineRun, CandidateRun)
	}
	run, err := snapshots.OpenRun(cand)
	if err != nil {
		return nil, err
	}
	goals, err := RecordedGoals(run.Info())
	// The last look's confidence (--max-duration) over the one recorded
	// for the whole comparison.
	opts = lookOptions(run.Info().Settings, opts)
	if err == nil {
		opts, err = recordedSensitivity(run.Info(), opts)
	}
	run.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cand, err)
	}
	rep, err := CompareFilesWith(ctx, base, cand, append(goals, extra...), opts)
	if err != nil {
		return nil, err
	}
	for _, a := range []report.Artifact{
		{Name: "baseline build log", Path: filepath.Join(dir, "baseline.log")},
		{Name: "candidate build log", Path: filepath.Join(dir, "candidate.log")},
		{Name: "reset log", Path: filepath.Join(dir, ResetLog)},
	} {
		if fileExists(a.Path) {
			rep.Artifacts = append(rep.Artifacts, a)
		}
	}
	for _, f := range report.Formats() {
		if p := filepath.Join(dir, f.FileName()); fileExists(p) {
			rep.Artifacts = append(rep.Artifacts, report.Artifact{Name: f.Title(), Path: p})
		}
	}
	return rep, nil
}

// LoadRun reports a run file again, with the goals the run was given and
// extra ones, and its failed requests checked as the run checked them
// (LoadRunWith); the report lists the run file and its build log
// (RUN.build.log) when it exists.
func LoadRun(ctx context.Context, path string, extra []analyzer.Goal) (*report.RunReport, error) {
	return LoadRunWith(ctx, path, extra, 0)
}

// LoadRunWith is LoadRun with the largest share of load requests that may
// fail, as RunConfig.MaxFailed: zero means the share the run was given
// (SettingMaxFailed; analyzer.DefaultMaxFailed when it recorded none),
// a negative value none. The causes name the build's exit as Run did.
func LoadRunWith(ctx context.Context, path string, extra []analyzer.Goal, maxFailed float64) (*report.RunReport, error) {
	return LoadRunChecked(ctx, path, extra, maxFailed, respdiff.Rules{})
}

// LoadRunChecked is LoadRunWith that compares the run's answers with the
// recording again when it was checked so (replay run --check-responses),
// or when rules are given: the rules it was checked with and rules.
func LoadRunChecked(ctx context.Context, path string, extra []analyzer.Goal, maxFailed float64, rules respdiff.Rules) (*report.RunReport, error) {
	run, err := snapshots.OpenRun(path)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	goals, err := RecordedGoals(run.Info())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	log := path + ".build.log"
	if !fileExists(log) {
		log = ""
	}
	share, exit, err := recordedCheck(run.Info(), maxFailed, log)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sum, err := analyzer.SummarizeRun(ctx, run, analyzer.SummarizeOptions{})
	if err != nil {
		return nil, err
	}
	rep := &report.RunReport{Summary: sum, Goals: analyzer.Check(sum, append(goals, extra...)), Artifacts: []report.Artifact{{Name: "run file", Path: path}},
		Failures: analyzer.CheckFailures(sum, share, exit)}
	if rep.Responses, err = recheck(ctx, run, rules); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if log != "" {
		rep.Artifacts = append(rep.Artifacts, report.Artifact{Name: "build log", Path: log})
	}
	return rep, nil
}

// RecordedGoals parses the goals a run file recorded in its settings
// ("goals", joined with "; ").
func RecordedGoals(info snapshots.RunInfo) ([]analyzer.Goal, error) {
	v := strings.TrimSpace(info.Settings["goals"])
	if v == "" {
		return nil, nil
	}
	goals, err := analyzer.ParseGoals(strings.Split(v, "; "))
	if err != nil {
		return nil, fmt.Errorf("goals recorded in the %s run: %w", info.Name, err)
	}
	return goals, nil
}

func fileExists(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

// Load reads a snapshot's inbound exchanges, to replay, and its outbound
// ones when outbound is set, for a mock (Config.Mock.Exchanges). A
// snapshot without inbound exchanges is an error.
func Load(ctx context.Context, path string, outbound bool) (in, out []*snapshots.Exchange, err error) {
	snap, err := snapshots.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer snap.Close()
	for e, err := range snap.Exchanges(ctx, snapshots.Filter{}) {
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", path, err)
		}
		switch {
		case e.Direction == snapshots.Inbound:
			in = append(in, e)
		case outbound:
			out = append(out, e)
		}
	}
	if len(in) == 0 {
		return nil, nil, fmt.Errorf("%s holds no inbound requests to replay", path)
	}
	return in, out, nil
}

// MemoryLimit is the soft limit on the Go runtime's memory the replay
// command sets (runtime/debug.SetMemoryLimit; GOMEMLIMIT may set a lower
// one): a run reads its snapshot as it goes, so what it holds stays far
// below it, and the limit keeps the garbage collector from letting the heap
// grow to twice that.
const MemoryLimit = 128 << 20

// Recording is a snapshot opened to replay in bounded memory: its
// requests (Config.Source) and what a mock reads (mock.Config.Snapshot),
// read as needed. Close it after the session.
type Recording struct {
	Snapshot *snapshots.Snapshot
	Source   *replayer.Source
	spooled  []io.Closer
}

// OpenRecording opens the snapshot at path and indexes the inbound requests
// of the endpoints selected (all when none is given), for Config.Source; a
// snapshot without any is an error. ctx bounds every read of the
// recording.
func OpenRecording(ctx context.Context, path string, endpoints []string) (*Recording, error) {
	snap, err := snapshots.Open(path)
	if err != nil {
		return nil, err
	}
	src, err := replayer.NewSource(ctx, snap, endpoints)
	if err != nil {
		snap.Close()
		if errors.Is(err, replayer.ErrNoRequests) && len(endpoints) == 0 {
			return nil, fmt.Errorf("%s holds no inbound requests to replay", path)
		}
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &Recording{Snapshot: snap, Source: src}, nil
}

// Spool copies the requests, and the recorded answers of m when not nil
// (its Index built), to spools in the temporary directory (TMPDIR), so
// that the load reads them from there rather than through SQLite, and
// returns their size and what frees them (it holds nothing else: the
// requests' index can go before the spools). Without room there, notes
// hear why and the rest is read from the snapshot during the load.
func (r *Recording) Spool(ctx context.Context, m *mock.Config, notes io.Writer) (size int64, free func(), err error) {
	var c io.Closer
	if c, err = r.Source.Spool(ctx, ""); err == nil {
		r.spooled = append(r.spooled, c)
		if m != nil && m.Index != nil {
			if c, err = m.Index.Spool(ctx, ""); err == nil && c != nil {
				r.spooled = append(r.spooled, c)
			}
		}
	}
	if errors.Is(err, spool.ErrNoSpool) {
		fmt.Fprintf(notes, "replay: warning: %v: requests and answers not spooled are read from the snapshot during the load, with less CPU left for it\n", err)
		err = nil
	}
	size = r.Source.SpoolSize()
	if m != nil && m.Index != nil {
		size += m.Index.SpoolSize()
	}
	files := r.spooled
	return size, func() { closeAll(files) }, err
}

// closeAll closes each of cs.
func closeAll(cs []io.Closer) {
	for _, c := range cs {
		c.Close()
	}
}

// Close frees the spools and closes the snapshot.
func (r *Recording) Close() error {
	closeAll(r.spooled)
	r.spooled = nil
	return r.Snapshot.Close()
}

// NewDir creates a new directory in parent named prefix plus the time,
// e.g. replay-compare-20261201-120000 (with -2, -3, … when taken), for a
// comparison's files.
func NewDir(parent, prefix string) (string, error) {
	base := prefix + time.Now().Format("20060102-150405")
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = base + "-" + strconv.Itoa(i)
		}
		if parent != "." {
			name = filepath.Join(parent, name)
		}
		err := os.Mkdir(name, 0o755)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, os.ErrExist) || i >= 100 {
			return "", err
		}
	}
}
