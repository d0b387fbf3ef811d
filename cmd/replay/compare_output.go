package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// writeComparison writes rep in formats[0] to w and, when dir is not empty,
// every format to dir/report.EXT; the report files join rep.Artifacts first,
// so that every report lists them all.
func writeComparison(w io.Writer, rep *report.ComparisonReport, formats []report.Format, dir string) error {
	if dir != "" {
		// In the order of report.Formats, as `replay report DIR` lists them.
		for _, f := range report.Formats() {
			if slices.Contains(formats, f) {
				rep.Artifacts = append(rep.Artifacts, report.Artifact{Name: f.Title(), Path: filepath.Join(dir, f.FileName())})
			}
		}
		for _, f := range formats {
			var b bytes.Buffer
			if err := report.WriteComparison(&b, f, rep); err != nil {
				return fmt.Errorf("compare: %s report: %w", f, err)
			}
			if err := os.WriteFile(filepath.Join(dir, f.FileName()), b.Bytes(), 0o644); err != nil {
				return fmt.Errorf("compare: %w", err)
			}
		}
	}
	if err := report.WriteComparison(w, formats[0], rep); err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return nil
}

// compareLocal runs the comparison as --shards N processes here (each
// interleaving both builds over its part), merges each side's run files
// and compares the merged ones.
func compareLocal(ctx context.Context, opts *compareOptions, su *compareSetup, s streams) (*report.ComparisonReport, error) {
	dir, err := session.OutDir(opts.out)
	exe, _ := os.Executable()
	var runs []string
	if err == nil {
		runs, err = opts.shard.LocalShards(exe, os.Args[1:], filepath.Join(dir, "shards")).Compare(ctx, dir, session.BaselineRun, session.CandidateRun)
	}
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	opts.runs, opts.out, su.goals = runs, dir, su.replay.goals
	return compareOffline(ctx, opts, su, s)
}

// compareOffline compares two existing run files.
func compareOffline(ctx context.Context, opts *compareOptions, su *compareSetup, s streams) (*report.ComparisonReport, error) {
	rep, err := session.CompareFilesWith(ctx, opts.runs[0], opts.runs[1], su.goals, su.analysis)
	if err != nil {
		return nil, err
	}
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
