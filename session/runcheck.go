package session

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// Settings keys of a run file that let LoadRun check its failed requests
// again as Run did.
const (
	// SettingMaxFailed is the largest share of failed requests the run
	// allowed, a fraction ("0.01"; "0": none).
	SettingMaxFailed = "max_failed"
	// SettingBuildExit says how the build replay started ended during the
	// run ("exited with status 3"); absent when it ran on.
	SettingBuildExit = "build_exit"
	// SettingBuildLastLines are that build's last lines of output,
	// joined with "\n".
	SettingBuildLastLines = "build_last_lines"
	// SettingMinChange and SettingConfidence are a comparison's
	// sensitivity (analyzer.CompareOptions) in the forms --min-change and
	// --confidence take ("20%,8ms", "0.95"); absent: the defaults.
	SettingMinChange  = "min_change"
	SettingConfidence = "confidence"
	// SettingMinCPUChange is --min-cpu-change ("5%"); absent: the p95's.
	SettingMinCPUChange = "min_cpu_change"
)

// ParseMaxFailed reads a share of failed requests (analyzer.ParseMaxFailed)
// as RunConfig.MaxFailed and LoadRunWith take it: "0" (none may fail) is
// negative, "" zero (the default, or what the run recorded).
func ParseMaxFailed(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := analyzer.ParseMaxFailed(s)
	if v == 0 && err == nil {
		v = -1
	}
	return v, err
}

// maxFailedFraction is a RunConfig.MaxFailed as a fraction: zero means
// analyzer.DefaultMaxFailed, a negative value none.
func maxFailedFraction(v float64) float64 {
	switch {
	case v == 0:
		return analyzer.DefaultMaxFailed
	case v < 0:
		return 0
	}
	return v
}

// recordExit records in the side's settings how its build ended during the
// run, when it did, so that LoadRun names it as Run does.
func (s *Side) recordExit() {
	if s.exit == nil || s.info.Settings == nil {
		return
	}
	s.info.Settings[SettingBuildExit] = s.exit.How
	put(s.info.Settings, SettingBuildLastLines, strings.Join(s.exit.LastLines, "\n"))
}

// recordedCheck returns the share of failed requests a run file recorded,
// or maxFailed when set (as RunConfig.MaxFailed), and how its build ended
// when it recorded that; log is the build log to name.
func recordedCheck(info snapshots.RunInfo, maxFailed float64, log string) (float64, *analyzer.BuildExit, error) {
	if v := info.Settings[SettingMaxFailed]; v != "" && maxFailed == 0 {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f > 1 {
			return 0, nil, fmt.Errorf("%s %q recorded in the %s run: want a fraction from 0 to 1", SettingMaxFailed, v, info.Name)
		}
		maxFailed = f
		if f == 0 {
			maxFailed = -1
		}
	}
	how := info.Settings[SettingBuildExit]
	if how == "" {
		return maxFailedFraction(maxFailed), nil, nil
	}
	var lines []string
	if l := info.Settings[SettingBuildLastLines]; l != "" {
		lines = strings.Split(l, "\n")
	}
	return maxFailedFraction(maxFailed), &analyzer.BuildExit{How: how, LastLines: lines, Log: log}, nil
}

// recordSensitivity records a comparison's sensitivity in its settings, so
// that LoadComparison compares again as it did.
func recordSensitivity(s map[string]string, o analyzer.CompareOptions) {
	var parts []string
	if o.MinRelative > 0 {
		parts = append(parts, strconv.FormatFloat(100*o.MinRelative, 'g', -1, 64)+"%")
	}
	if o.MinChange > 0 {
		parts = append(parts, o.MinChange.String())
	}
	put(s, SettingMinChange, strings.Join(parts, ","))
	if o.MinCPURelative > 0 {
		s[SettingMinCPUChange] = strconv.FormatFloat(100*o.MinCPURelative, 'g', -1, 64) + "%"
	}
	if o.Confidence > 0 {
		s[SettingConfidence] = strconv.FormatFloat(o.Confidence, 'g', -1, 64)
	}
}

// recordedSensitivity fills what o leaves unset (zero minimum change,
// zero confidence) with the sensitivity a comparison's run file recorded.
func recordedSensitivity(info snapshots.RunInfo, o analyzer.CompareOptions) (analyzer.CompareOptions, error) {
	if v := info.Settings[SettingMinChange]; v != "" && o.MinRelative == 0 && o.MinChange == 0 {
		r, err := analyzer.ParseMinChange(v)
		if err != nil {
			return o, fmt.Errorf("%s recorded in the %s run: %w", SettingMinChange, info.Name, err)
		}
		o.MinRelative, o.MinChange = r.MinRelative, r.MinChange
	}
	if v := info.Settings[SettingMinCPUChange]; v != "" && o.MinCPURelative == 0 {
		r, err := analyzer.ParseMinCPUChange(v)
		if err != nil {
			return o, fmt.Errorf("%s recorded in the %s run: %w", SettingMinCPUChange, info.Name, err)
		}
		o.MinCPURelative = r
	}
	if v := info.Settings[SettingConfidence]; v != "" && o.Confidence == 0 {
		c, err := strconv.ParseFloat(v, 64)
		if err == nil {
			err = analyzer.ParseConfidence(c)
		}
		if err != nil {
			return o, fmt.Errorf("%s %q recorded in the %s run: %w", SettingConfidence, v, info.Name, err)
		}
		o.Confidence = c
	}
	return o, nil
}
