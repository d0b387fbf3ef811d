package respdiff

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVaryingFieldTypeChange: a field whose value varies between a build's
// own answers is noise, but its JSON type is not: another type in the
// candidate (or the build checked against the recording) is a difference,
// unless the reference's answers or the learnt pairs themselves have that
// type there too, or a rule ignores the path.
func TestVaryingFieldTypeChange(t *testing.T) {
	seq := 0
	next := func() int { seq++; return seq }
	list := func(id int64, k int, item string) string {
		var items []string
		for i := range int(id) + k {
			items = append(items, fmt.Sprintf(item, next(), i))
		}
		return `{"orders":[` + strings.Join(items, ",") + `]}`
	}
	tests := []struct {
		name      string
		check     bool // Check against base as the recording, else Endpoint
		rules     Rules
		base      func(id int64, k int) string
		cand      func(id int64, k int) string
		want      []string // path kind: types count/of
		differing int64
		example   string // in the first group's example diff
	}{{
		name:      "a varying id turns string",
		base:      func(id int64, k int) string { return fmt.Sprintf(`{"id":%d,"total":3}`, next()) },
		cand:      func(id int64, k int) string { return fmt.Sprintf(`{"id":"%d","total":3}`, next()) },
		want:      []string{"$.id changed: number → string 40/40"},
		differing: 40,
		example:   `+   "id": "`,
	}, {
		name:      "ids in a list that grows turn string",
		base:      func(id int64, k int) string { return list(id, k, `{"id":%d,"n":%d}`) },
		cand:      func(id int64, k int) string { return list(id, k, `{"id":"%d","n":%d}`) },
		want:      []string{"$.orders[*].id changed: number → string 40/40"},
		differing: 40,
		example:   `"id": "`,
	}, {
		name: "a varying id stays a number",
		base: func(id int64, k int) string { return fmt.Sprintf(`{"id":%d}`, next()) },
		cand: func(id int64, k int) string { return fmt.Sprintf(`{"id":%d}`, next()) },
	}, {
		name: "the baseline's own answers are null or a string",
		base: func(id int64, k int) string { return fmt.Sprintf(`{"shipped_at":%s}`, nullOr(k == 0, next())) },
		cand: func(id int64, k int) string { return fmt.Sprintf(`{"shipped_at":%s}`, nullOr(k == 1, next())) },
	}, {
		name:  "a rule ignores the path, type and all",
		rules: Rules{Ignore: []string{"$.id"}},
		base:  func(id int64, k int) string { return fmt.Sprintf(`{"id":%d}`, next()) },
		cand:  func(id int64, k int) string { return fmt.Sprintf(`{"id":"%d"}`, next()) },
	}, {
		name:      "check: the build's varying id turns string",
		check:     true,
		base:      func(id int64, k int) string { return fmt.Sprintf(`{"id":%d}`, next()) },
		cand:      func(id int64, k int) string { return fmt.Sprintf(`{"id":"%d"}`, next()) },
		want:      []string{"$.id changed: number → string 40/40"},
		differing: 40,
		example:   `+   "id": "`,
	}, {
		name:  "check: the build's own answers are null or a string",
		check: true,
		base:  func(id int64, k int) string { return `{"shipped_at":null}` },
		cand:  func(id int64, k int) string { return fmt.Sprintf(`{"shipped_at":%s}`, nullOr(k == 0, next())) },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compile(t, tt.rules)
			var s *Summary
			if tt.check {
				rec := &Side{}
				for id := int64(1); id <= 20; id++ {
					rec.Add(id, jsonAnswer(tt.base(id, 0)))
				}
				s = c.Check(answers(20, tt.cand), rec)
			} else {
				s = c.Endpoint(answers(20, tt.base), answers(20, tt.cand), nil)
			}
			var got []string
			for _, g := range s.Differences {
				bt, _, _ := strings.Cut(g.Baseline, " ")
				ct, _, _ := strings.Cut(g.Candidate, " ")
				got = append(got, fmt.Sprintf("%s %s: %s → %s %d/%d", g.Path, g.Kind, bt, ct, g.Count, g.Of))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("differences (-want +got):\n%s\nignored: %+v", diff, s.Ignored)
			}
			if s.Differing != tt.differing {
				t.Errorf("differing %d, want %d", s.Differing, tt.differing)
			}
			if tt.example != "" && len(s.Differences) > 0 && !strings.Contains(s.Differences[0].Example.Diff, tt.example) {
				t.Errorf("example diff lacks %q:\n%s", tt.example, s.Differences[0].Example.Diff)
			}
			if len(s.Ignored) == 0 {
				t.Errorf("nothing listed as ignored: the varying value should be")
			}
		})
	}
}

// nullOr is null when null, else a string of n.
func nullOr(null bool, n int) string {
	if null {
		return "null"
	}
	return fmt.Sprintf(`"%d"`, n)
}
