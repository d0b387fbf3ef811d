package respdiff

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzCompareJSON: flattening and comparing any two bodies never panics;
// a body equals itself; two bodies differ both ways or neither; every
// path flattened parses back to itself and generalises to a parseable
// path.
func FuzzCompareJSON(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":1,"b":[1,2,{"c":"x"}]}`, `{"a":"1","b":[2,1,{"c":null}]}`},
		{`[{"id":1},{"id":2}]`, `[{"id":2},{"id":1}]`},
		{`{"a.b":{"x y":true},"":{}}`, `{"a.b":[],"\u00e9":1e400}`},
		{`{"n":1.0}`, `{"n":1}`},
		{"text\nlines\n", "text\nLines\n"},
		{"\x00\x01", "\x00\x02"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	env := &pairEnv{headers: DefaultHeaders, unordered: func(s []seg) bool { return len(s) == 1 }}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if leaves, err := Flatten(a); err == nil {
			for _, l := range leaves {
				segs, err := parseJSONPath(l.Path)
				if err != nil {
					t.Fatalf("path %q of a leaf does not parse: %v", l.Path, err)
				}
				if p := formatPath(segs, false); p != l.Path {
					t.Fatalf("path %q formats back as %q", l.Path, p)
				}
				if _, err := parseJSONPath(Generalize(l.Path)); err != nil {
					t.Fatalf("generalised %q does not parse: %v", Generalize(l.Path), err)
				}
			}
		}
		x, y := jsonAnswer(string(a)), jsonAnswer(string(b))
		if d := diffAnswers(x, x, env); len(d) != 0 {
			t.Fatalf("a body differs from itself: %v", brief(d))
		}
		ab, ba := diffAnswers(x, y, env), diffAnswers(y, x, env)
		if (len(ab) == 0) != (len(ba) == 0) {
			t.Fatalf("asymmetric: a→b %v, b→a %v", brief(ab), brief(ba))
		}
		for _, d := range ab {
			if err := CheckPath(d.General()); err != nil && d.Path != "body" {
				t.Fatalf("difference at %q: its general path does not parse: %v", d.Path, err)
			}
		}
		exampleDiff(x, y, env)
	})
}

// FuzzRulePath: a rule's path parses or gives one line quoting it; a JSON
// path that parses formats back to a path that parses to the same steps.
func FuzzRulePath(f *testing.F) {
	for _, s := range []string{"$.a", "$.items[*].id", `$["a.b"][2]`, "$.*", "status", "header:X-Id", "line:3", "body", "$.a..b", `$["x`, "$[01]", "served_at"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := CheckPath(s)
		if err != nil {
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, strconv.Quote(s)) {
				t.Fatalf("error %q: not one line quoting %q", msg, s)
			}
			return
		}
		segs, err := parseJSONPath(s)
		if err != nil {
			return // status, header:NAME, body, line:N
		}
		back := formatPath(segs, false)
		again, err := parseJSONPath(back)
		if err != nil || !slices.Equal(segs, again) {
			t.Fatalf("%q formats as %q, which parses to %v (%v), not %v", s, back, again, err, segs)
		}
	})
}
