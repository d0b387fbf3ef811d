package session

import (
	"fmt"
	"strings"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/replayer"
)

// Notices say what a user should look at after a run, one sentence each:
// wiring faults, a target that fell behind the open model, requests that
// waited for the answer they depend on, mock misses. (--max-inflight
// is named as the CLI's flag.)
func (r *RunResult) Notices() []string {
	var out []string
	for _, f := range r.Report.Faults() {
		out = append(out, "wiring: "+f.Text)
	}
	if st := r.Stats; st.NotSent > 0 || st.Late > 0 {
		out = append(out, fmt.Sprintf("the target fell behind the open model: all %d allowed requests were in flight (--max-inflight), so %d requests started late (up to %s after their intended start) and %d could not be sent at all (failed as %q); latency counts from the intended start",
			st.MaxInFlight, st.Late, st.MaxLate.Round(time.Millisecond), st.NotSent, "not sent: target stalled"))
	}
	if n := waitedNotice(r.Stats); n != "" {
		out = append(out, n)
	}
	if r.MockMisses > 0 {
		out = append(out, fmt.Sprintf("the mock could not answer %d outbound requests; see 'replay mock' for the closest recorded ones", r.MockMisses))
	}
	if n := lonely(r.lone); n != "" {
		out = append(out, n)
	}
	return out
}

// Notices say what a user should look at after a comparison: wiring
// faults (analyzer.CompareFaults), each side's
// mock misses, with the closest recorded requests (indented lines), and a
// side that fell behind the open model.
func (r *CompareResult) Notices() []string {
	var out []string
	for _, f := range r.Report.Comparison.Faults {
		out = append(out, faultLabel(f)+f.Text)
	}
	stats := [2]replayer.Stats{r.Stats.Baseline, r.Stats.Candidate}
	for i, s := range r.Sides {
		if s == nil {
			continue // shards run elsewhere (Config.Local)
		}
		if n := s.MockMisses(); n > 0 {
			var b strings.Builder
			fmt.Fprintf(&b, "the %s's mock could not answer %d outbound requests; the closest recorded ones:", s.Name(), n)
			log := s.MissLog()
			for _, m := range log[:min(3, len(log))] {
				fmt.Fprintf(&b, "\n  %v", m)
			}
			out = append(out, b.String())
		}
		if st := stats[i]; st.NotSent > 0 || st.Late > 0 {
			out = append(out, fmt.Sprintf("the %s fell behind the open model: %d requests started late (up to %s) and %d could not be sent",
				s.Name(), st.Late, st.MaxLate.Round(time.Millisecond), st.NotSent))
		}
		if n := waitedNotice(stats[i]); n != "" {
			out = append(out, "the "+s.Name()+": "+n)
		}
	}
	return out
}

// waitedNotice says how many requests of the open or as-recorded model
// started late because they waited for the answer they depend on
// (correlation); "" when none did.
func waitedNotice(st replayer.Stats) string {
	if st.WaitedForSource == 0 || st.Model == "closed" {
		return ""
	}
	return fmt.Sprintf("%d requests waited for the answer they depend on (up to %s) and started late by as much: a dependent request is sent late, never with a stale value",
		st.WaitedForSource, st.MaxWaitForSource.Round(time.Millisecond))
}

// faultLabel prefixes a fault's notice: "auth: " for a want of
// credentials (analyzer.FaultAuth), else "wiring: ".
func faultLabel(f analyzer.Fault) string {
	if f.Kind == analyzer.FaultAuth {
		return "auth: "
	}
	return "wiring: "
}
