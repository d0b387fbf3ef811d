package respdiff

import (
	"fmt"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// ignoresBody reports whether a rule ignores part of a body or orders it
// as a set: then equal answers may hash differently.
func (c *Comparer) ignoresBody() bool {
	if len(c.unordered) > 0 {
		return true
	}
	for _, p := range c.ignore {
		if p.kind != "status" && p.kind != "header" {
			return true
		}
	}
	return false
}

// hostInBodies reports whether a body of s holds its host.
func hostInBodies(s *Side, host string) bool {
	if host == "" {
		return false
	}
	for _, as := range s.Samples {
		for _, a := range as {
			if strings.Contains(string(a.Body), host) {
				return true
			}
		}
	}
	return false
}

// hashes compares the answers beyond the sample by hash (see Endpoint).
func (t *tally) hashes(ref, other []snapshots.ResponseHash, trustBodies bool) {
	type refHash struct {
		status, statuses int
		hash             uint64
		hashes           int
	}
	by := map[int64]*refHash{}
	for _, h := range ref {
		r := by[h.ExchangeID]
		if r == nil {
			by[h.ExchangeID] = &refHash{status: h.Status, statuses: 1, hash: h.Hash, hashes: 1}
			continue
		}
		if h.Status != r.status {
			r.statuses++
		}
		if h.Hash != r.hash {
			r.hashes++
		}
	}
	for _, h := range other {
		r := by[h.ExchangeID]
		if r == nil || h.Count <= 0 {
			continue
		}
		t.s.Hashed += h.Count
		var d Diff
		switch {
		case r.statuses == 1 && h.Status != r.status:
			d = Diff{Path: "status", Kind: KindChanged, Baseline: Value{Type: "status", Text: fmt.Sprint(r.status)},
				Candidate: Value{Type: "status", Text: fmt.Sprint(h.Status)}}
		case trustBodies && r.hashes == 1 && h.Hash != r.hash:
			d = Diff{Path: "body", Kind: KindHash, Baseline: Value{Type: "bytes", Text: fmt.Sprintf("hash %016x", r.hash)},
				Candidate: Value{Type: "bytes", Text: fmt.Sprintf("hash %016x", h.Hash)}}
		default:
			continue
		}
		g, ig := t.classify(d, true)
		if ig != nil {
			ig.Count += h.Count
			continue
		}
		if g.Count == 0 {
			g.Example = Example{ExchangeID: h.ExchangeID, Path: d.Path}
		}
		g.Count += h.Count
		if t.groups[keyOf(d, true)] == g {
			t.s.Differing += h.Count
		}
	}
}
