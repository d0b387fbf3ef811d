package session

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount"
)

// loadSQL sums what a side's SQL counter saw over its load: the difference
// of the counter's totals across each load call (a run's load, or each
// slice of a comparison), so the explain phase, warm-ups and resets stay
// out.
type loadSQL struct {
	mu  sync.Mutex
	fps map[string]*snapshots.LoadFingerprint
	ran bool
}

// measure takes the counter's totals now and returns the function that adds
// the difference when the load call ends.
func (l *loadSQL) measure(p interface{ Stats() sqlcount.Stats }) func() {
	before := p.Stats()
	return func() {
		after := p.Stats()
		was := make(map[string]sqlcount.FingerprintStats, len(before.Fingerprints))
		for _, f := range before.Fingerprints {
			was[f.Fingerprint] = f
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		l.ran = true
		if l.fps == nil {
			l.fps = map[string]*snapshots.LoadFingerprint{}
		}
		for _, f := range after.Fingerprints {
			// An empty statement is a pool's liveness ping, not a request's.
			if f.Fingerprint == "" {
				continue
			}
			n, d := f.Count-was[f.Fingerprint].Count, f.Total-was[f.Fingerprint].Total
			if n <= 0 {
				continue
			}
			a := l.fps[f.Fingerprint]
			if a == nil {
				a = &snapshots.LoadFingerprint{Fingerprint: f.Fingerprint}
				l.fps[f.Fingerprint] = a
			}
			a.Count += n
			a.Total += max(d, 0)
		}
	}
}

// result returns the sums, nil when no load call was measured.
func (l *loadSQL) result() *snapshots.LoadSQL {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ran {
		return nil
	}
	out := &snapshots.LoadSQL{Fingerprints: []snapshots.LoadFingerprint{}}
	var total time.Duration
	for _, f := range l.fps {
		out.Statements += f.Count
		total += f.Total
		out.Fingerprints = append(out.Fingerprints, *f)
	}
	out.Total = total
	slices.SortFunc(out.Fingerprints, func(a, b snapshots.LoadFingerprint) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Fingerprint, b.Fingerprint)
	})
	return out
}
