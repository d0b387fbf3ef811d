package shard

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// Settings a shard's stall adds (session's stallSettings): the merged run
// adds up the counts and keeps the largest delay.
var (
	summedSettings = []string{"late_requests", "not_sent", "waited_for_source"}
	maxedSettings  = []string{"max_late", "max_wait_for_source"}
)

// mergeInfo is the info of the merged run of infos (in order of shard):
// shard 0's description and settings, the span of them all, their counts
// added up; interrupted when any shard was.
func mergeInfo(infos []snapshots.RunInfo) snapshots.RunInfo {
	out := infos[0]
	out.Settings = maps.Clone(infos[0].Settings)
	delete(out.Settings, TagIndex)
	out.Settings[TagMerged] = fmt.Sprintf("0-%d of %d", len(infos)-1, len(infos))
	out.Wiring, out.LoadSQL, out.ExplainWeights, out.Truncated, out.State = nil, nil, nil, nil, nil
	out.BuildCPU = nil // each shard's build is its own: not summed (yet)
	out.MockMisses, out.Statements, out.StatementErrors = 0, 0, 0
	out.UnattributedSQL = snapshots.SQLHistogram{}
	for _, in := range infos {
		if !in.Started.IsZero() && (out.Started.IsZero() || in.Started.Before(out.Started)) {
			out.Started = in.Started
		}
		if in.Ended.After(out.Ended) {
			out.Ended = in.Ended
		}
		spanLoad(&out, in)
		out.Interrupted = out.Interrupted || in.Interrupted
		out.MockMisses += in.MockMisses
		out.Statements += in.Statements
		out.StatementErrors += in.StatementErrors
		out.Wiring = addWiring(out.Wiring, in.Wiring)
		out.LoadSQL = addLoadSQL(out.LoadSQL, in.LoadSQL)
		out.UnattributedSQL = addHistogram(out.UnattributedSQL, in.UnattributedSQL)
		for id, w := range in.ExplainWeights {
			if out.ExplainWeights == nil {
				out.ExplainWeights = map[int64]float64{}
			}
			if _, ok := out.ExplainWeights[id]; !ok {
				out.ExplainWeights[id] = w
			}
		}
		for ep, n := range in.Truncated {
			if out.Truncated == nil {
				out.Truncated = map[string]int64{}
			}
			out.Truncated[ep] += n
		}
		if !in.State.Empty() {
			if out.State == nil {
				out.State = &snapshots.State{}
			}
			out.State.Add(in.State)
		}
		mergeSettings(out.Settings, in.Settings)
	}
	return out
}

// spanLoad widens out's load window to in's: the merged load runs from the
// first shard's start to the last one's end. A shard without a window (an
// older run file) leaves the merged run without one, so its span comes
// from the results as it did.
func spanLoad(out *snapshots.RunInfo, in snapshots.RunInfo) {
	if in.LoadStarted.IsZero() || out.LoadStarted.IsZero() {
		out.LoadStarted, out.LoadEnded = time.Time{}, time.Time{}
		return
	}
	if in.LoadStarted.Before(out.LoadStarted) {
		out.LoadStarted = in.LoadStarted
	}
	if in.LoadEnded.After(out.LoadEnded) {
		out.LoadEnded = in.LoadEnded
	}
}

// mergeSettings adds the stall settings of a shard's into out (shard 0's,
// already in out, count once: out starts from shard 0's).
func mergeSettings(out, in map[string]string) {
	if in[TagIndex] == "0" {
		return
	}
	for _, k := range summedSettings {
		a, _ := strconv.ParseInt(out[k], 10, 64)
		b, _ := strconv.ParseInt(in[k], 10, 64)
		if a+b > 0 {
			out[k] = strconv.FormatInt(a+b, 10)
		}
	}
	for _, k := range maxedSettings {
		a, _ := time.ParseDuration(out[k])
		b, err := time.ParseDuration(in[k])
		if err == nil && b > a {
			out[k] = in[k]
		}
	}
	for k, v := range in {
		if _, ok := out[k]; !ok && k != TagIndex {
			out[k] = v // e.g. one shard's build exited
		}
	}
}

// addWiring adds b's counts to a's (nil: none); addresses are the first
// shard's that had one.
func addWiring(a, b *snapshots.Wiring) *snapshots.Wiring {
	if b == nil {
		return a
	}
	if a == nil {
		c := *b
		c.SQLClients = slices.Clone(b.SQLClients)
		return &c
	}
	a.SQLAddr = cmp.Or(a.SQLAddr, b.SQLAddr)
	a.SQLApp = cmp.Or(a.SQLApp, b.SQLApp)
	a.MockAddr = cmp.Or(a.MockAddr, b.MockAddr)
	a.SQLConnections += b.SQLConnections
	a.SQLUpstreamErrors += b.SQLUpstreamErrors
	a.MockCalls += b.MockCalls
	a.RecordedCalls += b.RecordedCalls
	a.MockPassthroughErrors += b.MockPassthroughErrors
	a.MockTruncated += b.MockTruncated
	a.MockTruncatedServed = a.MockTruncatedServed || b.MockTruncatedServed
	for _, c := range b.SQLClients {
		i := slices.IndexFunc(a.SQLClients, func(x snapshots.SQLClient) bool { return x.App == c.App })
		if i < 0 {
			a.SQLClients = append(a.SQLClients, c)
			continue
		}
		a.SQLClients[i].Connections += c.Connections
		a.SQLClients[i].Statements += c.Statements
	}
	return a
}

// addLoadSQL adds b's statements to a's (nil: none), fingerprint by
// fingerprint, most statements first.
func addLoadSQL(a, b *snapshots.LoadSQL) *snapshots.LoadSQL {
	if b == nil {
		return a
	}
	if a == nil {
		a = &snapshots.LoadSQL{}
	}
	a.Statements += b.Statements
	a.Total += b.Total
	for _, f := range b.Fingerprints {
		i := slices.IndexFunc(a.Fingerprints, func(x snapshots.LoadFingerprint) bool { return x.Fingerprint == f.Fingerprint })
		if i < 0 {
			a.Fingerprints = append(a.Fingerprints, f)
			continue
		}
		a.Fingerprints[i].Count += f.Count
		a.Fingerprints[i].Total += f.Total
	}
	slices.SortStableFunc(a.Fingerprints, func(x, y snapshots.LoadFingerprint) int { return cmp.Compare(y.Count, x.Count) })
	return a
}

// addHistogram adds b's counts to a's, in the wider of their intervals
// (the shards' clocks are one time line: intervals of the same start add).
func addHistogram(a, b snapshots.SQLHistogram) snapshots.SQLHistogram {
	if b.Bin <= 0 {
		return a
	}
	bin := max(a.Bin, b.Bin)
	out := snapshots.SQLHistogram{Bin: bin, Counts: map[int64]int64{}}
	for _, h := range []snapshots.SQLHistogram{a, b} {
		for i, n := range h.Counts {
			out.Counts[i*int64(h.Bin)/int64(bin)] += n
		}
	}
	return out
}
