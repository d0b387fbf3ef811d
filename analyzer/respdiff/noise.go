package respdiff

import (
	"slices"
	"strings"
)

// learnPair is two answers of one build to the same request (or the
// recording's and the baseline's), whose differences are noise.
type learnPair struct {
	a, b         Answer
	hostA, hostB string
	reason       string
	// keep, when set, says which of the pair's differences are noise.
	keep func(Diff) bool
}

// noise is what an endpoint learned varies on its own.
type noise struct {
	paths   []rulePath        // ignored with what is inside them
	reasons map[string]string // by path
	order   [][]seg           // arrays learned unordered
	user    [][]seg           // arrays the rules say are unordered
	types   typeSet           // the types a learnt pair's two answers had where they differed in type
}

func (n *noise) empty() bool { return len(n.paths) == 0 && len(n.order) == 0 }

// unordered reports whether the array at segs is a multiset.
func (n *noise) unordered(segs []seg) bool {
	for _, u := range slices.Concat(n.user, n.order) {
		if len(u) == len(segs) && matchSegs(u, segs) {
			return true
		}
	}
	return false
}

// learnNoise learns the paths that differ within each pair.
func (c *Comparer) learnNoise(learn []learnPair) *noise {
	n := &noise{reasons: map[string]string{}, user: c.unordered}
	for _, p := range learn {
		env := &pairEnv{headers: c.headers, unordered: n.unordered, hostA: hostOf(p.hostA), hostB: hostOf(p.hostB)}
		for _, d := range diffAnswers(p.a, p.b, env) {
			if _, ok := firstMatch(c.ignore, d); ok || (p.keep != nil && !p.keep(d)) {
				continue
			}
			n.learnTypes(d)
			g := d.General()
			if _, ok := n.reasons[g]; ok {
				continue
			}
			if d.Kind == KindReordered {
				n.order = append(n.order, generalSegs(d.segs))
				n.reasons[g] = strings.Replace(p.reason, "varies", "order varies", 1)
				continue
			}
			rp, err := parseRulePath(g)
			if err != nil {
				continue
			}
			n.paths = append(n.paths, rp)
			n.reasons[g] = p.reason
		}
	}
	return n
}

// generalSegs is segs with every index any index.
func generalSegs(segs []seg) []seg {
	out := slices.Clone(segs)
	for i := range out {
		if out[i].kind == segIndex {
			out[i] = seg{kind: segAnyIndex}
		}
	}
	return out
}
