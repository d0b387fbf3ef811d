package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

// compareRunFiles compares two run files, the baseline first, and checks
// goals against the candidate. The report has no artifacts yet.
func compareRunFiles(ctx context.Context, basePath, candPath string, goals []analyzer.Goal) (*report.ComparisonReport, error) {
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
	c, err := analyzer.CompareRuns(ctx, base, cand, analyzer.SummarizeOptions{}, analyzer.CompareOptions{})
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if n := failureNote(c); n != "" {
		c.Notes = append(c.Notes, n)
	}
	return &report.ComparisonReport{Comparison: c, Goals: analyzer.Check(c.Candidate, goals)}, nil
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

// reportFile is the file name of a report in format f: report.txt, …
func reportFile(f report.Format) string { return "report" + f.Ext() }

// reportName names a report in Artifacts: "JSON report", …
func reportName(f report.Format) string {
	switch f {
	case report.JSON:
		return "JSON report"
	case report.Markdown:
		return "Markdown report"
	case report.JUnit:
		return "JUnit report"
	case report.HTML:
		return "HTML report"
	}
	return "text report"
}

// writeComparison writes rep in formats[0] to w and, when dir is not empty,
// every format to dir/report.EXT; the report files join rep.Artifacts first,
// so that every report lists them all.
func writeComparison(w io.Writer, rep *report.ComparisonReport, formats []report.Format, dir string) error {
	if dir != "" {
		// In the order of report.Formats, as `replay report DIR` lists them.
		for _, f := range report.Formats() {
			if slices.Contains(formats, f) {
				rep.Artifacts = append(rep.Artifacts, report.Artifact{Name: reportName(f), Path: filepath.Join(dir, reportFile(f))})
			}
		}
		for _, f := range formats {
			var b bytes.Buffer
			if err := report.WriteComparison(&b, f, rep); err != nil {
				return fmt.Errorf("compare: %s report: %w", f, err)
			}
			if err := os.WriteFile(filepath.Join(dir, reportFile(f)), b.Bytes(), 0o644); err != nil {
				return fmt.Errorf("compare: %w", err)
			}
		}
	}
	if err := report.WriteComparison(w, formats[0], rep); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return nil
}

// compareOffline compares two existing run files.
func compareOffline(ctx context.Context, opts *compareOptions, su *compareSetup, s streams) (*report.ComparisonReport, error) {
	rep, err := compareRunFiles(ctx, opts.runs[0], opts.runs[1], su.goals)
	if err != nil {
		return nil, err
	}
	rep.Artifacts = []report.Artifact{{Name: "baseline run", Path: opts.runs[0]}, {Name: "candidate run", Path: opts.runs[1]}}
	if opts.out != "" {
		if err := os.MkdirAll(opts.out, 0o755); err != nil {
			return nil, fmt.Errorf("compare: --out: %w", err)
		}
	}
	if err := writeComparison(s.out, rep, su.formats, opts.out); err != nil {
		return nil, err
	}
	return rep, nil
}

// recordedGoals parses the goals a run file recorded in its settings
// ("goals", joined with "; ").
func recordedGoals(info snapshots.RunInfo) ([]analyzer.Goal, error) {
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
