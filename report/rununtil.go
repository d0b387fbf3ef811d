package report

import (
	"fmt"
	"strconv"
	"time"

	"github.com/replaykit/replay/analyzer"
)

// RunUntilDocument says how a comparison that ran until it knew (replay
// compare --max-duration) went.
type RunUntilDocument struct {
	// Looks is the number of looks taken.
	Looks int `json:"looks"`
	// RanS is the load per side when it stopped, MaxDurationS the most it
	// could have run, in seconds.
	RanS         float64 `json:"ran_s"`
	MaxDurationS float64 `json:"max_duration_s"`
	// Stopped says why it stopped.
	Stopped string `json:"stopped"`
	// Alpha is the false-alarm rate spent over all the looks; the last
	// look was judged at LastConfidence.
	Alpha          float64 `json:"alpha"`
	LastConfidence float64 `json:"last_confidence"`
}

// SetAsideDocument is a slice pair left out of the latency changes.
type SetAsideDocument struct {
	// Pair numbers the pair from 1; Side and Slice name its disturbed
	// slice, Factor how much slower than its run's typical slice it was.
	Pair   int     `json:"pair"`
	Side   string  `json:"side"`
	Slice  int     `json:"slice"`
	Factor float64 `json:"factor"`
}

// runUntil reads the looks from a run's settings; nil when the comparison
// did not run until it knew.
func runUntil(settings map[string]string) *RunUntilDocument {
	looks, err := strconv.Atoi(settings[SettingLooks])
	if err != nil || looks == 0 {
		return nil
	}
	d := &RunUntilDocument{Looks: looks, Stopped: settings[SettingStopped]}
	if v, err := time.ParseDuration(settings[SettingRan]); err == nil {
		d.RanS = v.Seconds()
	}
	if v, err := time.ParseDuration(settings[SettingMaxDuration]); err == nil {
		d.MaxDurationS = v.Seconds()
	}
	d.Alpha, _ = strconv.ParseFloat(settings[SettingAlpha], 64)
	d.LastConfidence, _ = strconv.ParseFloat(settings[SettingConfidence], 64)
	return d
}

// runUntilText says how long a comparison that ran until it knew ran and
// why it stopped, e.g. "ran until it knew: 40s of at most 1m0s per side,
// 3 looks; stopped: every endpoint with enough requests is conclusive";
// "" for a comparison of fixed length.
func runUntilText(c *analyzer.Comparison) string {
	d := runUntil(c.Baseline.Info.Settings)
	if d == nil {
		return ""
	}
	s := fmt.Sprintf("ran until it knew: %s of at most %s per side, %d look%s", time.Duration(d.RanS*float64(time.Second)),
		time.Duration(d.MaxDurationS*float64(time.Second)), d.Looks, map[bool]string{true: "", false: "s"}[d.Looks == 1])
	if d.Stopped != "" {
		s += "; stopped: " + d.Stopped
	}
	return s
}

// confidenceText is the confidence a comparison was judged at: "99%", or
// for one that ran until it knew "99% over 3 looks (99.67% at the last)".
func confidenceText(c *analyzer.Comparison) string {
	d := runUntil(c.Baseline.Info.Settings)
	if d == nil || d.Alpha <= 0 {
		return analyzer.FormatCount(100*c.Options.Confidence) + "%"
	}
	return fmt.Sprintf("%s%% over %d look%s (%s%% at the last)", analyzer.FormatCount(100*(1-d.Alpha)), d.Looks,
		map[bool]string{true: "", false: "s"}[d.Looks == 1], strconv.FormatFloat(100*c.Options.Confidence, 'g', 4, 64))
}
