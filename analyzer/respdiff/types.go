package respdiff

import "slices"

// Learnt noise hides the values that vary at a path, never their JSON
// type: a field whose value varies between a build's own answers (an id a
// POST makes up, the ids of a list that grows) still differs when the
// candidate answers it as another type (number 7 → string "7"). It stays
// hidden when the reference's answers, or a pair noise was learnt from,
// have that type there too (a field that is null or a string).

// jsonTypes are the Value types of JSON values.
var jsonTypes = map[string]bool{"number": true, "string": true, "bool": true, "null": true, "object": true, "array": true}

// typeSet holds the JSON types seen at each general path.
type typeSet map[string]map[string]bool

func (ts typeSet) add(path, typ string) {
	if ts[path] == nil {
		ts[path] = map[string]bool{}
	}
	ts[path][typ] = true
}

// retyped reports whether d is a change from one JSON type to another.
func retyped(d Diff) bool {
	return d.Baseline.Type != d.Candidate.Type && jsonTypes[d.Baseline.Type] && jsonTypes[d.Candidate.Type]
}

// learnTypes notes the two types of a learnt difference that changed type:
// the type at that path varies on its own.
func (n *noise) learnTypes(d Diff) {
	if !retyped(d) {
		return
	}
	if n.types == nil {
		n.types = typeSet{}
	}
	n.types.add(d.General(), d.Baseline.Type)
	n.types.add(d.General(), d.Candidate.Type)
}

// typeChanged reports whether d, hidden by learnt noise, changes the JSON
// type to one neither the reference's answers nor the learnt pairs had at
// its path: a difference, not noise.
func (t *tally) typeChanged(d Diff) bool {
	if !retyped(d) {
		return false
	}
	g := d.General()
	if t.n.types[g][d.Candidate.Type] {
		return false
	}
	if t.refTypes == nil {
		t.refTypes = sideTypes(t.ref)
	}
	return !t.refTypes[g][d.Candidate.Type]
}

// sideTypes is the JSON types at each general path of a side's sampled
// answers.
func sideTypes(s *Side) typeSet {
	ts := typeSet{}
	if s == nil {
		return ts
	}
	var segs []seg
	var walk func(v any)
	walk = func(v any) {
		ts.add(formatPath(segs, true), describe(v).Type)
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				segs = append(segs, seg{kind: segKey, key: k})
				walk(e)
				segs = segs[:len(segs)-1]
			}
		case []any:
			for i, e := range x {
				segs = append(segs, seg{kind: segIndex, index: i})
				walk(e)
				segs = segs[:len(segs)-1]
			}
		}
	}
	for _, as := range s.Samples {
		for _, a := range as {
			if a.Truncated || !looksJSON(a.Header.Get("Content-Type"), a.Body) {
				continue
			}
			if v, err := a.json(); err == nil {
				walk(v)
			}
		}
	}
	return ts
}

// showing is env with the values at the paths shown (and what holds them)
// no longer hidden in example diffs: a type change at a path of learnt
// noise is shown.
func showing(env *pairEnv, shown [][]seg) *pairEnv {
	if len(shown) == 0 || env.hide == nil {
		return env
	}
	e := *env
	e.hide = func(segs []seg) bool {
		for _, s := range shown {
			if len(segs) <= len(s) && slices.Equal(segs, s[:len(segs)]) {
				return false
			}
		}
		return env.hide(segs)
	}
	return &e
}
