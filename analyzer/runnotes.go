package analyzer

import (
	"fmt"
	"strconv"

	"github.com/replaykit/replay/snapshots"
)

// Settings of a comparison's run files that contentionNote reads.
const (
	// SettingOrder is the order of measurement: "interleaved",
	// "concurrent" (both builds loaded at once) or "sequential".
	SettingOrder = "order"
	// SettingCPUs is the number of CPUs of the machine that ran it.
	SettingCPUs = "cpus"
)

// busyShare is the share of the machine's CPUs that two builds loaded at
// once may keep busy before they are said to have slowed each other.
const busyShare = 0.8

// contentionNote warns when the builds of a concurrent comparison (both
// loaded at once) together kept most of the machine's CPUs busy in more
// than a fifth of the slice pairs: each may then have slowed the other (a
// build that spends more CPU starving the one beside it), which pairing
// slices does not cancel. Empty otherwise, or when either build's CPU time
// was not measured.
func contentionNote(c *Comparison) string {
	b, k := c.Baseline, c.Candidate
	if b.Info.Settings[SettingOrder] != "concurrent" || !b.CPU.Measured || !k.CPU.Measured {
		return ""
	}
	cpus, _ := strconv.Atoi(b.Info.Settings[SettingCPUs])
	bs, ks := pairCPU(b.CPU.Slices, k.CPU.Slices)
	if cpus <= 0 || len(bs) == 0 {
		return ""
	}
	busy := 0
	for i := range bs {
		wall := max(bs[i].Wall, ks[i].Wall)
		if wall > 0 && float64(bs[i].CPU+ks[i].CPU) > busyShare*float64(cpus)*float64(wall) {
			busy++
		}
	}
	if busy*5 <= len(bs) {
		return ""
	}
	return fmt.Sprintf("the two builds, loaded at once (--concurrent), together kept over %d%% of the machine's %d CPUs busy in %d of %d slice pairs: each may have slowed the other, which pairing the slices does not cancel; compare them interleaved (without --concurrent) or at a lower rate",
		int(100*busyShare), cpus, busy, len(bs))
}

// addRunNotes adds the run-level notes: mock misses, SQL self-checks,
// requests replayed with a cut body, cut mock answers.
func (c *Comparison) addRunNotes() {
	base, cand := c.Baseline, c.Candidate
	if d := c.MockMisses[1] - c.MockMisses[0]; d > 0 {
		c.Notes = append(c.Notes, mockMissSentence(c.MockMisses[1], c.MockMisses[0]))
	} else if c.MockMisses[1] > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("both runs made upstream calls the snapshot has no answer for (baseline %d, candidate %d)", c.MockMisses[0], c.MockMisses[1]))
	}
	for i, s := range []*Summary{c.Baseline, c.Candidate} {
		if n := SQLCheckNote([2]string{"baseline", "candidate"}[i], s); n != "" {
			c.Notes = append(c.Notes, n)
		}
	}
	// Both sides replay the same requests; their mocks may differ.
	c.Notes = append(c.Notes, TruncatedNotes(snapshots.RunInfo{Truncated: cand.Info.Truncated}, "")...)
	for i, info := range []snapshots.RunInfo{base.Info, cand.Info} {
		if n := TruncatedMockNote(info, [2]string{"baseline", "candidate"}[i]); n != "" {
			c.Notes = append(c.Notes, n)
		}
	}
	for i, info := range []snapshots.RunInfo{base.Info, cand.Info} {
		c.Notes = append(c.Notes, StateNotes(info, [2]string{"baseline", "candidate"}[i])...)
	}
}
