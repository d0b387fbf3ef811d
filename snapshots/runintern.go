package snapshots

// Limits of a run file's string table: what a writer interns, and what a
// reader holds in memory, at most.
const (
	maxInterned    = 1 << 16 // strings
	maxInternBytes = 8 << 20 // their total length
	maxInternLen   = 4096    // longer strings are stored inline
	// maxCandidates bounds the strings seen once, which are interned when
	// seen again (most errors repeat; some never do).
	maxCandidates = 1 << 16
)

// interner assigns ids to the strings a run writer stores in its string
// table, under the writer's batcher's lock; an id once given is never
// taken back: the writer stores its string before the first record that
// names it, in the same transaction or an earlier one, and again in the
// next transaction when the commit failed.
type interner struct {
	// Strings of a few values (phases, methods, endpoints, fingerprints)
	// are looked up apart from those of many (errors), so that their map
	// stays small enough to be cheap to search.
	groups [2]internGroup
	n      int64 // strings interned
	bytes  int
}

// The groups of interned strings.
const (
	fewValues = iota
	manyValues
)

type internGroup struct {
	ids        map[string]int64
	candidates map[string]struct{} // seen once, not interned yet
}

// internedStr is a row of the strings table.
type internedStr struct {
	id int64
	s  string
}

func newInterner() *interner {
	in := &interner{}
	for i := range in.groups {
		in.groups[i] = internGroup{ids: map[string]int64{}, candidates: map[string]struct{}{}}
	}
	return in
}

// id returns the id of s in group, and whether s was interned just now
// (the caller stores it); zero means s is to be stored inline.
func (in *interner) id(group int, s string) (id int64, isNew bool) {
	g := &in.groups[group]
	if id, ok := g.ids[s]; ok {
		return id, false
	}
	if len(s) > maxInternLen || in.n >= maxInterned || in.bytes+len(s) > maxInternBytes {
		return 0, false
	}
	if _, ok := g.candidates[s]; !ok {
		if len(g.candidates) >= maxCandidates {
			clear(g.candidates)
		}
		g.candidates[s] = struct{}{}
		return 0, false
	}
	delete(g.candidates, s)
	in.n++
	g.ids[s] = in.n
	in.bytes += len(s)
	return in.n, true
}
