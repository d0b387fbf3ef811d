package respdiff

import "testing"

// TestSampledDifferencesLead: the explanation names a sampled difference
// (what changed) before one seen only by hash in more answers (Platformatic's
// GET /books read "body differs by hash in 11 of 98 answers" first).
func TestSampledDifferencesLead(t *testing.T) {
	m := map[groupKey]*Group{
		{path: "body", kind: KindHash, hashed: true}: {Path: "body", Kind: KindHash, Count: 11},
		{path: "$[*].id", kind: KindChanged}:         {Path: "$[*].id", Kind: KindChanged, Count: 5},
		{path: "$[*].title", kind: KindChanged}:      {Path: "$[*].title", Kind: KindChanged, Count: 5},
	}
	got := sortGroups(m, Summary{Sampled: 41, Hashed: 98})
	if len(got) != 3 || got[0].Path != "$[*].id" || got[2].Path != "body" || !got[2].Hashed || got[2].Of != 98 {
		t.Fatalf("groups %+v; want $[*].id, $[*].title, then body by hash (of 98)", got)
	}
}
