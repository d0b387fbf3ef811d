package sqlcount

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// Counters are the counters of one service counted as one: a service on
// PostgreSQL and MySQL has a Proxy for each, and its requests' statements
// are theirs together. Its methods are those of a Proxy, over all of them.
type Counters []*Proxy

// Begin tells every counter that the inbound request id is in flight.
func (cs Counters) Begin(id int64, traceID string) {
	for _, p := range cs {
		p.Begin(id, traceID)
	}
}

// End tells every counter that the request id has ended and returns the
// statements attributed to it by all of them, per fingerprint.
func (cs Counters) End(id int64) []snapshots.SQLCount {
	if len(cs) == 1 {
		return cs[0].End(id)
	}
	var out []snapshots.SQLCount
	for _, p := range cs {
		for _, c := range p.End(id) {
			i := slices.IndexFunc(out, func(o snapshots.SQLCount) bool { return o.Fingerprint == c.Fingerprint })
			if i < 0 {
				out = append(out, c)
				continue
			}
			out[i].Count += c.Count
			out[i].Errors += c.Errors
			out[i].Duration += c.Duration
		}
	}
	return out
}

// Stats returns the totals of all the counters: counts added up,
// fingerprints (and clients) of the same text merged, ordered as a Proxy
// orders them.
func (cs Counters) Stats() Stats {
	if len(cs) == 1 {
		return cs[0].Stats()
	}
	var st Stats
	fps := map[string]*FingerprintStats{}
	apps := map[string]*ClientStats{}
	for _, p := range cs {
		s := p.Stats()
		st.Statements += s.Statements
		st.Errors += s.Errors
		st.Connections += s.Connections
		st.UpstreamErrors += s.UpstreamErrors
		st.IdleClosed += s.IdleClosed
		st.StartupClosed += s.StartupClosed
		for _, f := range s.Fingerprints {
			a := fps[f.Fingerprint]
			if a == nil {
				a = &FingerprintStats{Fingerprint: f.Fingerprint}
				fps[f.Fingerprint] = a
			}
			a.Count += f.Count
			a.Errors += f.Errors
			a.Total += f.Total
		}
		for _, c := range s.Clients {
			a := apps[c.App]
			if a == nil {
				a = &ClientStats{App: c.App}
				apps[c.App] = a
			}
			a.Connections += c.Connections
			a.Statements += c.Statements
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fps)) {
		f := *fps[k]
		if f.Count > 0 {
			f.Mean = f.Total / time.Duration(f.Count)
		}
		st.Fingerprints = append(st.Fingerprints, f)
	}
	slices.SortStableFunc(st.Fingerprints, func(a, b FingerprintStats) int { return cmp.Compare(b.Count+b.Errors, a.Count+a.Errors) })
	for _, k := range slices.Sorted(maps.Keys(apps)) {
		st.Clients = append(st.Clients, *apps[k])
	}
	return st
}

// Unattributed returns the histogram of the statements attributed to no
// request, of all the counters.
func (cs Counters) Unattributed() snapshots.SQLHistogram {
	if len(cs) == 1 {
		return cs[0].Unattributed()
	}
	var h snapshots.SQLHistogram
	for _, p := range cs {
		u := p.Unattributed()
		if h.Bin < u.Bin {
			h.Bin = u.Bin
		}
	}
	for _, p := range cs {
		u := p.Unattributed()
		for k, n := range u.Counts {
			if h.Counts == nil {
				h.Counts = map[int64]int64{}
			}
			// Re-bin onto the widest interval.
			h.Counts[int64(time.Duration(k)*u.Bin/h.Bin)] += n
		}
	}
	return h
}
