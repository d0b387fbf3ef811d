package respdiff

import (
	"cmp"
	"slices"
	"strings"
)

// tally groups the differences of the answers compared.
type tally struct {
	c         *Comparer
	n         *noise
	ref       *Side   // the answers compared with
	refTypes  typeSet // the JSON types in ref's answers, once needed
	recording bool
	s         Summary
	groups    map[groupKey]*Group
	accepted  map[groupKey]*Group
	ignored   map[[2]string]*Ignored
}

type groupKey struct {
	path, kind, baseType, candType string
	hashed                         bool
}

func newTally(c *Comparer, n *noise, ref *Side, recording bool) *tally {
	t := &tally{c: c, n: n, ref: ref, recording: recording, groups: map[groupKey]*Group{}, accepted: map[groupKey]*Group{},
		ignored: map[[2]string]*Ignored{}}
	for g, why := range n.reasons {
		t.ignored[[2]string{g, why}] = &Ignored{Path: g, Reason: why}
	}
	return t
}

// pair compares one answer a with the reference r.
func (t *tally) pair(id int64, r, a Answer, env *pairEnv) {
	t.s.Sampled++
	seen := map[any]bool{}
	differing := false
	var found []Diff
	var groups []*Group
	var shown [][]seg // paths of learnt noise whose type changed
	for _, d := range diffAnswers(r, a, env) {
		g, ig := t.classify(d, false)
		if ig != nil {
			if !seen[ig] {
				seen[ig] = true
				ig.Count++
			}
			continue
		}
		if _, ok := firstMatch(t.n.paths, d); ok {
			shown = append(shown, d.segs)
		}
		found, groups = append(found, d), append(groups, g)
		differing = differing || t.groups[keyOf(d, false)] == g
	}
	example, made := "", false // the pair's example diff, made once
	for i, g := range groups {
		if seen[g] {
			continue
		}
		seen[g] = true
		if g.Count == 0 {
			if !made {
				example, made = exampleDiff(r, a, showing(env, shown)), true
			}
			g.Example = Example{ExchangeID: id, Path: found[i].Path, Diff: example}
		}
		g.Count++
	}
	if differing {
		t.s.Differing++
	}
}

func keyOf(d Diff, hashed bool) groupKey {
	return groupKey{d.General(), d.Kind, d.Baseline.Type, d.Candidate.Type, hashed}
}

// classify finds where d goes: an Ignored entry, or a group of
// differences or of accepted ones.
func (t *tally) classify(d Diff, hashed bool) (*Group, *Ignored) {
	if p, ok := firstMatch(t.c.ignore, d); ok {
		return nil, t.ignore(p.text, ReasonRule)
	}
	if t.recording && redacted(d.Baseline.Text) {
		return nil, t.ignore(d.General(), ReasonRedacted)
	}
	if p, ok := firstMatch(t.n.paths, d); ok && !t.typeChanged(d) {
		return nil, t.ignore(p.text, t.n.reasons[p.text])
	}
	into := t.groups
	if _, ok := firstMatch(t.c.accept, d); ok {
		into = t.accepted
	}
	k := keyOf(d, hashed)
	g := into[k]
	if g == nil {
		g = &Group{Path: k.path, Kind: d.Kind, Baseline: d.Baseline.String(), Candidate: d.Candidate.String()}
		into[k] = g
	}
	return g, nil
}

func (t *tally) ignore(path, reason string) *Ignored {
	k := [2]string{path, reason}
	ig := t.ignored[k]
	if ig == nil {
		ig = &Ignored{Path: path, Reason: reason}
		t.ignored[k] = ig
	}
	return ig
}

// summary sorts the groups and returns the summary.
func (t *tally) summary() *Summary {
	s := t.s
	s.Compared = s.Sampled + s.Hashed
	s.Differences = sortGroups(t.groups, s)
	s.Accepted = sortGroups(t.accepted, s)
	for _, ig := range t.ignored {
		s.Ignored = append(s.Ignored, *ig)
	}
	slices.SortFunc(s.Ignored, func(a, b Ignored) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Reason, b.Reason))
	})
	return &s
}

// pathRank orders groups of one count: the status first, then the body,
// then headers.
func pathRank(p string) int {
	switch {
	case p == "status":
		return 0
	case strings.HasPrefix(p, "header:"):
		return 2
	}
	return 1
}

func sortGroups(m map[groupKey]*Group, s Summary) []Group {
	var out []Group
	for k, g := range m {
		if g.Count == 0 {
			continue
		}
		g.Of, g.Hashed = s.Sampled, k.hashed
		if k.hashed {
			g.Of = s.Hashed
		}
		out = append(out, *g)
	}
	// The sampled differences first: they say what changed; a hash only
	// that something did.
	slices.SortFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(hashedRank(a), hashedRank(b)), cmp.Compare(b.Count, a.Count), cmp.Compare(pathRank(a.Path), pathRank(b.Path)), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Baseline, b.Baseline), cmp.Compare(a.Candidate, b.Candidate))
	})
	return out
}

func hashedRank(g Group) int {
	if g.Hashed {
		return 1
	}
	return 0
}
