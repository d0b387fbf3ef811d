package session

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// TestCompareRecordsSensitivity: a comparison's run files record its
// minimum change and confidence, so that LoadComparison compares again with
// them; options given to LoadComparisonWith replace them, the minimum
// change as a whole.
func TestCompareRecordsSensitivity(t *testing.T) {
	dir := t.TempDir()
	given := analyzer.CompareOptions{MinRelative: 0.2, MinChange: 8 * time.Millisecond, Confidence: 0.95}
	res, err := Compare(context.Background(), CompareConfig{
		Config:    Config{Inbound: inbound("/a"), Env: []string{envServe + "=1"}},
		Baseline:  SideConfig{Name: "baseline", Cmd: os.Args[0]},
		Candidate: SideConfig{Name: "candidate", Cmd: os.Args[0]},
		Dir:       dir,
		Plan:      replayer.ComparePlan{Load: replayer.LoadPlan{VUs: 1, Duration: 500 * time.Millisecond}},
		Analysis:  given,
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Report.Comparison.Candidate.Info.Settings; s[SettingMinChange] != "20%,8ms" || s[SettingConfidence] != "0.95" {
		t.Errorf("settings %v; want min_change 20%%,8ms and confidence 0.95", s)
	}
	for _, tc := range []struct {
		opts      analyzer.CompareOptions
		rel, conf float64
		minChange time.Duration
	}{
		{analyzer.CompareOptions{}, 0.2, 0.95, 8 * time.Millisecond},
		{analyzer.CompareOptions{Confidence: 0.9}, 0.2, 0.9, 8 * time.Millisecond},
		{analyzer.CompareOptions{MinChange: 3 * time.Millisecond}, 0.1, 0.95, 3 * time.Millisecond},
	} {
		rep, err := LoadComparisonWith(context.Background(), dir, nil, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if o := rep.Comparison.Options; o.MinRelative != tc.rel || o.Confidence != tc.conf || o.MinChange != tc.minChange {
			t.Errorf("given %+v: min change %g, %s at %g; want %g, %s at %g", tc.opts, o.MinRelative, o.MinChange, o.Confidence, tc.rel, tc.minChange, tc.conf)
		}
	}
}

// TestRecordedCheck: the share of failed requests and the build's exit a
// run file recorded, and --max-failed over them.
func TestRecordedCheck(t *testing.T) {
	info := func(s map[string]string) snapshots.RunInfo { return snapshots.RunInfo{Name: "run", Settings: s} }
	for _, tc := range []struct {
		settings  map[string]string
		maxFailed float64
		want      float64
	}{
		{nil, 0, analyzer.DefaultMaxFailed},
		{map[string]string{SettingMaxFailed: "0.05"}, 0, 0.05},
		{map[string]string{SettingMaxFailed: "0"}, 0, 0},
		{map[string]string{SettingMaxFailed: "0"}, 0.2, 0.2},
		{map[string]string{SettingMaxFailed: "0.05"}, -1, 0},
	} {
		got, exit, err := recordedCheck(info(tc.settings), tc.maxFailed, "")
		if err != nil || got != tc.want || exit != nil {
			t.Errorf("%v, %g: %g, %v, %v; want %g", tc.settings, tc.maxFailed, got, exit, err, tc.want)
		}
	}
	_, exit, err := recordedCheck(info(map[string]string{SettingBuildExit: "exited with status 3", SettingBuildLastLines: "a\nb"}), 0, "r.run.build.log")
	if err != nil || exit == nil || exit.How != "exited with status 3" || len(exit.LastLines) != 2 || exit.LastLines[1] != "b" || exit.Log != "r.run.build.log" {
		t.Errorf("exit %+v, %v", exit, err)
	}
	if _, _, err := recordedCheck(info(map[string]string{SettingMaxFailed: "lots"}), 0, ""); err == nil {
		t.Error("max_failed \"lots\": no error")
	}
}
