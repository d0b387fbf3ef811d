package shard

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/replaykit/replay/snapshots"
)

// The run-file tags of a shard: keys of snapshots.RunInfo.Settings.
const (
	// TagPlan is the plan's hash (PlanHash): shards of one plan share it.
	TagPlan = "shard_plan"
	// TagIndex is the shard's index k, from 0.
	TagIndex = "shard"
	// TagCount is the number of shards N.
	TagCount = "shards"
	// TagHistogram names the latency histogram parameters the shard's
	// figures are meant for (Histogram); merged files must agree on them.
	TagHistogram = "shard_histogram"
	// TagMerged, in a merged run file, lists the shards merged ("0-2 of 3").
	TagMerged = "merged_shards"
)

// Histogram is the value of TagHistogram: the run file holds raw results
// (every latency, merged exactly), summarised in HDR histograms from 1 µs
// to one hour with three significant digits.
const Histogram = "raw; hdr 1us-1h 3 digits"

// Spec is a shard's place in its plan: shard K of N (0 ≤ K < N). The zero
// Spec (N = 0) is no shard: the whole plan.
type Spec struct{ K, N int }

// Sharded reports whether s is a shard of a plan of several.
func (s Spec) Sharded() bool { return s.N > 0 }

// String is "k/N", or "" for no shard.
func (s Spec) String() string {
	if !s.Sharded() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// Tags returns the settings that tag a run file as shard s of the plan
// with hash plan.
func (s Spec) Tags(plan string) map[string]string {
	return map[string]string{
		TagPlan:      plan,
		TagIndex:     strconv.Itoa(s.K),
		TagCount:     strconv.Itoa(s.N),
		TagHistogram: Histogram,
	}
}

// ErrNotShard marks a run file without shard tags (or with broken ones).
var ErrNotShard = errors.New("not a shard's run file")

// FromInfo reads the shard tags of a run file's info.
func FromInfo(info snapshots.RunInfo) (s Spec, plan string, err error) {
	st := info.Settings
	plan = st[TagPlan]
	if plan == "" || st[TagIndex] == "" || st[TagCount] == "" {
		return Spec{}, "", ErrNotShard
	}
	k, err1 := strconv.Atoi(st[TagIndex])
	n, err2 := strconv.Atoi(st[TagCount])
	if err1 != nil || err2 != nil || n < 1 || k < 0 || k >= n {
		return Spec{}, "", fmt.Errorf("%w: shard %q of %q", ErrNotShard, st[TagIndex], st[TagCount])
	}
	return Spec{K: k, N: n}, plan, nil
}

// Info reads the shard tags of the run file at path: shard k of n of the
// plan with hash planHash; ok is false when the file cannot be read or is
// no shard's.
func Info(path string) (k, n int, planHash string, ok bool) {
	r, err := snapshots.OpenRun(path)
	if err != nil {
		return 0, 0, "", false
	}
	defer r.Close()
	s, plan, err := FromInfo(r.Info())
	if err != nil {
		return 0, 0, "", false
	}
	return s.K, s.N, plan, true
}

// PlanHash is the hash of a plan's settings (every key but the shard
// tags TagPlan, TagIndex and TagMerged, in order of key), 16 hex digits:
// shards of one plan share it. Give it the settings every shard shares
// (what is replayed, how much and how: session's shared settings, with
// TagCount), before a side's own (its build command, its name).
func PlanHash(settings map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if k == TagPlan || k == TagIndex || k == TagMerged {
			continue
		}
		fmt.Fprintf(h, "%q=%q\n", k, settings[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
